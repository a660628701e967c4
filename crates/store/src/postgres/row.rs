//! Mapping between `Record` and the `items` row.

use crate::{ItemFacts, Record, Result, StoredItem};
use cortex_domain::{Kind, Scope};
use postgres::Row;
use serde_json::Value;

/// The columns `from_row` reads, in order, prefixed with the table alias `i`.
pub const COLUMNS: &str = "i.id, i.kind, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment, \
     i.title, i.body, i.content, i.data, i.metadata, i.source, i.tags, i.status, i.content_hash, \
     i.idempotency_key, i.ttl, i.created_at, i.updated_at, i.expires_at, i.deleted_at, i.superseded_by, \
     i.occurred_at, i.governed_since, i.author";
pub const COLUMN_COUNT: usize = 28;

fn opt(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

pub fn kind_at(row: &Row, index: usize) -> Result<Kind> {
    let kind: String = row.try_get(index)?;
    crate::model::parse_kind(&kind)
}

/// The seven scope columns starting at `first` (org … environment), '' read as unset.
pub fn scope_at(row: &Row, first: usize) -> Result<Scope> {
    let at = |i: usize| -> Result<Option<String>> { Ok(opt(row.try_get(first + i)?)) };
    Ok(Scope {
        org: at(0)?,
        project: at(1)?,
        branch: at(2)?,
        service: at(3)?,
        sprint: at(4)?,
        tenant: at(5)?,
        environment: at(6)?,
    })
}

pub fn from_row(row: &Row) -> Result<StoredItem> {
    let data: Option<Value> = row.try_get(12)?;
    let record = Record {
        id: row.try_get(0)?,
        kind: kind_at(row, 1)?,
        scope: scope_at(row, 2)?,
        title: row.try_get(9)?,
        body: row.try_get(10)?,
        content: row.try_get(11)?,
        data: data.unwrap_or(Value::Null),
        metadata: row.try_get(13)?,
        source: row.try_get(14)?,
        tags: row.try_get(15)?,
        status: row.try_get(16)?,
        content_hash: row.try_get(17)?,
        idempotency_key: row.try_get(18)?,
        ttl: row.try_get(19)?,
        created_at: row.try_get(20)?,
        updated_at: row.try_get(21)?,
        expires_at: row.try_get(22)?,
        occurred_at: row.try_get(25)?,
        vector: None,
        chunks: Vec::new(),
    };
    Ok(StoredItem {
        record,
        deleted_at: row.try_get(23)?,
        superseded_by: row.try_get(24)?,
        governed_since: row.try_get(26)?,
        author: row.try_get(27)?,
    })
}

/// What the vector index filters on, read from columns `kind, org…environment, updated_at,
/// expires_at, status, tags` starting at `first`.
pub fn facts_at(row: &Row, first: usize) -> Result<ItemFacts> {
    Ok(ItemFacts {
        kind: kind_at(row, first)?,
        scope: scope_at(row, first + 1)?,
        created_at: row.try_get(first + 14)?,
        updated_at: row.try_get(first + 8)?,
        expires_at: row.try_get(first + 9)?,
        status: row.try_get(first + 10)?,
        tags: row.try_get(first + 11)?,
        superseded: row.try_get(first + 12)?,
        deleted: row.try_get(first + 13)?,
        author: row.try_get(first + 15)?,
        agent: row.try_get(first + 16)?,
    })
}

pub const FACTS: &str = "i.kind, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment, \
     i.updated_at, i.expires_at, i.status, i.tags, i.superseded_by IS NOT NULL, i.deleted_at IS NOT NULL, \
     i.created_at, i.author, \
     CASE WHEN jsonb_typeof(i.source -> 'actor') = 'string' THEN i.source ->> 'actor' END";
