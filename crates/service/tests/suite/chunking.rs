//! Long documents through the service with the real all-MiniLM-L6-v2: stored whole, indexed
//! in chunks, found by the meaning of one part, returned as one hit byte for byte.

use crate::common::Tools;
use cortex_service::config::embedder_from_env;
use cortex_service::response::{FindResponse, ItemStatus};
use cortex_service::scope_inference::InferredScope;
use cortex_service::{Config, MemoryService};
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;

per_backend!(
    a_document_is_found_through_the_chunk_that_answers,
    the_document_comes_back_byte_for_byte,
    chunks_follow_updates_and_reindex,
    a_short_note_like_one_chunk_is_not_a_near_duplicate_of_the_document,
);

fn open(db: &TestDb) -> MemoryService {
    let scope = InferredScope::fixed("acme", "payments", "main");
    MemoryService::open(&Config::new(db.target().clone(), scope, embedder_from_env().unwrap())).unwrap()
}

/// A runbook as teams write them: headings, a shell block whose comments look like headings,
/// a table, trailing spaces, a tab, a CRLF line and non-ASCII text.
const RUNBOOK: &str = "# Payments service operations\n\
\n\
The payments service takes card payments from the checkout, talks to the card processor over\n\
mutual TLS and writes every charge to the ledger database. It runs as three replicas behind the\n\
internal load balancer. Each replica is stateless; all state lives in the ledger database and in\n\
the outbox table that the settlement worker drains every minute.  \n\
\n\
Alerts for this service page the payments on-call rotation. Latency above 800 ms at p99 for ten\n\
minutes, or an error rate above one percent, pages immediately. Everything else opens a ticket.\n\
\n\
## Deploying a release\n\
\n\
Releases go out from the main branch after the integration suite passes. Deploy one region at a\n\
time and watch the dashboards between regions: a bad release shows up first as declined charges.\n\
\n\
```sh\n\
# Build and push the image\n\
make image TAG=$(git rev-parse --short HEAD)\n\
## not a heading either: this is a shell comment\n\
helm upgrade payments ./chart --set image.tag=$TAG --namespace payments\n\
kubectl rollout status deploy/payments -n payments --timeout=5m\n\
```\n\
\n\
After the rollout finishes, run the smoke test that makes a one-cent charge against the sandbox\n\
processor and refunds it. The release is done when the smoke test passes in every region.\r\n\
\n\
## Rolling back a bad release\n\
\n\
Roll back as soon as declined charges climb; do not debug in production first. Helm keeps the\n\
last ten releases, so a rollback is one command and takes about two minutes per region.\n\
\n\
| step | command | expected |\n\
|------|---------|----------|\n\
| 1 | `helm history payments -n payments` | the last good revision |\n\
| 2 | `helm rollback payments <revision> -n payments` | rollout starts |\n\
| 3 | `kubectl rollout status deploy/payments -n payments` | all replicas ready |\n\
\n\
Tell the checkout team in the incidents channel when the rollback starts and when it ends.\n\
\n\
A rollback does not undo schema migrations. Every migration we ship is backward compatible for\n\
one release, so the previous image runs against the new schema without trouble. If a migration\n\
itself is the fault, leave it in place, roll the image back, and write a forward fix; never run\n\
a down migration against the ledger by hand. Record the bad revision in the release log so the\n\
next deploy does not pick it up again from the main branch.\n\
\n\
## Ledger database failover\n\
\n\
The ledger is a PostgreSQL primary with one synchronous standby in another zone. When the primary\n\
host dies or stops answering, the standby has every committed transaction and can take over.\n\
Failing over is a manual decision made by the on-call engineer, never automatic, because a\n\
network partition can make a healthy primary look dead.\n\
\n\
To fail over, first fence the old primary so it cannot accept writes again: stop its service and\n\
detach its volume. Then promote the standby with `pg_ctl promote`, point the PgBouncer pool at the\n\
new primary by editing its host entry, and reload PgBouncer. Payments resume within seconds.\n\
Finally build a new standby from a fresh base backup so the ledger is protected again.\t\n\
\n\
While the standby is rebuilt the ledger runs without a synchronous replica, so every write\n\
depends on one disk. Keep the window short: the base backup of the ledger takes about forty\n\
minutes. Check replication lag on the new standby before declaring the failover finished, and\n\
write up the timeline for the incident review, including when the primary stopped answering.\n\
\n\
## Card processor outages\n\
\n\
When the card processor itself is down, payments cannot be taken at all. Switch the checkout to\n\
the degraded mode that queues orders for later capture, post a status page notice, and open a\n\
ticket with the processor's support quoting our merchant number. Queued orders are captured\n\
automatically once the processor answers health checks for five minutes — no manual step.\n\
\n\
## Contacts\n\
\n\
| role | who |\n\
|------|-----|\n\
| payments on-call | the rotation in the pager tool |\n\
| database experts | the platform team, Zoë and Øyvind |\n\
| processor support | the number on the merchant portal |\n";

