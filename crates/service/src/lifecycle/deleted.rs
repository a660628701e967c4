//! The caller's deleted items, for a person to restore (the web UI's "Deleted" page): the
//! items the audit trail records as deleted since an instant, still deleted now, within the
//! caller's reach, newest deletion first.

use super::Lifecycle;
use crate::audit::MAX_AUDIT_RECORDS;
use cortex_domain::{Kind, Scope};
use cortex_store::AuditQuery;
use std::collections::HashSet;
use uuid::Uuid;

pub struct DeletedItem {
    pub id: Uuid,
    pub kind: Kind,
    pub title: String,
    pub scope: Scope,
    /// When it was deleted (epoch ms).
    pub deleted_at: i64,
    /// Who the trail names for the deletion.
    pub deleted_by: Option<String>,
}

pub struct DeletedItems {
    pub items: Vec<DeletedItem>,
    /// The trail since the instant held more records than one read returns: the newest
    /// deletions may be missing.
    pub cut: bool,
}

impl Lifecycle<'_> {
    /// Items deleted at or after `since` (epoch ms) and not restored since, at most `limit`.
    pub fn recently_deleted(&self, since: i64, limit: usize) -> crate::Result<DeletedItems> {
        let records = self.service.view.audit(&AuditQuery {
            item: None,
            since: Some(since),
            limit: MAX_AUDIT_RECORDS,
            newest_first: false,
        })?;
        let cut = records.len() >= MAX_AUDIT_RECORDS;
        let mut seen = HashSet::new();
        let deletions: Vec<(Uuid, Option<String>)> = records
            .iter()
            .rev()
            .filter(|r| r.operation == "delete")
            .filter_map(|r| r.item_id.map(|id| (id, r.principal.clone().or_else(|| r.claimed.actor.clone()))))
            .filter(|(id, _)| seen.insert(*id))
            .collect();
        let ids: Vec<Uuid> = deletions.iter().map(|(id, _)| *id).collect();
        let stored = if ids.is_empty() { Vec::new() } else { self.service.view.get(&ids)? };
        let items = deletions
            .into_iter()
            .filter_map(|(id, deleted_by)| {
                let s = stored.iter().find(|s| s.record.id == id)?;
                Some(DeletedItem {
                    id,
                    kind: s.record.kind,
                    title: s.record.title.clone(),
                    scope: s.record.scope.clone(),
                    deleted_at: s.deleted_at?,
                    deleted_by,
                })
            })
            .take(limit)
            .collect();
        Ok(DeletedItems { items, cut })
    }
}
