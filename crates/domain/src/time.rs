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

#[cfg(test)]
mod tests {
    use super::*;

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
