//! Whether a live item is what its audit trail says it is, column by column. The trail's own
//! chain proves the records were not changed; this proves the item was not changed around them:
//! its content hash is the last record's, and every other column agrees with that hash (the
//! title and body it is the hash of, the content and data the body is made of, the status its
//! data holds), its scope is the last record's scope, and it is deleted exactly when the last
//! record deleted it. Both backends read the same columns and call [`check`].

use crate::audit_chain::TrailMismatch;
use cortex_domain::Kind;
use cortex_domain::kind::status_from_data;
use cortex_domain::text::content_hash;
use serde_json::{Map, Value};

/// An item's columns as stored (scope fields `''` when unset, `data` as stored JSON text).
#[derive(Debug, Clone)]
pub struct StoredColumns {
    pub id: String,
    pub kind: String,
    pub scope: [String; 7],
    pub title: String,
    pub body: String,
    pub content: Option<String>,
    pub data: String,
    pub status: Option<String>,
    pub content_hash: String,
    pub deleted: bool,
}

/// What the item's last audit record (other than a refusal) left it as.
#[derive(Debug, Clone)]
pub struct LastRecord {
    pub operation: String,
    pub hash_after: Option<String>,
    pub scope: [String; 7],
}

/// The first way `item` disagrees with its trail or with itself, if any.
pub fn check(item: &StoredColumns, last: Option<&LastRecord>) -> Option<TrailMismatch> {
    let item_id = || item.id.clone();
    let Some(last) = last else {
        return Some(TrailMismatch::NoRecord { item_id: item_id() });
    };
    if last.operation == crate::AuditOperation::Purge.as_str() {
        return Some(TrailMismatch::PurgedButPresent { item_id: item_id() });
    }
    if last.hash_after.as_deref() != Some(item.content_hash.as_str()) {
        return Some(TrailMismatch::ChangedWithoutRecord {
            item_id: item_id(),
            recorded: last.hash_after.clone(),
            found: item.content_hash.clone(),
        });
    }
    if let Some(field) = inconsistent_field(item) {
        return Some(TrailMismatch::Inconsistent { item_id: item_id(), field: field.into() });
    }
    if item.scope != last.scope {
        return Some(TrailMismatch::MovedWithoutRecord {
            item_id: item_id(),
            recorded: shown_scope(&last.scope),
            found: shown_scope(&item.scope),
        });
    }
    // An import may bring an item in deleted, as it was exported.
    match (item.deleted, last.operation.as_str()) {
        (true, "delete" | "import") => None,
        (true, _) => Some(TrailMismatch::DeletedWithoutRecord { item_id: item_id() }),
        (false, "delete") => Some(TrailMismatch::RestoredWithoutRecord { item_id: item_id() }),
        (false, _) => None,
    }
}

/// The column that does not agree with the others: the content hash is that of the title and
/// body; the body begins with the content and holds every text of the data (its status aside:
/// a supersede changes the status and leaves the text); the title is the one the kind takes
/// from the data or content; the status is the data's.
fn inconsistent_field(item: &StoredColumns) -> Option<&'static str> {
    if content_hash(&format!("{}\n{}", item.title, item.body)) != item.content_hash {
        return Some("title or body");
    }
    if let Some(content) = &item.content
        && !item.body.starts_with(content.as_str())
    {
        return Some("content");
    }
    let Some(kind) = Kind::parse(&item.kind) else {
        return Some("kind");
    };
    let Ok(Value::Object(data)) = serde_json::from_str::<Value>(&item.data) else {
        return Some("data");
    };
    if !data_agrees(kind, &data, &item.body) {
        return Some("data");
    }
    let derived = cortex_domain::item::derive(kind, item.content.as_deref(), &data);
    if derived.title != item.title {
        return Some("title");
    }
    (status_from_data(kind, &data) != item.status).then_some("status")
}