fn store_runbook(m: &MemoryService) -> String {
    let r = m.store_args(&json!({"items": [{"kind": "section", "content": RUNBOOK}]})).unwrap();
    assert_eq!(r.results[0].status, ItemStatus::Inserted, "{:?}", r.results[0]);
    r.results[0].id.clone().unwrap()
}

fn assert_one_hit_per_item(r: &FindResponse) {
    let mut ids: Vec<String> = r.hits.iter().map(|h| h.id.to_string()).collect();
    ids.sort();
    let before = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), before, "an item appears once however many chunks match");
}

fn a_document_is_found_through_the_chunk_that_answers(db: &TestDb) {
    let m = open(db);
    let id = store_runbook(&m);
    m.store_args(&json!({"items": [
        {"kind": "section", "content": "The billing worker charges customers every night at 02:00 UTC."},
        {"kind": "decision", "content": "We chose PostgreSQL for the ledger because of its transactional guarantees."},
    ]}))
    .unwrap();
    let r = m.find_args(&json!({"detail": "full", "query": "what to do when the main database server goes down and the replica must take over"})).unwrap();
    assert_one_hit_per_item(&r);
    let hit = &r.hits[0];
    assert_eq!(hit.id.to_string(), id, "{:?}", r.hits.iter().map(|h| &h.title).collect::<Vec<_>>());
    let chunk = hit.chunk.as_ref().expect("found through a chunk");
    assert_eq!(
        chunk.heading_path,
        vec!["Payments service operations".to_string(), "Ledger database failover".to_string()]
    );
    assert!(hit.chunks_matched >= 1);
    let part = &RUNBOOK[chunk.start..chunk.end];
    assert!(part.contains("promote the standby"), "the chunk is the failover part: {part}");
    let snippet = hit.snippet.replace("**", "");
    // A snippet is one line: the chunk's whitespace collapsed.
    let one_line = part.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(one_line.contains(snippet.trim_matches('…')), "the snippet is cut from that chunk: {snippet}");

    // A query about another part points at that part.
    let r = m
        .find_args(&json!({"detail": "full", "query": "how do I undo a deployment that broke checkout"}))
        .unwrap();
    assert_one_hit_per_item(&r);
    let hit = r.hits.iter().find(|h| h.id.to_string() == id).expect("the runbook is found");
    assert_eq!(hit.chunk.as_ref().unwrap().heading_path.last().unwrap(), "Rolling back a bad release");
}

fn the_document_comes_back_byte_for_byte(db: &TestDb) {
    let m = open(db);
    let id = store_runbook(&m);
    let by_id = m.find_args(&json!({"ids": [id], "max_content_chars": 20000})).unwrap();
    assert_eq!(by_id.hits[0].content.as_deref(), Some(RUNBOOK));
    assert!(!by_id.hits[0].content_truncated);
    let found = m
        .find_args(&json!({"query": "promote the standby ledger database", "max_content_chars": 20000}))
        .unwrap();
    assert_eq!(found.hits[0].id.to_string(), id);
    assert_eq!(found.hits[0].content.as_deref(), Some(RUNBOOK), "the parent's text, not a chunk's");
}

fn chunks_follow_updates_and_reindex(db: &TestDb) {
    let m = open(db);
    let id = store_runbook(&m);
    let query = json!({"detail": "full", "query": "what to do when the main database server goes down and the replica must take over"});
    m.indexes().reindex_vectors(|_, _| {}).unwrap();
    let after_reindex = m.find_args(&query).unwrap();
    assert_eq!(after_reindex.hits[0].id.to_string(), id);
    assert!(after_reindex.hits[0].chunk.is_some(), "reindex embeds the chunks again");

    // Short new text: no chunks left to match, from this process or a fresh one.
    let short = "Payments runbook moved to the wiki.";
    m.store_args(&json!({"items": [{"kind": "section", "id": id, "content": short}]})).unwrap();
    for service in [&m, &open(db)] {
        let r = service.find_args(&query).unwrap();
        assert!(
            r.hits.iter().all(|h| h.chunk.is_none()),
            "{:?}",
            r.hits.iter().map(|h| &h.chunk).collect::<Vec<_>>()
        );
    }
}

fn a_short_note_like_one_chunk_is_not_a_near_duplicate_of_the_document(db: &TestDb) {
    let m = open(db);
    store_runbook(&m);
    let note = "To fail over the ledger, fence the old primary, promote the standby with pg_ctl promote, \
                point PgBouncer at the new primary and reload it.";
    let r = m.store_args(&json!({"items": [{"kind": "section", "content": note}]})).unwrap();
    assert_eq!(r.results[0].status, ItemStatus::Inserted, "{:?}", r.results[0]);
}
