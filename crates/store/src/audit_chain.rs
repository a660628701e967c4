//! The audit trail's hash chain: every record carries `hash = SHA-256(prev_hash, canonical
//! form of the record)`, where `prev_hash` is the hash of the record before it. Changing,
//! removing or reordering a record breaks the chain at that record or the next one; only
//! recomputing every hash from there to the newest record hides it, which an anchored head
//! (a `(seq, hash)` pair kept somewhere else) reveals.
//!
//! The same function is computed in three places that must agree byte for byte: here (the
//! verifier, and SQLite's `cortex_audit_hash` SQL function, registered on every connection),
//! and PostgreSQL's `audit_record_hash` (migration `0008_audit_chain.sql`). The conformance
//! suite proves the agreement by verifying chains each backend wrote.
//!
//! Canonical form, version 1: the line `cortex-audit-v1`, then one line per field in
//! [`ChainRecord`] order (`seq` … `summary`): `-` for NULL, otherwise the value's length in
//! UTF-8 bytes, `:`, and the value (integers in decimal). Length prefixes make it unambiguous
//! whatever the values hold (newlines included). The hashed text is `prev_hash`, a newline,
//! and the canonical form; hashes are lowercase hex.
//!
//! Version 2 (every record written from the audit_principal migration on, `chain_version` 2): the line
//! `cortex-audit-v2`, the 20 fields of version 1, then `principal` and `via`, so who made a
//! change and through what are covered too. A record keeps the version it was written in:
//! older records are never rehashed, and verify as they always did. The version itself is
//! covered, being the first line hashed.

use sha2::{Digest, Sha256};

/// The `prev_hash` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One audit record exactly as stored, with its place in the chain. Text fields hold the
/// stored text (an id is not parsed), so the verifier hashes what the database hashed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChainRecord {
    pub seq: i64,
    pub at: i64,
    pub operation: String,
    pub item_id: Option<String>,
    pub kind: Option<String>,
    /// org, project, branch, service, sprint, tenant, environment ('' when unset).
    pub scope: [String; 7],
    /// Who made the change, as the server established it (version 2 on).
    pub principal: Option<String>,
    /// What the change came through (version 2 on).
    pub via: Option<String>,
    /// The canonical form the record was hashed in: 1 or 2.
    pub chain_version: i64,
    pub actor: Option<String>,
    pub tool: Option<String>,
    pub session: Option<String>,
    pub request_id: Option<String>,
    pub batch_id: Option<String>,
    pub hash_before: Option<String>,
    pub hash_after: Option<String>,
    pub summary: String,
    /// `None` only for a row written around the chain (which the verifier reports).
    pub prev_hash: Option<String>,
    pub hash: Option<String>,
}

impl ChainRecord {
    /// The operation, or `None` for a text no version of Cortex writes (the chain still
    /// covers it as stored).
    pub fn op(&self) -> Option<crate::AuditOperation> {
        crate::AuditOperation::parse(&self.operation)
    }

    /// The record as `cortex audit` shows it; a stored item id that is no UUID is an error
    /// naming the record, not a record about no item.
    pub fn into_audit_record(self) -> crate::Result<crate::AuditRecord> {
        let item_id = self
            .item_id
            .map(|id| {
                uuid::Uuid::parse_str(&id).map_err(|e| {
                    crate::StoreError::Corrupt(format!(
                        "audit record {}: item_id {id:?} is not a UUID: {e}",
                        self.seq
                    ))
                })
            })
            .transpose()?;
        let [org, project, branch, service, sprint, tenant, environment] =
            self.scope.map(|v| (!v.is_empty()).then_some(v));
        Ok(crate::AuditRecord {
            seq: self.seq,
            at: self.at,
            operation: self.operation,
            item_id,
            kind: self.kind,
            scope: cortex_domain::Scope { org, project, branch, service, sprint, tenant, environment },
            principal: self.principal,
            via: self.via,
            claimed: crate::Claim { actor: self.actor, tool: self.tool, session: self.session },
            request_id: self.request_id,
            batch_id: self.batch_id,
            hash_before: self.hash_before,
            hash_after: self.hash_after,
            summary: self.summary,
        })
    }
}

/// The fields of a record in its version's canonical order, as text (`None` for NULL).
pub fn fields(r: &ChainRecord) -> Vec<Option<String>> {
    let mut out = vec![Some(r.seq.to_string()), Some(r.at.to_string()), Some(r.operation.clone())];
    out.push(r.item_id.clone());
    out.push(r.kind.clone());
    out.extend(r.scope.iter().cloned().map(Some));
    for f in [&r.actor, &r.tool, &r.session, &r.request_id, &r.batch_id, &r.hash_before, &r.hash_after] {
        out.push(f.clone());
    }
    out.push(Some(r.summary.clone()));
    if r.chain_version >= 2 {
        out.push(r.principal.clone());
        out.push(r.via.clone());
    }
    out
}

