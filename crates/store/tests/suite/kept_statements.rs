//! A store's connections stay right and current across what happens between statements: it
//! trusts a connection that answered lately without asking it first, and (PostgreSQL) sends
//! every statement unnamed, so nothing of a statement is kept on a connection. A statement
//! text run before a schema change still runs after it; a connection the server ended is
//! replaced without failing a read or a write; one statement text serving several tenants,
//! with their own parameters, returns each only its rows; a key revoked, or its revocation
//! undone, by another process is seen so at its next lookup. The suite also runs through PgBouncer in transaction mode
//! (`scripts/test`), where each statement may land on another server connection.

use cortex_domain::api_key::Role;
use cortex_domain::dedupe;
use cortex_domain::query::parse_query;
use cortex_domain::tenant::Bound;
use cortex_store::*;
use cortex_testdb::{TestDb, per_backend};
use std::sync::Arc;
use uuid::Uuid;

per_backend!(
    a_statement_prepared_before_a_column_is_added_still_runs,
    tenants_sharing_one_connection_each_see_only_their_rows,
    a_key_revoked_by_another_process_is_seen_revoked_at_its_next_lookup,
    a_key_restored_by_another_process_is_seen_live_at_its_next_lookup,
);

fn record(org: &str, title: &str) -> Record {
    let mut record = super::shared_database::record(0, None);
    record.scope.org = Some(org.into());
    record.title = title.into();
    record.body = format!("body of {title}");
    record.content_hash = format!("hash {org} {title}");
    record
}

fn insert(store: &Arc<dyn Store>, record: Record) -> Uuid {
    let id = record.id;
    let outcome = store.write_batch(&[WriteOp::Insert { record, checks: dedupe::INSERT_ANYWAY }]).unwrap();
    assert!(matches!(outcome[0], WriteOutcome::Inserted { .. }), "{outcome:?}");
    id
}

/// The same database through a pool of one connection: every statement runs on it.
fn one_connection(db: &TestDb) -> Arc<dyn Store> {
    let target = match db.target().clone() {
        DbTarget::Postgres { url, read_url, .. } => {
            DbTarget::Postgres { url, read_url, pool: PoolConfig { size: 1 } }
        }
        sqlite => sqlite,
    };
    cortex_store::open(&target).unwrap()
}

fn a_statement_prepared_before_a_column_is_added_still_runs(db: &TestDb) {
    let store = one_connection(db);
    let first = insert(&store, record("acme", "first task"));
    assert_eq!(store.get(&[first]).unwrap()[0].record.title, "first task");
    db.execute_raw("ALTER TABLE items ADD COLUMN added_by_a_test INTEGER").unwrap();
    let second = insert(&store, record("acme", "second task"));
    let both = store.get(&[first, second]).unwrap();
    let titles: Vec<&str> = both.iter().map(|i| i.record.title.as_str()).collect();
    assert_eq!(titles, ["first task", "second task"]);
}

fn tenants_sharing_one_connection_each_see_only_their_rows(db: &TestDb) {
    let store = one_connection(db);
    let mut ids = std::collections::HashMap::new();
    for org in ["acme", "other"] {
        let mine: Vec<Uuid> =
            (0..3).map(|i| insert(&store, record(org, &format!("shared word {i}")))).collect();
        ids.insert(org, mine);
    }
    // The same statement text each time, with one tenant's bound as its parameter, then the
    // other's: what one asked never answers the other.
    for round in 0..10 {
        for org in ["acme", "other"] {
            let filters = Filters {
                bound: Some(Bound { org: org.into(), projects: vec![] }),
                now: 2,
                ..Filters::default()
            };
            let query =
                LexicalQuery { query: parse_query("shared word"), combine: Combine::Any, filters, pool: 10 };
            let mut found: Vec<Uuid> =
                store.search_lexical(&query).unwrap().into_iter().map(|m| m.id).collect();
            found.sort();
            assert_eq!(found, ids[org], "round {round}, org {org}");
            assert_eq!(store.count_lexical(&query, 10).unwrap(), 3, "round {round}, org {org}");
        }
    }
}

fn key(name: &str) -> ApiKeyRow {
    ApiKeyRow {
        name: name.into(),
        lookup: format!("lookup-{name}"),
        secret_hash: "0".repeat(64),
        org: "acme".into(),
        projects: vec![],
        role: Role::Read,
        rate_per_second: None,
        created_at: 1,
        expires_at: None,
        revoked_at: None,
    }
}

