//! From a verified token's claims to who its holder is: the subject, the client, the role its
//! scopes grant and the tenant bound its org and projects claims give, the same [`Bound`] a
//! key has. Pure: the claims come in as JSON, nothing is fetched.

use cortex_domain::api_key::Role;
use cortex_domain::tenant::Bound;
use serde_json::{Map, Value};

pub const SCOPE_READ: &str = "memory:read";
pub const SCOPE_WRITE: &str = "memory:write";
pub const SCOPE_ADMIN: &str = "memory:admin";
/// What the metadata document offers, narrowest first.
pub const SCOPES: [&str; 3] = [SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN];

/// Where a token says who its holder is (the configured claim names, or a fixed org).
#[derive(Debug, Clone)]
pub struct ClaimNames<'a> {
    pub org: &'a str,
    pub projects: &'a str,
    pub fixed_org: Option<&'a str>,
}

/// The holder of a token, as a key's holder is described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub subject: String,
    /// The client the token was issued to (`client_id`, else `azp`, Entra's `appid` or Okta's `cid`).
    pub client_id: Option<String>,
    pub role: Role,
    pub bound: Bound,
}

/// A verified token that still grants nothing here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimError {
    NoSubject,
    /// None of `memory:read`, `memory:write`, `memory:admin` in `scope` / `scp`.
    NoScope,
    /// The org claim is missing or not a usable name.
    Org {
        claim: String,
        problem: String,
    },
    Projects {
        claim: String,
        problem: String,
    },
}

impl ClaimError {
    pub fn message(&self) -> String {
        match self {
            ClaimError::NoSubject => "the token has no `sub` claim".into(),
            ClaimError::NoScope => format!("the token grants none of the scopes {}", SCOPES.join(", ")),
            ClaimError::Org { claim, problem } => format!("the token's org claim `{claim}` {problem}"),
            ClaimError::Projects { claim, problem } => {
                format!("the token's projects claim `{claim}` {problem}")
            }
        }
    }

    pub fn hint(&self) -> &'static str {
        match self {
            ClaimError::NoSubject => "the identity provider must put the user's id in `sub`",
            ClaimError::NoScope => {
                "ask for the scope memory:read (finds) or memory:write (also stores); the identity provider's admin must grant it to the user or the client"
            }
            ClaimError::Org { .. } => {
                "the identity provider must add the claim to access tokens (a string: the org), or the server's admin sets CORTEX_OAUTH_ORG_CLAIM to the claim it uses, or CORTEX_OAUTH_ORG for a single-tenant server"
            }
            ClaimError::Projects { .. } => {
                "the claim must be a list of project names (or one string of names separated by spaces); leave it out for every project of the org"
            }
        }
    }
}

pub fn identity(claims: &Map<String, Value>, names: &ClaimNames) -> Result<Identity, ClaimError> {
    let subject = claims.get("sub").and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    let subject = subject.ok_or(ClaimError::NoSubject)?.to_string();
    let client_id = ["client_id", "azp", "appid", "cid"]
        .iter()
        .find_map(|c| claims.get(*c).and_then(Value::as_str))
        .map(str::to_string);
    let role = role(claims).ok_or(ClaimError::NoScope)?;
    let org = match names.fixed_org {
        Some(org) => org.to_string(),
        None => org(claims, names.org)?,
    };
    let projects = projects(claims, names.projects)?;
    Ok(Identity { subject, client_id, role, bound: Bound { org, projects } })
}

/// The widest role the token's scopes grant: `scope` (space-separated, RFC 9068) or `scp`
/// (an array, or a space-separated string as Entra ID sends it).
pub fn role(claims: &Map<String, Value>) -> Option<Role> {
    let granted: Vec<&str> = ["scope", "scp"].iter().flat_map(|c| words(claims.get(*c))).collect();
    [(SCOPE_ADMIN, Role::Admin), (SCOPE_WRITE, Role::Write), (SCOPE_READ, Role::Read)]
        .into_iter()
        .find(|(scope, _)| granted.contains(scope))
        .map(|(_, role)| role)
}

