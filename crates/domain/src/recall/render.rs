//! The text a prompt's recall puts before the agent: one line saying what it is and how to
//! read a whole item, then per memory its kind, title, age and id, then the passage that
//! matched — within a budget of tokens (counted as characters / 3).

use super::Candidate;
use crate::text::truncate_chars;
use crate::time::age;

/// What is printed for one prompt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Injection {
    pub text: String,
    /// The memories it shows, in order.
    pub ids: Vec<String>,
    /// Its size in tokens (characters / 3, rounded up).
    pub tokens: usize,
}

/// The first line: what follows, and how to read a whole item.
pub const HEADER: &str = "Cortex memory recalled for this prompt (may be relevant; read an item whole with memory_find {\"ids\": [\"<id>\"]}):";

/// The text for `selected` at `now`, within `budget_tokens`. The heads come first: a memory
/// whose head no longer fits is left out (the first is shown when the header and its head
/// fit at all), and the passages share what the heads leave. Empty when nothing was selected
/// or nothing fits.
pub fn render(selected: &[Candidate], budget_tokens: usize, now: i64) -> Injection {
    let budget = budget_tokens.saturating_mul(3);
    let mut used = HEADER.chars().count() + 1;
    let mut heads: Vec<(String, &Candidate)> = Vec::new();
    for c in selected {
        let title = truncate_chars(one_line(&c.title).as_str(), 120).0.to_string();
        let head = format!("- [{}] {title} ({}, id {})", c.kind, age(c.updated_at, now), c.id);
        let len = head.chars().count() + 1;
        if used + len > budget {
            break;
        }
        used += len;
        heads.push((head, c));
    }
    if heads.is_empty() {
        return Injection::default();
    }
    let per_passage = budget.saturating_sub(used) / heads.len();
    let mut out = format!("{HEADER}\n");
    for (head, c) in &heads {
        out.push_str(head);
        let passage = one_line(&c.passage);
        // " — " and an ellipsis take 4 characters; a passage cut below 40 says too little.
        if per_passage >= 44 && !passage.is_empty() && passage != one_line(&c.title) {
            let (cut, was_cut) = truncate_chars(&passage, per_passage - 4);
            out.push_str(" — ");
            out.push_str(cut.trim_end());
            if was_cut {
                out.push('…');
            }
        }
        out.push('\n');
    }
    let text = out.trim_end().to_string();
    let tokens = text.chars().count().div_ceil(3);
    Injection { text, ids: heads.iter().map(|(_, c)| c.id.clone()).collect(), tokens }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MILLIS_PER_DAY;

    fn candidate(id: &str) -> Candidate {
        Candidate {
            id: id.into(),
            kind: "decision".into(),
            title: format!("title of {id}"),
            passage: "a passage of several words ".repeat(20),
            strength: 1.0,
            relevance: 1.0,
            cosine: None,
            updated_at: 0,
        }
    }

    #[test]
    fn nothing_selected_prints_nothing() {
        assert_eq!(render(&[], 400, 0), Injection::default());
    }

    #[test]
    fn each_memory_shows_kind_title_age_and_id_then_its_passage() {
        let text = render(&[candidate("id-1")], 400, 3 * MILLIS_PER_DAY).text;
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(HEADER));
        let line = lines.next().unwrap();
        assert!(line.starts_with("- [decision] title of id-1 (3 days ago, id id-1) — a passage"), "{line}");
        assert_eq!(lines.next(), None);
    }

    #[test]
    fn the_text_stays_within_budget_and_says_what_it_shows() {
        let picked = vec![candidate("id-1"), candidate("id-2"), candidate("id-3")];
        for budget in [100, 400] {
            let shown = render(&picked, budget, 0);
            for c in &picked {
                assert!(shown.text.contains(&c.id), "{budget}: {}", shown.text);
            }
            assert_eq!(shown.ids, ["id-1", "id-2", "id-3"]);
            assert!(shown.text.chars().count() <= budget * 3, "{budget}: {}", shown.text.chars().count());
            assert_eq!(shown.tokens, shown.text.chars().count().div_ceil(3));
        }
        let roomy = render(&picked, 400, 0).text;
        assert!(roomy.contains("a passage of several words") && roomy.contains('…'), "{roomy}");
        let tight = render(&picked, 60, 0);
        assert_eq!(tight.ids, ["id-1"], "the first, then what fits: {}", tight.text);
        assert!(!tight.text.contains("a passage"), "heads before passages: {}", tight.text);
        assert_eq!(render(&picked, 20, 0), Injection::default(), "not even a head fits");
    }
}
