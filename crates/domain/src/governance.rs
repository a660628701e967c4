//! Governance rules: what a team has agreed on does not change silently.
//!
//! An accepted decision (ADR) keeps the title, rationale, component and alternatives it was
//! accepted with: an update that changes any of them is refused (`business_rule_blocked`) and
//! the way forward is a new decision that supersedes it. Its status (e.g. to `deprecated`) and
//! its consequences may still be updated.
//!
//! An approved document section (`status: approved`, or an `approved_at` date) is locked:
//! neither an update nor a delete goes through; a new version that supersedes it retires it.
//!
//! Both hold for good once reached, whatever the status goes through afterwards: the store
//! keeps when an item first entered a governed state ([`governs`]), and the rules read that
//! fact (`StoredView::governed_since`) beside the current status. Otherwise `proposed`, an
//! edit, then `accepted` again would change an accepted decision in three allowed steps.

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
    /// The hash of the stored searchable text (title, body, content).
    pub content_hash: &'a str,
    /// When the item first entered a governed state ([`governs`]), as the store keeps it:
    /// set once, never cleared.
    pub governed_since: Option<i64>,
}

/// Whether an item in this state is governed: a decision accepted, a section approved. The
/// store records the first time an item is written in such a state (`governed_since`), and
/// the rules below hold from then on.
pub fn governs(kind: Kind, status: Option<&str>, data: &Value) -> bool {
    match kind {
        Kind::Decision => status == Some("accepted"),
        Kind::Section => status == Some("approved") || data.get("approved_at").is_some_and(|v| !v.is_null()),
        _ => false,
    }
}

impl StoredView<'_> {
    fn is_approved_section(&self) -> bool {
        self.kind == Kind::Section && governs(self.kind, self.status, self.data)
    }

    /// Approved now, or once (and moved to another status since, which governance never
    /// allowed, so only a write around it or an older version could have done it).
    fn was_approved_section(&self) -> bool {
        self.kind == Kind::Section && (self.is_approved_section() || self.governed_since.is_some())
    }

    /// An accepted decision, now or once: its status may have moved on since (deprecated,
    /// superseded, even back to proposed), its accepted fields never.
    fn was_accepted_decision(&self) -> bool {
        self.kind == Kind::Decision && (self.status == Some("accepted") || self.governed_since.is_some())
    }

    /// "is accepted", or "was accepted on 2026-01-01T…" when its status has moved on.
    fn accepted_state(&self) -> String {
        match (self.status, self.governed_since) {
            (Some("accepted"), _) | (_, None) => "is accepted".to_string(),
            (status, Some(since)) => format!(
                "was accepted on {} (its status is {} now)",
                crate::time::format_instant(since),
                status.unwrap_or("unset")
            ),
        }
    }

    fn locked_section(&self, verb: &str) -> ValidationError {
        ValidationError::new(
            ErrorCode::BusinessRuleBlocked,
            if verb == "deleted" { "id".to_string() } else { "data".to_string() },
            format!(
                "section {} {}: it cannot be {verb}",
                self.id,
                if self.is_approved_section() { "is approved" } else { "was approved" }
            ),
            format!(
                "store the new version as a new section with \"supersedes\": \"{}\"; \
                 finds then return the new version and point from the old one to it",
                self.id
            ),
        )
    }
}

/// Whether deleting the stored item is allowed.
pub fn check_delete(stored: StoredView<'_>) -> Result<(), ValidationError> {
    if stored.was_approved_section() {
        return Err(stored.locked_section("deleted"));
    }
    Ok(())
}

