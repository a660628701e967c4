//! Mapping between `Record` and the `items` row.

use crate::{ItemFacts, Record, Result, StoredItem};
use cortex_domain::{Kind, Scope};
use postgres::Row;
use serde_json::Value;

use crate::item_columns::Col;
pub use crate::item_columns::{COLUMN_COUNT, COLUMNS};

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
    let data: Option<Value> = row.try_get(Col::Data.at())?;
    let record = Record {
        id: row.try_get(Col::Id.at())?,
        kind: kind_at(row, Col::Kind.at())?,
        scope: scope_at(row, Col::Org.at())?,
        title: row.try_get(Col::Title.at())?,
        body: row.try_get(Col::Body.at())?,
        content: row.try_get(Col::Content.at())?,
        data: data.unwrap_or(Value::Null),
        metadata: row.try_get(Col::Metadata.at())?,
        source: row.try_get(Col::Source.at())?,
        tags: row.try_get(Col::Tags.at())?,
        status: row.try_get(Col::Status.at())?,
        content_hash: row.try_get(Col::ContentHash.at())?,
        idempotency_key: row.try_get(Col::IdempotencyKey.at())?,
        ttl: row.try_get(Col::Ttl.at())?,
        created_at: row.try_get(Col::CreatedAt.at())?,
        updated_at: row.try_get(Col::UpdatedAt.at())?,
        expires_at: row.try_get(Col::ExpiresAt.at())?,
        occurred_at: row.try_get(Col::OccurredAt.at())?,
        vector: None,
        chunks: Vec::new(),
    };
    Ok(StoredItem {
        record,
        deleted_at: row.try_get(Col::DeletedAt.at())?,
        superseded_by: row.try_get(Col::SupersededBy.at())?,
        governed_since: row.try_get(Col::GovernedSince.at())?,
        author: row.try_get(Col::Author.at())?,
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
