//! The server's book connections: one read-only connection per blocking
//! worker, each used by one request at a time on tokio's blocking pool
//! (SQLite calls block). A read-only connection in WAL mode sees what
//! `learnbook learn` commits and never holds a write lock.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
};

use anyhow::{anyhow, Result};
use tokio::sync::Semaphore;

use crate::book::Book;

pub struct Pool {
    path: PathBuf,
    idle: Mutex<Vec<Book>>,
    /// As many permits as connections: a request that holds one finds a
    /// connection idle.
    permits: Arc<Semaphore>,
}

impl Pool {
    /// Opens `size` read-only connections to the book at `path`.
    pub fn open(path: PathBuf, size: usize) -> Result<Pool> {
        let size = size.max(1);
        let idle = (0..size)
            .map(|_| Book::open_read_only(&path))
            .collect::<Result<Vec<_>>>()?;
        Ok(Pool {
            path,
            idle: Mutex::new(idle),
            permits: Arc::new(Semaphore::new(size)),
        })
    }

    /// Runs `f` with a connection on the blocking pool; waits (without
    /// blocking a worker) while every connection is busy.
    pub async fn with_book<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Book) -> Result<T> + Send + 'static,
    {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| anyhow!("the server is shutting down"))?;
        let pool = Arc::clone(self);
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let taken = pool.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            // A connection lost to a panic is replaced here.
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
            Ok(out) => out,
            Err(e) if e.is_panic() => Err(anyhow!("the book read panicked")),
            Err(e) => Err(anyhow!("the book read was cancelled: {e}")),
        }
    }
}
