//! An item built in the process (the web UI's curation, the CLI, the harness) rather than
//! parsed: [`ItemOp::insert`] or [`ItemOp::update`], then a method per field, then
//! [`ItemBuilder::build`], which applies the rules the parse applies — each field's own (the
//! same functions), then the item's (`data` against its kind, `content` or `data`, what
//! `supersedes` may name) — and derives title, body and hash as for a parsed item.

use super::ItemOp;
use super::args::{Draft, Operation, check_content, upsert};
use super::batch::Refused;
use super::fields::{SOURCE_FIELDS, check_idempotency_key, check_tags, parse_metadata, parse_source};
use crate::error::ValidationError;
use crate::kind::Kind;
use crate::scope::Scope;
use crate::ttl::TtlPolicy;
use serde_json::{Map, Value};
use uuid::Uuid;

/// An upsert being built; the first field refused is what [`ItemBuilder::build`] answers.
pub struct ItemBuilder {
    draft: Draft,
    refused: Option<ValidationError>,
}

impl ItemOp {
    /// A new item of `kind`.
    pub fn insert(kind: Kind) -> ItemBuilder {
        ItemBuilder { draft: Draft { kind: Some(kind), ..Draft::default() }, refused: None }
    }

    /// A new version of the stored item `id`, a `kind`: the fields given replace its own.
    pub fn update(id: Uuid, kind: Kind) -> ItemBuilder {
        ItemBuilder { draft: Draft { kind: Some(kind), id: Some(id), ..Draft::default() }, refused: None }
    }

    /// Deletes the item `id` (a soft delete, undone by [`ItemOp::restore`]).
    pub fn delete(id: Uuid) -> ItemOp {
        ItemOp::Delete { id, kind: None }
    }

    /// Brings back the deleted item `id`.
    pub fn restore(id: Uuid) -> ItemOp {
        ItemOp::Restore { id, kind: None }
    }
}

impl ItemBuilder {
    /// Keeps `value`, or the first refusal.
    fn set<T>(mut self, value: Result<T, ValidationError>, put: impl FnOnce(&mut Draft, T)) -> ItemBuilder {
        match value {
            Ok(value) if self.refused.is_none() => put(&mut self.draft, value),
            Ok(_) => {}
            Err(e) => {
                self.refused.get_or_insert(e);
            }
        }
        self
    }

    /// Free text (blank text is none).
    pub fn content(self, text: &str) -> ItemBuilder {
        self.set(check_content(text), |d, v| d.content = v)
    }

    /// The kind's fields, checked against the kind's table by [`build`](Self::build).
    pub fn data(mut self, data: Map<String, Value>) -> ItemBuilder {
        self.draft.data = Some(data);
        self
    }

    pub fn scope(self, scope: Scope) -> ItemBuilder {
        let checked = scope.check().map(|()| scope).map_err(|e| e.under("scope"));
        self.set(checked, |d, v| d.scope = v)
    }

    pub fn tags(self, tags: &[String]) -> ItemBuilder {
        self.set(check_tags(tags), |d, v| d.tags = v)
    }

    /// Free-form metadata: an object, small and shallow.
    pub fn metadata(self, metadata: Value) -> ItemBuilder {
        self.set(parse_metadata(Some(&metadata)), |d, v| d.metadata = v)
    }

    /// Who stored it, and with what.
    pub fn source(self, actor: &str, tool: &str) -> ItemBuilder {
        let [actor_field, tool_field, _] = SOURCE_FIELDS;
        let source: Map<String, Value> = [(actor_field, actor), (tool_field, tool)]
            .into_iter()
            .map(|(field, text)| (field.to_string(), Value::String(text.to_string())))
            .collect();
        self.set(parse_source(Some(&Value::Object(source))), |d, v| d.source = v)
    }

    pub fn idempotency_key(self, key: &str) -> ItemBuilder {
        self.set(check_idempotency_key(key), |d, v| d.idempotency_key = Some(v))
    }

    pub fn ttl(mut self, ttl: TtlPolicy) -> ItemBuilder {
        self.draft.ttl = Some(ttl);
        self
    }

    /// An explicit end of life (epoch ms), over any policy.
    pub fn expires_at(mut self, at: i64) -> ItemBuilder {
        self.draft.expires_at = Some(at);
        self
    }

    /// The live item this new one replaces.
    pub fn supersedes(mut self, id: Uuid) -> ItemBuilder {
        self.draft.supersedes = Some(id);
        self
    }

    /// `false` stores an exact or near duplicate anyway.
    pub fn dedupe(mut self, dedupe: bool) -> ItemBuilder {
        self.draft.no_dedupe = !dedupe;
        self
    }

