//! What the item page tells of an item's past, read from its audit trail and provenance: who
//! wrote it (the principal the server established, apart from what the client claimed), at
//! which commit, from which file; its history as a timeline, oldest first; and its supersede
//! chain both ways.

use super::page::When;
use cortex_service::MemoryService;
use cortex_service::response::Hit;
use cortex_store::{AuditOperation, AuditRecord};
use serde_json::Value;
use uuid::Uuid;

/// Steps followed at most each way along a supersede chain.
const CHAIN_STEPS: usize = 10;
/// Records read after a new version's insert to find the item it superseded in that batch.
const BATCH_RECORDS: usize = 200;

pub struct HistoryLine {
    pub at: When,
    pub operation: String,
    /// The principal the server established, and what it came through.
    pub who: String,
    /// What the client said of itself (agent, tool, session), labelled as its claim.
    pub claims: String,
    pub summary: String,
}

/// Where the item came from.
pub struct Origin {
    pub written: Option<HistoryLine>,
    pub commit: String,
    pub branch: String,
    pub dirty: bool,
    pub files: Vec<String>,
    /// The file `cortex ingest` read it from.
    pub ingested_from: String,
}

pub struct Link {
    pub id: String,
    pub title: String,
}

/// The versions before this item (oldest first) and after it (the newest last).
#[derive(Default)]
pub struct Chain {
    pub older: Vec<Link>,
    pub newer: Vec<Link>,
}

impl Chain {
    pub fn is_empty(&self) -> bool {
        self.older.is_empty() && self.newer.is_empty()
    }
}

pub fn line(r: &AuditRecord) -> HistoryLine {
    let who = match (&r.principal, &r.via) {
        (Some(principal), Some(via)) => format!("{principal} via {via}"),
        (Some(principal), None) => principal.clone(),
        (None, _) => String::new(),
    };
    let c = &r.claimed;
    let claims: Vec<String> = [("agent", &c.actor), ("tool", &c.tool), ("session", &c.session)]
        .into_iter()
        .filter_map(|(label, v)| v.as_ref().map(|v| format!("{label} {v}")))
        .collect();
    HistoryLine {
        at: When::at(r.at, super::page::now_ms()),
        operation: r.operation.clone(),
        who,
        claims: claims.join(", "),
        summary: r.summary.clone(),
    }
}

pub fn origin(hit: &Hit, history: &[AuditRecord]) -> Origin {
    let written = history
        .iter()
        .find(|r| matches!(r.op(), Some(AuditOperation::Insert | AuditOperation::Import)))
        .map(line);
    let provenance = hit.provenance.as_ref();
    let ingest = hit.metadata.as_ref().and_then(|m| m.get("ingest"));
    let text = |name: &str| ingest.and_then(|i| i.get(name)).and_then(Value::as_str).unwrap_or_default();
    let ingested_from = text("path").to_string();
    Origin {
        written,
        commit: provenance.and_then(|p| p.commit.clone()).unwrap_or_default(),
        branch: provenance.and_then(|p| p.branch.clone()).unwrap_or_default(),
        dirty: provenance.is_some_and(|p| p.dirty),
        files: provenance.map(|p| p.files.clone()).unwrap_or_default(),
        ingested_from,
    }
}

/// The supersede chain within the caller's reach: forward along `superseded_by`, backward
/// through the audit trail (a new version's insert and the old one's supersede share a batch).
pub fn chain(
    service: &MemoryService,
    hit: &Hit,
    history: &[AuditRecord],
) -> Result<Chain, cortex_service::ServiceError> {
    let mut chain = Chain::default();
    let mut next = hit.superseded_by.as_deref().and_then(|id| Uuid::parse_str(id).ok());
    while let Some(id) = next.filter(|_| chain.newer.len() < CHAIN_STEPS) {
        let Some(newer) = super::item::find_one(service, id)? else { break };
        next = newer.superseded_by.as_deref().and_then(|id| Uuid::parse_str(id).ok());
        chain.newer.push(Link { id: id.to_string(), title: newer.title });
    }
    let mut history = history.to_vec();
    let mut this = hit.id;
    while chain.older.len() < CHAIN_STEPS {
        let Some(older) = superseded_by_insert(service, this, &history)? else { break };
        let Some(found) = super::item::find_one(service, older)? else { break };
        chain.older.insert(0, Link { id: older.to_string(), title: found.title });
        history = service.audit().records(Some(older), None, BATCH_RECORDS)?;
        this = older;
    }
    Ok(chain)
}

/// The item `id`'s insert superseded, from the records of the insert's batch.
fn superseded_by_insert(
    service: &MemoryService,
    id: Uuid,
    history: &[AuditRecord],
) -> Result<Option<Uuid>, cortex_service::ServiceError> {
    let Some(insert) = history.iter().find(|r| r.op() == Some(AuditOperation::Insert)) else {
        return Ok(None);
    };
    let Some(batch) = &insert.batch_id else { return Ok(None) };
    let after = service.audit().records(None, Some(insert.at), BATCH_RECORDS)?;
    Ok(after
        .iter()
        .filter(|r| r.batch_id.as_ref() == Some(batch) && r.op() == Some(AuditOperation::Supersede))
        .filter_map(|r| r.item_id)
        .find(|other| *other != id))
}
