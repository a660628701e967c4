//! Purge: expired items leave the store for good (`cortex purge`, and periodically inside
//! `cortex serve`), in small transactions so finds and stores keep running meanwhile; every
//! removal is an audit record (`purge`).

use super::Lifecycle;
use crate::administration::KindCount;
use crate::config::ConfigError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Items removed per transaction: short enough that a concurrent write waits milliseconds.
pub const PURGE_BATCH: usize = 1_000;

#[derive(Debug, Serialize)]
pub struct PurgeReport {
    /// Nothing was removed: the counts are what a purge would remove now.
    pub dry_run: bool,
    pub purged: i64,
    pub by_kind: Vec<KindCount>,
}

impl Lifecycle<'_> {
    /// Removes every item expired by now (or, with `dry_run`, counts them).
    pub fn purge(&self, dry_run: bool) -> crate::Result<PurgeReport> {
        let store = self.service.whole_store("purging expired items")?;
        let now = self.service.now()?;
        let mut counts: BTreeMap<String, i64> = BTreeMap::new();
        let context = self.service.write_context("purge");
        loop {
            let batch =
                store.purge_expired(now, PURGE_BATCH, dry_run, cortex_domain::graph::ON_REMOVAL, &context)?;
            let removed: i64 = batch.iter().map(|(_, n)| n).sum();
            for (kind, n) in batch {
                *counts.entry(kind).or_default() += n;
            }
            if dry_run || removed == 0 {
                break;
            }
        }
        Ok(PurgeReport {
            dry_run,
            purged: counts.values().sum(),
            by_kind: counts.into_iter().map(|(kind, items)| KindCount { kind, items }).collect(),
        })
    }
}

/// `CORTEX_PURGE_INTERVAL_SECS`: how often `cortex serve` purges (`0` turns the periodic purge
/// off). `None` when off.
pub fn interval_from_env() -> Result<Option<Duration>, ConfigError> {
    let secs = crate::settings::PURGE_INTERVAL_SECS.get(|key| std::env::var(key).ok())?;
    Ok((secs > 0).then(|| Duration::from_secs(secs)))
}
