//! API keys of the HTTP team server: making one (a random secret, shown once; only its SHA-256
//! is stored), listing and revoking them, and undoing a revocation within its window
//! (`cortex keys`), and checking the token a request
//! presents (`cortex serve --http`). Keys are the local user's to manage: under a key, the
//! store sees none (`tenant::BoundedStore`). The same calls kept inside an admin key's bound,
//! for the web UI: `within.rs`.

mod within;

pub use within::within;

use crate::{Caller, MemoryService, Result, ServiceError};
use cortex_domain::api_key::{self, Rate, Role};
use cortex_domain::principal::Principal;
use cortex_domain::tenant::Bound;
use cortex_domain::{ErrorCode, ValidationError};
use cortex_store::{ApiKeyRow, KeyRestore, StoreError};
use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// API keys and their holders as one caller is served (see the module doc); made by
/// [`MemoryService::keys`].
pub struct Keys<'a> {
    pub(crate) service: &'a MemoryService,
}

/// What `cortex keys create` asks for, as typed: each value is checked here and a refusal
/// names its flag.
#[derive(Debug, Clone, Default)]
pub struct KeySpec {
    pub name: String,
    pub org: String,
    pub projects: Vec<String>,
    pub role: String,
    /// `YYYY-MM-DD` (the key stops working when that day starts, UTC) or an RFC 3339 instant.
    pub expires: Option<String>,
    /// `N/s` or `N/min`; `None`: the server's default.
    pub rate: Option<String>,
}

/// A key as `cortex keys list` shows it: never its secret or hash.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyInfo {
    pub name: String,
    pub org: String,
    /// Empty: every project of the org.
    pub projects: Vec<String>,
    pub role: Role,
    /// Requests per second; `None`: the server's default (`CORTEX_HTTP_RATE`).
    pub rate_per_second: Option<f64>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    /// A revoked key's revocation can be undone until then (`cortex keys restore`), by this
    /// machine's clock (the database's decides); `None` once the window has passed.
    pub restorable_until: Option<String>,
    /// `active`, `expired` or `revoked`.
    pub state: &'static str,
}

/// A key just made, with the token to hand to its holder: printed once, never stored.
#[derive(Debug, Serialize)]
pub struct CreatedKey {
    #[serde(flatten)]
    pub key: KeyInfo,
    pub token: String,
    pub note: &'static str,
}

/// Why a presented token is refused. Each says only what is wrong with the token presented,
/// never anything about other keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// Not of the form `cortex_<16 hex>_<64 hex>`.
    Malformed,
    /// Well formed, but no key has this token.
    Unknown,
    Revoked,
    Expired,
}

/// The holder of a valid key: who, what they may do, how far and how fast.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyHolder {
    /// Tells this key from every other: its token's public lookup id (the name is unique
    /// only within the key's org).
    pub id: String,
    pub name: String,
    pub role: Role,
    pub bound: Bound,
    /// `None`: the server's default rate.
    pub rate: Option<Rate>,
}

impl KeyHolder {
    /// The key's holder as a caller: bound to the key's org and projects, standing at the
    /// project and branch its request names (see [`Caller::for_key`]), its changes recorded
    /// as the key's (`key:<org>/<name>`). `Err` says why a header is refused.
    pub fn caller(
        &self,
        project: Option<&str>,
        branch: Option<&str>,
    ) -> std::result::Result<Caller, cortex_domain::tenant::ProjectOutsideBound> {
        let principal = Principal::Key { org: self.bound.org.clone(), name: self.name.clone() };
        Ok(Caller::for_key(self.bound.clone(), project, branch)?.as_principal(principal))
    }
}

