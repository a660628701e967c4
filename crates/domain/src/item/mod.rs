//! One `memory_store` request and its items, parsed or built.
//!
//! The tool's arguments are parsed by walking JSON on purpose: a typed deserializer would
//! refuse the whole batch at the first bad item, while every item here gets its own result
//! and a field path. Callers inside the process build the same types ([`StoreRequest`],
//! [`ItemOp`] through [`ItemBuilder`]) under the same rules.
//!
//! - [`args`]: an item's fields, one definition each (schema and parse), and the checks across them
//! - [`batch`]: `memory_store`'s one argument, `items`, its limits, and [`StoreRequest`]
//! - `build`: an item built in the process, under the parse's rules
//! - [`derive`]: an item's title, searchable body and content hash
//! - [`fields`]: the optional fields every kind shares (tags, metadata, source, idempotency key)

pub mod args;
mod batch;
mod build;
mod derive;
mod fields;

pub use args::{Operation, parse_item};
pub use batch::{Entry, Refused, StoreRequest, store_schema};
pub use build::ItemBuilder;
pub use derive::{Derived, derive, field_texts};

use crate::kind::Kind;
use crate::scope::Scope;
use crate::ttl::TtlPolicy;
use serde_json::{Map, Value};
use uuid::Uuid;

/// One validated item operation.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemOp {
    Upsert(Box<NewItem>),
    Delete {
        id: Uuid,
        kind: Option<Kind>,
    },
    /// Undoes a soft delete: the item is live again, as it was when deleted.
    Restore {
        id: Uuid,
        kind: Option<Kind>,
    },
}

impl ItemOp {
    pub fn kind(&self) -> Option<Kind> {
        match self {
            ItemOp::Upsert(item) => Some(item.kind),
            ItemOp::Delete { kind, .. } | ItemOp::Restore { kind, .. } => *kind,
        }
    }
}

/// A validated, normalized item ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct NewItem {
    pub kind: Kind,
    /// Set when the caller updates an existing item.
    pub id: Option<Uuid>,
    pub title: String,
    pub content: Option<String>,
    pub data: Map<String, Value>,
    /// Searchable text other than the title: `content` and the text fields of `data`.
    pub body: String,
    /// SHA-256 of the normalized title and body.
    pub content_hash: String,
    /// The scope the caller named; the service fills the rest from the inferred scope.
    pub scope: Scope,
    pub tags: Vec<String>,
    pub metadata: Option<Value>,
    pub source: Option<Value>,
    pub idempotency_key: Option<String>,
    pub ttl: Option<TtlPolicy>,
    /// An explicit end of life (epoch ms), over any policy.
    pub expires_at: Option<i64>,
    /// When what the item records happened (epoch ms), when the caller says.
    pub occurred_at: Option<i64>,
    pub status: Option<String>,
    /// `false` stores an exact duplicate anyway.
    pub dedupe: bool,
    /// The live item this new one replaces (`supersedes`, or a decision's `data.supersedes`).
    pub supersedes: Option<Uuid>,
    /// Whether `supersedes` was given on the item itself rather than in `data`: where a
    /// refusal of the replaced item points.
    pub supersedes_on_item: bool,
}

#[cfg(test)]
mod tests {
    use super::fields::json_depth;
    use super::*;
    use crate::error::{ErrorCode, ValidationError};
    use crate::limits::*;
    use serde_json::json;

    fn one(item: Value) -> Result<ItemOp, ValidationError> {
        StoreRequest::from_json(&json!({"items": [item]})).unwrap().items.remove(0).map_err(|r| r.error)
    }

    fn upsert(item: Value) -> NewItem {
        match one(item).unwrap() {
            ItemOp::Upsert(i) => *i,
            other => panic!("expected upsert, got {other:?}"),
        }
    }

    #[test]
    fn request_envelope_errors_name_items() {
        for bad in
            [json!({}), json!({"items": []}), json!({"items": "x"}), json!({"items": vec![json!({}); 101]})]
        {
            assert_eq!(StoreRequest::from_json(&bad).unwrap_err().field, "items", "{bad}");
        }
    }

    #[test]
    fn per_item_errors_carry_the_index_path() {
        let results = StoreRequest::from_json(&json!({"items": [
            {"kind": "section", "content": "ok"},
            {"kind": "decision", "data": {"component": "db", "status": "accepted", "title": "t"}},
            {"kind": "bogus", "content": "x"}
        ]}))
        .unwrap()
        .items;
        assert!(results[0].is_ok());
        let refused = results[1].as_ref().unwrap_err();
        assert_eq!(
            (refused.error.field.as_str(), refused.kind),
            ("items[1].data.rationale", Some(Kind::Decision))
        );
        let refused = results[2].as_ref().unwrap_err();
        assert_eq!((refused.error.field.as_str(), refused.kind), ("items[2].kind", None));
    }

