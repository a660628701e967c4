//! The activity page's chart of changes per kind per day: stacked bars laid out on the server
//! as SVG (no script; colours as `fill` attributes, which the page's CSP allows where inline
//! style is refused). The few busiest kinds get a colour each, the rest count as `other`.

use cortex_domain::time::{MILLIS_PER_DAY, format_instant};
use cortex_store::AuditRecord;
use std::collections::BTreeMap;

/// Kinds drawn in colours of their own; the others are drawn as `other`.
const COLOURED: usize = 7;
const PALETTE: [&str; COLOURED + 1] =
    ["#2b6cb0", "#1f7a4a", "#b7791f", "#6b3fa0", "#c53030", "#2c7a7b", "#975a16", "#718096"];
pub const WIDTH: f64 = 720.0;
pub const HEIGHT: f64 = 220.0;
/// Room under the bars for the dates, and left of them for the scale.
const BOTTOM: f64 = 24.0;
const LEFT: f64 = 32.0;

pub struct Bar {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub fill: &'static str,
    /// The tooltip: day, kind and count.
    pub title: String,
}

pub struct Label {
    pub x: f64,
    pub text: String,
}

pub struct Key {
    pub kind: String,
    pub fill: &'static str,
    pub count: usize,
}

pub struct KindChart {
    pub bars: Vec<Bar>,
    pub labels: Vec<Label>,
    pub legend: Vec<Key>,
    /// The busiest day's count, the top of the scale.
    pub max: usize,
    pub base: f64,
}

/// The chart of `records` over the `days` days up to `now_ms` (today included), oldest day
/// on the left.
pub fn chart(records: &[AuditRecord], now_ms: i64, days: i64) -> KindChart {
    let today = now_ms.div_euclid(MILLIS_PER_DAY);
    let first = today - (days - 1);
    let in_window: Vec<(usize, &str)> = records
        .iter()
        .filter_map(|r| {
            let day = r.at.div_euclid(MILLIS_PER_DAY);
            (first..=today).contains(&day).then(|| ((day - first) as usize, r.kind.as_deref().unwrap_or("-")))
        })
        .collect();
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, kind) in &in_window {
        *totals.entry(kind).or_default() += 1;
    }
    let mut ranked: Vec<(&str, usize)> = totals.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let coloured: Vec<&str> = ranked.iter().take(COLOURED).map(|(k, _)| *k).collect();
    let series = |kind: &str| coloured.iter().position(|k| *k == kind).unwrap_or(COLOURED);
    let mut counts = vec![[0usize; COLOURED + 1]; days as usize];
    for (day, kind) in &in_window {
        counts[*day][series(kind)] += 1;
    }
    let max = counts.iter().map(|c| c.iter().sum::<usize>()).max().unwrap_or(0).max(1);
    let base = HEIGHT - BOTTOM;
    let slot = (WIDTH - LEFT) / days as f64;
    let unit = (base - 8.0) / max as f64;
    let mut bars = Vec::new();
    let mut labels = Vec::new();
    for (i, day) in counts.iter().enumerate() {
        let x = LEFT + i as f64 * slot + slot * 0.15;
        let date = format_instant((first + i as i64) * MILLIS_PER_DAY)[..10].to_string();
        let mut top = base;
        for (s, count) in day.iter().enumerate().filter(|(_, c)| **c > 0) {
            let height = *count as f64 * unit;
            top -= height;
            let kind = coloured.get(s).copied().unwrap_or("other");
            bars.push(Bar {
                x,
                y: top,
                width: slot * 0.7,
                height,
                fill: PALETTE[s],
                title: format!("{date}: {count} change(s) of {kind}"),
            });
        }
        if i % 2 == (days as usize - 1) % 2 {
            labels.push(Label { x: x + slot * 0.35, text: date[5..].to_string() });
        }
    }
    let mut legend: Vec<Key> = ranked
        .iter()
        .take(COLOURED)
        .enumerate()
        .map(|(i, (kind, count))| Key { kind: kind.to_string(), fill: PALETTE[i], count: *count })
        .collect();
    let rest: usize = ranked.iter().skip(COLOURED).map(|(_, c)| c).sum();
    if rest > 0 {
        legend.push(Key { kind: "other".into(), fill: PALETTE[COLOURED], count: rest });
    }
    KindChart { bars, labels, legend, max, base }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(at: i64, kind: &str) -> AuditRecord {
        crate::ui::activity::tests::record(at, "insert", kind)
    }

    #[test]
    fn bars_stack_each_days_kinds_and_the_busiest_day_fills_the_height() {
        let now = 30 * MILLIS_PER_DAY + 1_000;
        let mut records = vec![
            record(now, "decision"),
            record(now, "decision"),
            record(now, "todo"),
            record(now - MILLIS_PER_DAY, "todo"),
            record(now - 20 * MILLIS_PER_DAY, "todo"),
        ];
        let kinds = ["a", "b", "c", "d", "e", "f", "g", "h"];
        records.extend(kinds.iter().map(|k| record(now - 2 * MILLIS_PER_DAY, k)));
        let c = chart(&records, now, 14);
        assert_eq!(c.max, 8, "the day with eight kinds");
        let today: Vec<&Bar> = c.bars.iter().filter(|b| b.title.starts_with("1970-01-31")).collect();
        assert_eq!(today.len(), 2, "decision and todo stacked");
        let top = today.iter().map(|b| b.y).fold(f64::MAX, f64::min);
        assert!((c.base - top - 3.0 * (c.base - 8.0) / 8.0).abs() < 1e-9);
        assert_eq!(
            (c.legend[0].kind.as_str(), c.legend[1].kind.as_str()),
            ("decision", "todo"),
            "busiest first"
        );
        assert_eq!((c.legend.last().unwrap().kind.as_str(), c.legend.len()), ("other", COLOURED + 1));
        assert!(c.bars.iter().all(|b| !b.title.starts_with("1970-01-11")), "outside the window");
        assert_eq!(
            c.bars.iter().map(|b| (b.height / ((c.base - 8.0) / 8.0)).round() as usize).sum::<usize>(),
            12
        );
    }
}
