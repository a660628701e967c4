//! Parsing and formatting of instants. Stored times are UTC milliseconds since the epoch.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};

/// A text that is neither an RFC 3339 timestamp nor a date; its message is the hint a caller
/// shows (the field it came from is the caller's to name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("use an RFC 3339 timestamp like 2026-11-22T09:30:00Z or a date like 2026-11-22")]
pub struct NotAnInstant;

/// Parses an RFC 3339 timestamp or a plain `YYYY-MM-DD` date (midnight UTC) into epoch
/// milliseconds.
pub fn parse_instant(text: &str) -> Result<i64, NotAnInstant> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.timestamp_millis());
    }
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).map(|t| t.and_utc().timestamp_millis()).unwrap_or(0));
    }
    Err(NotAnInstant)
}

/// Formats epoch milliseconds as RFC 3339 UTC, to the millisecond.
pub fn format_instant(millis: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub const MILLIS_PER_DAY: i64 = 86_400_000;

/// How long ago `then` was at `now`, in the largest whole unit: "today", "1 day ago",
/// "3 weeks ago", "5 months ago", "2 years ago". A time in the future reads "today".
pub fn age(then: i64, now: i64) -> String {
    let days = (now - then).max(0) / MILLIS_PER_DAY;
    let (n, unit) = match days {
        0 => return "today".to_string(),
        1..=13 => (days, "day"),
        14..=59 => (days / 7, "week"),
        60..=729 => (days / 30, "month"),
        _ => (days / 365, "year"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_age_reads_in_its_largest_whole_unit() {
        let day = MILLIS_PER_DAY;
        let at = |days: i64| age(0, days * day + 5);
        assert_eq!(
            [at(0), at(1), at(6), at(20), at(45), at(200), at(800), age(10 * day, 0)],
            [
                "today",
                "1 day ago",
                "6 days ago",
                "2 weeks ago",
                "6 weeks ago",
                "6 months ago",
                "2 years ago",
                "today"
            ]
        );
    }

    #[test]
    fn parses_dates_and_timestamps() {
        assert_eq!(parse_instant("1970-01-02").unwrap(), MILLIS_PER_DAY);
        assert_eq!(parse_instant("1970-01-01T00:00:01Z").unwrap(), 1000);
        assert_eq!(parse_instant("1970-01-01T01:00:00+01:00").unwrap(), 0);
        assert!(parse_instant("yesterday").is_err());
    }

    #[test]
    fn formats_round_trip() {
        let t = parse_instant("2026-11-22T16:40:00.123Z").unwrap();
        assert_eq!(format_instant(t), "2026-11-22T16:40:00.123Z");
    }
}
