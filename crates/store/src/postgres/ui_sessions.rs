//! The web UI's sessions in `ui_sessions`, on the primary: a sign-out must hold on every server
//! at once. Times are the database's clock.

use super::conn::Sql;
use super::pool::Pool;
use crate::{NewUiSession, Result, SessionLimits, SharedSessions, UiSessionRow};

const NOW: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// Orders the sign-ins of one principal (with the principal's hash as the second key), so
/// that two servers starting its sessions at once keep its cap: held to the transaction's end,
/// which a transaction pooler keeps.
const OWNER_LOCK: i32 = 0x7569_7373;

pub struct PgSessions {
    pool: Pool,
}

impl PgSessions {
    pub fn new(pool: Pool) -> PgSessions {
        PgSessions { pool }
    }
}

fn millis(d: std::time::Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

impl SharedSessions for PgSessions {
    fn start_session(&self, session: &NewUiSession<'_>, limits: SessionLimits) -> Result<()> {
        let mut conn = self.pool.get()?;
        let mut tx = conn.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&OWNER_LOCK, &session.owner])?;
        tx.execute(
            &format!("DELETE FROM ui_sessions WHERE seen_at < {NOW} - $1 OR started_at < {NOW} - $2"),
            &[&millis(limits.idle), &millis(limits.lifetime)],
        )?;
        // The owner's newest sessions but one are kept; the new one makes its cap.
        let keep = limits.max_per_owner.max(1) as i64 - 1;
        tx.execute(
            "DELETE FROM ui_sessions WHERE id_hash IN (\
                 SELECT id_hash FROM ui_sessions WHERE owner = $1 \
                 ORDER BY started_at DESC, id_hash OFFSET $2)",
            &[&session.owner, &keep],
        )?;
        tx.execute(
            &format!(
                "INSERT INTO ui_sessions (id_hash, owner, sealed, csrf, started_at, seen_at) \
                 VALUES ($1, $2, $3, $4, {NOW}, {NOW})"
            ),
            &[&session.id_hash, &session.owner, &session.sealed.map(<[u8]>::to_vec), &session.csrf],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn touch_session(&self, id_hash: &str, limits: SessionLimits) -> Result<Option<UiSessionRow>> {
        let row = self.pool.get()?.query_opt(
            &format!(
                "UPDATE ui_sessions SET seen_at = {NOW} \
                 WHERE id_hash = $1 AND seen_at >= {NOW} - $2 AND started_at >= {NOW} - $3 \
                 RETURNING owner, sealed, csrf"
            ),
            &[&id_hash, &millis(limits.idle), &millis(limits.lifetime)],
        )?;
        row.map(|r| Ok(UiSessionRow { owner: r.try_get(0)?, sealed: r.try_get(1)?, csrf: r.try_get(2)? }))
            .transpose()
    }

    fn end_session(&self, id_hash: &str) -> Result<()> {
        self.pool.get()?.execute("DELETE FROM ui_sessions WHERE id_hash = $1", &[&id_hash])?;
        Ok(())
    }
}
