//! Close spellings: picks, from words the index knows, the one a mistyped query word most
//! likely meant.

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

/// How many edits a word of this length may be away from its correction.
pub fn allowed_edits(word: &str) -> usize {
    match word.chars().count() {
        0..=3 => 0,
        4..=6 => 1,
        _ => 2,
    }
}

/// Suffixes an index stems away (`-es`, `-ing`), at most this long, are not counted as edits.
const STEMMED_SUFFIX_CHARS: usize = 3;

/// Edits from `word` to an index term, which may be a stem: when the word is up to
/// [`STEMMED_SUFFIX_CHARS`] longer than the term, its head of the term's length may match
/// instead (`kubrenetes` is one edit from the stem `kubernet`).
fn distance_to_term(word: &str, term: &str, max: usize) -> Option<usize> {
    let whole = edit_distance(word, term, max);
    let (word_len, term_len) = (word.chars().count(), term.chars().count());
    let head = (word_len > term_len && word_len - term_len <= STEMMED_SUFFIX_CHARS && term_len >= 4)
        .then(|| word.chars().take(term_len).collect::<String>())
        // The head is allowed the edits of its own length: the dropped tail is already a
        // licence (`december`'s head `decem` is two edits from the stem `decid`, not a typo).
        .and_then(|head| edit_distance(&head, term, max.min(allowed_edits(&head))));
    whole.into_iter().chain(head).min()
}

/// The best correction of `word` among `(candidate, document_count)` pairs: fewest edits
/// first, then the most common. `None` when nothing is close or the word itself is known.
pub fn best_correction<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = (&'a str, i64)>,
) -> Option<&'a str> {
    let max = allowed_edits(word);
    if max == 0 {
        return None;
    }
    let mut best: Option<(usize, i64, &str)> = None;
    for (candidate, count) in candidates {
        if candidate == word {
            return None;
        }
        let Some(d) = distance_to_term(word, candidate, max) else {
            continue;
        };
        let better = match best {
            None => true,
            Some((bd, bc, _)) => d < bd || (d == bd && count > bc),
        };
        if better {
            best = Some((d, count, candidate));
        }
    }
    best.map(|(_, _, c)| c)
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
        let cands = [("postgres", 3), ("postgrex", 10), ("kubernetes", 5)];
        assert_eq!(best_correction("postgre", cands), Some("postgrex"));
        assert_eq!(best_correction("kubernets", cands), Some("kubernetes"));
        assert_eq!(best_correction("zzqxw", cands), None);
        assert_eq!(best_correction("postgres", cands), None);
    }

    #[test]
    fn a_stemmed_term_matches_the_head_of_a_word() {
        assert_eq!(distance_to_term("kubrenetes", "kubernet", 2), Some(1));
        assert_eq!(distance_to_term("kubrenetes", "kub", 2), None, "a short stem is no match");
        assert_eq!(best_correction("kubrenetes", [("kubernet", 2), ("kubrick", 9)]), Some("kubernet"));
        // A short head gets a short head's budget: one edit for five letters.
        assert_eq!(distance_to_term("december", "decid", 2), None);
        assert_eq!(distance_to_term("decembers", "decemb", 2), Some(0));
    }
}
