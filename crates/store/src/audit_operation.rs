//! The operations an audit record names. The database writes them (its triggers, and the
//! `blocked`, `import` and `confirm` records the stores write), and the hash chain covers the stored
//! text, so the text of each is fixed for good: a record is read as text and typed here,
//! never rewritten.

/// What an audit record records. The stores write `import`, `blocked` and `sign_in` records
/// themselves; the triggers write the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditOperation {
    Insert,
    Import,
    Update,
    Supersede,
    Delete,
    Restore,
    Purge,
    /// The first record of a chain begun on a database that already held items.
    Baseline,
    /// A write a governance rule refused.
    Blocked,
    KeyCreate,
    KeyRevoke,
    /// A revoked key made live again within the restore window.
    KeyRestore,
    /// Someone holding admin rights signed in to the web UI.
    SignIn,
    /// Someone said an item still holds as its files changed: its commit moved forward.
    Confirm,
    /// A branch's work seen merged into another: its items visible from there (about no item).
    BranchMerge,
    /// A merge record undone (about no item).
    BranchUnmerge,
}

impl AuditOperation {
    pub const ALL: [AuditOperation; 16] = [
        AuditOperation::Insert,
        AuditOperation::Import,
        AuditOperation::Update,
        AuditOperation::Supersede,
        AuditOperation::Delete,
        AuditOperation::Restore,
        AuditOperation::Purge,
        AuditOperation::Baseline,
        AuditOperation::Blocked,
        AuditOperation::KeyCreate,
        AuditOperation::KeyRevoke,
        AuditOperation::KeyRestore,
        AuditOperation::SignIn,
        AuditOperation::Confirm,
        AuditOperation::BranchMerge,
        AuditOperation::BranchUnmerge,
    ];

    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditOperation::Insert => "insert",
            AuditOperation::Import => "import",
            AuditOperation::Update => "update",
            AuditOperation::Supersede => "supersede",
            AuditOperation::Delete => "delete",
            AuditOperation::Restore => "restore",
            AuditOperation::Purge => "purge",
            AuditOperation::Baseline => "baseline",
            AuditOperation::Blocked => "blocked",
            AuditOperation::KeyCreate => "key_create",
            AuditOperation::KeyRevoke => "key_revoke",
            AuditOperation::KeyRestore => "key_restore",
            AuditOperation::SignIn => "sign_in",
            AuditOperation::Confirm => "confirm",
            AuditOperation::BranchMerge => "branch_merge",
            AuditOperation::BranchUnmerge => "branch_unmerge",
        }
    }

    /// The operation a stored text names; `None` for a text no version of Cortex writes
    /// (a record written around the triggers).
    pub fn parse(text: &str) -> Option<AuditOperation> {
        AuditOperation::ALL.into_iter().find(|op| op.as_str() == text)
    }

    /// A record about an API key (about no item).
    pub fn is_key_operation(self) -> bool {
        matches!(self, AuditOperation::KeyCreate | AuditOperation::KeyRevoke | AuditOperation::KeyRestore)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key guards of both backends hold the window the service and the docs name.
    #[test]
    fn the_key_guards_hold_the_restore_window() {
        use cortex_domain::api_key::{RESTORE_CLOCK_SLACK_MS, RESTORE_WINDOW_MS, RESTORE_WINDOW_TEXT};
        for migration in [
            include_str!("../migrations/sqlite/0019_key_restore.sql"),
            include_str!("../migrations/postgres/0022_key_restore.sql"),
        ] {
            assert!(migration.contains(&format!("- {RESTORE_WINDOW_MS}")), "{migration}");
            assert!(migration.contains(&format!("+ {RESTORE_CLOCK_SLACK_MS}")), "{migration}");
            assert!(migration.contains(&format!("more than {RESTORE_WINDOW_TEXT} ago")), "{migration}");
        }
    }

    #[test]
    fn every_operation_parses_back_from_its_distinct_text() {
        let texts: std::collections::HashSet<_> = AuditOperation::ALL.iter().map(|op| op.as_str()).collect();
        assert_eq!(texts.len(), AuditOperation::ALL.len());
        for op in AuditOperation::ALL {
            assert_eq!(AuditOperation::parse(op.as_str()), Some(op));
        }
        assert_eq!(AuditOperation::parse("key_rotate"), None);
        assert_eq!(AuditOperation::parse("Insert"), None);
    }

    #[test]
    fn only_key_records_are_key_operations() {
        let keys: Vec<_> = AuditOperation::ALL.into_iter().filter(|op| op.is_key_operation()).collect();
        assert_eq!(keys, [AuditOperation::KeyCreate, AuditOperation::KeyRevoke, AuditOperation::KeyRestore]);
    }

    /// Every text the migrations' triggers write is one of these (the others are written by
    /// the stores' code through `as_str`).
    #[test]
    fn the_triggers_write_these_texts() {
        let migrations = [
            include_str!("../migrations/sqlite/0004_audit.sql"),
            include_str!("../migrations/sqlite/0005_supersede.sql"),
            include_str!("../migrations/sqlite/0009_audit_chain.sql"),
            include_str!("../migrations/sqlite/0011_api_keys.sql"),
            include_str!("../migrations/postgres/0002_audit.sql"),
            include_str!("../migrations/postgres/0003_supersede.sql"),
            include_str!("../migrations/postgres/0008_audit_chain.sql"),
            include_str!("../migrations/postgres/0010_api_keys.sql"),
            include_str!("../migrations/sqlite/0017_provenance.sql"),
            include_str!("../migrations/postgres/0019_provenance.sql"),
            include_str!("../migrations/sqlite/0019_key_restore.sql"),
            include_str!("../migrations/postgres/0022_key_restore.sql"),
        ]
        .concat();
        for op in AuditOperation::ALL {
            if !matches!(
                op,
                AuditOperation::Import
                    | AuditOperation::Blocked
                    | AuditOperation::SignIn
                    | AuditOperation::Confirm
            ) {
                let text = op.as_str();
                assert!(migrations.contains(&format!("'{text}'")), "no trigger writes {text}");
            }
        }
    }
}
