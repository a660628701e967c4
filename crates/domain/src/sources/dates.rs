//! Dates as records and changelogs write them, read into `YYYY-MM-DD`: ISO dates anywhere in
//! a text (`2024-01-31`, `2024/01/31`, `2024.01.31`), month names (`July 20th, 2026`,
//! `20 July 2026`, `Jul 20, 2026`), and `dd/mm/yyyy` or `mm/dd/yyyy` where the numbers tell
//! which (a day above 12). An ambiguous `03/04/2016` is no date: guessing would misdate.

const MONTHS: [&str; 12] =
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// The first date written in `text`, as `YYYY-MM-DD`.
pub fn find_date(text: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split(|c: char| {
            c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | ',' | ';' | '|' | '*' | '_')
        })
        .filter(|w| !w.is_empty())
        .collect();
    for (i, word) in words.iter().enumerate() {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric());
        if let Some(date) = numeric(word) {
            return Some(date);
        }
        // `July 20th 2026` / `Jul 20, 2026` (commas are separators above).
        if let (Some(month), Some(day), Some(year)) = (
            month_of(word),
            words.get(i + 1).and_then(|w| day_of(w)),
            words.get(i + 2).and_then(|w| year_of(w)),
        ) {
            return valid(year, month, day);
        }
        // `20 July 2026`.
        if let (Some(day), Some(month), Some(year)) = (
            day_of(word),
            words.get(i + 1).and_then(|w| month_of(w)),
            words.get(i + 2).and_then(|w| year_of(w)),
        ) {
            return valid(year, month, day);
        }
    }
    None
}

/// `2024-01-31`, `2024/01/31`, `2024.01.31`, `31/01/2024`, `01/31/2024`, `20240131` at the
/// start of a file name (log4brains).
fn numeric(word: &str) -> Option<String> {
    let parts: Vec<&str> = word.split(['-', '/', '.']).collect();
    let num = |s: &str| {
        (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    if parts.len() >= 3 {
        let (a, b, c) = (num(parts[0])?, num(parts[1])?, num(parts[2])?);
        if parts[0].len() == 4 {
            return valid(a, b, c);
        }
        if parts[2].len() == 4 && parts[0].len() <= 2 && parts[1].len() <= 2 {
            return match (a > 12, b > 12) {
                (true, false) => valid(c, b, a),
                (false, true) => valid(c, a, b),
                _ => None,
            };
        }
    }
    None
}

fn month_of(word: &str) -> Option<u32> {
    let lower = word.trim_matches(|c: char| !c.is_alphabetic()).to_lowercase();
    if lower.len() < 3 {
        return None;
    }
    let position = MONTHS.iter().position(|m| lower.starts_with(m))?;
    // "march" and "mar" are March; "marching" is no month.
    let full = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ][position];
    (full.starts_with(&lower) || lower == "sept").then_some(position as u32 + 1)
}

fn day_of(word: &str) -> Option<u32> {
    let lower = word.to_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_alphabetic() || c == '.');
    let suffix = &lower[digits.len()..];
    if !["", "st", "nd", "rd", "th", "."].contains(&suffix) || digits.is_empty() || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year_of(word: &str) -> Option<u32> {
    let digits = word.trim_matches(|c: char| !c.is_ascii_digit());
    (digits.len() == 4 && word.trim_end_matches(['.', ':']).len() == 4).then(|| digits.parse().ok()).flatten()
}

fn valid(year: u32, month: u32, day: u32) -> Option<String> {
    let date = format!("{year:04}-{month:02}-{day:02}");
    (year >= 1970 && crate::time::parse_instant(&date).is_ok()).then_some(date)
}

/// The date at the start of a file name: `20201016-use-x.md` (log4brains),
/// `2024-01-31-use-y.md`.
pub fn date_of_file_name(file_name: &str) -> Option<String> {
    let digits: String = file_name.chars().take_while(char::is_ascii_digit).collect();
    if digits.len() == 8 {
        return valid(digits[..4].parse().ok()?, digits[4..6].parse().ok()?, digits[6..].parse().ok()?);
    }
    file_name.get(..10).and_then(numeric)
}

/// Epoch milliseconds of a `YYYY-MM-DD` date (its start, UTC).
pub fn date_ms(date: &str) -> Option<i64> {
    crate::time::parse_instant(date).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_as_written() {
        for (text, date) in [
            ("2024-01-31", Some("2024-01-31")),
            ("[1.0.0] - 2017-06-20 [YANKED]", Some("2017-06-20")),
            ("v2.0 (2024/02/03)", Some("2024-02-03")),
            ("v1.3.0 - 2024.9.23", Some("2024-09-23")),
            ("1.53.1 (July 20th, 2026)", Some("2026-07-20")),
            ("Released on 20 July 2026", Some("2026-07-20")),
            ("Sept 3, 2021", Some("2021-09-03")),
            ("12/02/2016", None),
            ("25/02/2016", Some("2016-02-25")),
            ("02/25/2016", Some("2016-02-25")),
            ("2024-13-01", None),
            ("Unreleased", None),
            ("1.2.3", None),
            ("May the force", None),
        ] {
            assert_eq!(find_date(text).as_deref(), date, "{text}");
        }
        assert_eq!(date_of_file_name("20201016-use-the-adr-slug.md").as_deref(), Some("2020-10-16"));
        assert_eq!(date_of_file_name("0001-record.md"), None);
        assert_eq!(date_ms("1970-01-02"), Some(86_400_000));
    }
}
