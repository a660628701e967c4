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
];

fn checksum(sql: &str) -> String {
    Sha256::digest(sql.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

pub fn run(conn: &mut Connection) -> Result<()> {
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
    let known = MIGRATIONS.last().map_or(0, |m| m.0);
    let newest: Option<i64> = tx.query_row("SELECT max(version) FROM schema_migrations", [], |r| r.get(0))?;
    if let Some(found) = newest
        && found > known
    {
        return Err(StoreError::SchemaTooNew { found, known });
    }
    for (version, name, sql) in MIGRATIONS {
        let expected = checksum(sql);
        let recorded: Option<String> = tx
            .query_row("SELECT checksum FROM schema_migrations WHERE version = ?1", [version], |r| r.get(0))
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
            None => {
                tx.execute_batch(sql)?;
                tx.execute(
                    "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![version, name, expected, chrono::Utc::now().timestamp_millis()],
                )?;
                tracing::info!(version, name, "applied migration");
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// The schema version recorded in the database.
pub fn current_version(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT coalesce(max(version), 0) FROM schema_migrations", [], |r| r.get(0))?)
}