impl Keys<'_> {
    /// Makes a key. The token is in the answer and nowhere else.
    pub fn create(&self, spec: &KeySpec) -> Result<CreatedKey> {
        let store = self.service.whole_store("making an API key")?;
        let name = api_key::check_name(spec.name.trim(), "--name")?;
        let org = cortex_domain::scope::check_value("--org", &spec.org)?;
        let mut projects = Vec::new();
        for p in &spec.projects {
            let p = cortex_domain::scope::check_value("--project", p)?;
            if !projects.contains(&p) {
                projects.push(p);
            }
        }
        let role = Role::parse(&spec.role, "--role")?;
        let rate = spec.rate.as_deref().map(|r| Rate::parse(r, "--rate")).transpose()?;
        let now = self.service.now()?;
        let expires_at = spec.expires.as_deref().map(|e| parse_expiry(e, now)).transpose()?;
        let lookup = hex(&random::<8>()?);
        let secret = hex(&random::<32>()?);
        let row = ApiKeyRow {
            name,
            lookup: lookup.clone(),
            secret_hash: secret_hash(&secret),
            org,
            projects,
            role,
            rate_per_second: rate.map(|r| r.per_second),
            created_at: now,
            expires_at,
            revoked_at: None,
        };
        if !store.create_key(&row, &self.service.write_context("cortex keys"))? {
            return Err(ValidationError::new(
                ErrorCode::InvalidValue,
                "--name",
                format!("a key named `{}` exists already in the org `{}`", row.name, row.org),
                "choose another name (`cortex keys list` shows the names in use, revoked keys included; names are unique within an org)",
            )
            .into());
        }
        Ok(CreatedKey {
            key: info(&row, now),
            token: api_key::token(&lookup, &secret),
            note: "the token is shown this once: only its hash is stored. Clients send it as `Authorization: Bearer <token>`",
        })
    }

    /// Every key, oldest first, with its state now.
    pub fn list(&self) -> Result<Vec<KeyInfo>> {
        let now = crate::now_ms();
        Ok(self.service.whole_store("listing the API keys")?.keys()?.iter().map(|k| info(k, now)).collect())
    }

    /// Revokes the key named `name` (of `org`; without it, the name must be one org's only):
    /// from now on every request with it is refused. Undone by [`Keys::restore`] within
    /// [`api_key::RESTORE_WINDOW_TEXT`].
    pub fn revoke(&self, org: Option<&str>, name: &str) -> Result<KeyInfo> {
        let store = self.service.whole_store("revoking an API key")?;
        let (org, name) = (org.map(str::trim), name.trim());
        let key = one_key(store.keys()?, org, name, "revoke")?;
        let at = self.service.now()?;
        if !store.revoke_key(&key.org, name, at, &self.service.write_context("cortex keys"))? {
            return Err(ValidationError::new(
                ErrorCode::NotFound,
                "name",
                format!("the key `{name}` is revoked already"),
                "nothing to do",
            )
            .into());
        }
        self.reread(&key, "revoked", at)
    }

    /// Undoes the revocation of the key named `name` (of `org`, as for [`Keys::revoke`]) when
    /// it was revoked within [`api_key::RESTORE_WINDOW_TEXT`] by the database's clock: every
    /// server accepts it again from its next request. Refused, naming what to do, for a key
    /// that is not revoked or was revoked longer ago.
    pub fn restore(&self, org: Option<&str>, name: &str) -> Result<KeyInfo> {
        let store = self.service.whole_store("restoring an API key")?;
        let (org, name) = (org.map(str::trim), name.trim());
        let key = one_key(store.keys()?, org, name, "restore")?;
        let refused = |message: String, hint: String| -> Result<KeyInfo> {
            Err(ValidationError::new(ErrorCode::InvalidValue, "name", message, hint).into())
        };
        match store.restore_key(&key.org, name, &self.service.write_context("cortex keys"))? {
            KeyRestore::Restored => self.reread(&key, "restored", self.service.now()?),
            KeyRestore::NotRevoked => {
                refused(format!("the key `{name}` is not revoked"), "nothing to do: it is in use".into())
            }
            KeyRestore::TooLate => refused(
                format!(
                    "the key `{name}` was revoked more than {} ago: a revocation is undone within {} of it, then never",
                    api_key::RESTORE_WINDOW_TEXT,
                    api_key::RESTORE_WINDOW_TEXT
                ),
                format!("make a new key with `{}` and hand its token to the holder", create_again(&key)),
            ),
            KeyRestore::Unknown => Err(ServiceError::Internal(StoreError::Corrupt(format!(
                "the key `{name}` went missing as it was restored"
            )))),
        }
    }

    /// `key` as stored after a change (`done`: what the change did), its state as of `now`.
    fn reread(&self, key: &ApiKeyRow, done: &str, now: i64) -> Result<KeyInfo> {
        let store = self.service.whole_store("reading an API key")?;
        let row =
            store.keys()?.into_iter().find(|k| k.org == key.org && k.name == key.name).ok_or_else(|| {
                ServiceError::Internal(StoreError::Corrupt(format!(
                    "the key `{}` went missing as it was {done}",
                    key.name
                )))
            })?;
        Ok(info(&row, now))
    }

    /// Records in the audit trail that an admin signed in to the web UI (`how`: with which key
    /// or through which provider), in `org`, under the caller's principal.
    pub fn record_admin_sign_in(&self, org: &str, how: &str) -> Result<()> {
        let store = self.service.whole_store("recording a sign-in")?;
        store.record_sign_in(
            org,
            &format!("an admin signed in to the web UI {how}"),
            &self.service.write_context("web UI"),
        )?;
        Ok(())
    }

    /// Whether any key was ever made: from then on the HTTP server asks every request for one.
    pub fn any(&self) -> Result<bool> {
        Ok(self.service.whole_store("asking whether API keys exist")?.any_key()?)
    }

    /// The keys' limits as every server over this database shares them; `None` where each
    /// server keeps its own (SQLite), or for a key holder's view.
    pub fn shared_limits(&self) -> Option<std::sync::Arc<dyn cortex_store::SharedLimits>> {
        self.service.whole_store("sharing the keys' limits").ok()?.shared_limits()
    }

    /// The web UI's sessions as every server over this database shares them; `None` where each
    /// server keeps its own (SQLite), or for a key holder's view.
    pub fn shared_sessions(&self) -> Option<std::sync::Arc<dyn cortex_store::SharedSessions>> {
        self.service.whole_store("sharing the UI's sessions").ok()?.shared_sessions()
    }

    /// The holder of `token`, or why it is refused. The secret is compared with the stored
    /// hash in constant time; expiry by this machine's clock (a key's end is a date, not a
    /// race).
    pub fn authenticate(&self, token: &str) -> Result<std::result::Result<KeyHolder, AuthFailure>> {
        let store = self.service.whole_store("authenticating an API key")?;
        let Some((lookup, secret)) = api_key::parse_token(token) else {
            return Ok(Err(AuthFailure::Malformed));
        };
        let Some(row) = store.key_by_lookup(lookup)? else {
            return Ok(Err(AuthFailure::Unknown));
        };
        let presented = secret_hash(secret);
        if !bool::from(presented.as_bytes().ct_eq(row.secret_hash.as_bytes())) {
            return Ok(Err(AuthFailure::Unknown));
        }
        if row.revoked_at.is_some() {
            return Ok(Err(AuthFailure::Revoked));
        }
        if row.expires_at.is_some_and(|at| at <= crate::now_ms()) {
            return Ok(Err(AuthFailure::Expired));
        }
        Ok(Ok(KeyHolder {
            id: row.lookup,
            name: row.name,
            role: row.role,
            bound: Bound { org: row.org, projects: row.projects },
            rate: row.rate_per_second.map(|per_second| Rate { per_second }),
        }))
    }
}