/// Whether replacing the stored item's `data` with `new_data` (and its text with text hashing
/// to `new_hash`) is allowed. The error's field is relative (`data.rationale`); the caller
/// prefixes the item's position.
pub fn check_update(stored: StoredView<'_>, new_data: &Value, new_hash: &str) -> Result<(), ValidationError> {
    if stored.is_approved_section() && (stored.data != new_data || stored.content_hash != new_hash) {
        return Err(stored.locked_section("changed"));
    }
    // Once approved and no longer: its text still stands as approved.
    if stored.was_approved_section() && stored.content_hash != new_hash {
        return Err(stored.locked_section("changed"));
    }
    if stored.was_accepted_decision() {
        for field in ACCEPTED_DECISION_FIELDS {
            if stored.data.get(field) != new_data.get(field) {
                return Err(ValidationError::new(
                    ErrorCode::BusinessRuleBlocked,
                    format!("data.{field}"),
                    format!(
                        "decision {} {}: its `{field}` cannot change",
                        stored.id,
                        stored.accepted_state()
                    ),
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

/// What a `supersedes` target is, as far as the rule cares.
pub enum SupersedeTarget {
    Missing,
    Deleted,
    SupersededBy(Uuid),
    Live,
}

/// An item may supersede only a live item that nothing superseded yet. The field is relative
/// (`supersedes`); the caller roots it at the item and says where the id was given.
pub fn check_supersede_target(id: Uuid, target: SupersedeTarget) -> Result<(), ValidationError> {
    let message = match target {
        SupersedeTarget::Live => return Ok(()),
        SupersedeTarget::Missing => format!("no item {id} exists"),
        SupersedeTarget::Deleted => format!("item {id} is deleted"),
        SupersedeTarget::SupersededBy(by) => format!("item {id} is already superseded by {by}"),
    };
    Err(ValidationError::new(
        ErrorCode::NotFound,
        "supersedes",
        message,
        "name the id of the live item this one replaces (memory_find returns ids), or leave out `supersedes`",
    ))
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
        StoredView {
            id: Uuid::nil(),
            kind: Kind::Decision,
            status: Some(status),
            data,
            content_hash: "h",
            governed_since: None,
        }
    }

    #[test]
    fn an_accepted_decision_keeps_what_it_was_accepted_with() {
        let stored = decision("accepted");
        for field in ACCEPTED_DECISION_FIELDS {
            let mut changed = stored.clone();
            changed[*field] = json!("something else");
            let err = check_update(view(&stored, "accepted"), &changed, "h").unwrap_err();
            assert_eq!(
                (err.code, err.field.as_str()),
                (ErrorCode::BusinessRuleBlocked, &*format!("data.{field}"))
            );
            assert!(err.human_hint.contains("supersedes"), "{}", err.human_hint);
        }
        let mut removed = stored.clone();
        removed.as_object_mut().unwrap().remove("alternatives_considered");
        assert!(
            check_update(view(&stored, "accepted"), &removed, "h").is_err(),
            "removing counts as changing"
        );
    }

    #[test]
    fn status_and_consequences_may_change_and_other_items_are_free() {
        let stored = decision("accepted");
        let mut deprecated = stored.clone();
        deprecated["status"] = json!("deprecated");
        deprecated["consequences"] = json!("we pay for it");
        assert!(check_update(view(&stored, "accepted"), &deprecated, "h").is_ok());
        let proposed = decision("proposed");
        let mut edited = proposed.clone();
        edited["rationale"] = json!("cheaper");
        assert!(check_update(view(&proposed, "proposed"), &edited, "h").is_ok());
        let todo = StoredView {
            id: Uuid::nil(),
            kind: Kind::Todo,
            status: Some("accepted"),
            data: &stored,
            content_hash: "h",
            governed_since: None,
        };
        assert!(check_update(todo, &edited, "other").is_ok());
        assert!(check_delete(todo).is_ok());
    }

    #[test]
    fn an_approved_section_is_locked() {
        let data = json!({"title": "Retention", "body": "Keep logs 30 days", "status": "approved"});
        let approved = StoredView {
            id: Uuid::nil(),
            kind: Kind::Section,
            status: Some("approved"),
            data: &data,
            content_hash: "h",
            governed_since: None,
        };
        assert!(check_update(approved, &data, "h").is_ok(), "storing it unchanged is no change");
        let mut edited = data.clone();
        edited["body"] = json!("Keep logs 60 days");
        let err = check_update(approved, &edited, "h2").unwrap_err();
        assert_eq!(err.code, ErrorCode::BusinessRuleBlocked);
        assert!(err.human_hint.contains("supersedes"), "{}", err.human_hint);
        assert_eq!(check_delete(approved).unwrap_err().field, "id");

        let dated = json!({"title": "Retention", "body": "b", "approved_at": "2026-01-01"});
        let by_date = StoredView { status: None, data: &dated, ..approved };
        assert!(check_delete(by_date).is_err());
        let draft = json!({"title": "Retention", "body": "b", "status": "draft"});
        let free = StoredView { status: Some("draft"), data: &draft, ..approved };
        assert!(check_update(free, &edited, "h2").is_ok() && check_delete(free).is_ok());
    }

    #[test]
    fn a_decision_once_accepted_keeps_its_fields_whatever_its_status_went_through() {
        let stored = decision("proposed");
        let mut edited = stored.clone();
        edited["rationale"] = json!("cheaper after all");
        let never = view(&stored, "proposed");
        assert!(check_update(never, &edited, "h").is_ok(), "never accepted: free to edit");
        let once = StoredView { governed_since: Some(1_767_225_600_000), ..never };
        let err = check_update(once, &edited, "h").unwrap_err();
        assert_eq!((err.code, err.field.as_str()), (ErrorCode::BusinessRuleBlocked, "data.rationale"));
        assert!(err.message.contains("was accepted on 2026-01-01"), "{}", err.message);
        assert!(err.message.contains("its status is proposed now"), "{}", err.message);
        let mut status_only = stored.clone();
        status_only["status"] = json!("accepted");
        assert!(check_update(once, &status_only, "h").is_ok(), "its status may still move");
    }

    #[test]
    fn a_section_once_approved_keeps_its_text() {
        let draft = json!({"title": "Retention", "body": "Keep logs 30 days", "status": "draft"});
        let once = StoredView {
            id: Uuid::nil(),
            kind: Kind::Section,
            status: Some("draft"),
            data: &draft,
            content_hash: "h",
            governed_since: Some(1),
        };
        let mut edited = draft.clone();
        edited["body"] = json!("Keep logs 60 days");
        assert!(check_update(once, &edited, "h2").is_err());
        assert!(check_delete(once).is_err());
        assert!(check_update(StoredView { governed_since: None, ..once }, &edited, "h2").is_ok());
    }

    #[test]
    fn what_governs() {
        let none = json!({});
        assert!(governs(Kind::Decision, Some("accepted"), &none));
        assert!(!governs(Kind::Decision, Some("proposed"), &none));
        assert!(governs(Kind::Section, Some("approved"), &none));
        assert!(governs(Kind::Section, None, &json!({"approved_at": "2026-01-01"})));
        assert!(!governs(Kind::Section, None, &json!({"approved_at": null})));
        assert!(!governs(Kind::Risk, Some("accepted"), &none), "an accepted risk is not a decision");
    }
}
