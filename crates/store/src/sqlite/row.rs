//! Mapping between `Record` and the `items` row.

use crate::model::parse_kind;
use crate::{ChunkVector, ItemFacts, Record, Result, StoreError, StoredItem};
use cortex_domain::Scope;
use rusqlite::Row;
use serde_json::Value;
use uuid::Uuid;

/// The columns `from_row` reads, in order, prefixed with the table alias `i`.
pub const COLUMNS: &str = "i.id, i.kind, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment, \
     i.title, i.body, i.content, i.data, i.metadata, i.source, i.tags, i.status, i.content_hash, \
     i.idempotency_key, i.ttl, i.created_at, i.updated_at, i.expires_at, i.deleted_at, i.superseded_by, \
     i.occurred_at, i.governed_since, i.author";
pub const COLUMN_COUNT: usize = 28;

/// A stored item id, or an error naming the column and the text found: a damaged id must
/// not read back as some other (or the nil) id.
pub fn parse_id(text: &str, column: &str) -> Result<Uuid> {
    Uuid::parse_str(text)
        .map_err(|e| StoreError::Corrupt(format!("items.{column} holds {text:?}, not a UUID: {e}")))
}

fn opt(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn json(text: Option<String>, what: &str) -> Result<Option<Value>> {
    text.map(|t| serde_json::from_str(&t).map_err(|e| StoreError::Corrupt(format!("{what}: {e}"))))
        .transpose()
}

/// The seven scope columns starting at `first` (org … environment), '' read as unset.
pub fn scope_at(row: &Row<'_>, first: usize) -> rusqlite::Result<Scope> {
    let at = |i: usize| -> rusqlite::Result<Option<String>> { Ok(opt(row.get(first + i)?)) };
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

/// The columns [`facts_at`] reads, in order.
pub const FACTS: &str = "i.kind, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment, \
     i.updated_at, i.expires_at, i.status, i.tags, i.superseded_by IS NOT NULL, i.deleted_at IS NOT NULL, \
     i.created_at, i.author, \
     CASE WHEN json_type(i.source, '$.actor') = 'text' THEN json_extract(i.source, '$.actor') END";

/// What an index outside the database filters on, read from [`FACTS`] starting at `first`.
pub fn facts_at(row: &Row<'_>, first: usize) -> Result<ItemFacts> {
    let kind: String = row.get(first)?;
    let tags: String = row.get(first + 11)?;
    Ok(ItemFacts {
        kind: parse_kind(&kind)?,
        scope: scope_at(row, first + 1)?,
        created_at: row.get(first + 14)?,
        updated_at: row.get(first + 8)?,
        expires_at: row.get(first + 9)?,
        status: row.get(first + 10)?,
        tags: serde_json::from_str(&tags).map_err(|e| StoreError::Corrupt(format!("tags: {e}")))?,
        superseded: row.get(first + 12)?,
        deleted: row.get(first + 13)?,
        author: row.get(first + 15)?,
        agent: row.get(first + 16)?,
    })
}

pub fn from_row(row: &Row<'_>) -> Result<StoredItem> {
    let id: String = row.get(0)?;
    let kind: String = row.get(1)?;
    let tags: String = row.get(15)?;
    let record = Record {
        id: parse_id(&id, "id")?,
        kind: parse_kind(&kind)?,
        scope: scope_at(row, 2)?,
        title: row.get(9)?,
        body: row.get(10)?,
        content: row.get(11)?,
        data: json(row.get(12)?, "data")?.unwrap_or(Value::Null),
        metadata: json(row.get(13)?, "metadata")?,
        source: json(row.get(14)?, "source")?,
        tags: serde_json::from_str(&tags).map_err(|e| StoreError::Corrupt(format!("tags: {e}")))?,
        status: row.get(16)?,
        content_hash: row.get(17)?,
        idempotency_key: row.get(18)?,
        ttl: row.get(19)?,
        created_at: row.get(20)?,
        updated_at: row.get(21)?,
        expires_at: row.get(22)?,
        occurred_at: row.get(25)?,
        vector: None,
        chunks: Vec::new(),
    };
    let superseded_by: Option<String> = row.get(24)?;
    let superseded_by = superseded_by.map(|id| parse_id(&id, "superseded_by")).transpose()?;
    Ok(StoredItem {
        record,
        deleted_at: row.get(23)?,
        superseded_by,
        governed_since: row.get(26)?,
        author: row.get(27)?,
    })
}

/// Little-endian f32s, the layout of `item_vectors.vector`.
pub fn vector_to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn vector_from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The layout of `item_vectors.chunks`: per chunk, little-endian `u32` start, end and
/// dimension, then that many `f32`s.
pub fn chunks_to_blob(chunks: &[ChunkVector]) -> Option<Vec<u8>> {
    if chunks.is_empty() {
        return None;
    }
    let mut blob = Vec::new();
    for c in chunks {
        for n in [c.start, c.end, c.vector.len() as u32] {
            blob.extend_from_slice(&n.to_le_bytes());
        }
        blob.extend(vector_to_blob(&c.vector));
    }
    Some(blob)
}

pub fn chunks_from_blob(blob: Option<&[u8]>) -> Result<Vec<ChunkVector>> {
    let Some(blob) = blob else { return Ok(Vec::new()) };
    let corrupt = || StoreError::Corrupt("item_vectors.chunks: truncated blob".into());
    let word = |at: usize| -> Result<u32> {
        let bytes = blob.get(at..at + 4).ok_or_else(corrupt)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    };
    let mut chunks = Vec::new();
    let mut at = 0;
    while at < blob.len() {
        let values_end = at + 12 + word(at + 8)? as usize * 4;
        let values = blob.get(at + 12..values_end).ok_or_else(corrupt)?;
        chunks.push(ChunkVector { start: word(at)?, end: word(at + 4)?, vector: vector_from_blob(values) });
        at = values_end;
    }
    Ok(chunks)
}
