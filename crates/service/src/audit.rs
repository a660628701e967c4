//! Reading the audit trail (`cortex audit`): every change to every item, recorded by the
//! database itself in the same transaction as the change; and verifying it (`--verify`,
//! `doctor`): the triggers that write it, its hash chain, an anchor kept elsewhere, and every
//! item against its last record.

use crate::MemoryService;
use cortex_store::audit_chain::{ChainBreak, ChainWalker, SchemaDrift, TrailMismatch};
use cortex_store::key_trail::{KeyMismatch, KeyRecord, check_keys};
use cortex_store::{AuditQuery, AuditRecord};
use serde::Serialize;
use uuid::Uuid;

/// The audit trail as one caller is served (see the module doc); made by
/// [`MemoryService::audit`].
pub struct Audit<'a> {
    pub(crate) service: &'a MemoryService,
}

/// Records returned at most per call.
pub const MAX_AUDIT_RECORDS: usize = 10_000;

impl Audit<'_> {
    /// One item's history, or every change since `since` (epoch ms), oldest first.
    pub fn records(
        &self,
        item: Option<Uuid>,
        since: Option<i64>,
        limit: usize,
    ) -> crate::Result<Vec<AuditRecord>> {
        self.read(AuditQuery { item, since, limit, newest_first: false })
    }

    /// The newest `limit` records (one item's, or those at or after `since`), newest first.
    pub fn newest_records(
        &self,
        item: Option<Uuid>,
        since: Option<i64>,
        limit: usize,
    ) -> crate::Result<Vec<AuditRecord>> {
        self.read(AuditQuery { item, since, limit, newest_first: true })
    }

    /// The kind and title of each item of `ids` the caller may see, deleted ones included
    /// (a feed of changes names them); ids out of reach are left out, as unknown ones are.
    pub fn labels(&self, ids: &[Uuid]) -> crate::Result<Vec<ItemLabel>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let stored = self.service.view.get(ids)?;
        Ok(stored
            .into_iter()
            .map(|s| ItemLabel {
                id: s.record.id,
                kind: s.record.kind,
                title: s.record.title,
                deleted: s.deleted_at.is_some(),
            })
            .collect())
    }

    fn read(&self, query: AuditQuery) -> crate::Result<Vec<AuditRecord>> {
        let query = AuditQuery { limit: query.limit.clamp(1, MAX_AUDIT_RECORDS), ..query };
        Ok(self.service.view.audit(&query)?)
    }
}

/// An item a change names, as a feed of changes shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemLabel {
    pub id: Uuid,
    pub kind: cortex_domain::Kind,
    pub title: String,
    pub deleted: bool,
}

/// Records a quick check walks: the newest ones, where a recent tampering shows.
pub const QUICK_RECORDS: usize = 1_000;
/// Records read per page of a full walk.
const PAGE: usize = 5_000;
/// Items reported at most when they disagree with their trail.
const MISMATCHES_SHOWN: usize = 100;

/// What `cortex audit --verify` (and `doctor`) checks.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// The whole chain and every item against its trail; otherwise the newest
    /// [`QUICK_RECORDS`] records.
    pub full: bool,
    /// A `(seq, hash)` kept outside the database from an earlier verification: the record
    /// with that seq must still carry that hash (which pins every record up to it).
    pub anchor: Option<(i64, String)>,
}

/// The newest record of the chain: write it down somewhere else to pin the trail up to it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ChainHead {
    pub seq: i64,
    pub hash: String,
}

#[derive(Debug, Serialize)]
pub struct AuditVerification {
    /// Nothing below found a problem.
    pub ok: bool,
    /// whole chain | newest N records
    pub scope: String,
    pub records_checked: u64,
    /// The newest record, as the database has it (anchor it elsewhere: `--anchor SEQ:HASH`).
    pub head: Option<ChainHead>,
    /// The first record that does not match, if any.
    pub first_break: Option<ChainBreak>,
    /// Audit triggers or functions dropped, disabled or redefined.
    pub schema_drift: Vec<SchemaDrift>,
    /// Items changed around the trail (full check only).
    pub items_without_trail: Vec<TrailMismatch>,
    /// API keys their `key_create`/`key_revoke` records contradict (full check only).
    pub keys_without_trail: Vec<KeyMismatch>,
    /// The anchor given, and whether the database still agrees with it.
    pub anchor: Option<String>,
    /// Every problem, in words.
    pub problems: Vec<String>,
}

