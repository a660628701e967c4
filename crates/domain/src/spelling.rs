//! Close spellings: picks, from words the index knows, the one a mistyped query word most
//! likely meant.

use rust_stemmers::{Algorithm, Stemmer};

/// What a corrected word weighs in the lexical ranking, against 1 for a typed word. A right
/// correction is often a rare word, which BM25 weighs heavily: at full weight, items holding it
/// passed the judged ones that the query's other words had ranked first (SciFact train
/// "florescent" → "fluorescent" lost a judged abstract from the top 5), and `deep` fell below
/// `auto`. The correction is a guess; the words the user typed are not. Chosen on SciFact
/// train among 0.7, 0.5 and 0.3 (locomo-dev did not move): 0.3 kept that abstract.
pub const CORRECTED_WEIGHT: f32 = 0.3;

/// Edit distance (insertions, deletions, substitutions, adjacent transpositions), giving up
/// past `max` so long words cost little.
pub fn edit_distance(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let width = b.len() + 1;
    let mut prev2 = vec![0usize; width];
    let mut prev: Vec<usize> = (0..width).collect();
    let mut cur = vec![0usize; width];
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
            row_min = row_min.min(d);
        }
        if row_min > max {
            return None;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    let d = prev[b.len()];
    (d <= max).then_some(d)
}

/// How many edits a word of this length may be away from its correction. None up to four
/// letters: a short word one edit from a known one is as often an abbreviation the memory
/// lacks as a typo (SciFact's "dlns" was searched as "dens").
pub fn allowed_edits(word: &str) -> usize {
    match word.chars().count() {
        0..=4 => 0,
        5..=7 => 1,
        _ => 2,
    }
}

/// Whether `typed` (a stem) is `term` (a stem) with letters added at the end: the user typed a
/// longer form of a word the memory holds ("entrepreneurial" for "entrepreneur", "photography"
/// for "photograph"), a real word the memory lacks rather than a slip of the keys. Searching
/// the shorter word instead replaced what the user asked for with a neighbour of it
/// (locomo-dev: "entrepreneurial journeys" lost its answer to turns about entrepreneurs).
fn extends(typed: &str, term: &str) -> bool {
    typed.len() > term.len() && typed.starts_with(term)
}

/// The best correction of `word` among `(candidate, document_count)` pairs: the first of
/// [`closest_words`], the most common of the closest.
pub fn best_correction<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = (&'a str, i64)>,
) -> Option<&'a str> {
    closest_words(word, candidates).first().map(|(c, _)| *c)
}

/// The candidates closest to `word` among `(candidate, document_count)` pairs (the index's
/// terms: stems on SQLite, words as written on PostgreSQL), most common first. Edits are
/// counted between the two stems (within the budget of the typed word's stem, so an inflection
/// is no edit: "kubrenetes" is one edit from the stem "kubernet") or between the words as
/// written (within the typed word's budget: a typo can change the stem's shape, "torunaments"
/// stems to "toruna"). A word is never cut to fit a short term ("october" is not "onto",
/// "november" not "novel"). Empty when nothing is close, the word itself is known, or the word
/// only extends a known one.
pub fn closest_words<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = (&'a str, i64)>,
) -> Vec<(&'a str, i64)> {
    // A word holding a digit is a number or an identifier: one edit names another thing
    // ("mbd3" is not "mbd1", "1956" not "1996"), not the same thing mistyped.
    if word.chars().any(|c| c.is_ascii_digit()) {
        return Vec::new();
    }
    let stemmer = Stemmer::create(Algorithm::English);
    let typed = stemmer.stem(word);
    let (max_stem, max_word) = (allowed_edits(&typed), allowed_edits(word));
    if max_word == 0 {
        return Vec::new();
    }
    let mut fewest = usize::MAX;
    let mut closest: Vec<(&str, i64)> = Vec::new();
    for (candidate, count) in candidates {
        if candidate == word {
            return Vec::new();
        }
        let term = stemmer.stem(candidate);
        if extends(&typed, &term) {
            continue;
        }
        let stems = (max_stem > 0).then(|| edit_distance(&typed, &term, max_stem)).flatten();
        let Some(d) = stems.into_iter().chain(edit_distance(word, candidate, max_word)).min() else {
            continue;
        };
        if d < fewest {
            fewest = d;
            closest.clear();
        }
        if d == fewest {
            closest.push((candidate, count));
        }
    }
    closest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    closest
}

