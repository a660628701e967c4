//! Who made a change, as the server established it: the principal the audit trail names beside
//! what the client says of itself (an item's `source`: actor, tool, session — a claim, taken as
//! sent). A principal is never read from a request's body: the HTTP gate finds it from the key
//! or token presented, the CLI from the operating system.
//!
//! Its text (`Display`) is what the trail stores and hashes, so each form is fixed for good:
//! - `key:<org>/<name>`: an API key (names are unique within an org and never reused: keys are
//!   revoked, never deleted);
//! - `oauth:<subject> at <issuer>`, with ` (client <id>)` when the token names its client;
//! - `local:<user>`: the operating-system user running the CLI or the stdio server (`local`
//!   alone when it cannot be named);
//! - `local (loopback, no key)`: a request to a loopback server while no key exists, from
//!   someone on this machine the server cannot name.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Principal {
    /// The holder of an API key.
    Key { org: String, name: String },
    /// The holder of an OAuth access token: its subject at the issuer that signed it, and the
    /// client it was issued to.
    OAuth { issuer: String, subject: String, client: Option<String> },
    /// The user of this machine, by the operating system's account name when it has one.
    Local { user: Option<String> },
    /// A keyless request on a loopback server.
    Loopback,
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Principal::Key { org, name } => write!(f, "key:{org}/{name}"),
            Principal::OAuth { issuer, subject, client } => {
                write!(f, "oauth:{subject} at {issuer}")?;
                match client {
                    Some(client) => write!(f, " (client {client})"),
                    None => Ok(()),
                }
            }
            Principal::Local { user: Some(user) } => write!(f, "local:{user}"),
            Principal::Local { user: None } => f.write_str("local"),
            Principal::Loopback => f.write_str("local (loopback, no key)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_names_who_and_where_from() {
        let key = Principal::Key { org: "acme".into(), name: "ana".into() };
        assert_eq!(key.to_string(), "key:acme/ana");
        let oauth = Principal::OAuth {
            issuer: "https://id.example.com/".into(),
            subject: "u-17".into(),
            client: Some("claude".into()),
        };
        assert_eq!(oauth.to_string(), "oauth:u-17 at https://id.example.com/ (client claude)");
        let bare = Principal::OAuth {
            issuer: "https://id.example.com/".into(),
            subject: "u-17".into(),
            client: None,
        };
        assert_eq!(bare.to_string(), "oauth:u-17 at https://id.example.com/");
        assert_eq!(Principal::Local { user: Some("dana".into()) }.to_string(), "local:dana");
        assert_eq!(Principal::Local { user: None }.to_string(), "local");
        assert_eq!(Principal::Loopback.to_string(), "local (loopback, no key)");
    }

    #[test]
    fn two_orgs_keys_of_one_name_are_two_principals() {
        let a = Principal::Key { org: "acme".into(), name: "ci".into() };
        let b = Principal::Key { org: "globex".into(), name: "ci".into() };
        assert_ne!(a.to_string(), b.to_string());
    }
}
