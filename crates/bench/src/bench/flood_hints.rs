//! `cortex bench --flood`'s second measure: the other tenant's finds that hit fewer than 3
//! items, which also build suggestions (a wider scope's count, close spellings of unknown
//! words, common words). The corpus queries with their longer words mistyped (two letters
//! swapped) miss, as a user's typo does; they are sent one after another, alone and under the
//! flood, and timed from send to answer.

use super::http_load::{self, Target};
use crate::corpus::{self, Rng};
use serde_json::json;
use std::time::{Duration, Instant};

/// Finds sent per phase.
pub const FINDS: usize = 40;

/// What the mistyped finds measured.
#[derive(Default)]
pub struct Hints {
    /// Latencies of the finds answered with fewer than 3 hits.
    pub few: Vec<Duration>,
    /// Finds answered with 3 hits or more (their typo matched something after all).
    pub more: usize,
    pub errors: usize,
    pub first_error: Option<String>,
}

/// Sends [`FINDS`] mistyped `fast` finds as `target`, one after another.
pub fn mistyped_finds(target: &Target) -> Hints {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    let mut rng = Rng::new(23);
    let mut out = Hints::default();
    for n in 0..FINDS {
        let query = mistyped(&corpus::query(&mut rng));
        let start = Instant::now();
        let answer = http_load::call_tool(
            &agent,
            target,
            "memory_find",
            json!({"query": query, "mode": "fast"}),
            900_000 + n as u64,
        );
        let took = start.elapsed();
        match answer.map(|a| a["hits"].as_array().map_or(0, Vec::len)) {
            Ok(hits) if hits < 3 => out.few.push(took),
            Ok(_) => out.more += 1,
            Err(e) => {
                out.errors += 1;
                out.first_error.get_or_insert(e);
            }
        }
    }
    out
}

/// Each word of six letters or more with its third and fourth letters swapped (when they differ).
fn mistyped(query: &str) -> String {
    let words: Vec<String> = query
        .split_whitespace()
        .map(|w| {
            let mut chars: Vec<char> = w.chars().collect();
            if chars.len() >= 6 && chars[2] != chars[3] {
                chars.swap(2, 3);
            }
            chars.into_iter().collect()
        })
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::mistyped;

    #[test]
    fn long_words_get_two_letters_swapped_and_short_ones_stay() {
        // "billing" would read the same swapped.
        assert_eq!(mistyped("why retry webhook latency billing"), "why retry wehbook laetncy billing");
    }
}