/// How many fields the canonical form version 1 has (and `cortex_audit_hash` takes after
/// `prev_hash`).
pub const FIELD_COUNT: usize = 20;
/// How many fields version 2 has (and `cortex_audit_hash_v2` takes after `prev_hash`).
pub const FIELD_COUNT_V2: usize = 22;

/// The hash of a record of canonical form `version` whose fields are `fields` (that form's
/// order), following `prev_hash`.
pub fn hash_fields<S: AsRef<str>>(prev_hash: &str, version: i64, fields: &[Option<S>]) -> String {
    let mut h = Sha256::new();
    h.update(prev_hash.as_bytes());
    h.update(format!("\ncortex-audit-v{version}").as_bytes());
    for f in fields {
        h.update(b"\n");
        match f {
            None => h.update(b"-"),
            Some(v) => {
                let v = v.as_ref();
                h.update(v.len().to_string().as_bytes());
                h.update(b":");
                h.update(v.as_bytes());
            }
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The hash `r` should carry after a record whose hash is `prev_hash`.
pub fn record_hash(prev_hash: &str, r: &ChainRecord) -> String {
    hash_fields(prev_hash, r.chain_version, &fields(r))
}

/// What is wrong at one record of the chain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum ChainBreak {
    /// The record has no hash: it was written with the chain's triggers out of the way.
    Unsealed { seq: i64 },
    /// The record's content no longer matches its own hash: it was rewritten.
    Rewritten { seq: i64 },
    /// The record is intact but does not follow the record before it (`after`): records
    /// between them were removed, or it was inserted out of order.
    Broken { seq: i64, after: Option<i64> },
}

impl ChainBreak {
    pub fn seq(&self) -> i64 {
        match self {
            ChainBreak::Unsealed { seq } | ChainBreak::Rewritten { seq } | ChainBreak::Broken { seq, .. } => {
                *seq
            }
        }
    }
}

impl std::fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChainBreak::Unsealed { seq } => {
                write!(f, "audit record {seq} carries no hash: it was written around the audit chain")
            }
            ChainBreak::Rewritten { seq } => {
                write!(f, "audit record {seq} does not match its hash: it was changed after it was written")
            }
            ChainBreak::Broken { seq, after: Some(after) } => write!(
                f,
                "audit record {seq} does not follow record {after}: records between them were removed, or it was inserted out of order"
            ),
            ChainBreak::Broken { seq, after: None } => write!(
                f,
                "audit record {seq} is the first one kept but does not start the chain: earlier records were removed"
            ),
        }
    }
}

/// Walks a chain page by page, oldest first, keeping the hash and seq of the last record seen.
#[derive(Debug, Clone)]
pub struct ChainWalker {
    prev_hash: String,
    prev_seq: Option<i64>,
    checked: u64,
}

impl Default for ChainWalker {
    fn default() -> Self {
        ChainWalker { prev_hash: GENESIS.to_string(), prev_seq: None, checked: 0 }
    }
}

impl ChainWalker {
    /// A walk that starts after a record already trusted (a quick check of the newest records).
    pub fn after(seq: i64, hash: &str) -> ChainWalker {
        ChainWalker { prev_hash: hash.to_string(), prev_seq: Some(seq), checked: 0 }
    }

    /// Checks the next record; the first problem stops the walk.
    pub fn check(&mut self, r: &ChainRecord) -> Result<(), ChainBreak> {
        let (Some(prev), Some(hash)) = (&r.prev_hash, &r.hash) else {
            return Err(ChainBreak::Unsealed { seq: r.seq });
        };
        if record_hash(prev, r) != *hash {
            return Err(ChainBreak::Rewritten { seq: r.seq });
        }
        if *prev != self.prev_hash {
            return Err(ChainBreak::Broken { seq: r.seq, after: self.prev_seq });
        }
        self.prev_hash = hash.clone();
        self.prev_seq = Some(r.seq);
        self.checked += 1;
        Ok(())
    }

    /// The last record checked: `(seq, hash)`, or `None` before the first.
    pub fn head(&self) -> Option<(i64, &str)> {
        self.prev_seq.map(|seq| (seq, self.prev_hash.as_str()))
    }

    pub fn checked(&self) -> u64 {
        self.checked
    }
}

