//! The in-process index's file (`<database>.vectors`, beside the lexical index): what it was
//! when written, mapped by every process that searches it, so a fresh process (`cortex
//! recall`, `cortex find`) reaches every vector without reading one from the database.
//!
//! The file holds each entry's int8 vector (`cortex_vector::MappedFile`) and a record of what
//! the dense route filters on (below); its header names the store it was made from, the
//! format's version and the change-log cursor it is current to. A process maps it, reads the
//! log since that cursor, and keeps what changed since in memory (`index.rs`); when that grows
//! large the file is written again, whole, and renamed into place. A file of another store or
//! version, cut short or missing, is written again from the database.
//!
//! ```text
//! record (72 bytes, little-endian): item id 16 | chunk start u32, end u32 (both u32::MAX: the
//! whole text) | kind u8 (its place in Kind::ALL) | flags u8 (1 superseded, 2 deleted) | 2 zero
//! | scope u32 | status u32 (u32::MAX: none) | first tag u32 | tag count u32 | writer u32
//! | updated_at i64 | expires_at i64 (i64::MIN: none) | created_at i64
//! header: JSON length u32 | JSON (`Header`) | tag ids, u32 each
//! ```
//! Entries are in order of item id, so an item's entries are found by binary search.

use super::Span;
use super::entry_facts::{CompiledFilter, FactFields, FactTable, Tags, Writer};
use super::nearest::Nearest;
use cortex_domain::{Kind, Scope};
use cortex_store::{ChangeCursor, Filters};
use cortex_vector::{FileError, MappedFile, ScanError};
use std::path::Path;
use uuid::Uuid;

/// The version of what this module writes; a file of another is written again.
const VERSION: u32 = 3;
pub(super) const RECORD: usize = 72;
const WHOLE: u32 = u32::MAX;
const NONE32: u32 = u32::MAX;

/// What the file says about itself.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Header {
    version: u32,
    /// `cortex_store::identity` of the store it was made from.
    store: String,
    /// It holds every change of the log before this cursor.
    txn: i64,
    seq: i64,
    /// Whether any entry is a chunk's.
    chunks: bool,
    /// The values records refer to by id.
    scopes: Vec<Scope>,
    words: Vec<String>,
    writers: Vec<Writer>,
}

/// One entry of the file, as read.
pub(super) struct FileEntry<'a> {
    pub item: Uuid,
    pub chunk: Option<Span>,
    pub fields: FactFields<'a>,
}

/// One entry to write: its key, vector and facts (ids into `table`).
pub(super) struct NewEntry<'a> {
    pub item: Uuid,
    pub chunk: Option<Span>,
    pub values: &'a [i8],
    pub scale: f32,
    pub fields: FactFields<'a>,
}

/// Writes `entries` (in order of item id) to `path`, current to `cursor`. `table` is the one
/// every entry's fields refer to.
pub(super) fn write<'a>(
    path: &Path,
    store: &str,
    cursor: ChangeCursor,
    dimension: usize,
    table: &FactTable,
    entries: impl Iterator<Item = NewEntry<'a>>,
) -> Result<usize, FileError> {
    let mut out = cortex_vector::write_file(path, dimension, RECORD)?;
    let mut tags: Vec<u8> = Vec::new();
    let mut chunks = false;
    for e in entries {
        let first = (tags.len() / 4) as u32;
        let mut count = 0u32;
        for t in e.fields.tags.iter() {
            tags.extend_from_slice(&t.to_le_bytes());
            count += 1;
        }
        chunks |= e.chunk.is_some();
        if !out.push(e.values, e.scale, &record(e.item, e.chunk, &e.fields, first, count))? {
            // An entry of another dimension (the in-memory index refuses those too).
            tags.truncate(first as usize * 4);
        }
    }
    let (scopes, words, writers) = table.values();
    let header = Header {
        version: VERSION,
        store: store.to_string(),
        txn: cursor.txn,
        seq: cursor.seq,
        chunks,
        scopes: scopes.to_vec(),
        words: words.to_vec(),
        writers: writers.to_vec(),
    };
    let json = serde_json::to_vec(&header).unwrap_or_default();
    let mut bytes = Vec::with_capacity(4 + json.len() + tags.len());
    bytes.extend_from_slice(&(json.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&json);
    bytes.extend_from_slice(&tags);
    Ok(out.finish(&bytes)?.entries)
}

fn record(item: Uuid, chunk: Option<Span>, f: &FactFields, first_tag: u32, tags: u32) -> [u8; RECORD] {
    let mut r = [0u8; RECORD];
    r[..16].copy_from_slice(item.as_bytes());
    let (start, end) = chunk.unwrap_or((WHOLE, WHOLE));
    r[16..20].copy_from_slice(&start.to_le_bytes());
    r[20..24].copy_from_slice(&end.to_le_bytes());
    r[24] = Kind::ALL.iter().position(|k| *k == f.kind).unwrap_or(0) as u8;
    r[25] = u8::from(f.superseded) | (u8::from(f.deleted) << 1);
    r[28..32].copy_from_slice(&f.scope.to_le_bytes());
    r[32..36].copy_from_slice(&f.status.unwrap_or(NONE32).to_le_bytes());
    r[36..40].copy_from_slice(&first_tag.to_le_bytes());
    r[40..44].copy_from_slice(&tags.to_le_bytes());
    r[44..48].copy_from_slice(&f.writer.to_le_bytes());
    r[48..56].copy_from_slice(&f.updated_at.to_le_bytes());
    r[56..64].copy_from_slice(&f.expires_at.unwrap_or(i64::MIN).to_le_bytes());
    r[64..72].copy_from_slice(&f.created_at.to_le_bytes());
    r
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    i64::from_le_bytes(w)
}

/// A mapped file of this store and version: the entries, their facts' values, and which of
/// them no longer count (their item changed since the file was written).
pub(super) struct VectorFile {
    file: MappedFile,
    facts: FactTable,
    /// Where the tag ids start in the header.
    tags_at: usize,
    chunks: bool,
    /// Per entry, whether it was masked; empty until the first mask.
    masked: Vec<bool>,
    masked_count: usize,
}

/// Why a file is not used.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unusable {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("the vector index file {path} is {why}: it is written again")]
    Other { path: String, why: String },
}