/// The one key named `name` among `keys` (of `org` when given), for `cortex keys VERB`: an
/// unknown name, or one several orgs use with no org given, is refused naming what to do.
fn one_key(keys: Vec<ApiKeyRow>, org: Option<&str>, name: &str, verb: &str) -> Result<ApiKeyRow> {
    let mut found: Vec<ApiKeyRow> =
        keys.into_iter().filter(|k| k.name == name && org.is_none_or(|o| k.org == o)).collect();
    match found.len() {
        0 => {
            let within =
                org.map(|o| format!(" in org `{}`", cortex_domain::error::shown(o))).unwrap_or_default();
            Err(ValidationError::new(
                ErrorCode::NotFound,
                "name",
                format!("no key is named `{}`{within}", cortex_domain::error::shown(name)),
                "`cortex keys list` shows the names",
            )
            .into())
        }
        1 => Ok(found.remove(0)),
        _ => {
            let orgs: Vec<&str> = found.iter().map(|k| k.org.as_str()).collect();
            Err(ValidationError::new(
                ErrorCode::InvalidValue,
                "--org",
                format!("keys named `{name}` exist in the orgs {}", orgs.join(", ")),
                format!("name the key's org: cortex keys {verb} {name} --org <org>"),
            )
            .into())
        }
    }
}

