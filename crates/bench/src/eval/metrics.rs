//! Retrieval metrics of one ranked list against its judgments, and their means per group.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// nDCG@10 (graded gains, log2 discount), Recall@5, Recall@10, MRR@10 for one ranked list.
pub fn metrics(ranked: &[&str], relevant: &HashMap<String, f64>) -> [f64; 4] {
    let gain = |d: &str| relevant.get(d).copied().unwrap_or(0.0);
    let dcg: f64 = ranked.iter().take(10).enumerate().map(|(i, d)| gain(d) / (i as f64 + 2.0).log2()).sum();
    let mut ideal: Vec<f64> = relevant.values().copied().filter(|g| *g > 0.0).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal.iter().take(10).enumerate().map(|(i, g)| g / (i as f64 + 2.0).log2()).sum();
    let total = ideal.len().max(1) as f64;
    let recall = |k: usize| ranked.iter().take(k).filter(|d| gain(d) > 0.0).count() as f64 / total;
    let mrr = ranked.iter().take(10).position(|d| gain(d) > 0.0).map_or(0.0, |i| 1.0 / (i as f64 + 1.0));
    [if idcg > 0.0 { dcg / idcg } else { 0.0 }, recall(5), recall(10), mrr]
}

/// Sums of the four metrics and the find times of a group of queries (all, or one category).
#[derive(Default)]
pub struct Tally {
    sums: [f64; 4],
    count: usize,
    times: Vec<Duration>,
}

impl Tally {
    pub fn add(&mut self, scores: [f64; 4], time: Duration) {
        for (s, v) in self.sums.iter_mut().zip(scores) {
            *s += v;
        }
        self.count += 1;
        self.times.push(time);
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Mean nDCG@10, Recall@5, Recall@10, MRR@10.
    pub fn means(&self) -> [f64; 4] {
        let n = self.count.max(1) as f64;
        self.sums.map(|s| s / n)
    }

    /// The `p` quantile (0–1) of the find times, nearest rank.
    pub fn percentile(&self, p: f64) -> Duration {
        let mut times = self.times.clone();
        times.sort();
        if times.is_empty() {
            return Duration::ZERO;
        }
        times[((p * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1]
    }
}

/// One route's tallies: over all queries, and per category when the queries carry one.
#[derive(Default)]
pub struct RouteTally {
    pub all: Tally,
    pub by_category: BTreeMap<String, Tally>,
}

impl RouteTally {
    pub fn add(&mut self, category: Option<&str>, scores: [f64; 4], time: Duration) {
        self.all.add(scores, time);
        if let Some(category) = category {
            self.by_category.entry(category.to_string()).or_default().add(scores, time);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_of_known_rankings() {
        let relevant: HashMap<String, f64> = [("a".to_string(), 1.0), ("b".to_string(), 1.0)].into();
        assert_eq!(metrics(&["a", "b", "x"], &relevant), [1.0, 1.0, 1.0, 1.0]);
        let [ndcg, r5, r10, mrr] = metrics(&["x", "a"], &relevant);
        assert!((ndcg - (1.0 / 3f64.log2()) / (1.0 + 1.0 / 3f64.log2())).abs() < 1e-12);
        assert_eq!((r5, r10, mrr), (0.5, 0.5, 0.5));
        assert_eq!(metrics(&[], &relevant), [0.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn tallies_average_per_category() {
        let mut route = RouteTally::default();
        route.add(Some("temporal"), [1.0, 1.0, 1.0, 1.0], Duration::from_millis(2));
        route.add(Some("multi-hop"), [0.0, 0.0, 0.5, 0.0], Duration::from_millis(4));
        route.add(Some("temporal"), [0.0, 0.0, 0.0, 0.0], Duration::from_millis(6));
        assert_eq!(route.all.count(), 3);
        assert_eq!(route.all.means()[2], 0.5);
        assert_eq!(route.by_category["temporal"].means(), [0.5, 0.5, 0.5, 0.5]);
        assert_eq!(route.by_category["multi-hop"].count(), 1);
        assert_eq!(route.all.percentile(0.5), Duration::from_millis(4));
        assert_eq!(route.all.percentile(0.95), Duration::from_millis(6));
    }
}
