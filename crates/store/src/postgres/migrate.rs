//! Schema migrations with checksums, as for SQLite: a migration changed after it was applied,
//! or a database newer than this build, stops start-up with a message saying what to do.

use super::conn::{Conn, Sql};
use crate::{Result, StoreError};
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
    (8, "audit_chain", include_str!("../../migrations/postgres/0008_audit_chain.sql")),
    (9, "change_log", include_str!("../../migrations/postgres/0009_change_log.sql")),
    (10, "api_keys", include_str!("../../migrations/postgres/0010_api_keys.sql")),
    (11, "audit_actor", include_str!("../../migrations/postgres/0011_audit_actor.sql")),
    (12, "drop_lexicon", include_str!("../../migrations/postgres/0012_drop_lexicon.sql")),
    (13, "api_key_names_per_org", include_str!("../../migrations/postgres/0013_api_key_names_per_org.sql")),
    (14, "occurred_at", include_str!("../../migrations/postgres/0014_occurred_at.sql")),
    (15, "key_limits", include_str!("../../migrations/postgres/0015_key_limits.sql")),
    (16, "ui_sessions", include_str!("../../migrations/postgres/0016_ui_sessions.sql")),
    (17, "governed", include_str!("../../migrations/postgres/0017_governed.sql")),
    (18, "audit_principal", include_str!("../../migrations/postgres/0018_audit_principal.sql")),
    (19, "provenance", include_str!("../../migrations/postgres/0019_provenance.sql")),
    (20, "item_author", include_str!("../../migrations/postgres/0020_item_author.sql")),
    (21, "ui_sign_ins", include_str!("../../migrations/postgres/0021_ui_sign_ins.sql")),
    (22, "key_restore", include_str!("../../migrations/postgres/0022_key_restore.sql")),
    (23, "places", include_str!("../../migrations/postgres/0023_places.sql")),
];

/// Serializes migrations across processes starting at once (an arbitrary fixed key).
const MIGRATION_LOCK: i64 = 0x636f_7274_6578;

fn checksum(sql: &str) -> String {
    Sha256::digest(sql.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

pub fn run(client: &mut Conn) -> Result<()> {
    run_to(client, MIGRATIONS.last().map_or(0, |m| m.0))
}

/// Applies the migrations up to `target` (a test's older schema; `run` for everything).
pub fn run_to(client: &mut Conn, target: i64) -> Result<()> {
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
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 <= target) {
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
pub fn current_version(client: &mut impl Sql) -> Result<i64> {
    Ok(client.query_one("SELECT coalesce(max(version), 0) FROM schema_migrations", &[])?.try_get(0)?)
}

/// Each schema object the audit trail depends on (triggers and functions) as `(name,
/// definition)`, in `schema`.
fn audit_objects(client: &mut impl Sql, schema: &str) -> Result<Vec<(String, Option<String>)>> {
    let rows = client.query(
        "SELECT 'trigger ' || c.relname || '.' || t.tgname, \
                concat_ws(' ', 'type', t.tgtype, 'calls', p.proname, 'on columns', t.tgattr::text, \
                          CASE t.tgenabled::text WHEN 'D' THEN 'DISABLED' WHEN 'O' THEN 'enabled' ELSE 'enabled ' || t.tgenabled::text END) \
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid \
         WHERE c.relnamespace = $1::text::regnamespace AND NOT t.tgisinternal \
         UNION ALL \
         SELECT 'function ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', p.prosrc \
         FROM pg_proc p WHERE p.pronamespace = $1::text::regnamespace \
         ORDER BY 1",
        &[&schema],
    )?;
    rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
}

/// The audit triggers and functions that differ from what this build's migrations create (up
/// to the database's version): the migrations are run into a scratch schema inside a
/// transaction that is rolled back, and the two catalogs compared.
pub fn audit_schema_drift(client: &mut Conn) -> Result<Vec<crate::audit_chain::SchemaDrift>> {
    let version = current_version(client)?;
    let schema: String = client.query_one("SELECT current_schema()", &[])?.try_get(0)?;
    let found = audit_objects(client, &schema)?;
    let mut tx = client.transaction()?;
    tx.batch_execute(
        "CREATE SCHEMA cortex_expected; \
         SELECT set_config('search_path', 'cortex_expected, ' || current_setting('search_path'), true)",
    )?;
    for (_, _, sql) in MIGRATIONS.iter().filter(|m| m.0 <= version) {
        tx.batch_execute(sql)?;
    }
    let expected = audit_objects(&mut tx, "cortex_expected")?;
    tx.rollback()?;
    // Functions of extensions (pgvector's, pg_trgm's) live beside ours: only ours are compared.
    let ours: std::collections::BTreeSet<&String> = expected.iter().map(|(n, _)| n).collect();
    let found: Vec<_> =
        found.into_iter().filter(|(n, _)| n.starts_with("trigger ") || ours.contains(n)).collect();
    Ok(crate::audit_chain::schema_drift(&expected, &found))
}
