//! The store conformance suite: every test runs against every backend through the `Store`
//! trait (`per_backend!` makes `<test>::sqlite` and `<test>::postgres`). A new backend adds one
//! arm to `cortex_testdb::per_backend!` and must pass all of it. One module per concern; the
//! records and queries they build are here.

mod items;
mod links;
mod search;
mod vectors;

use cortex_domain::dedupe;
use cortex_domain::query::parse_query;
use cortex_domain::{Kind, Scope};
use cortex_store::*;
use serde_json::json;
use uuid::Uuid;

pub const NOW: i64 = 1_800_000_000_000;

pub fn scope(branch: &str) -> Scope {
    Scope {
        org: Some("acme".into()),
        project: Some("api".into()),
        branch: Some(branch.into()),
        ..Scope::default()
    }
}

pub fn record(title: &str, body: &str, branch: &str) -> Record {
    Record {
        id: Uuid::now_v7(),
        kind: Kind::Section,
        scope: scope(branch),
        title: title.into(),
        body: body.into(),
        content: Some(body.into()),
        data: json!({}),
        metadata: Some(json!({"k": 1})),
        source: None,
        tags: vec!["ops".into()],
        status: None,
        content_hash: cortex_domain::text::content_hash(&format!("{title}\n{body}")),
        idempotency_key: None,
        ttl: None,
        created_at: NOW,
        updated_at: NOW,
        expires_at: None,
        occurred_at: None,
        vector: None,
        chunks: Vec::new(),
    }
}

pub fn insert(store: &dyn Store, r: &Record) -> WriteOutcome {
    store.write_batch(&[WriteOp::Insert { record: r.clone(), checks: dedupe::INSERT }]).unwrap().remove(0)
}

pub fn query(text: &str, filters: Filters) -> LexicalQuery {
    LexicalQuery { query: parse_query(text), combine: Combine::Any, filters, pool: 100 }
}

pub fn filters() -> Filters {
    Filters { now: NOW, ..Filters::default() }
}

pub fn ids(matches: &[LexicalMatch]) -> Vec<Uuid> {
    matches.iter().map(|m| m.id).collect()
}