impl VectorFile {
    /// The file at `path` and the cursor it is current to, if it is a whole file of this
    /// version made from the store `store`.
    pub fn open(path: &Path, store: &str) -> Result<(VectorFile, ChangeCursor), Unusable> {
        let other = |why: String| Unusable::Other { path: path.display().to_string(), why };
        let file = MappedFile::open(path)?;
        let raw = file.header();
        if raw.len() < 4 {
            return Err(other("without a header".into()));
        }
        let json_len = u32_at(raw, 0) as usize;
        let json = raw.get(4..4 + json_len).ok_or_else(|| other("cut short".into()))?;
        let header: Header = serde_json::from_slice(json).map_err(|e| other(format!("unreadable ({e})")))?;
        if header.version != VERSION {
            return Err(other(format!("of version {}, this one reads {VERSION}", header.version)));
        }
        if header.store != store {
            return Err(other("of another database".into()));
        }
        let cursor = ChangeCursor { txn: header.txn, seq: header.seq };
        let vf = VectorFile {
            file,
            facts: FactTable::from_values(header.scopes, header.words, header.writers),
            tags_at: 4 + json_len,
            chunks: header.chunks,
            masked: Vec::new(),
            masked_count: 0,
        };
        Ok((vf, cursor))
    }

    /// Entries in the file, masked or not.
    pub fn total(&self) -> usize {
        self.file.len()
    }

    /// Entries that still count.
    pub fn len(&self) -> usize {
        self.file.len() - self.masked_count
    }

    pub fn dimension(&self) -> usize {
        self.file.dimension()
    }

    pub fn has_chunks(&self) -> bool {
        self.chunks
    }

    pub fn facts(&self) -> &FactTable {
        &self.facts
    }

    pub fn entry(&self, i: usize) -> FileEntry<'_> {
        let r = self.file.record(i);
        let (start, end) = (u32_at(r, 16), u32_at(r, 20));
        let (first, count) = (u32_at(r, 36) as usize, u32_at(r, 40) as usize);
        let tags = self.file.header().get(self.tags_at + 4 * first..self.tags_at + 4 * (first + count));
        let status = u32_at(r, 32);
        let expires_at = i64_at(r, 56);
        FileEntry {
            item: Uuid::from_slice(&r[..16]).unwrap_or_default(),
            chunk: (start != WHOLE || end != WHOLE).then_some((start, end)),
            fields: FactFields {
                kind: Kind::ALL.get(r[24] as usize).copied().unwrap_or(Kind::Section),
                scope: u32_at(r, 28),
                status: (status != NONE32).then_some(status),
                tags: Tags::Bytes(tags.unwrap_or_default()),
                writer: u32_at(r, 44),
                created_at: i64_at(r, 64),
                updated_at: i64_at(r, 48),
                expires_at: (expires_at != i64::MIN).then_some(expires_at),
                superseded: r[25] & 1 != 0,
                deleted: r[25] & 2 != 0,
            },
        }
    }

    /// Entry `i`'s int8 values and scale.
    pub fn vector(&self, i: usize) -> (&[i8], f32) {
        self.file.slab().entry(i)
    }

    pub fn is_masked(&self, i: usize) -> bool {
        self.masked.get(i).copied().unwrap_or(false)
    }

    /// Leaves out `item`'s entries from now on (it changed or went since the file was written).
    pub fn mask(&mut self, item: Uuid) {
        let n = self.file.len();
        let first = partition(n, |i| self.entry(i).item < item);
        let mut i = first;
        while i < n && self.entry(i).item == item {
            if self.masked.is_empty() {
                self.masked = vec![false; n];
            }
            if !self.masked[i] {
                self.masked[i] = true;
                self.masked_count += 1;
            }
            i += 1;
        }
    }

    /// The `n` nearest entries that count and pass `filter` (whole texts only, with
    /// `whole_only`), best first, with approximate similarities and their full facts.
    pub fn nearest(
        &self,
        query: &[f32],
        n: usize,
        filters: &Filters,
        whole_only: bool,
    ) -> Result<Vec<Nearest>, ScanError> {
        let filter: CompiledFilter = self.facts.compile(filters);
        let found = self.file.slab().search(query, n, |i| {
            if self.is_masked(i) {
                return false;
            }
            let e = self.entry(i);
            !(whole_only && e.chunk.is_some()) && filter.admits(&e.fields)
        })?;
        Ok(found
            .into_iter()
            .map(|(score, i)| {
                let e = self.entry(i);
                (e.item, score, e.chunk, self.facts.expand(&e.fields))
            })
            .collect())
    }
}