/// An item whose state its audit trail does not explain: it was changed with the audit
/// triggers out of the way (dropped, disabled, or PostgreSQL's `session_replication_role`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum TrailMismatch {
    /// The item exists but no record names it.
    NoRecord { item_id: String },
    /// The item exists but its last record says it was purged.
    PurgedButPresent { item_id: String },
    /// The item is gone but its last record is no purge.
    RemovedWithoutRecord { item_id: String },
    /// The item's content hash is not the one its last record left it with.
    ChangedWithoutRecord { item_id: String, recorded: Option<String>, found: String },
    /// One of the item's columns disagrees with the rest of it (its text with its content
    /// hash, its data with its text, its status with its data): it was edited in the
    /// database, around Cortex, and the hash its trail checks was left as it was.
    Inconsistent { item_id: String, field: String },
    /// The item's scope is not the one its last record left it in (e.g. moved to another org).
    MovedWithoutRecord { item_id: String, recorded: String, found: String },
    /// The item is deleted, but its last record is no delete.
    DeletedWithoutRecord { item_id: String },
    /// The item is live, but its last record deleted it.
    RestoredWithoutRecord { item_id: String },
}

impl TrailMismatch {
    /// From one row of the backends' query: the item id, its last record's operation and
    /// `hash_after` (`None` when it has none), and its content hash (`None` when it is gone).
    pub fn classify(
        item_id: String,
        operation: Option<String>,
        recorded: Option<String>,
        found: Option<String>,
    ) -> TrailMismatch {
        match (operation.as_deref(), found) {
            (None, _) => TrailMismatch::NoRecord { item_id },
            (Some(op), Some(_)) if op == crate::AuditOperation::Purge.as_str() => {
                TrailMismatch::PurgedButPresent { item_id }
            }
            (Some(_), None) => TrailMismatch::RemovedWithoutRecord { item_id },
            (Some(_), Some(found)) => TrailMismatch::ChangedWithoutRecord { item_id, recorded, found },
        }
    }
}

impl std::fmt::Display for TrailMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrailMismatch::NoRecord { item_id } => {
                write!(f, "item {item_id} has no audit record: it was written with auditing off")
            }
            TrailMismatch::PurgedButPresent { item_id } => {
                write!(f, "item {item_id} exists but its last audit record says it was purged")
            }
            TrailMismatch::RemovedWithoutRecord { item_id } => {
                write!(f, "item {item_id} was removed without an audit record")
            }
            TrailMismatch::ChangedWithoutRecord { item_id, .. } => write!(
                f,
                "item {item_id} does not hold the content its last audit record left it with: it was changed without an audit record"
            ),
            TrailMismatch::Inconsistent { item_id, field } => write!(
                f,
                "item {item_id}: its {field} does not agree with the rest of the item: it was edited in the database without an audit record"
            ),
            TrailMismatch::MovedWithoutRecord { item_id, recorded, found } => write!(
                f,
                "item {item_id} is in scope {found}, but its last audit record left it in {recorded}: it was moved without an audit record"
            ),
            TrailMismatch::DeletedWithoutRecord { item_id } => {
                write!(f, "item {item_id} is deleted, but no audit record deleted it")
            }
            TrailMismatch::RestoredWithoutRecord { item_id } => {
                write!(f, "item {item_id} is live, but its last audit record deleted it")
            }
        }
    }
}

/// A schema object (trigger, function, view, table, index) that is not what this build's
/// migrations made: dropped, disabled, added or redefined.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SchemaDrift {
    /// e.g. `trigger items_audit_insert`
    pub object: String,
    /// missing | changed | unexpected | disabled
    pub change: String,
}

impl std::fmt::Display for SchemaDrift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is {} (compared with what the migrations create)", self.object, self.change)
    }
}

