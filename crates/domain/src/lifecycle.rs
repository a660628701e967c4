//! How long knowledge lives: when an item expires, and when a runbook is stale.
//!
//! Precedence, per write: an explicit `expires_at` on the item; else its `ttl` policy; else a
//! rule of its kind (a merged pull request lives 30 days after `merged_at`, a done or cancelled
//! todo 90 days after it was closed); else the kind's default policy. The clock starts at the
//! write, so an update renews an item's life.
//!
//! An item replaced by a newer one (`supersedes`) leaves finds; a kind whose status can say so
//! (a decision) also takes the status `superseded` ([`status_when_superseded`]).

use crate::kind::{FieldType, Kind};
use crate::time::MILLIS_PER_DAY;
use crate::ttl::TtlPolicy;
use serde_json::{Map, Value};

/// A merged pull request's context outlives the merge by this much.
pub const MERGED_PR_DAYS: i64 = 30;
/// A done or cancelled todo stays findable this long after closing, then is archived (purged).
pub const CLOSED_TODO_DAYS: i64 = 90;
/// A runbook not verified for this long is flagged stale in results.
pub const STALE_RUNBOOK_DAYS: i64 = 90;

/// The policy of an item that names none.
pub fn default_policy(kind: Kind) -> TtlPolicy {
    match kind {
        Kind::PrContext => TtlPolicy::Short,
        Kind::Entity
        | Kind::Relation
        | Kind::Observation
        | Kind::Decision
        | Kind::Section
        | Kind::Release => TtlPolicy::Long,
        _ => TtlPolicy::Default,
    }
}

/// What is recorded of an item's life: the rule that set it and when it ends (`None`: never).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expiry {
    /// A policy name, or `explicit`, `merged_pr`, `closed_todo`.
    pub ttl: String,
    pub expires_at: Option<i64>,
}

/// When an item written at `now` expires (see the module docs for the precedence).
pub fn expiry(
    kind: Kind,
    data: &Map<String, Value>,
    ttl: Option<TtlPolicy>,
    explicit: Option<i64>,
    now: i64,
) -> Expiry {
    if let Some(at) = explicit {
        return Expiry { ttl: "explicit".into(), expires_at: Some(at) };
    }
    if let Some(policy) = ttl {
        return Expiry { ttl: policy.as_str().into(), expires_at: policy.expires_at(now) };
    }
    let status = data.get("status").and_then(Value::as_str);
    if kind == Kind::PrContext
        && let Some(merged) = data.get("merged_at").and_then(Value::as_str)
        && let Ok(merged) = crate::time::parse_instant(merged)
    {
        return Expiry {
            ttl: "merged_pr".into(),
            expires_at: Some(merged + MERGED_PR_DAYS * MILLIS_PER_DAY),
        };
    }
    if kind == Kind::Todo && matches!(status, Some("done" | "cancelled")) {
        return Expiry {
            ttl: "closed_todo".into(),
            expires_at: Some(now + CLOSED_TODO_DAYS * MILLIS_PER_DAY),
        };
    }
    let policy = default_policy(kind);
    Expiry { ttl: policy.as_str().into(), expires_at: policy.expires_at(now) }
}

/// Whether a runbook needs re-verifying: its `last_verified_at` (else its last update) is more
/// than [`STALE_RUNBOOK_DAYS`] old. Other kinds are never stale.
pub fn is_stale(kind: Kind, data: &Value, updated_at: i64, now: i64) -> bool {
    if kind != Kind::Runbook {
        return false;
    }
    let verified = data
        .get("last_verified_at")
        .and_then(Value::as_str)
        .and_then(|t| crate::time::parse_instant(t).ok())
        .unwrap_or(updated_at);
    now - verified > STALE_RUNBOOK_DAYS * MILLIS_PER_DAY
}

