//! A find's deadline: past it, a find answers with what it has. The dense route runs on the
//! service's pool of dense-route threads (`dense_pool`) and is left behind when it has not
//! answered in time (a remote embedder may take up to its own timeout); later optional stages
//! (suggestions, graph expansion) are skipped. Each omission is said in `notes`.

use super::dense_pool::DensePool;
use crate::EmbedderError;
use crate::semantic::{DenseHit, NearestError, Semantic};
use cortex_domain::fusion;
use cortex_store::{Filters, TenantStore};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

pub(crate) struct Deadline {
    ends: Instant,
    budget: Duration,
}

impl Deadline {
    pub fn start(budget: Duration) -> Deadline {
        Deadline { ends: Instant::now() + budget, budget }
    }

    pub fn passed(&self) -> bool {
        Instant::now() >= self.ends
    }

    fn remaining(&self) -> Duration {
        self.ends.saturating_duration_since(Instant::now())
    }

    /// The note for what was left out.
    pub fn note(&self, left_out: &str) -> String {
        format!("stopped early at the {} ms find deadline: {left_out}", self.budget.as_millis())
    }
}

/// What the dense route found: its hits, and the query's embedding, with which the lexical
/// candidates it did not return are scored afterwards.
pub(crate) struct DenseFound {
    pub query: Vec<f32>,
    pub hits: Vec<DenseHit>,
}

/// What the dense route gave by the deadline.
pub(crate) enum DenseOutcome {
    Found(DenseFound),
    Unavailable(DenseUnavailable),
    TimedOut,
}

/// Why the dense route gave no answer: the reason a find shows when it answers from the
/// lexical route alone.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DenseUnavailable {
    #[error(transparent)]
    Embedder(#[from] EmbedderError),
    /// The embedder makes no vectors (`none`).
    #[error("no vector")]
    NoVector,
    #[error(transparent)]
    Nearest(#[from] NearestError),
    #[error("every dense-search thread is busy (the embedder may be slow to answer)")]
    Busy,
    #[error("the dense search stopped without an answer (it panicked)")]
    Panicked,
}

/// The dense route, running on a thread of the pool; its answer or failure crosses the thread.
pub(crate) struct DenseRoute(mpsc::Receiver<Result<DenseFound, DenseUnavailable>>);

impl DenseRoute {
    /// Queues the dense route on `pool`; a thread that takes it after the deadline drops it.
    pub fn start(
        pool: &DensePool,
        deadline: &Deadline,
        semantic: Arc<Semantic>,
        view: Arc<dyn TenantStore>,
        text: &str,
        filters: &Filters,
        k: usize,
    ) -> DenseRoute {
        let (answer, route) = mpsc::sync_channel(1);
        let (text, filters) = (text.to_string(), filters.clone());
        let job_answer = answer.clone();
        let queued = pool.submit(deadline.ends, move || {
            // The find may have stopped waiting; then nobody reads this.
            let _ = job_answer.send(dense_matches(&semantic, &*view, &text, &filters, k));
        });
        if queued.is_err() {
            let _ = answer.send(Err(DenseUnavailable::Busy));
        }
        DenseRoute(route)
    }

    /// The route's answer if it comes before the deadline. Once the deadline has passed, an
    /// answer already there is not taken either: what a find returns never depends on which
    /// route happened to finish first.
    pub fn wait(self, deadline: &Deadline) -> DenseOutcome {
        if deadline.passed() {
            return DenseOutcome::TimedOut;
        }
        match self.0.recv_timeout(deadline.remaining()) {
            Ok(Ok(found)) => DenseOutcome::Found(found),
            Ok(Err(reason)) => DenseOutcome::Unavailable(reason),
            Err(RecvTimeoutError::Timeout) => DenseOutcome::TimedOut,
            Err(RecvTimeoutError::Disconnected) => DenseOutcome::Unavailable(DenseUnavailable::Panicked),
        }
    }
}

/// The nearest items by embedding that pass every filter; `Err` says why the dense route
/// cannot run.
fn dense_matches(
    semantic: &Semantic,
    view: &dyn TenantStore,
    text: &str,
    filters: &Filters,
    k: usize,
) -> Result<DenseFound, DenseUnavailable> {
    let query = semantic.embed_query(text)?.ok_or(DenseUnavailable::NoVector)?;
    let mut hits = semantic.nearest(view, &query, k, filters, crate::semantic::Compare::Everything)?;
    hits.retain(|s| f64::from(s.score) >= fusion::MIN_DENSE_SIMILARITY);
    Ok(DenseFound { query, hits })
}
