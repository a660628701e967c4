//! The web UI's sessions in `ui_sessions`, and its sign-ins through an identity provider under
//! way in `ui_sign_ins`, on the primary: a sign-out must hold on every server at once, and a
//! provider's callback taken by one server is refused by all. Times are the database's clock.

use super::conn::Sql;
use super::pool::Pool;
use crate::{
    NewUiSession, PendingLimits, PendingSignIn, Result, SessionLimits, SharedSessions, UiSessionRow,
};

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

    fn begin_sign_in(&self, sign_in: &PendingSignIn<'_>, limits: PendingLimits) -> Result<()> {
        let mut conn = self.pool.get()?;
        let mut tx = conn.transaction()?;
        tx.execute(
            &format!("DELETE FROM ui_sign_ins WHERE started_at < {NOW} - $1"),
            &[&millis(limits.expire_after)],
        )?;
        // Anonymous visits start these: the newest but one are kept, the new one makes the cap.
        let keep = limits.max.max(1) as i64 - 1;
        tx.execute(
            "DELETE FROM ui_sign_ins WHERE state_hash IN (\
                 SELECT state_hash FROM ui_sign_ins ORDER BY started_at DESC, state_hash OFFSET $1)",
            &[&keep],
        )?;
        tx.execute(
            &format!(
                "INSERT INTO ui_sign_ins (state_hash, sealed_verifier, started_at) VALUES ($1, $2, {NOW})"
            ),
            &[&sign_in.state_hash, &sign_in.sealed_verifier.to_vec()],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn finish_sign_in(&self, state_hash: &str, limits: PendingLimits) -> Result<Option<Vec<u8>>> {
        // Deleted whether or not it is still valid: a state is taken once, by one server.
        let row = self.pool.get()?.query_opt(
            &format!(
                "DELETE FROM ui_sign_ins WHERE state_hash = $1 \
                 RETURNING sealed_verifier, started_at >= {NOW} - $2"
            ),
            &[&state_hash, &millis(limits.expire_after)],
        )?;
        match row {
            Some(row) if row.try_get::<_, bool>(1)? => Ok(Some(row.try_get(0)?)),
            _ => Ok(None),
        }
    }
}
