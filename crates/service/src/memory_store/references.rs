//! References of graph items to other items: a relation's `from` and `to`, an observation's
//! `entity`. Each is an item id or an entity named by `{entity_type, name}`; before writing,
//! every one is resolved to the id of a live item of the same project (an entity of this very
//! batch counts), and written into `data` as that id, which is what the store indexes.

use super::MemoryStore;
use super::batch::Batch;
use crate::Result;
use cortex_domain::dedupe::{self, DuplicateCheck};
use cortex_domain::graph::{self, check_not_self_loop};
use cortex_domain::natural_key::natural_key;
use cortex_domain::{ErrorCode, Kind, Scope, ValidationError};
use cortex_store::{StoredItem, WriteOp};
use serde_json::Value;
use uuid::Uuid;

/// An entity named in this batch: its project, natural key and id.
struct BatchEntity {
    org: Option<String>,
    project: Option<String>,
    key: String,
    id: Uuid,
}

impl MemoryStore<'_> {
    /// The entities of this batch a reference may name, with the id each will have once
    /// written: an insert the store will find a duplicate of a stored item — or of an earlier
    /// insert of the batch — is written as that item, and that item is the one a reference to
    /// it means. The checks and their order are the store's, from `dedupe`. Empty when nothing
    /// in the batch refers.
    fn batch_entities(&self, ops: &[&WriteOp]) -> Result<Vec<BatchEntity>> {
        let refers = ops.iter().any(|op| match op {
            WriteOp::Insert { record, .. } | WriteOp::Update { record } => graph::is_link(record.kind),
            _ => false,
        });
        if !refers {
            return Ok(Vec::new());
        }
        let mut entities = Vec::new();
        let mut keyed: Vec<(&Scope, &str, Uuid)> = Vec::new();
        for op in ops {
            let id = match op {
                WriteOp::Insert { record, checks } => {
                    let key = record.idempotency_key.as_deref();
                    let owner = dedupe::first_owner(checks, |check| match (check, key) {
                        (DuplicateCheck::IdempotencyKey, Some(key)) => {
                            let earlier = keyed
                                .iter()
                                .find(|(scope, k, _)| *k == key && scope.same_project(&record.scope));
                            match earlier {
                                Some(&(_, _, owner)) => Ok(Some(owner)),
                                None => self.service.view.idempotency_owner(&record.scope, key),
                            }
                        }
                        // Inserts whose natural key a stored item holds became updates of it
                        // (`natural_keys`), and an entity's text is its type and name (its
                        // natural key): neither check finds an owner the stage above missed.
                        _ => Ok(None),
                    })?;
                    let id = owner.map_or(record.id, |(id, _)| id);
                    if let Some(key) = key {
                        keyed.push((&record.scope, key, id));
                    }
                    id
                }
                WriteOp::Update { record } => record.id,
                _ => continue,
            };
            let (WriteOp::Insert { record, .. } | WriteOp::Update { record }) = op else { continue };
            if record.kind != Kind::Entity {
                continue;
            }
            if let Some(key) = record.data.as_object().and_then(|data| natural_key(Kind::Entity, data)) {
                entities.push(BatchEntity {
                    org: record.scope.org.clone(),
                    project: record.scope.project.clone(),
                    key,
                    id,
                });
            }
        }
        Ok(entities)
    }

    /// Rewrites the references of every relation and observation to item ids; an item with a
    /// reference that names no live item of its project is refused.
    pub(super) fn resolve_references(&self, batch: &mut Batch) -> Result<()> {
        let ops: Vec<&WriteOp> = batch.pending.iter().map(|p| &p.op).collect();
        let batch_entities = self.batch_entities(&ops)?;
        let by_id: Vec<Uuid> = ops
            .iter()
            .filter_map(|op| match op {
                WriteOp::Insert { record, .. } | WriteOp::Update { record } => Some(record),
                _ => None,
            })
            .flat_map(|r| graph::reference_fields(r.kind).iter().filter_map(|f| r.data.get(*f)?.as_str()))
            .filter_map(|text| Uuid::parse_str(text).ok())
            .collect();
        let stored = self.service.view.get(&by_id)?;
        let mut refused = Vec::new();
        for pending in &mut batch.pending {
            let (index, op) = (pending.index, &mut pending.op);
            let fields = match op {
                WriteOp::Insert { record, .. } | WriteOp::Update { record } => {
                    graph::reference_fields(record.kind)
                }
                _ => continue,
            };
            if fields.is_empty() {
                continue;
            }
            let (WriteOp::Insert { record, .. } | WriteOp::Update { record }) = op else { continue };
            let mut ends = Vec::with_capacity(fields.len());
            for field in fields {
                let value = record.data.get(*field).cloned().unwrap_or(Value::Null);
                let resolved = self
                    .resolve(&value, record.kind, &record.scope, &stored, &batch_entities)?
                    .map_err(|e| e.under(&format!("items[{index}].data.{field}")));
                match resolved {
                    Ok(id) => ends.push(id),
                    Err(error) => {
                        refused.push((index, error));
                        break;
                    }
                }
            }
            if ends.len() < fields.len() {
                continue;
            }
            if let [from, to] = ends[..]
                && let Err(error) = check_not_self_loop(from, to)
            {
                refused.push((index, error.under(&format!("items[{index}]"))));
                continue;
            }
            if let Some(data) = record.data.as_object_mut() {
                for (field, id) in fields.iter().zip(ends) {
                    data.insert(field.to_string(), Value::String(id.to_string()));
                }
            }
        }
        for (index, error) in refused {
            batch.refuse(index, &error);
        }
        Ok(())
    }

    /// One reference to the id of a live item of `scope`'s project; errors name no field (the
    /// caller puts them under the reference's path).
    fn resolve(
        &self,
        value: &Value,
        kind: Kind,
        scope: &Scope,
        stored: &[StoredItem],
        batch: &[BatchEntity],
    ) -> Result<std::result::Result<Uuid, ValidationError>> {
        let target = match value {
            Value::String(text) => {
                let id = Uuid::parse_str(text).unwrap_or_default();
                match stored.iter().find(|s| s.record.id == id && s.deleted_at.is_none()) {
                    Some(item) => (item.record.id, item.record.kind, item.record.scope.clone()),
                    None => {
                        return Ok(Err(not_found(
                            format!("no live item has id {text}"),
                            "reference an existing item by its id (memory_find returns ids), or an entity by {\"entity_type\": …, \"name\": …}",
                        )));
                    }
                }
            }
            Value::Object(named) => {
                let Some(key) = natural_key(Kind::Entity, named) else {
                    return Ok(Err(not_found("the entity reference has no entity_type or name", "")));
                };
                let in_batch = batch
                    .iter()
                    .find(|e| e.key == key && e.org == scope.org && e.project == scope.project)
                    .map(|e| e.id);
                match in_batch
                    .map(Some)
                    .map_or_else(|| self.service.view.natural_key_owner(scope, &key), Ok)?
                {
                    Some(id) => (id, Kind::Entity, scope.clone()),
                    None => {
                        let show = |f: &str| named.get(f).and_then(Value::as_str).unwrap_or("?").to_string();
                        return Ok(Err(not_found(
                            format!("no entity {} \"{}\" in this project", show("entity_type"), show("name")),
                            "store the entity first (earlier in this same batch is fine), or reference an existing item by its id",
                        )));
                    }
                }
            }
            _ => return Ok(Err(not_found("not an item reference", ""))),
        };
        let (id, target_kind, target_scope) = target;
        Ok(cortex_domain::graph::check_link_target(kind, scope, id, target_kind, &target_scope).map(|()| id))
    }
}

fn not_found(message: impl Into<String>, hint: &str) -> ValidationError {
    let hint = if hint.is_empty() {
        "send an item id, or {\"entity_type\": \"service\", \"name\": \"billing\"}"
    } else {
        hint
    };
    ValidationError::new(ErrorCode::NotFound, "", message, hint)
}
