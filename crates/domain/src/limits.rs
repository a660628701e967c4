//! Every size limit the server enforces, in one place, so the docs (docs/TOOLS.md) and the validators agree.

/// Items in one `memory_store` call.
pub const MAX_BATCH_ITEMS: usize = 100;
/// Bytes of one JSON-RPC message (one stdio line), 64 MiB: a full batch of
/// `MAX_BATCH_ITEMS` items at `MAX_CONTENT_BYTES` is 25 MiB of content, so it fits even when
/// JSON escaping doubles every byte. A longer line is answered `too_large`, never dropped.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Bytes of `content` per item (256 KiB): a long design doc fits, a log dump does not.
pub const MAX_CONTENT_BYTES: usize = 256 * 1024;
/// Bytes of one text field inside `data`.
pub const MAX_DATA_TEXT_BYTES: usize = 256 * 1024;
/// Characters of a short `data` field such as a title, a name or a version.
pub const MAX_SHORT_TEXT_CHARS: usize = 512;
/// Characters of one scope value (org, project, branch, ...).
pub const MAX_SCOPE_VALUE_CHARS: usize = 128;
/// Tags per item and characters per tag.
pub const MAX_TAGS: usize = 32;
pub const MAX_TAG_CHARS: usize = 64;
/// Nesting depth and serialized size of `metadata`.
pub const MAX_METADATA_DEPTH: usize = 5;
pub const MAX_METADATA_BYTES: usize = 16 * 1024;
/// Characters of an `idempotency_key`.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 256;
/// Characters of a `memory_find` query.
pub const MAX_QUERY_CHARS: usize = 1_000;
/// Hits per page of `memory_find`.
pub const MAX_LIMIT: i64 = 100;
pub const DEFAULT_LIMIT: i64 = 10;
/// Ids per lookup.
pub const MAX_IDS: usize = 100;
/// Content characters kept per hit: default for searches, default for id lookups, ceiling.
pub const DEFAULT_HIT_CONTENT_CHARS: usize = 600;
pub const DEFAULT_LOOKUP_CONTENT_CHARS: usize = 20_000;
pub const MAX_HIT_CONTENT_CHARS: usize = 20_000;
/// A whole `memory_find` response stays under 25,000 tokens (where Claude Code cuts tool
/// output) counted conservatively, at 3 characters a token: JSON full of ids and timestamps
/// tokenizes worse than prose. Each copy (structured content, text mirror) stays under it.
pub const MAX_RESPONSE_CHARS: usize = 72_000;
/// Milliseconds a `memory_find` may take before it answers with what it has: a route still
/// running then is left out, later stages are skipped, and `notes` says so.
pub const FIND_DEADLINE_MS: u64 = 5_000;
/// A hit's snippet: the best passage of about this many words, cut at this many characters.
/// Ten brief hits must fit in about 4,000 characters, so a snippet is a sentence, not a page.
pub const SNIPPET_WORDS: usize = 14;
pub const MAX_SNIPPET_CHARS: usize = 180;
/// Characters of a title in a brief hit (the whole title comes with `detail: full`).
pub const MAX_BRIEF_TITLE_CHARS: usize = 80;
/// Characters of a derived title.
pub const MAX_TITLE_CHARS: usize = 200;

// The documented limits must agree: a full batch of maximal items, every byte escaped twice
// over, is one message the transport accepts.
const _: () = assert!(MAX_BATCH_ITEMS * MAX_CONTENT_BYTES * 2 < MAX_MESSAGE_BYTES);
