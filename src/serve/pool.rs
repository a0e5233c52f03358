//! The server's book connections: one read-only connection per blocking
//! worker, each used by one request at a time on tokio's blocking pool
//! (SQLite calls block). A read-only connection in WAL mode sees what
//! `learnbook learn` commits and never holds a write lock.
//!
//! A request waits for a free connection for at most its deadline
//! (`serve --pool-timeout`); past it, it is answered 503 ([`PoolError::Busy`])
//! rather than queued without end behind a book that does not answer.
//! [`Pool::reopen`] closes every connection (waiting for those in use) and
//! opens the book again: for a book replaced on disk (which the book watcher,
//! `watch.rs`, notices).

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use anyhow::{anyhow, Context, Result};
use tokio::{sync::Semaphore, time::Instant};

use crate::book::Book;

pub struct Pool {
    path: PathBuf,
    size: usize,
    idle: Mutex<Vec<Book>>,
    /// As many permits as connections: a request that holds one finds a
    /// connection idle (or opens one).
    permits: Arc<Semaphore>,
}

/// Why a read was not done.
#[derive(Debug)]
pub enum PoolError {
    /// No connection came free before the deadline.
    Busy,
    /// The read failed (the message says why).
    Failed(anyhow::Error),
}

impl Pool {
    /// Opens `size` read-only connections to the book at `path`.
    pub fn open(path: PathBuf, size: usize) -> Result<Pool> {
        let size = size.max(1);
        let idle = open_all(&path, size)?;
        Ok(Pool {
            path,
            size,
            idle: Mutex::new(idle),
            permits: Arc::new(Semaphore::new(size)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with a connection on the blocking pool; waits (without
    /// blocking a worker) while every connection is busy, until `deadline`.
    pub async fn with_book<T, F>(self: &Arc<Self>, deadline: Instant, f: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&Book) -> Result<T> + Send + 'static,
    {
        let permit = match tokio::time::timeout_at(deadline, self.permits.clone().acquire_owned())
            .await
        {
            Err(_) => return Err(PoolError::Busy),
            Ok(Err(_)) => return Err(PoolError::Failed(anyhow!("the server is shutting down"))),
            Ok(Ok(p)) => p,
        };
        let pool = Arc::clone(self);
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let taken = pool.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            // A connection lost to a panic, or closed by `reopen`, is opened here.
            let book = match taken {
                Some(b) => b,
                None => Book::open_read_only(&pool.path)?,
            };
            let out = f(&book);
            pool.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(book);
            out
        })
        .await;
        match joined {
            Ok(out) => out.map_err(PoolError::Failed),
            Err(e) if e.is_panic() => Err(PoolError::Failed(anyhow!("the book read panicked"))),
            Err(e) => Err(PoolError::Failed(anyhow!(
                "the book read was cancelled: {e}"
            ))),
        }
    }

    /// Closes every connection, waiting for those in use (blocking the
    /// calling thread, which must not be one of the runtime's: `runtime`
    /// is its handle), then calls `between` while none is open and opens
    /// them again. Requests wait meanwhile. No connection to the old file
    /// is open when the new one is opened: SQLite keys its shared memory
    /// (`-shm`) by the file's path, which the two files share.
    pub fn reopen(
        &self,
        runtime: &tokio::runtime::Handle,
        between: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let all = runtime
            .block_on(self.permits.acquire_many(self.size as u32))
            .map_err(|_| anyhow!("the server is shutting down"))?;
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.clear();
        between()?;
        // Opened now (not by the next requests) so that a book that cannot
        // be read says so here, once.
        *idle = open_all(&self.path, self.size)?;
        drop(idle);
        drop(all);
        Ok(())
    }
}

fn open_all(path: &Path, size: usize) -> Result<Vec<Book>> {
    (0..size)
        .map(|_| Book::open_read_only(path))
        .collect::<Result<Vec<_>>>()
        .with_context(|| format!("cannot open the book's connections ({})", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::BookSettings;
    use std::time::Duration;

    #[test]
    fn a_request_finding_no_connection_before_its_deadline_is_busy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("book.sqlite");
        drop(Book::open_or_create(&path, BookSettings::default()).expect("a book"));
        let pool = Arc::new(Pool::open(path, 1).expect("pool"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let far = || Instant::now() + Duration::from_secs(600);
            // The only connection, held until released.
            let (held_tx, held_rx) = tokio::sync::oneshot::channel();
            let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
            let holder = {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move {
                    pool.with_book(far(), move |_| {
                        let _ = held_tx.send(());
                        let _ = release_rx.recv();
                        Ok(1)
                    })
                    .await
                })
            };
            held_rx.await.expect("held");
            let waited = pool
                .with_book(Instant::now() + Duration::from_millis(20), |_| Ok(2))
                .await;
            assert!(matches!(waited, Err(PoolError::Busy)), "{waited:?}");
            release_tx.send(()).expect("release");
            assert_eq!(holder.await.expect("join").expect("read"), 1);
            // Free again: served.
            let served = pool.with_book(far(), |_| Ok(3)).await;
            assert_eq!(served.expect("read"), 3);
        });
    }
}