/// A status written by a rule rather than by the caller: `field` of `data` (and the item's
/// filterable status) becomes `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusChange {
    pub field: &'static str,
    pub value: &'static str,
}

pub const SUPERSEDED: &str = "superseded";

/// What superseding an item of `kind` does to its status: a kind whose status field takes the
/// value `superseded` (a decision) gets it; every other kind keeps its status.
pub fn status_when_superseded(kind: Kind) -> Option<StatusChange> {
    let spec = kind.spec();
    let field = spec.fields.iter().find(|f| Some(f.name) == spec.status_field)?;
    match field.ty {
        FieldType::Enum(values) if values.contains(&SUPERSEDED) => {
            Some(StatusChange { field: field.name, value: SUPERSEDED })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000_000;
    const DAY: i64 = MILLIS_PER_DAY;

    fn data(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn each_kind_has_its_default_policy() {
        assert_eq!(default_policy(Kind::PrContext), TtlPolicy::Short);
        for kind in
            [Kind::Entity, Kind::Relation, Kind::Observation, Kind::Decision, Kind::Section, Kind::Release]
        {
            assert_eq!(default_policy(kind), TtlPolicy::Long, "{kind}");
        }
        assert_eq!(default_policy(Kind::Todo), TtlPolicy::Default);
        let todo = expiry(Kind::Todo, &data(json!({"status": "open"})), None, None, NOW);
        assert_eq!(todo, Expiry { ttl: "default".into(), expires_at: Some(NOW + 90 * DAY) });
    }

    #[test]
    fn explicit_beats_policy_beats_kind_rules() {
        let merged = data(json!({"status": "merged", "merged_at": "2027-01-01T00:00:00Z"}));
        let at = crate::time::parse_instant("2027-01-01T00:00:00Z").unwrap();
        assert_eq!(expiry(Kind::PrContext, &merged, None, None, NOW).expires_at, Some(at + 30 * DAY));
        let kept = expiry(Kind::PrContext, &merged, Some(TtlPolicy::Permanent), None, NOW);
        assert_eq!(kept, Expiry { ttl: "permanent".into(), expires_at: None });
        let explicit = expiry(Kind::PrContext, &merged, Some(TtlPolicy::Permanent), Some(NOW + 5), NOW);
        assert_eq!(explicit, Expiry { ttl: "explicit".into(), expires_at: Some(NOW + 5) });
        let open_pr = expiry(Kind::PrContext, &data(json!({"status": "open"})), None, None, NOW);
        assert_eq!(open_pr.expires_at, Some(NOW + 30 * DAY));
    }

    #[test]
    fn closed_todos_are_archived_after_90_days() {
        for status in ["done", "cancelled"] {
            let e = expiry(Kind::Todo, &data(json!({"status": status})), None, None, NOW);
            assert_eq!(e, Expiry { ttl: "closed_todo".into(), expires_at: Some(NOW + 90 * DAY) });
        }
    }

    #[test]
    fn runbooks_go_stale_after_90_days_without_verification() {
        let fresh = json!({"last_verified_at": crate::time::format_instant(NOW - 10 * DAY)});
        let old = json!({"last_verified_at": crate::time::format_instant(NOW - 91 * DAY)});
        assert!(!is_stale(Kind::Runbook, &fresh, NOW - 200 * DAY, NOW));
        assert!(is_stale(Kind::Runbook, &old, NOW, NOW));
        assert!(
            is_stale(Kind::Runbook, &json!({}), NOW - 91 * DAY, NOW),
            "never verified: its last update counts"
        );
        assert!(!is_stale(Kind::Section, &old, NOW - 200 * DAY, NOW));
    }

    #[test]
    fn only_a_decision_takes_a_superseded_status() {
        for kind in Kind::ALL {
            let expected =
                (kind == Kind::Decision).then_some(StatusChange { field: "status", value: SUPERSEDED });
            assert_eq!(status_when_superseded(kind), expected, "{kind}");
        }
    }
}
