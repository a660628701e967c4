//! The response budget: a `memory_find` answer stays under [`MAX_RESPONSE_CHARS`] (about
//! 25,000 tokens, where Claude Code cuts tool output). What a cut leaves out is said, never
//! silent: hits are kept whole, in rank order, as many as fit; the rest are named in `notes`
//! and reached with `next_cursor` (a search) or listed in `omitted_ids` (a read by ids).
//!
//! Why whole hits: a hit without its content makes the agent ask again anyway, and one with
//! part of it looks complete. Only a single hit too large for the budget on its own is shown
//! with its content cut (and, past that, without its `data`), and the note says so.

use crate::response::{FindResponse, Hit, Route};
use cortex_domain::limits::MAX_RESPONSE_CHARS;
use cortex_domain::text::truncate_chars;

/// Room kept for what a cut adds: the note, the cursor, `truncated` (a first guess; the
/// final check gives back hits while `omitted_ids` and the note do not fit).
const CUT_RESERVE: usize = 1_000;
/// Room for the `next_cursor` the caller adds after the cut.
const CURSOR_RESERVE: usize = 64;

/// What a cut left out.
#[derive(Debug, PartialEq)]
pub(super) struct Cut {
    /// Matches (not expanded items) kept, to place the next page's cursor after them.
    pub kept_matches: usize,
    /// Ids of the matches left out, in rank order (expanded items left out are only counted).
    pub left_out: Vec<String>,
}

/// How many bytes `value` takes as JSON: serialized into a counter, nothing allocated.
fn json_len<T: serde::Serialize>(value: &T) -> usize {
    let mut counted = Counted(0);
    match serde_json::to_writer(&mut counted, value) {
        Ok(()) => counted.0,
        Err(_) => usize::MAX,
    }
}

/// A writer that only counts what it is given.
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Cuts `response` to the budget. `None` when it already fits. For a read by ids the ids
/// left out are put in `omitted_ids`; for a search the caller places `next_cursor`.
///
/// Each hit is measured once, and the rest of the answer without them: the answer's size is
/// those added up (an array's brackets are in the rest, one comma between two hits).
pub(super) fn fit_budget(response: &mut FindResponse) -> Option<Cut> {
    let mut hits = std::mem::take(&mut response.hits);
    let sizes: Vec<usize> = hits.iter().map(json_len).collect();
    let all_hits = sizes.iter().sum::<usize>() + sizes.len().saturating_sub(1);
    if json_len(response).saturating_add(all_hits) <= MAX_RESPONSE_CHARS {
        response.hits = hits;
        return None;
    }
    response.truncated = true;
    let room = MAX_RESPONSE_CHARS.saturating_sub(json_len(response).saturating_add(CUT_RESERVE));
    let mut used = 0;
    let mut kept = 0;
    for size in &sizes {
        // Each hit after the first also costs the comma between array elements.
        let size = size + 1;
        if used + size > room {
            break;
        }
        used += size;
        kept += 1;
    }
    let notes = response.notes.clone();
    let mut shrunk = None;
    if kept == 0 && !hits.is_empty() {
        shrunk = Some(shrink_to(&mut hits[0], room));
        kept = 1;
    }
    // The note and `omitted_ids` grow with what is left out: give back hits until all fits.
    loop {
        let left_out: Vec<&Hit> = hits[kept..].iter().collect();
        response.notes = notes.clone();
        response.omitted_ids.clear();
        if let (Some(data_left_out), Some(first)) = (shrunk, hits.first()) {
            response.notes.push(format!(
                "hit {} is too large for one response: its content is cut{}; read it by `ids` with a smaller `max_content_chars`",
                first.id,
                if data_left_out { " and its data left out" } else { "" }
            ));
        }
        if !left_out.is_empty() {
            let by_ids = response.route_used == Route::Ids;
            response.notes.push(format!(
                "{} more hit(s) left out to keep this response under ~25,000 tokens: {}",
                left_out.len(),
                if by_ids {
                    "read the ids in `omitted_ids` in another call"
                } else {
                    "pass `next_cursor` for them, or ask for fewer hits"
                }
            ));
            if by_ids {
                response.omitted_ids =
                    left_out.iter().filter(|h| !h.expanded).map(|h| h.id.to_string()).collect();
            }
        }
        if kept <= 1 || json_len(response) + used + CURSOR_RESERVE <= MAX_RESPONSE_CHARS {
            break;
        }
        kept -= 1;
        used -= sizes[kept] + 1;
    }
    let left_out: Vec<String> =
        hits[kept..].iter().filter(|h| !h.expanded).map(|h| h.id.to_string()).collect();
    hits.truncate(kept);
    let kept_matches = hits.iter().filter(|h| !h.expanded).count();
    response.hits = hits;
    Some(Cut { kept_matches, left_out })
}