fn a_key_revoked_by_another_process_is_seen_revoked_at_its_next_lookup(db: &TestDb) {
    let server = one_connection(db);
    let admin = db.open();
    assert!(admin.create_key(&key("ana"), &WriteContext::default()).unwrap());
    for _ in 0..3 {
        let row = server.key_by_lookup("lookup-ana").unwrap().expect("the key is found");
        assert_eq!(row.revoked_at, None);
    }
    assert!(admin.revoke_key("acme", "ana", 7, &WriteContext::default()).unwrap());
    let row = server.key_by_lookup("lookup-ana").unwrap().expect("the key is still found");
    assert_eq!(row.revoked_at, Some(7), "the revocation is seen by the very next lookup");
}

/// Lookups are not cached, so undoing a revocation reaches every server as the revocation
/// does: a server that saw the key revoked sees it live at its very next lookup.
fn a_key_restored_by_another_process_is_seen_live_at_its_next_lookup(db: &TestDb) {
    let server = one_connection(db);
    let admin = db.open();
    let context = WriteContext::default();
    assert!(admin.create_key(&key("ana"), &context).unwrap());
    assert!(admin.revoke_key("acme", "ana", admin.now().unwrap(), &context).unwrap());
    assert!(server.key_by_lookup("lookup-ana").unwrap().unwrap().revoked_at.is_some());
    assert_eq!(admin.restore_key("acme", "ana", &context).unwrap(), KeyRestore::Restored);
    let row = server.key_by_lookup("lookup-ana").unwrap().expect("the key is still found");
    assert_eq!(row.revoked_at, None, "the restore is seen by the very next lookup");
    assert_eq!(server.restore_key("acme", "ana", &context).unwrap(), KeyRestore::NotRevoked);
    assert_eq!(server.restore_key("acme", "bob", &context).unwrap(), KeyRestore::Unknown);
}

/// A column whose type changes between two runs of one statement text changes the type of the
/// rows it returns, which PostgreSQL refuses for a statement kept prepared ("cached plan must
/// not change result type"): the store keeps none, so the read goes on.
#[test]
fn postgres_a_statement_whose_rows_change_type_still_runs() {
    let db = TestDb::postgres();
    let store = one_connection(&db);
    store.set_meta("a test's key", "its value").unwrap();
    assert_eq!(store.meta("a test's key").unwrap().as_deref(), Some("its value"));
    db.execute_raw("ALTER TABLE store_meta ALTER COLUMN value TYPE varchar(4000)").unwrap();
    assert_eq!(store.meta("a test's key").unwrap().as_deref(), Some("its value"));
    store.set_meta("a test's key", "another value").unwrap();
    assert_eq!(store.meta("a test's key").unwrap().as_deref(), Some("another value"));
}

/// Connections that answered a moment ago are used without being asked whether they are
/// alive: when the server has ended them meanwhile (a restart, an operator), reads run again
/// on a new connection and writes ask first, so neither fails.
#[test]
fn postgres_reads_and_writes_go_on_after_the_server_ends_every_connection() {
    let db = TestDb::postgres();
    let store = db.open();
    let first = insert(&store, record("acme", "before the cut"));
    for _ in 0..4 {
        assert_eq!(store.get(&[first]).unwrap().len(), 1);
    }
    let end_all = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()";
    let ended = db.execute_raw(end_all).unwrap();
    // Through a pooler, the pool's one server connection may be the one asking.
    assert!(ended >= 1 || cortex_testdb::pooled(), "the store's connections were ended");
    assert_eq!(store.get(&[first]).unwrap()[0].record.title, "before the cut");
    db.execute_raw(end_all).unwrap();
    let second = insert(&store, record("acme", "after the cut"));
    db.execute_raw(end_all).unwrap();
    let filters = Filters { now: 2, ..Filters::default() };
    let query = LexicalQuery { query: parse_query("cut"), combine: Combine::Any, filters, pool: 10 };
    let mut found: Vec<Uuid> = store.search_lexical(&query).unwrap().into_iter().map(|m| m.id).collect();
    found.sort();
    assert_eq!(found, [first, second]);
}
