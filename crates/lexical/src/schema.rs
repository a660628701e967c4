//! What the index holds per item: the searchable text, analyzed as the query's words are, and
//! the facts a find filters on and a hit carries, as fast fields read without touching the
//! store.
//!
//! The text is the title twice and the body once, in one field: a title word then counts
//! twice a body word, as FTS5's `bm25(2.0, 1.0)` weighed them, and the whole query stays one
//! union of term postings, the shape block-max WAND prunes (a second, boosted title field would
//! wrap each term in a scorer WAND cannot see into).

use crate::stem::CachedStemmer;
use cortex_domain::scope::SCOPE_FIELDS;
use cortex_store::{ItemFacts, StoredItem};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};
use tantivy::{TantivyDocument, Term};
use uuid::Uuid;

/// The name the analyzer is registered under.
pub(crate) const ANALYZER: &str = "cortex_english";

/// Bumped whenever the schema or the analysis changes: an index of another version is built
/// again rather than read wrongly.
pub(crate) const VERSION: u32 = 3;

/// Tokens longer than this are not indexed (hashes, base64): they are never searched as words.
const LONGEST_TOKEN: usize = 64;

/// Splits on anything not a letter or digit (as `cortex_domain::query::words_of` does),
/// lowercases, folds accents, stems English (Snowball): what FTS5's
/// `porter unicode61 remove_diacritics 2` did, so the same words match.
pub(crate) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(LONGEST_TOKEN))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(CachedStemmer::english())
        .build()
}

/// The index terms of a piece of text (usually one query word: none, when it is too long).
pub(crate) fn terms_of(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// What the text field holds for an item: its title twice, then its body.
pub(crate) fn searchable_text(item: &StoredItem) -> String {
    let r = &item.record;
    format!("{}\n{}\n{}", r.title, r.title, r.body)
}

/// The fields of the schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// Title, title, body: searched, never stored.
    pub text: Field,
    /// The item's id (16 bytes), indexed to delete or replace it.
    pub id: Field,
    /// The id again as two fast numbers, read for each hit.
    pub id_hi: Field,
    pub id_lo: Field,
    pub kind: Field,
    pub status: Field,
    pub tags: Field,
    /// The principal that wrote the current version, and the agent it claimed.
    pub author: Field,
    pub agent: Field,
    /// `SCOPE_FIELDS`, in that order; an unset field holds no value.
    pub scope: [Field; 7],
    pub updated_at: Field,
    /// When the item was created: a merged branch's items are seen up to a time.
    pub created_at: Field,
    /// `i64::MAX` for an item that never expires.
    pub expires_at: Field,
    /// 1 when a newer item supersedes it.
    pub superseded: Field,
}

/// The fast column of a scope field.
pub(crate) fn scope_column(field: &str) -> String {
    format!("scope_{field}")
}

impl Fields {
    pub(crate) fn schema() -> (Schema, Fields) {
        let mut b = Schema::builder();
        let text_options = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let fields = Fields {
            text: b.add_text_field("text", text_options),
            id: b.add_bytes_field("id", INDEXED),
            id_hi: b.add_u64_field("id_hi", FAST),
            id_lo: b.add_u64_field("id_lo", FAST),
            kind: b.add_text_field("kind", STRING | FAST),
            status: b.add_text_field("status", FAST),
            tags: b.add_text_field("tags", FAST),
            author: b.add_text_field("author", FAST),
            agent: b.add_text_field("agent", FAST),
            scope: SCOPE_FIELDS.map(|f| b.add_text_field(&scope_column(f), FAST)),
            updated_at: b.add_i64_field("updated_at", FAST),
            created_at: b.add_i64_field("created_at", FAST),
            expires_at: b.add_i64_field("expires_at", FAST),
            superseded: b.add_u64_field("superseded", FAST),
        };
        (b.build(), fields)
    }

    /// The term naming one item, to delete it.
    pub(crate) fn id_term(&self, id: Uuid) -> Term {
        Term::from_field_bytes(self.id, id.as_bytes())
    }

    /// The document of a live item.
    pub(crate) fn document(&self, item: &StoredItem) -> TantivyDocument {
        let r = &item.record;
        let facts = ItemFacts::of(item);
        let mut doc = TantivyDocument::new();
        doc.add_text(self.text, searchable_text(item));
        doc.add_bytes(self.id, r.id.as_bytes().as_slice());
        let (hi, lo) = r.id.as_u64_pair();
        doc.add_u64(self.id_hi, hi);
        doc.add_u64(self.id_lo, lo);
        doc.add_text(self.kind, facts.kind.as_str());
        if let Some(status) = &facts.status {
            doc.add_text(self.status, status);
        }
        for tag in &facts.tags {
            doc.add_text(self.tags, tag);
        }
        if let Some(author) = &facts.author {
            doc.add_text(self.author, author);
        }
        if let Some(agent) = &facts.agent {
            doc.add_text(self.agent, agent);
        }
        for (field, name) in self.scope.iter().zip(SCOPE_FIELDS) {
            if let Some(value) = facts.scope.get(name).filter(|v| !v.is_empty()) {
                doc.add_text(*field, value);
            }
        }
        doc.add_i64(self.updated_at, facts.updated_at);
        doc.add_i64(self.created_at, facts.created_at);
        doc.add_i64(self.expires_at, facts.expires_at.unwrap_or(i64::MAX));
        doc.add_u64(self.superseded, u64::from(facts.superseded));
        doc
    }
}