    /// The operation, or its refusal (with the kind it names, as a refused parse carries).
    pub fn build(self) -> Result<ItemOp, Refused> {
        let kind = self.draft.kind;
        let refuse = |error| Refused { kind, error };
        if let Some(error) = self.refused {
            return Err(refuse(error));
        }
        debug_assert_eq!(self.draft.operation, Operation::Upsert);
        upsert(self.draft).map(|item| ItemOp::Upsert(Box::new(item))).map_err(refuse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::StoreRequest;
    use crate::limits::MAX_CONTENT_BYTES;
    use serde_json::json;

    fn parsed(item: Value) -> Result<ItemOp, Refused> {
        StoreRequest::from_json(&json!({ "items": [item] })).unwrap().items.remove(0)
    }

    fn built(item: ItemBuilder) -> Result<ItemOp, Refused> {
        StoreRequest::new([item.build()]).items.remove(0)
    }

    /// A built item is the item the same fields parse to: derived title, body, hash, status.
    #[test]
    fn a_built_item_is_the_parsed_one() {
        let id = Uuid::now_v7();
        let replaced = Uuid::now_v7();
        let data = json!({"component": "db", "status": "Accepted", "title": "Use Postgres", "rationale": "it is enough"});
        let Value::Object(map) = data.clone() else { unreachable!() };
        let cases = [
            (
                ItemOp::insert(Kind::Decision)
                    .data(map.clone())
                    .tags(&[" DB ".into(), "db".into()])
                    .scope(Scope { project: Some("api".into()), ..Scope::default() })
                    .metadata(json!({"pr": 12}))
                    .source("ana", "cortex-ui")
                    .idempotency_key("k-1")
                    .ttl(TtlPolicy::Long)
                    .supersedes(replaced)
                    .dedupe(false),
                json!({"kind": "decision", "data": data, "tags": [" DB ", "db"], "scope": {"project": "api"},
                       "metadata": {"pr": 12}, "source": {"actor": "ana", "tool": "cortex-ui"},
                       "idempotency_key": "k-1", "ttl": "long", "supersedes": replaced.to_string(), "dedupe": false}),
            ),
            (
                ItemOp::update(id, Kind::Section)
                    .content("# Deploy\nmake deploy")
                    .expires_at(1_800_000_000_000),
                json!({"id": id.to_string(), "kind": "section", "content": "# Deploy\nmake deploy",
                       "expires_at": "2027-01-15T08:00:00Z"}),
            ),
        ];
        for (builder, sent) in cases {
            assert_eq!(built(builder), parsed(sent.clone()), "{sent}");
        }
        assert_eq!(Ok(ItemOp::delete(id)), parsed(json!({"operation": "delete", "id": id.to_string()})));
        assert_eq!(Ok(ItemOp::restore(id)), parsed(json!({"operation": "restore", "id": id.to_string()})));
    }

    /// A field a rule refuses is refused with the parse's path, code and hint.
    #[test]
    fn a_built_item_is_refused_as_the_parsed_one() {
        let cases = [
            (
                ItemOp::insert(Kind::Section).content("a\u{0}b"),
                json!({"kind": "section", "content": "a\u{0}b"}),
            ),
            (
                ItemOp::insert(Kind::Section).content(&"x".repeat(MAX_CONTENT_BYTES + 1)),
                json!({"kind": "section", "content": "x".repeat(MAX_CONTENT_BYTES + 1)}),
            ),
            (
                ItemOp::insert(Kind::Section).content("x").tags(&["a\u{7}".into()]),
                json!({"kind": "section", "content": "x", "tags": ["a\u{7}"]}),
            ),
            (
                ItemOp::insert(Kind::Section).content("x").idempotency_key(""),
                json!({"kind": "section", "content": "x", "idempotency_key": ""}),
            ),
            (
                ItemOp::insert(Kind::Section)
                    .content("x")
                    .scope(Scope { branch: Some("a\nb".into()), ..Scope::default() }),
                json!({"kind": "section", "content": "x", "scope": {"branch": "a\nb"}}),
            ),
            (
                ItemOp::insert(Kind::Section)
                    .content("x")
                    .metadata(json!({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}})),
                json!({"kind": "section", "content": "x", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}}),
            ),
            (
                ItemOp::insert(Kind::Entity).content("billing"),
                json!({"kind": "entity", "content": "billing"}),
            ),
            (ItemOp::insert(Kind::Decision).data(Map::new()), json!({"kind": "decision", "data": {}})),
        ];
        for (builder, sent) in cases {
            let (built, parsed) = (built(builder).unwrap_err(), parsed(sent.clone()).unwrap_err());
            assert_eq!(built, parsed, "{sent}");
            assert!(built.error.field.starts_with("items[0]"), "{built:?}");
        }
    }
}
