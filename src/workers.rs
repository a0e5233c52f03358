//! Numbered jobs on a few scoped worker threads: each worker takes the next
//! job index from a shared counter, so the jobs start in index order and a
//! slow job never holds up the others. A leaf module (it imports nothing of
//! the crate): games, judged positions, searched test positions and tuning
//! games all run on it.

use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    mpsc, Mutex,
};

/// Runs jobs `0..jobs` on `threads` scoped workers (one if `threads` is 0,
/// never more than there are jobs) and hands each job's result to `deliver` on the
/// calling thread, in the order the jobs finish.
///
/// Each worker first calls `start` with its number (0, 1, ...) for its
/// own state (an engine process, a search with its table), on its own
/// thread, then calls `job` with that state and each index it takes.
///
/// No worker takes another job once `stop` is set: by `deliver` (a match
/// decided), by the caller before or during the run, or by the first error.
/// Jobs under way finish and are delivered. The first error (of `start`,
/// `job` or `deliver`, in the order they happen) ends the deliveries and is
/// returned once every worker has finished. A worker that panics stops the
/// others too; the panic is then raised on the calling thread.
pub fn run<S, T, E>(
    jobs: usize,
    threads: usize,
    stop: &AtomicBool,
    start: impl Fn(usize) -> Result<S, E> + Sync,
    job: impl Fn(&mut S, usize) -> Result<T, E> + Sync,
    mut deliver: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<(), E>
where
    T: Send,
    E: Send,
{
    let workers = threads.max(1).min(jobs);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<E>> = Mutex::new(None);
    let fail = |e: E| {
        // A poisoned lock only means another thread panicked; the slot is still good.
        let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        failed.store(true, Ordering::SeqCst);
        stop.store(true, Ordering::SeqCst);
    };
    let (tx, rx) = mpsc::channel::<(usize, T)>();
    std::thread::scope(|scope| {
        for w in 0..workers {
            let tx = tx.clone();
            let (next, start, job, fail) = (&next, &start, &job, &fail);
            scope.spawn(move || {
                let _stop_on_panic = StopOnPanic(stop);
                let mut state = match start(w) {
                    Ok(s) => s,
                    Err(e) => return fail(e),
                };
                while !stop.load(Ordering::SeqCst) {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= jobs {
                        break;
                    }
                    match job(&mut state, i) {
                        Ok(t) => {
                            // The calling thread has gone only after an error of its own.
                            if tx.send((i, t)).is_err() {
                                break;
                            }
                        }
                        Err(e) => return fail(e),
                    }
                }
            });
        }
        drop(tx);
        for (i, t) in rx {
            if failed.load(Ordering::SeqCst) {
                break;
            }
            if let Err(e) = deliver(i, t) {
                fail(e);
                break;
            }
        }
    });
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// [`run`] collecting the results: every job's result in job order, or the
/// first error (the remaining jobs are then not started).
pub fn map<S, T, E>(
    jobs: usize,
    threads: usize,
    start: impl Fn(usize) -> Result<S, E> + Sync,
    job: impl Fn(&mut S, usize) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E>
where
    T: Send,
    E: Send,
{
    let stop = AtomicBool::new(false);
    let mut results: Vec<Option<T>> = (0..jobs).map(|_| None).collect();
    run(jobs, threads, &stop, start, job, |i, t| {
        results[i] = Some(t);
        Ok(())
    })?;
    // Without an error nothing sets `stop`, so every job ran.
    Ok(results
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect())
}

/// Sets the flag if its worker unwinds, so the others stop taking jobs.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A job that takes a moment, so that stopping early is visible.
    fn pause() {
        std::thread::sleep(Duration::from_millis(2));
    }

    #[test]
    fn every_index_runs_once_and_map_returns_job_order() {
        let runs: Vec<AtomicUsize> = (0..500).map(|_| AtomicUsize::new(0)).collect();
        let squares = map(
            500,
            4,
            |_| Ok::<_, String>(()),
            |_, i| {
                runs[i].fetch_add(1, Ordering::SeqCst);
                // Later jobs finish sooner: delivery order differs from job order.
                if i % 7 == 0 {
                    pause();
                }
                Ok(i * i)
            },
        )
        .unwrap();
        assert!(runs.iter().all(|r| r.load(Ordering::SeqCst) == 1));
        assert_eq!(squares, (0..500).map(|i| i * i).collect::<Vec<_>>());
    }

    #[test]
    fn run_delivers_each_job_once_on_the_calling_thread() {
        let caller = std::thread::current().id();
        let mut seen = vec![0; 200];
        run(
            200,
            3,
            &AtomicBool::new(false),
            |_| Ok::<_, String>(()),
            |_, i| Ok(i + 1),
            |i, t| {
                assert_eq!(std::thread::current().id(), caller);
                assert_eq!(t, i + 1);
                seen[i] += 1;
                Ok(())
            },
        )
        .unwrap();
        assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn one_thread_runs_and_delivers_in_index_order() {
        let order = Mutex::new(Vec::new());
        let mut delivered = Vec::new();
        run(
            50,
            1,
            &AtomicBool::new(false),
            Ok::<_, String>,
            |w, i| {
                assert_eq!(*w, 0);
                order.lock().unwrap().push(i);
                Ok(i)
            },
            |i, _| {
                delivered.push(i);
                Ok(())
            },
        )
        .unwrap();
        let expected: Vec<usize> = (0..50).collect();
        assert_eq!(order.into_inner().unwrap(), expected);
        assert_eq!(delivered, expected);
    }

    #[test]
    fn no_jobs_start_no_workers() {
        let starts = AtomicUsize::new(0);
        let start = |_| {
            starts.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(())
        };
        let out: Vec<usize> = map(0, 4, start, |_, i| Ok(i)).unwrap();
        assert!(out.is_empty());
        assert_eq!(starts.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn each_worker_starts_once_and_never_more_workers_than_jobs() {
        let starts = Mutex::new(Vec::new());
        let start = |w| {
            starts.lock().unwrap().push(w);
            Ok::<_, String>(0usize)
        };
        let job = |count: &mut usize, _| {
            *count += 1;
            pause();
            Ok(*count)
        };
        map(60, 3, start, job).unwrap();
        let mut s = std::mem::take(&mut *starts.lock().unwrap());
        s.sort();
        assert_eq!(s, [0, 1, 2]);
        map(2, 5, start, job).unwrap();
        let mut s = starts.into_inner().unwrap();
        s.sort();
        assert_eq!(s, [0, 1]);
    }

    #[test]
    fn a_job_error_stops_the_others_and_is_returned() {
        let runs = AtomicUsize::new(0);
        let r = map(
            1000,
            3,
            |_| Ok(()),
            |_, i| {
                runs.fetch_add(1, Ordering::SeqCst);
                pause();
                if i == 10 {
                    Err(format!("job {i} failed"))
                } else {
                    Ok(i)
                }
            },
        );
        assert_eq!(r, Err("job 10 failed".to_string()));
        // Job 10 and the jobs under way when it failed, not the thousand
        // (how many were under way depends on the scheduler: a busy machine
        // may leave the failing thread waiting while the others go on).
        let runs = runs.load(Ordering::SeqCst);
        assert!((11..1000).contains(&runs), "{runs} jobs ran");
    }

    #[test]
    fn a_start_error_is_returned_and_stops_the_others() {
        let runs = AtomicUsize::new(0);
        let r = map(
            1000,
            2,
            |w| if w == 1 { Err("no engine") } else { Ok(()) },
            |_, i| {
                runs.fetch_add(1, Ordering::SeqCst);
                pause();
                Ok(i)
            },
        );
        assert_eq!(r, Err("no engine"));
        // Not the thousand (how many ran before worker 1 failed to start
        // depends on the scheduler).
        assert!(runs.load(Ordering::SeqCst) < 1000);
    }

    #[test]
    fn a_deliver_error_ends_the_deliveries_and_is_returned() {
        let mut delivered = 0;
        let r = run(
            1000,
            2,
            &AtomicBool::new(false),
            |_| Ok(()),
            |_, i| {
                pause();
                Ok(i)
            },
            |_, _| {
                delivered += 1;
                if delivered == 5 {
                    Err("disk full")
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r, Err("disk full"));
        assert_eq!(delivered, 5);
    }

    #[test]
    fn stop_lets_jobs_under_way_finish_and_be_delivered() {
        let stop = AtomicBool::new(false);
        let runs = AtomicUsize::new(0);
        let mut delivered = 0;
        run(
            1000,
            3,
            &stop,
            |_| Ok::<_, String>(()),
            |_, i| {
                runs.fetch_add(1, Ordering::SeqCst);
                pause();
                Ok(i)
            },
            |_, _| {
                delivered += 1;
                if delivered == 20 {
                    stop.store(true, Ordering::SeqCst);
                }
                Ok(())
            },
        )
        .unwrap();
        let runs = runs.load(Ordering::SeqCst);
        assert!((20..100).contains(&runs), "{runs} jobs ran");
        assert_eq!(delivered, runs);
        // Set before the run: no job starts.
        let runs = AtomicUsize::new(0);
        run(
            10,
            2,
            &stop,
            |_| Ok::<_, String>(()),
            |_, _| Ok(runs.fetch_add(1, Ordering::SeqCst)),
            |_, _| Ok(()),
        )
        .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_panicking_job_stops_the_others_and_panics_the_caller() {
        let runs = AtomicUsize::new(0);
        let r = std::panic::catch_unwind(|| {
            map(
                10_000,
                3,
                |_| Ok::<_, String>(()),
                |_, i| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    pause();
                    assert!(i != 10, "job 10 panicked");
                    Ok(i)
                },
            )
        });
        assert!(r.is_err());
        let runs = runs.load(Ordering::SeqCst);
        // Not at once: the panic hook (a backtrace, perhaps) runs before the
        // unwinding that stops the others.
        assert!(runs < 5_000, "{runs} jobs ran");
    }
}
