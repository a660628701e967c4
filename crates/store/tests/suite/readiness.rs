//! The narrow readiness call every backend answers: the schema version the database is at, in
//! one query (a readiness probe asks it every few seconds, so it counts nothing), agreeing with
//! what the whole store's counts say; and an error, not a version, when the database cannot
//! tell it.

use cortex_testdb::{TestDb, per_backend};

per_backend!(
    readiness_names_the_schema_version_the_counts_name,
    readiness_fails_when_the_version_cannot_be_read,
);

fn readiness_names_the_schema_version_the_counts_name(db: &TestDb) {
    let store = db.open();
    let ready = store.ready().unwrap();
    assert_eq!(ready.schema_version, db.target().latest_schema_version());
    assert_eq!(ready.schema_version, store.stats().unwrap().schema_version);
}

fn readiness_fails_when_the_version_cannot_be_read(db: &TestDb) {
    let store = db.open();
    db.execute_raw("DROP TABLE schema_migrations").unwrap();
    let e = store.ready().expect_err("a database without its migration history is not ready");
    assert!(e.to_string().contains("schema_migrations"), "{e}");
}
