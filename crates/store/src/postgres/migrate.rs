//! Schema migrations with checksums, as for SQLite: a migration changed after it was applied,
//! or a database newer than this build, stops start-up with a message saying what to do.

use crate::{Result, StoreError};
use postgres::Client;
use sha2::{Digest, Sha256};

/// `(version, name, sql)`, in order. Never edit an applied migration: add a new one.
pub const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../../migrations/postgres/0001_init.sql")),
    (2, "audit", include_str!("../../migrations/postgres/0002_audit.sql")),
    (3, "supersede", include_str!("../../migrations/postgres/0003_supersede.sql")),
    (4, "natural_key", include_str!("../../migrations/postgres/0004_natural_key.sql")),
    (5, "links", include_str!("../../migrations/postgres/0005_links.sql")),
    (6, "reembed", include_str!("../../migrations/postgres/0006_reembed.sql")),
    (7, "chunks", include_str!("../../migrations/postgres/0007_chunks.sql")),
];

/// Serializes migrations across processes starting at once (an arbitrary fixed key).
const MIGRATION_LOCK: i64 = 0x636f_7274_6578;

fn checksum(sql: &str) -> String {
    Sha256::digest(sql.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

pub fn run(client: &mut Client) -> Result<()> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version bigint PRIMARY KEY,
            name text NOT NULL,
            checksum text NOT NULL,
            applied_at bigint NOT NULL
        )",
    )?;
    let known = MIGRATIONS.last().map_or(0, |m| m.0);
    let newest: Option<i64> = tx.query_one("SELECT max(version) FROM schema_migrations", &[])?.try_get(0)?;
    if let Some(found) = newest
        && found > known
    {
        return Err(StoreError::SchemaTooNew { found, known });
    }
    for (version, name, sql) in MIGRATIONS {
        let expected = checksum(sql);
        let recorded: Option<String> = tx
            .query_opt("SELECT checksum FROM schema_migrations WHERE version = $1", &[version])?
            .map(|r| r.try_get(0))
            .transpose()?;
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
                tx.batch_execute(sql)?;
                tx.execute(
                    "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)",
                    &[version, name, &expected, &chrono::Utc::now().timestamp_millis()],
                )?;
                tracing::info!(version, name, "applied migration");
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// The schema version recorded in the database.
pub fn current_version(client: &mut Client) -> Result<i64> {
    Ok(client.query_one("SELECT coalesce(max(version), 0) FROM schema_migrations", &[])?.try_get(0)?)
}
