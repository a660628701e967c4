//! Whether each API key row is what its audit records say it is. Keys are the tenant
//! boundary, and the database writes a `key_create` record (org, role, projects, and since the
//! audit_principal migration the expiry) when a key is made, a `key_revoke` record when it is revoked and a
//! `key_restore` record when a revocation is undone; a key row raised to another role, org or
//! set of projects, given a later expiry, revived without a restore record, or planted with the audit trigger out of the way contradicts those records. What
//! the records do not hold (the secret's hash, the rate, an older record's expiry) cannot be
//! checked this way. A key is its org and name: two orgs may each have a key of one name.

use crate::{ApiKeyRow, AuditOperation};

/// One `key_create`, `key_revoke` or `key_restore` record: its operation, the org it was
/// written in, its summary (`created API key NAME (role ROLE, projects all|LIST); expires
/// never|TIME`, the expiry absent before the audit_principal migration; `revoked API key NAME`;
/// `restored API key NAME`).
#[derive(Debug, Clone)]
pub struct KeyRecord {
    pub operation: AuditOperation,
    pub org: String,
    pub summary: String,
}

/// A key row its records do not explain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum KeyMismatch {
    /// No record made this key: it was inserted with the audit trigger out of the way.
    NoRecord { name: String },
    /// The key's role, org or projects are not those it was made with.
    Changed { name: String, field: String, recorded: String, found: String },
    /// The key is live, but its newest revoke or restore record revoked it.
    RevivedWithoutRecord { name: String },
    /// The key is revoked, but no record revoked it since it was last restored.
    RevokedWithoutRecord { name: String },
}

impl std::fmt::Display for KeyMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyMismatch::NoRecord { name } => {
                write!(f, "API key {name} has no key_create record: it was added with auditing off")
            }
            KeyMismatch::Changed { name, field, recorded, found } => write!(
                f,
                "API key {name} has {field} {found}, but was created with {recorded}: it was changed without an audit record"
            ),
            KeyMismatch::RevivedWithoutRecord { name } => {
                write!(f, "API key {name} is live, but an audit record revoked it")
            }
            KeyMismatch::RevokedWithoutRecord { name } => {
                write!(f, "API key {name} is revoked, but no audit record revoked it")
            }
        }
    }
}

/// Every key row that its records contradict.
pub fn check_keys(keys: &[ApiKeyRow], records: &[KeyRecord]) -> Vec<KeyMismatch> {
    keys.iter().filter_map(|key| check_key(key, records)).collect()
}

fn check_key(key: &ApiKeyRow, records: &[KeyRecord]) -> Option<KeyMismatch> {
    let name = || key.name.clone();
    let created_prefix = format!("created API key {} (role ", key.name);
    let made =
        |r: &&KeyRecord| r.operation == AuditOperation::KeyCreate && r.summary.starts_with(&created_prefix);
    // Its own org's record; failing that, another org's key of this name, which the row was
    // moved from when no key of its name was ever made in its org.
    let Some(created) = records
        .iter()
        .rev()
        .filter(made)
        .find(|r| r.org == key.org)
        .or_else(|| records.iter().rev().find(made))
    else {
        return Some(KeyMismatch::NoRecord { name: name() });
    };
    let (role, projects, expires) = parse_created(&created.summary[created_prefix.len()..]);
    let mut found_projects = key.projects.clone();
    found_projects.sort();
    let changed = |field: &str, recorded: String, found: String| KeyMismatch::Changed {
        name: name(),
        field: field.into(),
        recorded,
        found,
    };
    if created.org != key.org {
        return Some(changed("org", created.org.clone(), key.org.clone()));
    }
    if role != key.role.as_str() {
        return Some(changed("role", role, key.role.as_str().into()));
    }
    if projects != found_projects {
        return Some(changed("projects", shown(&projects), shown(&found_projects)));
    }
    if let Some(expires) = expires {
        // The trigger writes the time to the millisecond from a float: within one of it.
        let agrees = match (&expires, key.expires_at) {
            (Expiry::Never, None) => true,
            (Expiry::At(recorded), Some(found)) => (recorded - found).abs() <= 1,
            _ => false,
        };
        if !agrees {
            let found = key.expires_at.map_or("never".to_string(), cortex_domain::time::format_instant);
            return Some(changed("expiry", expires.to_string(), found));
        }
    }
    // The newest revocation or restore of this key says whether it is revoked now.
    let revoked = format!("revoked API key {}", key.name);
    let restored = format!("restored API key {}", key.name);
    let revoke_recorded = records
        .iter()
        .rev()
        .filter(|r| r.org == key.org)
        .find_map(|r| match r.operation {
            AuditOperation::KeyRevoke if r.summary == revoked => Some(true),
            AuditOperation::KeyRestore if r.summary == restored => Some(false),
            _ => None,
        })
        .unwrap_or(false);
    match (key.revoked_at.is_some(), revoke_recorded) {
        (false, true) => Some(KeyMismatch::RevivedWithoutRecord { name: name() }),
        (true, false) => Some(KeyMismatch::RevokedWithoutRecord { name: name() }),
        _ => None,
    }
}