fn words(value: Option<&Value>) -> Vec<&str> {
    match value {
        Some(Value::String(s)) => s.split_whitespace().collect(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn org(claims: &Map<String, Value>, claim: &str) -> Result<String, ClaimError> {
    let bad = |problem: &str| ClaimError::Org { claim: claim.to_string(), problem: problem.to_string() };
    match claims.get(claim) {
        None | Some(Value::Null) => Err(bad("is missing")),
        Some(Value::String(s)) => cortex_domain::scope::check_value("org", s)
            .map_err(|e| bad(&format!("is not a name: {}", e.message))),
        Some(_) => Err(bad("is not a string")),
    }
}

/// The projects the token may reach; none named: every project of its org (as a key made
/// without `--project`).
fn projects(claims: &Map<String, Value>, claim: &str) -> Result<Vec<String>, ClaimError> {
    let bad = |problem: String| ClaimError::Projects { claim: claim.to_string(), problem };
    let names: Vec<&str> = match claims.get(claim) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => s.split_whitespace().collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().ok_or_else(|| bad("holds a value that is not a string".into())))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("is neither a list nor a string".into())),
    };
    let projects = names
        .into_iter()
        .map(|p| {
            cortex_domain::scope::check_value("project", p)
                .map_err(|e| bad(format!("names a bad project: {}", e.message)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if projects.is_empty() && claims.get(claim).is_some() {
        // An empty list is read as "no project", never as "every project".
        return Err(bad("is an empty list".into()));
    }
    Ok(projects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NAMES: ClaimNames = ClaimNames { org: "org", projects: "projects", fixed_org: None };

    fn of(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn scopes_map_to_the_widest_role_from_scope_or_scp() {
        assert_eq!(role(&of(json!({"scope": "openid memory:read"}))), Some(Role::Read));
        assert_eq!(role(&of(json!({"scope": "memory:read memory:write"}))), Some(Role::Write));
        assert_eq!(role(&of(json!({"scp": ["memory:admin"]}))), Some(Role::Admin));
        assert_eq!(role(&of(json!({"scp": "memory:write profile"}))), Some(Role::Write));
        assert_eq!(role(&of(json!({"scope": "memory:readx memory"}))), None);
    }

    #[test]
    fn a_token_becomes_a_bound_identity() {
        let id = identity(
            &of(json!({"sub": "u1", "client_id": "claude", "scope": "memory:write", "org": "acme", "projects": ["api", "web"]})),
            &NAMES,
        )
        .unwrap();
        assert_eq!(id.bound, Bound { org: "acme".into(), projects: vec!["api".into(), "web".into()] });
        assert_eq!(
            (id.role, id.subject.as_str(), id.client_id.as_deref()),
            (Role::Write, "u1", Some("claude"))
        );
        let whole_org =
            identity(&of(json!({"sub": "u1", "scope": "memory:read", "org": "acme"})), &NAMES).unwrap();
        assert!(whole_org.bound.projects.is_empty());
        assert_eq!(whole_org.client_id, None);
        let fixed = ClaimNames { fixed_org: Some("solo"), ..NAMES };
        assert_eq!(
            identity(&of(json!({"sub": "u", "scope": "memory:read", "org": "x"})), &fixed).unwrap().bound.org,
            "solo"
        );
    }

    #[test]
    fn what_grants_nothing_is_named() {
        let no_scope = identity(&of(json!({"sub": "u", "org": "acme"})), &NAMES).unwrap_err();
        assert_eq!(no_scope, ClaimError::NoScope);
        let no_org = identity(&of(json!({"sub": "u", "scope": "memory:read"})), &NAMES).unwrap_err();
        assert!(no_org.message().contains("`org` is missing"), "{}", no_org.message());
        let empty =
            identity(&of(json!({"sub": "u", "scope": "memory:read", "org": "a", "projects": []})), &NAMES);
        assert!(matches!(empty, Err(ClaimError::Projects { .. })));
        let numbers = identity(&of(json!({"sub": "u", "scope": "memory:read", "org": 7})), &NAMES);
        assert!(matches!(numbers, Err(ClaimError::Org { .. })));
        assert_eq!(
            identity(&of(json!({"scope": "memory:read", "org": "a"})), &NAMES),
            Err(ClaimError::NoSubject)
        );
    }
}