/// The differences between the `(name, definition)` lists of a freshly migrated schema and a
/// database's, by name.
pub fn schema_drift(
    expected: &[(String, Option<String>)],
    found: &[(String, Option<String>)],
) -> Vec<SchemaDrift> {
    let found_map: std::collections::BTreeMap<_, _> = found.iter().map(|(n, d)| (n, d)).collect();
    let expected_map: std::collections::BTreeMap<_, _> = expected.iter().map(|(n, d)| (n, d)).collect();
    let mut out = Vec::new();
    for (name, def) in &expected_map {
        match found_map.get(name) {
            None => out.push(SchemaDrift { object: name.to_string(), change: "missing".into() }),
            Some(d) if d != def => {
                out.push(SchemaDrift { object: name.to_string(), change: "changed".into() })
            }
            Some(_) => {}
        }
    }
    for name in found_map.keys().filter(|n| !expected_map.contains_key(*n)) {
        out.push(SchemaDrift { object: name.to_string(), change: "unexpected".into() });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: i64, prev: &str) -> ChainRecord {
        let mut r = ChainRecord {
            seq,
            at: 1_700_000_000_000 + seq,
            operation: "insert".into(),
            item_id: Some("0190a0b0-0000-7000-8000-000000000001".into()),
            kind: Some("note".into()),
            scope: Default::default(),
            principal: Some("key:acme/ana".into()),
            via: Some("memory_store".into()),
            chain_version: 2,
            actor: None,
            tool: Some("memory_store".into()),
            session: None,
            request_id: None,
            batch_id: None,
            hash_before: None,
            hash_after: Some("abc".into()),
            summary: "inserted note\nwith a newline".into(),
            prev_hash: Some(prev.to_string()),
            hash: None,
        };
        r.hash = Some(record_hash(prev, &r));
        r
    }

    fn chain(n: i64) -> Vec<ChainRecord> {
        let mut out: Vec<ChainRecord> = Vec::new();
        for seq in 1..=n {
            let prev = out.last().and_then(|r| r.hash.clone()).unwrap_or_else(|| GENESIS.to_string());
            out.push(record(seq, &prev));
        }
        out
    }

    fn walk(records: &[ChainRecord]) -> Result<(), ChainBreak> {
        let mut w = ChainWalker::default();
        records.iter().try_for_each(|r| w.check(r))
    }

    #[test]
    fn an_intact_chain_verifies() {
        assert_eq!(walk(&chain(5)), Ok(()));
    }

    #[test]
    fn a_rewritten_record_is_named() {
        let mut c = chain(5);
        c[2].summary = "inserted nothing".into();
        assert_eq!(walk(&c), Err(ChainBreak::Rewritten { seq: 3 }));
    }

    #[test]
    fn a_removed_record_breaks_the_next_link() {
        let mut c = chain(5);
        c.remove(2);
        assert_eq!(walk(&c), Err(ChainBreak::Broken { seq: 4, after: Some(2) }));
        let mut c = chain(3);
        c.remove(0);
        assert_eq!(walk(&c), Err(ChainBreak::Broken { seq: 2, after: None }));
    }

    #[test]
    fn records_swapped_or_renumbered_are_caught() {
        let mut c = chain(4);
        c.swap(1, 2);
        assert!(walk(&c).is_err());
        let mut c = chain(4);
        c[3].seq = 10;
        assert_eq!(walk(&c), Err(ChainBreak::Rewritten { seq: 10 }));
    }

    #[test]
    fn field_boundaries_cannot_be_shifted() {
        // "ab" + "c" and "a" + "bc" hash differently: each field carries its length.
        let a = hash_fields(GENESIS, 1, &[Some("ab"), Some("c")]);
        let b = hash_fields(GENESIS, 1, &[Some("a"), Some("bc")]);
        let null = hash_fields(GENESIS, 1, &[None, Some("c")]);
        let dash = hash_fields(GENESIS, 1, &[Some("-"), Some("c")]);
        assert_ne!(a, b);
        assert_ne!(null, dash);
    }

    #[test]
    fn the_canonical_form_is_pinned() {
        // The SQL copies (SQLite's function, PostgreSQL's audit_record_hash) must produce
        // this exact value: changing the form breaks every stored chain.
        let h = hash_fields(GENESIS, 1, &[Some("1"), None, Some("é")]);
        let mut expected = Sha256::new();
        expected.update(format!("{GENESIS}\ncortex-audit-v1\n1:1\n-\n2:é").as_bytes());
        let expected: String = expected.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(h, expected);
        let h2 = hash_fields(GENESIS, 2, &[Some("1"), None, Some("é")]);
        let mut expected = Sha256::new();
        expected.update(format!("{GENESIS}\ncortex-audit-v2\n1:1\n-\n2:é").as_bytes());
        let expected: String = expected.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(h2, expected);
    }

    #[test]
    fn the_principal_is_covered_and_each_record_keeps_its_version() {
        let mut c = chain(3);
        c[1].principal = Some("key:acme/admin".into());
        assert_eq!(walk(&c), Err(ChainBreak::Rewritten { seq: 2 }), "a principal rewritten");
        let mut c = chain(3);
        c[2].via = None;
        assert_eq!(walk(&c), Err(ChainBreak::Rewritten { seq: 3 }));
        // Stripping the principal by calling a record version 1 changes its hash too.
        let mut c = chain(3);
        c[0].chain_version = 1;
        assert_eq!(walk(&c), Err(ChainBreak::Rewritten { seq: 1 }));

        // A chain begun in version 1 goes on in version 2: both verify, each in its own form.
        let mut old = record(1, GENESIS);
        old.chain_version = 1;
        old.principal = None;
        old.via = None;
        old.hash = Some(record_hash(GENESIS, &old));
        let next = record(2, old.hash.as_deref().unwrap());
        assert_eq!(walk(&[old.clone(), next]), Ok(()));
        // Version 1 ignores the new fields: the same record hashes as before them.
        let mut fields = fields(&old);
        assert_eq!(fields.len(), FIELD_COUNT);
        fields.truncate(FIELD_COUNT);
        assert_eq!(old.hash.clone().unwrap(), hash_fields(GENESIS, 1, &fields));
    }
}