/// A key's expiry as its creation record says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expiry {
    Never,
    At(i64),
}

impl std::fmt::Display for Expiry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expiry::Never => f.write_str("never"),
            Expiry::At(ms) => f.write_str(&cortex_domain::time::format_instant(*ms)),
        }
    }
}

/// `ROLE, projects all|LIST)[; expires never|TIME]` → the role, the projects (sorted) and the
/// expiry when the record names one. SQLite writes the list as a JSON array, PostgreSQL joined
/// with `, `. An expiry that does not parse reads as "expires never", which no key with an
/// expiry matches.
fn parse_created(rest: &str) -> (String, Vec<String>, Option<Expiry>) {
    let (rest, expires) = match rest.rsplit_once("); expires ") {
        Some((head, expiry)) => {
            let expiry = match cortex_domain::time::parse_instant(expiry) {
                Ok(ms) if expiry != "never" => Expiry::At(ms),
                _ => Expiry::Never,
            };
            (head, Some(expiry))
        }
        None => (rest.strip_suffix(')').unwrap_or(rest), None),
    };
    let (role, projects) = rest.split_once(", projects ").unwrap_or((rest, "all"));
    let mut projects: Vec<String> = match projects {
        "all" => Vec::new(),
        list if list.starts_with('[') => {
            serde_json::from_str(list).unwrap_or_else(|_| vec![list.to_string()])
        }
        list => list.split(", ").map(str::to_string).collect(),
    };
    projects.sort();
    (role.to_string(), projects, expires)
}