/// The `cortex keys create` command that makes a key like `key` under a new name (names stay
/// taken by revoked keys).
fn create_again(key: &ApiKeyRow) -> String {
    let projects: String = key.projects.iter().map(|p| format!(" --project {p}")).collect();
    format!("cortex keys create --name <new name> --org {} --role {}{projects}", key.org, key.role.as_str())
}

fn info(row: &ApiKeyRow, now: i64) -> KeyInfo {
    let state = match (row.revoked_at, row.expires_at) {
        (Some(_), _) => "revoked",
        (None, Some(at)) if at <= now => "expired",
        _ => "active",
    };
    KeyInfo {
        name: row.name.clone(),
        org: row.org.clone(),
        projects: row.projects.clone(),
        role: row.role,
        rate_per_second: row.rate_per_second,
        created_at: rfc3339(row.created_at),
        expires_at: row.expires_at.map(rfc3339),
        revoked_at: row.revoked_at.map(rfc3339),
        restorable_until: row
            .revoked_at
            .filter(|at| {
                *at + api_key::RESTORE_WINDOW_MS > now && *at <= now + api_key::RESTORE_CLOCK_SLACK_MS
            })
            .map(|at| rfc3339(at + api_key::RESTORE_WINDOW_MS)),
        state,
    }
}

fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| ms.to_string())
}

/// `--expires`: a date (the key stops working as that day starts, UTC) or an RFC 3339
/// instant, in the future.
fn parse_expiry(text: &str, now: i64) -> Result<i64> {
    let text = text.trim();
    let at = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_millis())
        .or_else(|| chrono::DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_millis()))
        .ok_or_else(|| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                "--expires",
                format!("`{}` is not a date", cortex_domain::error::shown(text)),
                "give a date like 2027-01-31 (the key stops working as that day starts, UTC) or an RFC 3339 time like 2027-01-31T18:00:00Z",
            )
        })?;
    if at <= now {
        return Err(ValidationError::new(
            ErrorCode::InvalidValue,
            "--expires",
            format!("`{text}` is not in the future"),
            "give a date after today, or leave --expires out for a key that does not expire",
        )
        .into());
    }
    Ok(at)
}

/// The stored form of a secret: SHA-256 of its text, lowercase hex. The secret has 256 random
/// bits, so a fast hash is enough (no password stretching: nothing to guess).
fn secret_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| {
        ServiceError::Internal(StoreError::Unsupported {
            what: format!("the operating system's random number generator failed: {e}"),
            fix: "a key cannot be made without it; check the system (/dev/urandom, getrandom)".into(),
        })
    })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_a_future_date_or_instant() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z").unwrap().timestamp_millis();
        let day = parse_expiry("2026-07-01", now).unwrap();
        assert_eq!(rfc3339(day), "2026-07-01T00:00:00Z");
        assert_eq!(rfc3339(parse_expiry("2026-07-01T12:30:00+02:00", now).unwrap()), "2026-07-01T10:30:00Z");
        for bad in ["2026-05-31", "tomorrow", "2026-13-01"] {
            match parse_expiry(bad, now) {
                Err(ServiceError::Invalid(e)) => assert_eq!(e.field, "--expires", "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn secrets_are_hashed_to_64_hex_digits() {
        let h = secret_hash("abc");
        assert_eq!(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_ne!(random::<32>().unwrap(), random::<32>().unwrap());
    }
}
