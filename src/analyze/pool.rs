//! Engines searching in parallel, one analyst a thread, fed jobs over a
//! channel: what `analyze` and `grow` both run their searches on.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    mpsc, Mutex,
};
use std::time::Duration;

use anyhow::Result;

use super::{Analyst, Budget, EngineChoice};

/// What [`Pool::next`] found.
pub enum Next<R> {
    /// A job's result.
    Done(Result<R>),
    /// None yet.
    Waiting,
    /// Every worker has stopped.
    Closed,
}

/// The caller's side of the running pool.
pub struct Pool<'a, J, R> {
    jobs: Option<mpsc::Sender<J>>,
    results: mpsc::Receiver<Result<R>>,
    stop: &'a AtomicBool,
}

impl<J, R> Pool<'_, J, R> {
    /// Queues a job; `false` when no worker is left to take it.
    pub fn submit(&self, job: J) -> bool {
        self.jobs.as_ref().is_some_and(|tx| tx.send(job).is_ok())
    }

    /// The next result, waiting at most `timeout`.
    pub fn next(&self, timeout: Duration) -> Next<R> {
        match self.results.recv_timeout(timeout) {
            Ok(r) => Next::Done(r),
            Err(mpsc::RecvTimeoutError::Timeout) => Next::Waiting,
            Err(mpsc::RecvTimeoutError::Disconnected) => Next::Closed,
        }
    }

    /// Workers finish the search they are in and take no more jobs.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Stops the workers and waits for them: the results of the searches
    /// they were in (what a stop or Ctrl-C must not lose).
    pub fn finish(&mut self) -> Vec<Result<R>> {
        self.stop();
        // Workers waiting for a job see the channel close and return.
        self.jobs = None;
        self.results.iter().collect()
    }
}

/// Starts `threads` analysts of `engine` at `budget`, each running `work`
/// on the jobs it takes, and calls `body` with the pool; returns once
/// `body` has and every worker has finished its current job. A worker
/// stops at its first error (sent as its last result), on
/// [`Pool::stop`] and on Ctrl-C.
pub fn run<J: Send, R: Send, T>(
    engine: &EngineChoice,
    budget: Budget,
    threads: usize,
    work: &(dyn Fn(&mut dyn Analyst, J) -> Result<R> + Sync),
    body: impl FnOnce(&mut Pool<'_, J, R>) -> T,
) -> T {
    let (job_tx, job_rx) = mpsc::channel::<J>();
    let job_rx = Mutex::new(job_rx);
    let (res_tx, res_rx) = mpsc::channel::<Result<R>>();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            let res_tx = res_tx.clone();
            let (job_rx, stop) = (&job_rx, &stop);
            scope.spawn(move || {
                let mut analyst = match engine.start(budget) {
                    Ok(a) => a,
                    Err(e) => {
                        let _ = res_tx.send(Err(e));
                        return;
                    }
                };
                let stopped = || stop.load(Ordering::SeqCst) || crate::interrupt::interrupted();
                loop {
                    if stopped() {
                        return;
                    }
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    if stopped() {
                        return;
                    }
                    let r = work(analyst.as_mut(), job);
                    let failed = r.is_err();
                    if res_tx.send(r).is_err() || failed {
                        return;
                    }
                }
            });
        }
        drop(res_tx);
        let mut pool = Pool {
            jobs: Some(job_tx),
            results: res_rx,
            stop: &stop,
        };
        let out = body(&mut pool);
        pool.stop();
        pool.jobs = None;
        out
    })
}