impl AuditVerification {
    /// The report on a trail that could not be read (a damaged file).
    pub(crate) fn unreadable(reason: String) -> AuditVerification {
        AuditVerification {
            ok: false,
            scope: String::new(),
            records_checked: 0,
            head: None,
            first_break: None,
            schema_drift: Vec::new(),
            items_without_trail: Vec::new(),
            keys_without_trail: Vec::new(),
            anchor: None,
            problems: vec![format!("the audit trail could not be read: {reason}")],
        }
    }
}

impl Audit<'_> {
    /// Checks the audit trail: its triggers, its hash chain, an anchor, and (full) every item
    /// against its last record.
    pub fn verify(&self, options: &VerifyOptions) -> crate::Result<AuditVerification> {
        let store = self.service.whole_store("verifying the audit trail")?;
        let mut problems = Vec::new();
        let schema_drift = store.schema_drift()?;
        problems.extend(schema_drift.iter().map(|d| format!("audit schema: {d}")));

        let start = if options.full { None } else { store.audit_record_before_last(QUICK_RECORDS)? };
        let mut walker = match &start {
            Some(r) => ChainWalker::after(r.seq, r.hash.as_deref().unwrap_or_default()),
            None => ChainWalker::default(),
        };
        let mut after = start.as_ref().map_or(0, |r| r.seq);
        let mut first_break = None;
        let mut key_records = Vec::new();
        'walk: loop {
            let page = store.audit_chain(after, PAGE)?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            for record in &page {
                if let Some(operation) = record.op().filter(|op| op.is_key_operation()) {
                    key_records.push(KeyRecord {
                        operation,
                        org: record.scope[0].clone(),
                        summary: record.summary.clone(),
                    });
                }
                if let Err(broken) = walker.check(record) {
                    problems.push(broken.to_string());
                    first_break = Some(broken);
                    break 'walk;
                }
            }
        }
        let newest = store.audit_record_before_last(0)?;
        let head = newest.and_then(|r| Some(ChainHead { seq: r.seq, hash: r.hash? }));

        let anchor = match &options.anchor {
            None => None,
            Some((seq, hash)) => Some(match store.audit_record(*seq)? {
                Some(r) if r.hash.as_deref() == Some(hash.as_str()) => {
                    format!("record {seq} still carries {hash}")
                }
                Some(r) => {
                    let found = r.hash.unwrap_or_else(|| "no hash".into());
                    let problem = format!(
                        "anchor: record {seq} carries {found}, not the anchored {hash}: the trail up to it was rewritten"
                    );
                    problems.push(problem.clone());
                    problem
                }
                None => {
                    let problem =
                        format!("anchor: record {seq} is gone: the trail was cut back below the anchor");
                    problems.push(problem.clone());
                    problem
                }
            }),
        };

        let items_without_trail =
            if options.full { store.audit_trail_mismatches(MISMATCHES_SHOWN)? } else { Vec::new() };
        problems.extend(items_without_trail.iter().map(ToString::to_string));
        // The whole trail was walked only in a full check: a quick one has not seen every key's records.
        let keys_without_trail = if options.full && first_break.is_none() {
            check_keys(&store.keys()?, &key_records)
        } else {
            Vec::new()
        };
        problems.extend(keys_without_trail.iter().map(ToString::to_string));

        Ok(AuditVerification {
            ok: problems.is_empty(),
            scope: match &start {
                Some(r) => {
                    format!("the records after {} (the newest {QUICK_RECORDS}); --full walks all", r.seq)
                }
                None => "the whole chain".into(),
            },
            records_checked: walker.checked(),
            head,
            first_break,
            schema_drift,
            items_without_trail,
            keys_without_trail,
            anchor,
            problems,
        })
    }
}

/// `SEQ:HASH` as printed by a verification, for `--anchor`.
pub fn parse_anchor(text: &str) -> Result<(i64, String), String> {
    let (seq, hash) = text.split_once(':').ok_or_else(|| {
        format!("--anchor {text}: expected SEQ:HASH, as `cortex audit --verify` prints the head")
    })?;
    let seq =
        seq.trim().parse::<i64>().map_err(|_| format!("--anchor {text}: {seq} is not a record number"))?;
    let hash = hash.trim().to_ascii_lowercase();
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("--anchor {text}: the hash must be 64 hex digits"));
    }
    Ok((seq, hash))
}