    #[test]
    fn content_only_items_take_their_title_from_the_first_line() {
        let item = upsert(json!({"kind": "section", "content": "# Deploy\nRun make deploy"}));
        assert_eq!(item.title, "Deploy");
        assert!(item.body.contains("make deploy"));
    }

    #[test]
    fn structured_kinds_need_data() {
        let err = one(json!({"kind": "entity", "content": "billing service"})).unwrap_err();
        assert_eq!(err.field, "items[0].data");
    }

    #[test]
    fn body_holds_data_text_but_not_the_title() {
        let item = upsert(json!({"kind": "decision", "data": {
            "component": "sessions", "status": "Accepted", "title": "Drop Redis",
            "rationale": "Postgres is enough", "alternatives_considered": ["keep redis"]}}));
        assert_eq!(item.title, "Drop Redis");
        assert_eq!(item.status.as_deref(), Some("accepted"));
        assert!(item.body.contains("Postgres is enough") && item.body.contains("keep redis"));
        assert!(!item.body.contains("Drop Redis"));
    }

    #[test]
    fn a_reference_by_name_is_searchable_text_and_by_id_is_not() {
        let id = Uuid::now_v7().to_string();
        let item = upsert(json!({"kind": "relation", "data": {
            "from": {"entity_type": "service", "name": "billing"}, "to": id, "relation_type": "uses"}}));
        assert!(item.body.contains("billing"));
        assert!(!item.body.contains(&id));
    }

    #[test]
    fn bad_fields_are_refused_with_paths() {
        let cases = [
            (json!({"kind": "section", "content": "a\u{0}b"}), "items[0].content"),
            (
                json!({"kind": "section", "content": "x", "scope": {"branch": "a\nb"}}),
                "items[0].scope.branch",
            ),
            (
                json!({"kind": "section", "content": "x", "idempotency_key": "k".repeat(257)}),
                "items[0].idempotency_key",
            ),
            (
                json!({"kind": "section", "content": "x", "metadata": {"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}}),
                "items[0].metadata",
            ),
            (json!({"kind": "section", "content": "x", "tags": [1]}), "items[0].tags[0]"),
            (json!({"kind": "section", "content": "x", "colour": 1}), "items[0].colour"),
            (json!({"kind": "section", "content": "x".repeat(MAX_CONTENT_BYTES + 1)}), "items[0].content"),
            (json!({"operation": "delete"}), "items[0].id"),
            (json!({"operation": "restore"}), "items[0].id"),
            (json!({"kind": "section", "content": "x", "ttl": "forever"}), "items[0].ttl"),
            (json!("just text"), "items[0]"),
        ];
        for (item, field) in cases {
            let err = one(item.clone()).unwrap_err();
            assert_eq!(err.field, field, "{item}");
            assert!(!err.human_hint.is_empty());
            // No message or hint may name an empty field ("send `` as ...").
            assert!(!err.message.contains("``") && !err.human_hint.contains("``"), "{err:?}");
        }
    }

    #[test]
    fn an_empty_idempotency_key_is_empty_not_too_long() {
        let err = one(json!({"kind": "section", "content": "x", "idempotency_key": ""})).unwrap_err();
        assert_eq!((err.code, err.field.as_str()), (ErrorCode::Empty, "items[0].idempotency_key"));
        let err =
            one(json!({"kind": "section", "content": "x", "idempotency_key": "k".repeat(257)})).unwrap_err();
        assert_eq!(err.code, ErrorCode::TooLong);
    }

    #[test]
    fn unknown_top_level_arguments_are_refused_like_memory_find_does() {
        let err =
            StoreRequest::from_json(&json!({"items": [{"kind": "todo", "content": "x"}], "dry_run": true}))
                .unwrap_err();
        assert_eq!((err.code, err.field.as_str()), (ErrorCode::UnknownField, "dry_run"));
        assert!(err.human_hint.contains("items"), "{err:?}");
    }

    #[test]
    fn delete_needs_only_an_id() {
        let id = Uuid::now_v7();
        assert_eq!(
            one(json!({"operation": "delete", "id": id.to_string()})).unwrap(),
            ItemOp::Delete { id, kind: None }
        );
        assert_eq!(
            one(json!({"operation": "Restore", "id": id.to_string(), "kind": "todo"})).unwrap(),
            ItemOp::Restore { id, kind: Some(Kind::Todo) }
        );
    }

    #[test]
    fn deeply_nested_metadata_is_refused() {
        // serde_json stops parsing at 128 levels; anything that deep must still be refused.
        let mut v = json!(1);
        for _ in 0..100 {
            v = json!({"a": v});
        }
        assert_eq!(json_depth(&v), 100);
        let err = one(json!({"kind": "section", "content": "x", "metadata": v})).unwrap_err();
        assert_eq!(err.code, ErrorCode::TooLarge);
    }
}