/// Of words as written that are equally close to `typed` by their stems, the one closest as
/// written (the first of those, when several are): "reational" is one edit from the stems
/// "reaction" and "ration" alike, but one from "rational" as written and three from
/// "reactions" — the most common stem was the wrong guess (SciFact train).
pub fn closest_as_written(typed: &str, written: &[String]) -> Option<usize> {
    const FAR: usize = 3;
    (0..written.len()).min_by_key(|&i| edit_distance(typed, &written[i], FAR).unwrap_or(FAR + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("kubernets", "kubernetes", 2), Some(1));
        assert_eq!(edit_distance("teh", "the", 1), Some(1));
        assert_eq!(edit_distance("abc", "xyz", 2), None);
        assert_eq!(edit_distance("", "ab", 2), Some(2));
    }

    #[test]
    fn picks_closest_then_most_common() {
        let cands = [("postgrex", 10), ("postgresql", 3), ("kubernetes", 5)];
        assert_eq!(best_correction("postgrez", cands), Some("postgrex"));
        assert_eq!(best_correction("kubernets", cands), Some("kubernetes"));
        assert_eq!(best_correction("zzqxw", cands), None);
        assert_eq!(best_correction("postgrex", cands), None);
        let ties = [("recipe", 9), ("receiv", 2)];
        assert_eq!(best_correction("recieved", ties), Some("receiv"), "one edit beats two, however common");
    }

    #[test]
    fn stems_are_compared() {
        assert_eq!(best_correction("kubrenetes", [("kubernet", 2), ("kubrick", 9)]), Some("kubernet"));
        assert_eq!(best_correction("torunaments", [("tournament", 1)]), Some("tournament"));
        // The head of a long word is not a short term: these are words the memory lacks.
        assert_eq!(best_correction("december", [("decid", 5)]), None);
        assert_eq!(best_correction("october", [("onto", 5)]), None);
        assert_eq!(best_correction("november", [("novel", 5)]), None);
    }

    #[test]
    fn equally_close_stems_are_told_apart_as_written() {
        let tied = closest_words("reational", [("reaction", 166), ("ration", 35), ("relat", 786)]);
        assert_eq!(tied, vec![("reaction", 166), ("ration", 35)]);
        let written = ["reactions".to_string(), "rational".to_string()];
        assert_eq!(closest_as_written("reational", &written), Some(1));
        let same = ["pparγ".to_string(), "pparg".to_string()];
        assert_eq!(closest_as_written("ppary", &same), Some(0), "a tie keeps the most common");
        assert_eq!(closest_as_written("ppary", &[]), None);
    }

    #[test]
    fn a_longer_form_of_a_known_word_is_not_a_typo() {
        assert_eq!(best_correction("entrepreneurial", [("entrepreneur", 4)]), None);
        assert_eq!(best_correction("photography", [("photograph", 4)]), None);
        assert_eq!(best_correction("grandpa", [("grand", 4)]), None);
        // Still corrected when the stem itself is mistyped.
        assert_eq!(best_correction("entrepeneurs", [("entrepreneur", 4)]), Some("entrepreneur"));
    }

    #[test]
    fn identifiers_and_short_words_are_taken_as_typed() {
        assert_eq!(best_correction("mbd3", [("mbd1", 4)]), None);
        assert_eq!(best_correction("1956", [("1996", 4)]), None);
        assert_eq!(best_correction("kat8s", [("kats", 4)]), None);
        assert_eq!(best_correction("dlns", [("dens", 4)]), None);
        assert_eq!(best_correction("sqlte", [("sqlite", 4)]), Some("sqlite"), "five letters get one edit");
    }
}
