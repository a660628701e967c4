//! API keys on PostgreSQL: one table (`0010_api_keys.sql`), whose triggers refuse deletes and
//! any change but one revocation and its undoing within the restore window
//! (`0022_key_restore.sql`), and write the audit records. A write takes the audit
//! chain's lock first, as every audited transaction does (see `super::AUDIT_LOCK`).

use super::conn::{Conn, Sql, Tx};
use crate::{ApiKeyRow, AuditOperation, KeyRestore, Result, StoreError, WriteContext};
use cortex_domain::api_key::{RESTORE_CLOCK_SLACK_MS, RESTORE_WINDOW_MS, Role};
use postgres::Row;

const COLUMNS: &str =
    "name, lookup, secret_hash, org, projects, role, rate_per_second, created_at, expires_at, revoked_at";

fn key(r: &Row) -> Result<ApiKeyRow> {
    let name: String = r.try_get(0)?;
    let role: String = r.try_get(5)?;
    let role = Role::parse(&role, "role")
        .map_err(|_| StoreError::Corrupt(format!("API key {name}: role {role:?} is not a role")))?;
    Ok(ApiKeyRow {
        lookup: r.try_get(1)?,
        secret_hash: r.try_get(2)?,
        org: r.try_get(3)?,
        projects: r.try_get(4)?,
        role,
        rate_per_second: r.try_get(6)?,
        created_at: r.try_get(7)?,
        expires_at: r.try_get(8)?,
        revoked_at: r.try_get(9)?,
        name,
    })
}

/// A transaction holding the audit chain's lock, whose records name `context`'s principal and
/// channel (the triggers read them from the transaction's settings).
fn audited<'a>(client: &'a mut Conn, context: &WriteContext) -> Result<Tx<'a>> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&super::AUDIT_LOCK])?;
    tx.execute(
        "SELECT set_config('cortex.request_id', $1, true), set_config('cortex.principal', $2, true), \
         set_config('cortex.via', $3, true)",
        &[
            &context.request_id.clone().unwrap_or_default(),
            &context.principal.clone().unwrap_or_default(),
            &context.via.clone().unwrap_or_default(),
        ],
    )?;
    Ok(tx)
}

pub fn create(client: &mut Conn, k: &ApiKeyRow, context: &WriteContext) -> Result<bool> {
    let mut tx = audited(client, context)?;
    let inserted = tx.execute(
        &format!(
            "INSERT INTO api_keys ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (org, name) DO NOTHING"
        ),
        &[
            &k.name,
            &k.lookup,
            &k.secret_hash,
            &k.org,
            &k.projects,
            &k.role.as_str(),
            &k.rate_per_second,
            &k.created_at,
            &k.expires_at,
            &k.revoked_at,
        ],
    )?;
    tx.commit()?;
    Ok(inserted == 1)
}

pub fn all(client: &mut Conn) -> Result<Vec<ApiKeyRow>> {
    client
        .query(&format!("SELECT {COLUMNS} FROM api_keys ORDER BY created_at, name"), &[])?
        .iter()
        .map(key)
        .collect()
}

pub fn by_lookup(client: &mut Conn, lookup: &str) -> Result<Option<ApiKeyRow>> {
    client
        .query_opt(&format!("SELECT {COLUMNS} FROM api_keys WHERE lookup = $1"), &[&lookup])?
        .as_ref()
        .map(key)
        .transpose()
}

pub fn revoke(client: &mut Conn, org: &str, name: &str, at: i64, context: &WriteContext) -> Result<bool> {
    let mut tx = audited(client, context)?;
    let changed = tx.execute(
        "UPDATE api_keys SET revoked_at = $3 WHERE org = $1 AND name = $2 AND revoked_at IS NULL",
        &[&org, &name, &at],
    )?;
    tx.commit()?;
    Ok(changed == 1)
}

pub fn restore(client: &mut Conn, org: &str, name: &str, context: &WriteContext) -> Result<KeyRestore> {
    let mut tx = audited(client, context)?;
    let changed = tx.execute(
        "UPDATE api_keys SET revoked_at = NULL WHERE org = $1 AND name = $2 AND revoked_at \
         BETWEEN (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $3 \
         AND (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $4",
        &[&org, &name, &RESTORE_WINDOW_MS, &RESTORE_CLOCK_SLACK_MS],
    )?;
    let answer = if changed == 1 {
        KeyRestore::Restored
    } else {
        let revoked = tx
            .query_opt("SELECT revoked_at FROM api_keys WHERE org = $1 AND name = $2", &[&org, &name])?
            .map(|r| r.try_get::<_, Option<i64>>(0))
            .transpose()?;
        KeyRestore::why_not(revoked)
    };
    tx.commit()?;
    Ok(answer)
}

pub fn record_sign_in(client: &mut Conn, org: &str, summary: &str, context: &WriteContext) -> Result<()> {
    let mut tx = audited(client, context)?;
    tx.execute(
        "INSERT INTO audit_log (at, operation, item_id, kind, org, request_id, summary, principal, via) \
         VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint, $1, NULL, 'ui_session', $2, \
           nullif(current_setting('cortex.request_id', true), ''), $3, \
           nullif(current_setting('cortex.principal', true), ''), nullif(current_setting('cortex.via', true), ''))",
        &[&AuditOperation::SignIn.as_str(), &org, &summary],
    )?;
    tx.commit()?;
    Ok(())
}

pub fn any(client: &mut Conn) -> Result<bool> {
    Ok(client.query_opt("SELECT 1 FROM api_keys LIMIT 1", &[])?.is_some())
}
