//! A page's hits: each item shown with its score parts (and the chunk the dense route found
//! it through).

use super::candidates::Candidate;
use crate::response::{ChunkView, Hit, ScoreBreakdown};
use cortex_domain::ranking::{self, ScoreParts};
use cortex_domain::snippet::{SnippetTerms, best_passage};
use cortex_domain::text::truncate_chars;
use cortex_domain::time::format_instant;
use cortex_domain::{ScopeFilter, chunking};
use cortex_store::StoredItem;

/// The hit's snippet: cut from the chunk the dense route found it through (which the hit then
/// points at), else from the item's body. Each hit's text is scanned once.
pub(super) fn show_match(hit: &mut Hit, item: &StoredItem, c: &Candidate, terms: &SnippetTerms) {
    let text = item.record.text();
    // Vectors are replaced with the text, so a chunk always fits it; the check keeps a
    // damaged store from panicking a find.
    let chunk = c.chunk.and_then(|(start, end)| Some((start, end, text.get(start as usize..end as usize)?)));
    let Some((start, end, part)) = chunk else {
        hit.snippet = best_passage(&item.record.body, terms);
        return;
    };
    hit.snippet = best_passage(part, terms);
    hit.chunk = Some(ChunkView {
        heading_path: chunking::heading_path_at(text, start as usize),
        start: start as usize,
        end: end as usize,
    });
    hit.chunks_matched = c.chunks_matched;
}

pub(super) fn parts_for(item: &StoredItem, relevance: f64, filter: &ScopeFilter, now: i64) -> ScoreParts {
    ScoreParts {
        relevance,
        recency: ranking::recency(item.record.updated_at, now),
        scope_proximity: ranking::scope_proximity(filter.match_of(&item.record.scope)),
        citations: 0.0,
    }
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

pub(super) fn hit(
    item: &StoredItem,
    parts: ScoreParts,
    snippet: String,
    confidence: f64,
    filter: &ScopeFilter,
    max_chars: usize,
) -> Hit {
    let r = &item.record;
    let text = r.text();
    let (cut, truncated) = truncate_chars(text, max_chars);
    let data = r.data.as_object().filter(|d| !d.is_empty()).map(|_| r.data.clone());
    Hit {
        id: r.id,
        kind: r.kind,
        title: r.title.clone(),
        snippet,
        content: (max_chars > 0).then(|| cut.to_string()),
        content_truncated: truncated,
        score: Some(round(parts.total())),
        score_parts: Some(ScoreBreakdown {
            relevance: round(parts.relevance),
            recency: round(parts.recency),
            scope_proximity: parts.scope_proximity,
            citations: parts.citations,
        }),
        scope: Some(r.scope.clone()),
        scope_match: filter.match_of(&r.scope),
        created_at: Some(format_instant(r.created_at)),
        updated_at: format_instant(r.updated_at),
        confidence: Some(round(confidence)),
        tags: r.tags.clone(),
        status: r.status.clone(),
        data,
        metadata: r.metadata.clone(),
        expires_at: r.expires_at.map(format_instant),
        superseded_by: item.superseded_by.map(|id| id.to_string()),
        stale: cortex_domain::lifecycle::is_stale(r.kind, &r.data, r.updated_at, crate::now_ms())
            .then(crate::response::StaleView::unverified_runbook),
        provenance: None,
        expanded: false,
        path: Vec::new(),
        relations: Vec::new(),
        observations: Vec::new(),
        chunk: None,
        chunks_matched: 0,
    }
}
