//! What the service flow tests share: a service over the test's database, standing at
//! acme/api on a branch, and small builders for requests.
#![allow(dead_code)] // each test binary uses its own part

use cortex_domain::FindRequest;
use cortex_domain::item::StoreRequest;
use cortex_service::response::{FindResponse, StoreResponse};
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService, ServiceError};
use cortex_testdb::TestDb;
use serde_json::{Value, json};

pub struct Memory {
    pub service: MemoryService,
}

/// A service standing at acme/api@`branch` over the test's fresh database.
pub fn memory(db: &TestDb, branch: &str) -> Memory {
    Memory { service: open_at(db, branch) }
}

/// A new service (as a new process would open it) on the test's database.
pub fn open_at(db: &TestDb, branch: &str) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", branch);
    // These flows are lexical; semantic ones live in tests/semantic.rs.
    MemoryService::open(&Config::new(db.target().clone(), scope, EmbedderChoice::None)).unwrap()
}

/// The tools' arguments as an agent sends them, parsed as the MCP edge parses them, then
/// served: these flows are tested from the arguments to the answer.
pub trait Tools {
    fn store_args(&self, args: &Value) -> Result<StoreResponse, ServiceError>;
    fn find_args(&self, args: &Value) -> Result<FindResponse, ServiceError>;
}

impl Tools for MemoryService {
    fn store_args(&self, args: &Value) -> Result<StoreResponse, ServiceError> {
        self.memory_store().store(&StoreRequest::from_json(args)?)
    }

    fn find_args(&self, args: &Value) -> Result<FindResponse, ServiceError> {
        self.memory_find().find(&FindRequest::from_json(args)?)
    }
}

impl Memory {
    pub fn store(&self, items: Value) -> StoreResponse {
        self.service.store_args(&json!({ "items": items })).unwrap()
    }

    pub fn find(&self, args: Value) -> FindResponse {
        self.service.find_args(&args).unwrap()
    }

    pub fn ids(&self, args: Value) -> Vec<String> {
        self.find(args).hits.into_iter().map(|h| h.id.to_string()).collect()
    }

    /// The audit operations recorded for one item, oldest first.
    pub fn operations(&self, id: &str) -> Vec<String> {
        let id = uuid::Uuid::parse_str(id).unwrap();
        self.service.audit().records(Some(id), None, 100).unwrap().into_iter().map(|r| r.operation).collect()
    }
}

pub fn section(title: &str, body: &str) -> Value {
    json!({"kind": "section", "data": {"title": title, "body": body}})
}

/// A scope on `org`/`project`, branch main.
pub fn at(org: &str, project: &str) -> Value {
    json!({"org": org, "project": project, "branch": "main"})
}

/// Stores `items` through `service`; the id of each, every one of which must be stored.
pub fn stored_ids(service: &MemoryService, items: Value) -> Vec<String> {
    let r = service.store_args(&json!({ "items": items })).unwrap();
    r.results.iter().map(|x| x.id.clone().unwrap_or_else(|| panic!("not stored: {x:?}"))).collect()
}

pub fn id_of(r: &StoreResponse, i: usize) -> String {
    r.results[i].id.clone().unwrap()
}

pub const DAY_MS: i64 = 86_400_000;

pub fn days_ago(days: i64) -> String {
    cortex_domain::time::format_instant(chrono::Utc::now().timestamp_millis() - days * DAY_MS)
}

/// A small deterministic random source for property-style tests (seeded per test).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Every item an ingest made (superseded ones too), by `path` (and `#key` when the file has
/// several; a commit is `#hash`).
pub fn ingested(db: &TestDb) -> std::collections::BTreeMap<String, cortex_store::StoredItem> {
    let filters =
        cortex_store::Filters { include_superseded: true, include_expired: true, ..Default::default() };
    db.open()
        .recent(&filters, 100_000)
        .unwrap()
        .into_iter()
        .filter_map(|item| {
            let source = item.record.metadata.as_ref()?.get("ingest")?.clone();
            let path = source["path"].as_str()?.to_string();
            let key = source["key"].as_str()?.to_string();
            let name = if key.is_empty() { path } else { format!("{path}#{key}") };
            Some((name, item))
        })
        .collect()
}
