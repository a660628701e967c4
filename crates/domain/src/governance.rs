//! Governance rules: what a team has agreed on does not change silently.
//!
//! An accepted decision (ADR) keeps the title, rationale, component and alternatives it was
//! accepted with: an update that changes any of them is refused (`business_rule_blocked`) and
//! the way forward is a new decision that supersedes it. Its status (e.g. to `deprecated`) and
//! its consequences may still be updated.

use crate::error::{ErrorCode, ValidationError};
use crate::kind::Kind;
use serde_json::Value;
use uuid::Uuid;

/// The fields of an accepted decision that never change.
pub const ACCEPTED_DECISION_FIELDS: &[&str] = &["title", "rationale", "component", "alternatives_considered"];

/// An item as stored, as far as the rules need it.
#[derive(Debug, Clone, Copy)]
pub struct StoredView<'a> {
    pub id: Uuid,
    pub kind: Kind,
    pub status: Option<&'a str>,
    pub data: &'a Value,
}

/// Whether replacing the stored item's `data` with `new_data` is allowed. The error's field is
/// relative (`data.rationale`); the caller prefixes the item's position.
pub fn check_update(stored: StoredView<'_>, new_data: &Value) -> Result<(), ValidationError> {
    if stored.kind == Kind::Decision && stored.status == Some("accepted") {
        for field in ACCEPTED_DECISION_FIELDS {
            if stored.data.get(field) != new_data.get(field) {
                return Err(ValidationError::new(
                    ErrorCode::BusinessRuleBlocked,
                    format!("data.{field}"),
                    format!("decision {} is accepted: its `{field}` cannot change", stored.id),
                    format!(
                        "store a new decision with \"supersedes\": \"{}\" that says what changed; \
                         an accepted decision may only change its status or consequences",
                        stored.id
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decision(status: &str) -> Value {
        json!({"component": "db", "status": status, "title": "Use PG", "rationale": "ACID",
               "alternatives_considered": ["Mongo"], "consequences": "ops"})
    }

    fn view<'a>(data: &'a Value, status: &'a str) -> StoredView<'a> {
        StoredView { id: Uuid::nil(), kind: Kind::Decision, status: Some(status), data }
    }

    #[test]
    fn an_accepted_decision_keeps_what_it_was_accepted_with() {
        let stored = decision("accepted");
        for field in ACCEPTED_DECISION_FIELDS {
            let mut changed = stored.clone();
            changed[*field] = json!("something else");
            let err = check_update(view(&stored, "accepted"), &changed).unwrap_err();
            assert_eq!(
                (err.code, err.field.as_str()),
                (ErrorCode::BusinessRuleBlocked, &*format!("data.{field}"))
            );
            assert!(err.human_hint.contains("supersedes"), "{}", err.human_hint);
        }
        let mut removed = stored.clone();
        removed.as_object_mut().unwrap().remove("alternatives_considered");
        assert!(check_update(view(&stored, "accepted"), &removed).is_err(), "removing counts as changing");
    }

    #[test]
    fn status_and_consequences_may_change_and_other_items_are_free() {
        let stored = decision("accepted");
        let mut deprecated = stored.clone();
        deprecated["status"] = json!("deprecated");
        deprecated["consequences"] = json!("we pay for it");
        assert!(check_update(view(&stored, "accepted"), &deprecated).is_ok());
        let proposed = decision("proposed");
        let mut edited = proposed.clone();
        edited["rationale"] = json!("cheaper");
        assert!(check_update(view(&proposed, "proposed"), &edited).is_ok());
        let todo = StoredView { id: Uuid::nil(), kind: Kind::Todo, status: Some("accepted"), data: &stored };
        assert!(check_update(todo, &edited).is_ok());
    }
}