/// The first `i` in `0..n` for which `before(i)` is false (`before` true then false).
fn partition(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if before(mid) { lo = mid + 1 } else { hi = mid }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_store::ItemFacts;
    use cortex_vector::Quantized;

    fn facts(kind: Kind, project: &str, tags: &[&str]) -> ItemFacts {
        ItemFacts {
            kind,
            scope: Scope { org: Some("acme".into()), project: Some(project.into()), ..Scope::default() },
            created_at: 40,
            updated_at: 42,
            expires_at: Some(7),
            status: Some("open".into()),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            superseded: true,
            deleted: false,
            author: Some(format!("key:acme/{project}")),
            agent: Some("claude".into()),
        }
    }

    #[test]
    fn records_read_back_as_written_and_filters_decide_on_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db.vectors");
        let mut table = FactTable::default();
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let fa = table.compact(&facts(Kind::Runbook, "api", &["x", "y"]));
        let fb = table.compact(&facts(Kind::Todo, "web", &[]));
        let va = Quantized::from_f32(&[0.6, 0.8]);
        let vb = Quantized::from_f32(&[1.0, 0.0]);
        let entries = vec![
            NewEntry { item: a, chunk: None, values: &va.values, scale: va.scale, fields: fa.fields() },
            NewEntry {
                item: a,
                chunk: Some((3, 9)),
                values: &vb.values,
                scale: vb.scale,
                fields: fa.fields(),
            },
            NewEntry { item: b, chunk: None, values: &vb.values, scale: vb.scale, fields: fb.fields() },
        ];
        let cursor = ChangeCursor { txn: 5, seq: 77 };
        assert_eq!(write(&path, "store-1", cursor, 2, &table, entries.into_iter()).unwrap(), 3);
        assert!(matches!(VectorFile::open(&path, "store-2"), Err(Unusable::Other { .. })), "another store's");
        let (mut file, read) = VectorFile::open(&path, "store-1").unwrap();
        assert_eq!(read, cursor);
        assert!(file.has_chunks());
        let first = file.entry(0);
        assert_eq!((first.item, first.chunk), (a, None));
        let back = file.facts().expand(&first.fields);
        let want = facts(Kind::Runbook, "api", &["x", "y"]);
        assert_eq!(
            (back.kind, &back.scope, &back.tags, back.status, back.expires_at),
            (want.kind, &want.scope, &want.tags, want.status, want.expires_at)
        );
        assert!(back.superseded && !back.deleted && back.updated_at == 42 && back.created_at == 40);
        assert_eq!((back.author.as_deref(), back.agent.as_deref()), (Some("key:acme/api"), Some("claude")));
        let by_web_key = Filters {
            author: Some(cortex_domain::find::Author::Principal("key:acme/web".into())),
            include_superseded: true,
            include_expired: true,
            ..Filters::default()
        };
        let found = file.nearest(&[1.0, 0.0], 5, &by_web_key, false).unwrap();
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), [b], "the author read back from the file");
        assert_eq!(file.entry(1).chunk, Some((3, 9)));
        let only_web = Filters {
            scope_equals: vec![("project", "web".to_string())],
            include_superseded: true,
            include_expired: true,
            ..Filters::default()
        };
        let found = file.nearest(&[1.0, 0.0], 5, &only_web, false).unwrap();
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), [b]);
        let tagged = Filters {
            tags: vec!["y".into()],
            include_superseded: true,
            include_expired: true,
            ..Filters::default()
        };
        assert_eq!(file.nearest(&[1.0, 0.0], 5, &tagged, true).unwrap().len(), 1, "whole texts only");
        assert_eq!(file.nearest(&[1.0, 0.0], 5, &tagged, false).unwrap().len(), 2);
        file.mask(a);
        assert_eq!(file.len(), 1);
        assert!(
            file.nearest(&[1.0, 0.0], 5, &tagged, false).unwrap().is_empty(),
            "a masked item is left out"
        );
    }
}
