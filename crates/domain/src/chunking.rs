//! Chunking long markdown into pieces worth indexing on their own.
//!
//! Text over [`CHUNK_ABOVE`] bytes is cut into chunks of about [`MIN_CHUNK`]–[`MAX_CHUNK`] bytes.
//! Cuts prefer, in order: a heading line, a blank line (paragraph), a sentence end. A cut never
//! falls inside a fenced code block or between two rows of a table; a fence or table longer
//! than [`MAX_CHUNK`] stays whole in one chunk. Chunks are byte ranges of the original text, so
//! their concatenation is the text, byte for byte. Each carries the heading path it sits under.

use crate::Kind;

/// Texts of more characters than this are chunked.
pub const CHUNK_ABOVE: usize = 2_400;
pub const MIN_CHUNK: usize = 1_000;
pub const MAX_CHUNK: usize = 3_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Byte range in the original text.
    pub start: usize,
    pub end: usize,
    /// Headings above the chunk's start, outermost first (`["Deploy", "Rollback"]`).
    pub heading_path: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    Sentence,
    Paragraph,
    Heading,
}

/// A place a chunk may end (byte offset of what follows).
#[derive(Debug, Clone, Copy)]
struct Cut {
    at: usize,
    strength: Strength,
}

struct Heading {
    at: usize,
    level: usize,
    title: String,
}

/// Whether long texts of `kind` are chunked: the kinds holding documents that are read, and
/// searched, a part at a time.
pub fn applies_to(kind: Kind) -> bool {
    matches!(kind, Kind::Section | Kind::Runbook | Kind::Incident)
}

/// The chunks of `text`; empty when the text is short enough to index whole.
pub fn chunk(text: &str) -> Vec<Chunk> {
    if text.len() <= CHUNK_ABOVE || text.chars().count() <= CHUNK_ABOVE {
        return Vec::new();
    }
    let (cuts, headings) = scan(text);
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = choose_cut(&cuts, start, text.len());
        chunks.push(Chunk { start, end, heading_path: heading_path(&headings, start) });
        start = end;
    }
    chunks
}

/// The heading path of a chunk that starts at byte `at` of `text`.
pub fn heading_path_at(text: &str, at: usize) -> Vec<String> {
    let (_, headings) = scan(text);
    heading_path(&headings, at)
}

/// What is embedded for a chunk: the item's title and the chunk's heading path give the
/// chunk the context its own words may lack.
pub fn embedding_input(title: &str, text: &str, chunk: &Chunk) -> String {
    format!("{title}\n{}\n{}", chunk.heading_path.join(" > "), &text[chunk.start..chunk.end])
}

/// The best cut for a chunk starting at `start`: the strongest cut at least MIN bytes in and
/// leaving at least MIN bytes after it, at most MAX bytes in; the earliest of equals (an
/// embedding model reads only the first few hundred tokens of a chunk, about 1 KB of English:
/// a shorter chunk is read whole). Without one: the rest of the text when it fits in MAX,
/// else the first cut past MAX (a long fence or table stays whole).
fn choose_cut(cuts: &[Cut], start: usize, len: usize) -> usize {
    let last = (start + MAX_CHUNK).min(len.saturating_sub(MIN_CHUNK));
    let window = cuts.iter().filter(|c| c.at >= start + MIN_CHUNK && c.at <= last);
    let best = window.fold(None::<Cut>, |best, c| match best {
        Some(b) if b.strength >= c.strength => Some(b),
        _ => Some(*c),
    });
    if let Some(best) = best {
        return best.at;
    }
    if len - start <= MAX_CHUNK {
        return len;
    }
    cuts.iter().find(|c| c.at > start + MAX_CHUNK).map_or(len, |c| c.at)
}