fn shown(projects: &[String]) -> String {
    if projects.is_empty() { "all projects".into() } else { projects.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_domain::api_key::Role;

    fn key(name: &str, role: Role, projects: &[&str]) -> ApiKeyRow {
        ApiKeyRow {
            name: name.into(),
            lookup: "l".into(),
            secret_hash: "h".into(),
            org: "acme".into(),
            projects: projects.iter().map(|p| p.to_string()).collect(),
            role,
            rate_per_second: None,
            created_at: 0,
            expires_at: None,
            revoked_at: None,
        }
    }

    fn created(summary: &str) -> KeyRecord {
        KeyRecord { operation: AuditOperation::KeyCreate, org: "acme".into(), summary: summary.into() }
    }

    #[test]
    fn keys_as_made_pass_in_both_backends_spellings() {
        let keys = [key("ci", Role::Read, &["api", "web"]), key("lead", Role::Admin, &[])];
        let sqlite = [
            created(r#"created API key ci (role read, projects ["web","api"])"#),
            created("created API key lead (role admin, projects all)"),
        ];
        let postgres = [
            created("created API key ci (role read, projects web, api)"),
            created("created API key lead (role admin, projects all)"),
        ];
        assert_eq!(check_keys(&keys, &sqlite), []);
        assert_eq!(check_keys(&keys, &postgres), []);
    }

    #[test]
    fn an_expiry_recorded_is_checked_and_two_orgs_keys_of_one_name_are_apart() {
        let mut ci = key("ci", Role::Read, &["api"]);
        ci.expires_at = Some(1_801_353_600_000);
        let made =
            [created("created API key ci (role read, projects api); expires 2027-01-31T00:00:00.000Z")];
        assert_eq!(check_keys(std::slice::from_ref(&ci), &made), []);
        let mut later = ci.clone();
        later.expires_at = Some(1_901_440_000_000);
        assert!(matches!(
            check_keys(&[later], &made).pop(),
            Some(KeyMismatch::Changed { field, .. }) if field == "expiry"
        ));
        let mut forever = ci.clone();
        forever.expires_at = None;
        assert_eq!(check_keys(&[forever.clone()], &made).len(), 1);
        let never = [created("created API key ci (role read, projects api); expires never")];
        assert_eq!(check_keys(&[forever], &never), []);
        assert_eq!(check_keys(std::slice::from_ref(&ci), &never).len(), 1);

        // Another org's `ci`, made later with another role, says nothing about acme's.
        let mut records = made.to_vec();
        records.push(KeyRecord {
            operation: AuditOperation::KeyCreate,
            org: "globex".into(),
            summary: "created API key ci (role admin, projects all); expires never".into(),
        });
        records.push(KeyRecord {
            operation: AuditOperation::KeyRevoke,
            org: "globex".into(),
            summary: "revoked API key ci".into(),
        });
        assert_eq!(check_keys(&[ci], &records), []);
    }

    #[test]
    fn escalation_revival_and_planting_are_named() {
        let records = [
            created("created API key ci (role read, projects api)"),
            KeyRecord {
                operation: AuditOperation::KeyRevoke,
                org: "acme".into(),
                summary: "revoked API key ci".into(),
            },
        ];
        let mut revoked = key("ci", Role::Read, &["api"]);
        revoked.revoked_at = Some(1);
        assert_eq!(check_keys(std::slice::from_ref(&revoked), &records), []);
        let field = |k: ApiKeyRow| match check_keys(&[k], &records).pop() {
            Some(KeyMismatch::Changed { field, .. }) => field,
            other => format!("{other:?}"),
        };
        let mut admin = revoked.clone();
        admin.role = Role::Admin;
        assert_eq!(field(admin), "role");
        let mut evil = revoked.clone();
        evil.org = "evil".into();
        assert_eq!(field(evil), "org");
        let mut everywhere = revoked.clone();
        everywhere.projects.clear();
        assert_eq!(field(everywhere), "projects");
        let revived = key("ci", Role::Read, &["api"]);
        assert_eq!(
            check_keys(&[revived], &records),
            [KeyMismatch::RevivedWithoutRecord { name: "ci".into() }]
        );
        // Restored on the record: live; revoked again after the restore: revoked.
        let mut undone = records.to_vec();
        undone.push(KeyRecord {
            operation: AuditOperation::KeyRestore,
            org: "acme".into(),
            summary: "restored API key ci".into(),
        });
        let live = key("ci", Role::Read, &["api"]);
        assert_eq!(check_keys(std::slice::from_ref(&live), &undone), []);
        assert_eq!(
            check_keys(std::slice::from_ref(&revoked), &undone),
            [KeyMismatch::RevokedWithoutRecord { name: "ci".into() }]
        );
        undone.push(records[1].clone());
        assert_eq!(check_keys(std::slice::from_ref(&revoked), &undone), []);
        // Another org's restore of a key of the same name does not explain this one.
        let mut elsewhere = records.to_vec();
        elsewhere.push(KeyRecord {
            operation: AuditOperation::KeyRestore,
            org: "globex".into(),
            summary: "restored API key ci".into(),
        });
        assert_eq!(check_keys(std::slice::from_ref(&live), &elsewhere).len(), 1);
        let planted = key("root", Role::Admin, &[]);
        assert_eq!(check_keys(&[planted], &records), [KeyMismatch::NoRecord { name: "root".into() }]);
        // A name that starts like another key's is not that key.
        let longer = key("ci2", Role::Read, &["api"]);
        assert_eq!(check_keys(&[longer], &records), [KeyMismatch::NoRecord { name: "ci2".into() }]);
    }
}
