//! Reading the audit trail (`cortex audit`): every change to every item, recorded by the
//! database itself in the same transaction as the change.

use crate::MemoryService;
use cortex_store::{AuditQuery, AuditRecord};
use uuid::Uuid;

/// Records returned at most per call.
pub const MAX_AUDIT_RECORDS: usize = 10_000;

impl MemoryService {
    /// One item's history, or every change since `since` (epoch ms), oldest first.
    pub fn audit(
        &self,
        item: Option<Uuid>,
        since: Option<i64>,
        limit: usize,
    ) -> crate::Result<Vec<AuditRecord>> {
        let query = AuditQuery { item, since, limit: limit.clamp(1, MAX_AUDIT_RECORDS) };
        Ok(self.store.audit(&query)?)
    }
}
