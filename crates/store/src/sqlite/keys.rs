//! API keys on SQLite: one table (`0011_api_keys.sql`), whose triggers refuse deletes and any
//! change but one revocation and its undoing within the restore window (`0019_key_restore.sql`),
//! and write the audit records.

use crate::{ApiKeyRow, AuditOperation, KeyRestore, Result, StoreError, WriteContext};
use cortex_domain::api_key::{RESTORE_CLOCK_SLACK_MS, RESTORE_WINDOW_MS, Role};
use rusqlite::{Connection, OptionalExtension, params};

const COLUMNS: &str =
    "name, lookup, secret_hash, org, projects, role, rate_per_second, created_at, expires_at, revoked_at";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(ApiKeyRow, String, String)> {
    Ok((
        ApiKeyRow {
            name: r.get(0)?,
            lookup: r.get(1)?,
            secret_hash: r.get(2)?,
            org: r.get(3)?,
            projects: Vec::new(),
            role: Role::Read,
            rate_per_second: r.get(6)?,
            created_at: r.get(7)?,
            expires_at: r.get(8)?,
            revoked_at: r.get(9)?,
        },
        r.get(4)?,
        r.get(5)?,
    ))
}

/// The row with its JSON projects and role text read; a damaged one is an error naming it.
fn finish((mut key, projects, role): (ApiKeyRow, String, String)) -> Result<ApiKeyRow> {
    key.projects = serde_json::from_str(&projects)
        .map_err(|e| StoreError::Corrupt(format!("API key {}: projects {projects:?}: {e}", key.name)))?;
    key.role = Role::parse(&role, "role")
        .map_err(|_| StoreError::Corrupt(format!("API key {}: role {role:?} is not a role", key.name)))?;
    Ok(key)
}

/// Runs `write` in one transaction whose audit records name `context`'s principal and
/// channel (the triggers read them from `audit_context`, cleared before commit).
fn audited<T>(
    conn: &Connection,
    context: &WriteContext,
    write: impl FnOnce(&Connection) -> Result<T>,
) -> Result<T> {
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        "UPDATE audit_context SET request_id = ?1, principal = ?2, via = ?3 WHERE id = 1",
        params![context.request_id, context.principal, context.via],
    )?;
    let done = write(&tx)?;
    tx.execute("UPDATE audit_context SET request_id = NULL, principal = NULL, via = NULL WHERE id = 1", [])?;
    tx.commit()?;
    Ok(done)
}

pub fn create(conn: &Connection, key: &ApiKeyRow, context: &WriteContext) -> Result<bool> {
    audited(conn, context, |conn| insert(conn, key))
}

fn insert(conn: &Connection, key: &ApiKeyRow) -> Result<bool> {
    let projects = serde_json::to_string(&key.projects).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let inserted = conn.execute(
        &format!(
            "INSERT INTO api_keys ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
             ON CONFLICT (org, name) DO NOTHING"
        ),
        params![
            key.name,
            key.lookup,
            key.secret_hash,
            key.org,
            projects,
            key.role.as_str(),
            key.rate_per_second,
            key.created_at,
            key.expires_at,
            key.revoked_at
        ],
    )?;
    Ok(inserted == 1)
}

pub fn all(conn: &Connection) -> Result<Vec<ApiKeyRow>> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM api_keys ORDER BY created_at, name"))?;
    let rows = stmt.query_map([], row)?.collect::<rusqlite::Result<Vec<_>>>()?;
    rows.into_iter().map(finish).collect()
}

pub fn by_lookup(conn: &Connection, lookup: &str) -> Result<Option<ApiKeyRow>> {
    let found = conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM api_keys WHERE lookup = ?1"))?
        .query_row([lookup], row)
        .optional()?;
    found.map(finish).transpose()
}

pub fn revoke(conn: &Connection, org: &str, name: &str, at: i64, context: &WriteContext) -> Result<bool> {
    audited(conn, context, |conn| {
        let changed = conn.execute(
            "UPDATE api_keys SET revoked_at = ?3 WHERE org = ?1 AND name = ?2 AND revoked_at IS NULL",
            params![org, name, at],
        )?;
        Ok(changed == 1)
    })
}

