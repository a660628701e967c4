//! Schema migrations with checksums. A migration that changed after it was applied, or a
//! database newer than this build, stops start-up with a message saying what to do.
//!
//! Hand-written rather than a migration crate: it is one table and one loop, and keeps the
//! SQLite driver free to move to new versions independently of a migration tool's pin.

use crate::{Result, StoreError};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use sha2::{Digest, Sha256};

/// `(version, name, sql)`, in order. Never edit an applied migration: add a new one.
pub const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../../migrations/sqlite/0001_init.sql")),
    (2, "vectors", include_str!("../../migrations/sqlite/0002_vectors.sql")),
    (3, "updated_at", include_str!("../../migrations/sqlite/0003_updated_at.sql")),
    (4, "audit", include_str!("../../migrations/sqlite/0004_audit.sql")),
    (5, "supersede", include_str!("../../migrations/sqlite/0005_supersede.sql")),
    (6, "natural_key", include_str!("../../migrations/sqlite/0006_natural_key.sql")),
    (7, "links", include_str!("../../migrations/sqlite/0007_links.sql")),
    (8, "chunks", include_str!("../../migrations/sqlite/0008_chunks.sql")),
    (9, "audit_chain", include_str!("../../migrations/sqlite/0009_audit_chain.sql")),
    (10, "change_log", include_str!("../../migrations/sqlite/0010_change_log.sql")),
    (11, "api_keys", include_str!("../../migrations/sqlite/0011_api_keys.sql")),
    (12, "audit_actor", include_str!("../../migrations/sqlite/0012_audit_actor.sql")),
    (13, "api_key_names_per_org", include_str!("../../migrations/sqlite/0013_api_key_names_per_org.sql")),
    (14, "occurred_at", include_str!("../../migrations/sqlite/0014_occurred_at.sql")),
    (15, "governed", include_str!("../../migrations/sqlite/0015_governed.sql")),
    (16, "audit_principal", include_str!("../../migrations/sqlite/0016_audit_principal.sql")),
    (17, "provenance", include_str!("../../migrations/sqlite/0017_provenance.sql")),
    (18, "item_author", include_str!("../../migrations/sqlite/0018_item_author.sql")),
    (19, "key_restore", include_str!("../../migrations/sqlite/0019_key_restore.sql")),
    (20, "places", include_str!("../../migrations/sqlite/0020_places.sql")),
];

fn checksum(sql: &str) -> String {
    Sha256::digest(sql.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Brings the schema up to this build's newest migration.
pub fn run(conn: &mut Connection) -> Result<()> {
    run_to(conn, latest())
}

/// The newest migration this build knows.
pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Applies the migrations up to `target`. A database already there is only read: opening it
/// takes no write lock, so a process that only reads never waits behind another one's write.
pub fn run_to(conn: &mut Connection, target: i64) -> Result<()> {
    if pending(conn, target)? == 0 {
        return Ok(());
    }
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            checksum TEXT NOT NULL,
            applied_at INTEGER NOT NULL
        )",
    )?;
    // IMMEDIATE: two processes starting at once must not both apply a migration.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    check_recorded(&tx, target)?;
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 <= target) {
        let applied =
            tx.prepare_cached("SELECT 1 FROM schema_migrations WHERE version = ?1")?.exists([version])?;
        if !applied {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![version, name, checksum(sql), chrono::Utc::now().timestamp_millis()],
            )?;
            // The scratch database a schema check migrates in memory is nobody's business.
            if tx.path().is_some_and(|p| !p.is_empty()) {
                tracing::info!(version, name, "applied migration");
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// How many migrations up to `target` the database lacks, after checking that those it has
/// are this build's (unchanged, none newer). Reads only.
pub fn pending(conn: &Connection, target: i64) -> Result<usize> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'")?
        .exists([])?;
    if !exists {
        return Ok(MIGRATIONS.iter().filter(|m| m.0 <= target).count());
    }
    check_recorded(conn, target)
}

/// Errors when the database has a migration this build does not know or one that changed;
/// otherwise how many migrations up to `target` it lacks.
fn check_recorded(conn: &Connection, target: i64) -> Result<usize> {
    let newest: Option<i64> =
        conn.query_row("SELECT max(version) FROM schema_migrations", [], |r| r.get(0))?;
    if let Some(found) = newest
        && found > latest()
    {
        return Err(StoreError::SchemaTooNew { found, known: latest() });
    }
    let mut missing = 0;
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 <= target) {
        let expected = checksum(sql);
        let recorded: Option<String> = conn
            .prepare_cached("SELECT checksum FROM schema_migrations WHERE version = ?1")?
            .query_row([version], |r| r.get(0))
            .optional()?;
        match recorded {
            Some(recorded) if recorded == expected => {}
            Some(recorded) => {
                return Err(StoreError::MigrationChanged {
                    version: *version,
                    name: name.to_string(),
                    recorded,
                    expected,
                });
            }
            None => missing += 1,
        }
    }
    Ok(missing)
}

/// The schema version recorded in the database.
pub fn current_version(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT coalesce(max(version), 0) FROM schema_migrations", [], |r| r.get(0))?)
}