fn heading_path(headings: &[Heading], at: usize) -> Vec<String> {
    let mut path: Vec<&Heading> = Vec::new();
    for h in headings.iter().take_while(|h| h.at <= at) {
        while path.last().is_some_and(|p| p.level >= h.level) {
            path.pop();
        }
        path.push(h);
    }
    path.into_iter().map(|h| h.title.clone()).collect()
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

fn is_table_row(line: &str) -> bool {
    line.trim_start().starts_with('|')
}

fn heading_of(line: &str) -> Option<(usize, String)> {
    let t = line.trim_start();
    let level = t.chars().take_while(|c| *c == '#').count();
    let rest = &t[level..];
    ((1..=6).contains(&level) && (rest.starts_with(' ') || rest.is_empty()))
        .then(|| (level, rest.trim().trim_end_matches('#').trim().to_string()))
}

/// Every allowed cut and every heading, in one pass over the lines.
fn scan(text: &str) -> (Vec<Cut>, Vec<Heading>) {
    let mut cuts = Vec::new();
    let mut headings = Vec::new();
    let mut in_fence = false;
    let mut previous_blank = false;
    let mut previous_table = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if in_fence {
            if is_fence(line) {
                in_fence = false;
                // After a closing fence is a safe place to cut.
                cuts.push(Cut { at: offset, strength: Strength::Paragraph });
            }
            continue;
        }
        let table = is_table_row(line);
        let blank = line.trim().is_empty();
        if start > 0 && !(table && previous_table) {
            if let Some((level, title)) = heading_of(line) {
                cuts.push(Cut { at: start, strength: Strength::Heading });
                headings.push(Heading { at: start, level, title });
            } else if previous_blank && !blank {
                cuts.push(Cut { at: start, strength: Strength::Paragraph });
            }
        } else if start == 0
            && let Some((level, title)) = heading_of(line)
        {
            headings.push(Heading { at: 0, level, title });
        }
        if is_fence(line) {
            in_fence = true;
        } else if !table {
            for (i, _) in line.match_indices(['.', '!', '?']) {
                let after = start + i + 1;
                if line[i + 1..].starts_with(' ') {
                    cuts.push(Cut { at: after + 1, strength: Strength::Sentence });
                }
            }
        }
        previous_blank = blank;
        previous_table = table;
    }
    cuts.sort_by_key(|c| c.at);
    (cuts, headings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> String {
        let para = |topic: &str| {
            format!(
                "The {topic} service restarts nightly. It drains its queue first. Then it reloads config.\n\n"
            )
            .repeat(14)
        };
        format!(
            "# Operations\n\nIntro text.\n\n## Deploy\n\n{}```sh\n# not a heading: inside a fence\nmake deploy\n```\n\n## Rollback\n\n{}| step | command |\n|---|---|\n| 1 | helm rollback |\n| 2 | verify |\n\n### Verify\n\n{}",
            para("billing"),
            para("ledger"),
            para("gateway")
        )
    }

    fn inside_fence(text: &str, at: usize) -> bool {
        text[..at].lines().filter(|l| is_fence(l)).count() % 2 == 1
    }

    #[test]
    fn short_texts_are_not_chunked() {
        assert!(chunk("# Title\n\nshort body").is_empty());
        // 2,400 characters of 2 bytes each: over the limit in bytes, not in characters.
        assert!(chunk(&"é".repeat(CHUNK_ABOVE)).is_empty());
    }

    #[test]
    fn a_chunk_heading_path_is_found_again_from_its_start() {
        let text = doc();
        for c in chunk(&text) {
            assert_eq!(heading_path_at(&text, c.start), c.heading_path);
        }
        let c = &chunk(&text)[1];
        let input = embedding_input("Ops guide", &text, c);
        assert!(input.starts_with(&format!("Ops guide\n{}\n", c.heading_path.join(" > "))));
        assert!(input.ends_with(&text[c.start..c.end]));
    }

    #[test]
    fn chunks_cover_the_text_byte_for_byte_and_respect_sizes() {
        let text = doc();
        let chunks = chunk(&text);
        assert!(chunks.len() >= 2);
        let joined: String = chunks.iter().map(|c| &text[c.start..c.end]).collect();
        assert_eq!(joined, text);
        for c in &chunks[..chunks.len() - 1] {
            let size = c.end - c.start;
            assert!((MIN_CHUNK..=MAX_CHUNK).contains(&size), "chunk of {size} bytes");
        }
    }

    #[test]
    fn never_cuts_inside_a_fence_or_a_table() {
        let text = doc();
        for c in chunk(&text) {
            assert!(!inside_fence(&text, c.end), "cut inside a fence at {}", c.end);
            let before = text[..c.end].lines().last().unwrap_or("");
            let after = text[c.end..].lines().next().unwrap_or("");
            assert!(!(is_table_row(before) && is_table_row(after)), "cut inside a table");
        }
    }

    #[test]
    fn heading_paths_follow_the_outline_and_ignore_fenced_hashes() {
        let text = doc();
        let chunks = chunk(&text);
        assert_eq!(chunks[0].heading_path, vec!["Operations".to_string()]);
        assert!(chunks.iter().any(|c| c.heading_path.ends_with(&["Rollback".to_string()])
            || c.heading_path.ends_with(&["Verify".to_string()])));
        assert!(chunks.iter().all(|c| !c.heading_path.iter().any(|h| h.contains("not a heading"))));
    }

    #[test]
    fn a_long_fence_stays_whole() {
        let fence = format!("```\n{}```\n", "let x = 1;\n".repeat(400));
        let text = format!("# Code\n\n{}\n\nAfter the fence. More words here.\n", fence);
        let chunks = chunk(&text);
        let fence_start = text.find("```").unwrap();
        let fence_end = fence_start + fence.len();
        assert!(chunks.iter().all(|c| c.end <= fence_start + 3 || c.end >= fence_end), "{chunks:?}");
        let joined: String = chunks.iter().map(|c| &text[c.start..c.end]).collect();
        assert_eq!(joined, text);
    }

    #[test]
    fn falls_back_to_sentences_in_one_long_paragraph() {
        let text = "This is one sentence about the ledger. ".repeat(150);
        let chunks = chunk(&text);
        assert!(chunks.len() >= 2);
        for c in &chunks[..chunks.len() - 1] {
            assert!(text[..c.end].ends_with(". "), "cut at a sentence end");
        }
    }

    #[test]
    fn real_markdown_round_trips_and_keeps_fences_and_tables_whole() {
        for text in [include_str!("../../../README.md"), include_str!("../../../docs/ARCHITECTURE.md")] {
            let chunks = chunk(text);
            assert!(chunks.len() >= 2);
            let joined: String = chunks.iter().map(|c| &text[c.start..c.end]).collect();
            assert_eq!(joined, text);
            for c in &chunks {
                assert!(!inside_fence(text, c.end));
                let before = text[..c.end].lines().last().unwrap_or("");
                let after = text[c.end..].lines().next().unwrap_or("");
                assert!(!(is_table_row(before) && is_table_row(after)));
            }
        }
    }
}
