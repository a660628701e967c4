//! Natural keys: what makes two items of some kinds the same thing, whatever their text.
//!
//! Within one project (org + project):
//! - an issue is its `tracker` + `external_id`: storing it again updates it (same id);
//! - a pull request's context is its `pr_number`: storing it again updates it;
//! - a DDL migration is its `migration_id`: the same DDL again is a duplicate, a different DDL
//!   under the same id is refused (a migration never changes once applied);
//! - a change is its `subject_ref` + `summary`: the same again is a duplicate;
//! - an entity is its `entity_type` + `name` (case-insensitive): storing it again merges into it;
//! - a relation is its `from` + `to` + `relation_type` (ends as resolved item ids): the same
//!   relation again is a duplicate;
//! - an observation is its entity + its normalized text: the same text again is a duplicate.

use crate::error::{ErrorCode, ValidationError};
use crate::kind::Kind;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// What storing an item whose natural key is taken does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMatch {
    /// Update the stored item (status `updated`, same id).
    Update,
    /// Skip it as a duplicate of the stored item.
    Skip,
    /// Skip it when its checksum matches the stored one; refuse it otherwise.
    SameChecksum,
}

/// The item's natural key, if its kind has one; fields joined by U+001F.
pub fn natural_key(kind: Kind, data: &Map<String, Value>) -> Option<String> {
    let text = |field: &str| -> Option<String> {
        match data.get(field)? {
            Value::String(s) => Some(s.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    match kind {
        Kind::Issue => {
            Some(format!("issue\u{1f}{}\u{1f}{}", text("tracker")?.to_lowercase(), text("external_id")?))
        }
        Kind::PrContext => Some(format!("pr\u{1f}{}", text("pr_number")?)),
        Kind::Ddl => Some(format!("ddl\u{1f}{}", text("migration_id")?)),
        Kind::Change => Some(format!("change\u{1f}{}\u{1f}{}", text("subject_ref")?, hex(&text("summary")?))),
        Kind::Entity => Some(format!(
            "entity\u{1f}{}\u{1f}{}",
            text("entity_type")?.to_lowercase(),
            text("name")?.to_lowercase()
        )),
        // Only once the service resolved the ends to ids (an unresolved end is an object).
        Kind::Relation => Some(format!(
            "relation\u{1f}{}\u{1f}{}\u{1f}{}",
            text("from")?,
            text("to")?,
            text("relation_type")?.to_lowercase()
        )),
        Kind::Observation => Some(format!(
            "observation\u{1f}{}\u{1f}{}",
            text("entity")?,
            hex(&crate::text::normalize(&text("text")?))
        )),
        _ => None,
    }
}

pub fn on_match(kind: Kind) -> OnMatch {
    match kind {
        Kind::Issue | Kind::PrContext | Kind::Entity => OnMatch::Update,
        Kind::Ddl => OnMatch::SameChecksum,
        _ => OnMatch::Skip,
    }
}

/// What makes items of `kind` the same, for messages.
/// The verdict on a migration stored again under its `migration_id`: the same checksum is the
/// same migration; another checksum is refused, since an applied migration never changes. The
/// field is relative to the item (`data.ddl_text`).
pub fn migration_changed(stored: &Value, new: &Value, owner: &str) -> Option<ValidationError> {
    if stored.get("checksum") == new.get("checksum") {
        return None;
    }
    Some(ValidationError::new(
        ErrorCode::BusinessRuleBlocked,
        "data.ddl_text",
        format!(
            "migration {} is already stored (item {owner}) with another checksum; an applied migration never changes",
            new.get("migration_id").map(|v| v.to_string()).unwrap_or_default()
        ),
        "store the change as a new migration with its own migration_id",
    ))
}

pub fn describe(kind: Kind) -> &'static str {
    match kind {
        Kind::Issue => "an issue with the same tracker and external_id in this project",
        Kind::PrContext => "a pull request context with the same pr_number in this project",
        Kind::Ddl => "a migration with the same migration_id and checksum in this project",
        Kind::Change => "a change with the same subject_ref and summary in this project",
        Kind::Entity => "an entity with the same entity_type and name in this project",
        Kind::Relation => "the same relation (from, to, relation_type) in this project",
        Kind::Observation => "the same observation text on this entity",
        _ => "an item with the same natural key in this project",
    }
}

fn hex(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Sets a DDL item's `checksum` to the SHA-256 of its `ddl_text`, computed here; a checksum
/// the caller supplied must match it. Field paths are relative to `data`.
pub fn apply_ddl_checksum(data: &mut Map<String, Value>) -> Result<(), ValidationError> {
    let Some(Value::String(ddl)) = data.get("ddl_text") else { return Ok(()) };
    let computed = hex(ddl);
    if let Some(Value::String(given)) = data.get("checksum")
        && !given.trim().eq_ignore_ascii_case(&computed)
    {
        return Err(ValidationError::new(
            ErrorCode::InvalidValue,
            "checksum",
            format!("`checksum` {given} is not the SHA-256 of `ddl_text` ({computed})"),
            "leave `checksum` out (the server computes it), or send the SHA-256 hex of ddl_text exactly as sent",
        ));
    }
    data.insert("checksum".into(), Value::String(computed));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn keys_per_kind() {
        let issue =
            natural_key(Kind::Issue, &map(json!({"tracker": "Jira ", "external_id": "OPS-1", "title": "x"})));
        assert_eq!(issue.as_deref(), Some("issue\u{1f}jira\u{1f}OPS-1"));
        assert_eq!(
            natural_key(Kind::PrContext, &map(json!({"pr_number": 42}))).as_deref(),
            Some("pr\u{1f}42")
        );
        assert_eq!(
            natural_key(Kind::Ddl, &map(json!({"migration_id": "0007"}))).as_deref(),
            Some("ddl\u{1f}0007")
        );
        let a = natural_key(Kind::Change, &map(json!({"subject_ref": "api", "summary": "bump"})));
        let b = natural_key(Kind::Change, &map(json!({"subject_ref": "api", "summary": "bump more"})));
        assert!(a.is_some() && a != b);
        assert_eq!(natural_key(Kind::Section, &map(json!({"title": "t"}))), None);
        assert_eq!(
            natural_key(Kind::Entity, &map(json!({"entity_type": "Service", "name": "Billing "}))),
            natural_key(Kind::Entity, &map(json!({"entity_type": "service", "name": "billing"})))
        );
        let unresolved =
            map(json!({"from": {"entity_type": "service", "name": "a"}, "to": "x", "relation_type": "uses"}));
        assert_eq!(natural_key(Kind::Relation, &unresolved), None);
        assert!(
            natural_key(Kind::Relation, &map(json!({"from": "a", "to": "b", "relation_type": "uses"})))
                .is_some()
        );
        assert_eq!(
            natural_key(Kind::Observation, &map(json!({"entity": "e", "text": "Runs on  port 80"}))),
            natural_key(Kind::Observation, &map(json!({"entity": "e", "text": "runs on port 80"})))
        );
        assert_eq!(
            (on_match(Kind::Issue), on_match(Kind::Ddl), on_match(Kind::Change)),
            (OnMatch::Update, OnMatch::SameChecksum, OnMatch::Skip)
        );
    }

    #[test]
    fn the_server_computes_the_ddl_checksum_and_checks_a_given_one() {
        let mut data = map(json!({"migration_id": "1", "ddl_text": "CREATE TABLE t ()"}));
        apply_ddl_checksum(&mut data).unwrap();
        let sum = data["checksum"].as_str().unwrap().to_string();
        assert_eq!(sum.len(), 64);
        let mut same = map(json!({"ddl_text": "CREATE TABLE t ()", "checksum": sum.to_uppercase()}));
        assert!(apply_ddl_checksum(&mut same).is_ok());
        let mut wrong = map(json!({"ddl_text": "CREATE TABLE t ()", "checksum": "abc"}));
        let err = apply_ddl_checksum(&mut wrong).unwrap_err();
        assert_eq!(err.field, "checksum");
    }
}