pub fn restore(conn: &Connection, org: &str, name: &str, context: &WriteContext) -> Result<KeyRestore> {
    audited(conn, context, |conn| {
        let changed = conn.execute(
            "UPDATE api_keys SET revoked_at = NULL WHERE org = ?1 AND name = ?2 AND revoked_at \
             BETWEEN CAST(unixepoch('subsec') * 1000 AS INTEGER) - ?3 \
             AND CAST(unixepoch('subsec') * 1000 AS INTEGER) + ?4",
            params![org, name, RESTORE_WINDOW_MS, RESTORE_CLOCK_SLACK_MS],
        )?;
        if changed == 1 {
            return Ok(KeyRestore::Restored);
        }
        let revoked: Option<Option<i64>> = conn
            .prepare_cached("SELECT revoked_at FROM api_keys WHERE org = ?1 AND name = ?2")?
            .query_row(params![org, name], |r| r.get(0))
            .optional()?;
        Ok(KeyRestore::why_not(revoked))
    })
}

pub fn record_sign_in(conn: &Connection, org: &str, summary: &str, context: &WriteContext) -> Result<()> {
    audited(conn, context, |conn| {
        conn.execute(
            "INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint, \
               tenant, environment, request_id, summary, principal, via) \
             SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), ?1, NULL, 'ui_session', ?2, '', '', '', '', \
               '', '', c.request_id, ?3, c.principal, c.via FROM audit_context c WHERE c.id = 1",
            params![AuditOperation::SignIn.as_str(), org, summary],
        )?;
        Ok(())
    })
}

pub fn any(conn: &Connection) -> Result<bool> {
    Ok(conn.prepare_cached("SELECT 1 FROM api_keys LIMIT 1")?.exists([])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(org: &str, name: &str) -> ApiKeyRow {
        ApiKeyRow {
            name: name.into(),
            lookup: format!("{org}-{name}"),
            secret_hash: "0".repeat(64),
            org: org.into(),
            projects: vec!["api".into()],
            role: Role::Write,
            rate_per_second: Some(2.0),
            created_at: 1,
            expires_at: None,
            revoked_at: None,
        }
    }

    /// A database whose key names were unique across the server keeps its keys, their
    /// triggers and a verifying chain when names become unique per org.
    #[test]
    fn keys_made_before_names_were_per_org_are_kept_by_the_upgrade() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::chain::register_functions(&conn).unwrap();
        super::super::migrate::run_to(&mut conn, 12).unwrap();
        let before = "INSERT INTO api_keys (name, lookup, secret_hash, org, projects, role, rate_per_second, \
                      created_at) VALUES ('ci', ?1, ?2, ?3, '[\"api\"]', 'write', 2.0, 1)";
        conn.execute(before, params!["acme-ci", "0".repeat(64), "acme"]).unwrap();
        assert!(
            conn.execute(before, params!["globex-ci", "0".repeat(64), "globex"]).is_err(),
            "before: one name across the server"
        );
        super::super::migrate::run(&mut conn).unwrap();

        assert_eq!(all(&conn).unwrap(), vec![key("acme", "ci")], "kept whole");
        let context = WriteContext::default();
        assert!(create(&conn, &key("globex", "ci"), &context).unwrap(), "another org's key of the same name");
        assert!(
            !create(&conn, &ApiKeyRow { lookup: "other".into(), ..key("acme", "ci") }, &context).unwrap()
        );
        assert!(revoke(&conn, "globex", "ci", 5, &context).unwrap());
        let revoked: Vec<(String, Option<i64>)> =
            all(&conn).unwrap().into_iter().map(|k| (k.org, k.revoked_at)).collect();
        assert_eq!(revoked, [("acme".to_string(), None), ("globex".to_string(), Some(5))]);
        assert!(conn.execute("DELETE FROM api_keys", []).is_err(), "still never deleted");
        let audited: i64 = conn
            .query_row("SELECT count(*) FROM audit_log WHERE kind = 'api_key'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(audited, 3, "two creations and a revocation");
        assert!(super::super::chain::schema_drift(&conn).unwrap().is_empty());
    }
}
