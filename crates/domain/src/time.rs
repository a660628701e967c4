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
const MILLIS_PER_HOUR: i64 = 3_600_000;
const MILLIS_PER_MINUTE: i64 = 60_000;
/// The longest age a moment may name: a century, far past any memory's age and far from
/// overflowing milliseconds.
const MAX_AGE_DAYS: i64 = 36_500;

/// A moment a filter starts or ends at: an instant, or an age counted back from when the
/// filter runs (`7d`), kept unresolved so that every page of one search means the same thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Epoch milliseconds.
    At(i64),
    /// This many milliseconds before now.
    Ago(i64),
}

impl Moment {
    /// Epoch milliseconds, counting an age back from `now`.
    pub fn resolve(self, now: i64) -> i64 {
        match self {
            Moment::At(t) => t,
            Moment::Ago(age) => now.saturating_sub(age),
        }
    }
}

/// A text that is neither an age, an RFC 3339 timestamp nor a date; its message is the hint a
/// caller shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "use an age like 36h, 7d or 2w (m, h, d, w), an RFC 3339 timestamp like 2026-11-22T09:30:00Z or a date like 2026-11-22"
)]
pub struct NotAMoment;

/// Parses an age (`90m`, `36h`, `7d`, `2w`: minutes, hours, days, weeks) or what
/// [`parse_instant`] reads: the one reading of a `since`/`until` every caller shares.
pub fn parse_moment(text: &str) -> Result<Moment, NotAMoment> {
    let text = text.trim();
    if let Ok(t) = parse_instant(text) {
        return Ok(Moment::At(t));
    }
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or(NotAMoment)?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().map_err(|_| NotAMoment)?;
    let unit = match unit.trim() {
        "m" | "min" => MILLIS_PER_MINUTE,
        "h" => MILLIS_PER_HOUR,
        "d" => MILLIS_PER_DAY,
        "w" => 7 * MILLIS_PER_DAY,
        _ => return Err(NotAMoment),
    };
    let age = n.checked_mul(unit).filter(|age| *age <= MAX_AGE_DAYS * MILLIS_PER_DAY).ok_or(NotAMoment)?;
    Ok(Moment::Ago(age))
}

/// How far `millis` lies from `now`, in the words a person reads at a glance: `just now`,
/// `5 minutes ago`, `3 hours ago`, `2 days ago`, `4 months ago`, `2 years ago` (or `in 3
/// days` for a time still to come).
pub fn describe_age(millis: i64, now: i64) -> String {
    let delta = now.saturating_sub(millis);
    let span = delta.saturating_abs();
    if span < MILLIS_PER_MINUTE {
        return "just now".to_string();
    }
    let (n, unit) = [
        (365 * MILLIS_PER_DAY, "year"),
        (30 * MILLIS_PER_DAY, "month"),
        (7 * MILLIS_PER_DAY, "week"),
        (MILLIS_PER_DAY, "day"),
        (MILLIS_PER_HOUR, "hour"),
        (MILLIS_PER_MINUTE, "minute"),
    ]
    .into_iter()
    .find(|(size, _)| span >= *size)
    .map(|(size, unit)| (span / size, unit))
    .unwrap_or((1, "minute"));
    let plural = if n == 1 { "" } else { "s" };
    if delta < 0 { format!("in {n} {unit}{plural}") } else { format!("{n} {unit}{plural} ago") }
}

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
    fn reads_ages_and_instants_alike() {
        assert_eq!(parse_moment("7d"), Ok(Moment::Ago(7 * MILLIS_PER_DAY)));
        assert_eq!(parse_moment(" 2w "), Ok(Moment::Ago(14 * MILLIS_PER_DAY)));
        assert_eq!(parse_moment("36h"), Ok(Moment::Ago(36 * MILLIS_PER_HOUR)));
        assert_eq!(parse_moment("90m"), Ok(Moment::Ago(90 * MILLIS_PER_MINUTE)));
        assert_eq!(parse_moment("1970-01-02"), Ok(Moment::At(MILLIS_PER_DAY)));
        assert_eq!(parse_moment("1970-01-01T00:00:01Z"), Ok(Moment::At(1000)));
        assert_eq!(Moment::Ago(1000).resolve(5000), 4000);
        for bad in ["", "d", "7", "7y", "-7d", "7 days", "99999999999999999999d", "yesterday"] {
            assert_eq!(parse_moment(bad), Err(NotAMoment), "{bad}");
        }
    }

    #[test]
    fn ages_read_in_the_largest_whole_unit() {
        let now = 100 * 365 * MILLIS_PER_DAY;
        assert_eq!(describe_age(now - 5_000, now), "just now");
        assert_eq!(describe_age(now - MILLIS_PER_MINUTE, now), "1 minute ago");
        assert_eq!(describe_age(now - 36 * MILLIS_PER_HOUR, now), "1 day ago");
        assert_eq!(describe_age(now - 3 * MILLIS_PER_HOUR, now), "3 hours ago");
        assert_eq!(describe_age(now - 15 * MILLIS_PER_DAY, now), "2 weeks ago");
        assert_eq!(describe_age(now - 800 * MILLIS_PER_DAY, now), "2 years ago");
        assert_eq!(describe_age(now + 3 * MILLIS_PER_DAY, now), "in 3 days");
    }

    #[test]
    fn formats_round_trip() {
        let t = parse_instant("2026-11-22T16:40:00.123Z").unwrap();
        assert_eq!(format_instant(t), "2026-11-22T16:40:00.123Z");
    }
}
