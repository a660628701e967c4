//! The threads finds' dense routes run on: a fixed set, started at the first `auto` or `deep`
//! find, shared by every caller of one service, and a bounded queue in front of them.
//!
//! Why not a thread per find: the dense route may wait on a remote embedder up to its own
//! timeout (a minute), and a find leaves it behind at its deadline; a thread per find then
//! became one more thread per find for as long as the embedder hung. Here a hung embedder
//! holds at most the pool's threads; later finds wait in the queue until their deadline and
//! answer with the lexical part, and a job whose find stopped waiting before a thread took it
//! is dropped unrun. Starting a thread also cost every find its own setup.

use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Threads per core: the dense route is CPU work (the query's embedding, the vector scan) or
/// a wait on a remote embedder; two per core keep the cores busy while one waits.
const THREADS_PER_CORE: usize = 2;
/// Jobs waiting per thread before a find is told the pool is busy.
const QUEUED_PER_THREAD: usize = 4;

/// A dense route to run: dropped unrun when a thread takes it past `until`.
struct Job {
    until: Instant,
    run: Box<dyn FnOnce() + Send>,
}

/// Every thread is working and the queue is full (or no thread could be started).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Busy;

pub(crate) struct DensePool {
    threads: usize,
    /// Made with the threads, at the first job; dropping it ends them once their job is done.
    queue: Mutex<Option<SyncSender<Job>>>,
}

/// How many threads a service runs dense routes on: a few per core.
pub fn dense_route_threads() -> usize {
    THREADS_PER_CORE * std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl DensePool {
    /// A pool of [`dense_route_threads`].
    pub fn per_core() -> DensePool {
        DensePool::with_threads(dense_route_threads())
    }

    pub fn with_threads(threads: usize) -> DensePool {
        DensePool { threads: threads.max(1), queue: Mutex::new(None) }
    }

    /// Queues `run` for the next free thread, unless it is still waiting at `until` (its find
    /// answered without it by then).
    pub fn submit(&self, until: Instant, run: impl FnOnce() + Send + 'static) -> Result<(), Busy> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.is_none() {
            *queue = Some(self.start()?);
        }
        let sender = queue.as_ref().ok_or(Busy)?;
        match sender.try_send(Job { until, run: Box::new(run) }) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(Busy),
            // Every thread is gone (none could be kept running): start them again next time.
            Err(TrySendError::Disconnected(_)) => {
                *queue = None;
                Err(Busy)
            }
        }
    }

    fn start(&self) -> Result<SyncSender<Job>, Busy> {
        let (sender, jobs) = mpsc::sync_channel(self.threads * QUEUED_PER_THREAD);
        let jobs = Arc::new(Mutex::new(jobs));
        let mut started = 0;
        for n in 0..self.threads {
            let jobs = jobs.clone();
            match std::thread::Builder::new().name(format!("dense-route-{n}")).spawn(move || work(&jobs)) {
                Ok(_) => started += 1,
                Err(e) => tracing::warn!("cannot start a dense-route thread: {e}"),
            }
        }
        if started == 0 {
            return Err(Busy);
        }
        Ok(sender)
    }
}

/// One thread: takes the next job while the pool stands; a job that panics does not end it
/// (its find sees its answer channel closed, and says so).
fn work(jobs: &Mutex<Receiver<Job>>) {
    loop {
        let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(Job { until, run }) = job else { return };
        if Instant::now() >= until {
            continue;
        }
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    const LATER: Duration = Duration::from_secs(60);

    #[test]
    fn no_more_jobs_run_at_once_than_the_pool_has_threads() {
        let pool = DensePool::with_threads(2);
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (done, finished) = mpsc::channel();
        for _ in 0..6 {
            let (running, most, done) = (running.clone(), most.clone(), done.clone());
            pool.submit(Instant::now() + LATER, move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                running.fetch_sub(1, Ordering::SeqCst);
                done.send(()).unwrap();
            })
            .unwrap();
        }
        for _ in 0..6 {
            finished.recv_timeout(LATER).unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_full_queue_is_busy_and_a_job_left_behind_never_runs() {
        let pool = DensePool::with_threads(1);
        let hold = Arc::new(Barrier::new(2));
        let held = hold.clone();
        pool.submit(Instant::now() + LATER, move || {
            held.wait();
        })
        .unwrap();
        // The thread is held: a job due now waits in the queue past its time.
        let ran = Arc::new(AtomicUsize::new(0));
        let late = ran.clone();
        pool.submit(Instant::now(), move || {
            late.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        let mut queued = 1;
        while pool.submit(Instant::now() + LATER, || {}).is_ok() {
            queued += 1;
            // The held job may still be in the queue too.
            assert!(queued <= QUEUED_PER_THREAD + 1, "the queue is bounded");
        }
        assert_eq!(pool.submit(Instant::now() + LATER, || {}), Err(Busy));
        hold.wait();
        // Jobs run in order on the one thread: once this one has run, the late one was taken.
        let (done, finished) = mpsc::channel();
        loop {
            let done = done.clone();
            if pool.submit(Instant::now() + LATER, move || done.send(()).unwrap()).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        finished.recv_timeout(LATER).unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 0, "a job past its time is dropped unrun");
    }

    #[test]
    fn a_job_that_panics_leaves_its_thread_working() {
        let pool = DensePool::with_threads(1);
        let (answer, got) = mpsc::sync_channel::<u8>(1);
        pool.submit(Instant::now() + LATER, move || {
            let _answer = answer;
            panic!("a dense route that panics");
        })
        .unwrap();
        assert!(got.recv_timeout(LATER).is_err(), "the panicking job's channel closes unanswered");
        let (answer, got) = mpsc::sync_channel(1);
        pool.submit(Instant::now() + LATER, move || answer.send(7).unwrap()).unwrap();
        assert_eq!(got.recv_timeout(LATER), Ok(7));
    }
}