/// Every text a data field adds to the body is in the body. Compared text by text, not as
/// the joined body: PostgreSQL's `jsonb` keeps no key order inside nested objects.
fn data_agrees(kind: Kind, data: &Map<String, Value>, body: &str) -> bool {
    let status = kind.spec().status_field;
    kind.spec()
        .fields
        .iter()
        .filter(|f| Some(f.name) != status)
        .flat_map(|f| cortex_domain::item::field_texts(kind, data, f.name))
        .all(|text| body.contains(text.as_str()))
}

fn shown_scope(scope: &[String; 7]) -> String {
    let [org, project, branch, ..] = scope;
    format!("{org}/{project}@{branch}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision() -> StoredColumns {
        let data = serde_json::json!({"title": "Sessions in Postgres", "component": "auth",
            "status": "accepted", "rationale": "one store to run"});
        let derived = cortex_domain::item::derive(Kind::Decision, None, data.as_object().unwrap());
        StoredColumns {
            id: "i1".into(),
            kind: "decision".into(),
            scope: ["acme".into(), "api".into(), "main".into(), "".into(), "".into(), "".into(), "".into()],
            title: derived.title,
            body: derived.body,
            content: None,
            data: data.to_string(),
            status: Some("accepted".into()),
            content_hash: derived.content_hash,
            deleted: false,
        }
    }

    fn last_of(item: &StoredColumns, operation: &str) -> LastRecord {
        LastRecord {
            operation: operation.into(),
            hash_after: Some(item.content_hash.clone()),
            scope: item.scope.clone(),
        }
    }

    #[test]
    fn an_item_as_its_trail_left_it_passes() {
        let item = decision();
        assert_eq!(check(&item, Some(&last_of(&item, "insert"))), None);
    }

    #[test]
    fn each_column_changed_around_the_trail_is_named() {
        let item = decision();
        let last = last_of(&item, "update");
        type Tamper = fn(&mut StoredColumns);
        let cases: [(&str, Tamper); 6] = [
            ("title or body", |i| i.body = i.body.replace("one store", "two stores")),
            ("title or body", |i| i.title = "Sessions in Redis".into()),
            ("data", |i| i.data = i.data.replace("one store to run", "it was cheaper")),
            ("status", |i| i.status = Some("rejected".into())),
            ("data", |i| i.data = "not json".into()),
            ("kind", |i| i.kind = "novel".into()),
        ];
        for (field, change) in cases {
            let mut tampered = item.clone();
            change(&mut tampered);
            assert_eq!(
                check(&tampered, Some(&last)),
                Some(TrailMismatch::Inconsistent { item_id: "i1".into(), field: field.into() }),
                "{field}"
            );
        }
    }

    #[test]
    fn a_move_or_a_silent_delete_or_restore_is_named() {
        let item = decision();
        let mut moved = item.clone();
        moved.scope[0] = "evil".into();
        assert!(matches!(
            check(&moved, Some(&last_of(&item, "insert"))),
            Some(TrailMismatch::MovedWithoutRecord { ref found, .. }) if found == "evil/api@main"
        ));
        let mut deleted = item.clone();
        deleted.deleted = true;
        assert!(matches!(
            check(&deleted, Some(&last_of(&item, "update"))),
            Some(TrailMismatch::DeletedWithoutRecord { .. })
        ));
        assert_eq!(check(&deleted, Some(&last_of(&item, "delete"))), None);
        assert!(matches!(
            check(&item, Some(&last_of(&item, "delete"))),
            Some(TrailMismatch::RestoredWithoutRecord { .. })
        ));
    }

    #[test]
    fn a_supersede_changes_the_status_and_data_but_not_the_text() {
        let mut item = decision();
        item.data = item.data.replace("\"accepted\"", "\"superseded\"");
        item.status = Some("superseded".into());
        assert_eq!(check(&item, Some(&last_of(&item, "supersede"))), None);
    }
}
