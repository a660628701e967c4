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

fn json_len<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |s| s.len())
}

/// Cuts `response` to the budget. `None` when it already fits. For a read by ids the ids
/// left out are put in `omitted_ids`; for a search the caller places `next_cursor`.
pub(super) fn fit_budget(response: &mut FindResponse) -> Option<Cut> {
    if json_len(response) <= MAX_RESPONSE_CHARS {
        return None;
    }
    let mut hits = std::mem::take(&mut response.hits);
    response.truncated = true;
    let room = MAX_RESPONSE_CHARS.saturating_sub(json_len(response) + CUT_RESERVE);
    let mut used = 0;
    let mut kept = 0;
    for hit in &hits {
        // Each hit after the first also costs the comma between array elements.
        let size = json_len(hit) + 1;
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
        used -= json_len(&hits[kept]) + 1;
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