/// Cuts one hit's content (then leaves out its data) until it takes at most `room`
/// characters. Returns whether its data was left out.
fn shrink_to(hit: &mut Hit, room: usize) -> bool {
    let excess = json_len(hit).saturating_sub(room);
    if excess > 0
        && let Some(content) = hit.content.take()
    {
        // JSON escaping makes a character cost at least one byte: cutting `excess` characters
        // (and a margin for escapes) brings the hit under.
        let keep = content.chars().count().saturating_sub(excess + excess / 4 + 16);
        hit.content = Some(truncate_chars(&content, keep).0.to_string());
        hit.content_truncated = true;
    }
    if json_len(hit) <= room {
        return false;
    }
    hit.data = None;
    hit.metadata = None;
    if json_len(hit) > room {
        hit.content = Some(String::new());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::SearchedScope;
    use cortex_domain::{Kind, Mode, Scope, ScopeLevel, ScopeMatch};
    use uuid::Uuid;

    fn hit(content_chars: usize) -> Hit {
        Hit {
            id: Uuid::now_v7(),
            kind: Kind::Section,
            title: "a \"quoted\" title — with é".into(),
            snippet: "**match** here".into(),
            content: Some("x\n".repeat(content_chars / 2)),
            content_truncated: false,
            score: Some(0.5),
            score_parts: None,
            scope: Some(Scope { org: Some("acme".into()), ..Scope::default() }),
            scope_match: ScopeMatch::Branch,
            created_at: None,
            updated_at: "2026-01-01T00:00:00Z".into(),
            confidence: Some(0.9),
            tags: vec!["ops".into()],
            status: None,
            data: Some(serde_json::json!({"title": "t", "body": "b\u{7}"})),
            metadata: None,
            expires_at: None,
            superseded_by: None,
            stale: false,
            expanded: false,
            path: Vec::new(),
            relations: Vec::new(),
            observations: Vec::new(),
            chunk: None,
            chunks_matched: 0,
        }
    }

    fn response(hits: Vec<Hit>) -> FindResponse {
        FindResponse {
            hits,
            route_used: Route::Lexical,
            mode: Mode::Fast,
            confidence: 0.9,
            searched_scope: SearchedScope { level: ScopeLevel::Branch, filter: Scope::default() },
            next_cursor: None,
            suggestions: Vec::new(),
            notes: vec!["a note".into()],
            missing_ids: Vec::new(),
            omitted_ids: Vec::new(),
            truncated: false,
            graph: None,
        }
    }

    /// The sizes the budget adds up are the size of the answer as sent, whatever the hits.
    #[test]
    fn the_parts_measured_add_up_to_the_answer() {
        for n in [0, 1, 3] {
            let whole = response((0..n).map(|i| hit(100 * i)).collect());
            let sent = serde_json::to_string(&whole).unwrap().len();
            assert_eq!(json_len(&whole), sent);
            let sizes: usize = whole.hits.iter().map(json_len).sum::<usize>() + n.saturating_sub(1);
            assert_eq!(json_len(&response(Vec::new())) + sizes, sent, "{n} hits");
        }
    }

    #[test]
    fn an_answer_within_the_budget_is_left_as_it_is() {
        let mut answer = response(vec![hit(1_000), hit(1_000)]);
        let before = serde_json::to_string(&answer).unwrap();
        assert_eq!(fit_budget(&mut answer), None);
        assert_eq!(serde_json::to_string(&answer).unwrap(), before);
    }

    #[test]
    fn an_answer_over_the_budget_keeps_whole_hits_in_order_and_names_the_rest() {
        let hits: Vec<Hit> = (0..10).map(|_| hit(MAX_RESPONSE_CHARS / 4)).collect();
        let ids: Vec<String> = hits.iter().map(|h| h.id.to_string()).collect();
        let mut answer = response(hits);
        let cut = fit_budget(&mut answer).unwrap();
        assert!(answer.truncated && !answer.hits.is_empty() && answer.hits.len() < 10);
        assert!(json_len(&answer) + CURSOR_RESERVE <= MAX_RESPONSE_CHARS);
        assert_eq!(cut.kept_matches, answer.hits.len());
        assert_eq!(cut.left_out, ids[answer.hits.len()..].to_vec());
        assert!(answer.hits.iter().all(|h| !h.content_truncated));
        assert!(answer.notes.iter().any(|n| n.contains("left out")), "{:?}", answer.notes);
    }
}
