//! Whether the book changed: checked on a thread of its own, never on the
//! async workers (a check is SQLite work that can wait on a lock).
//!
//! A request asks for a check that begins after it arrived and waits for
//! its result ([`BookWatch::fresh`]); the watcher thread answers every
//! request waiting at the start of a round with that round's result, so
//! under load one check serves many requests. A round:
//!
//! * compares the file at the book's path (device and inode) with the one
//!   open: a book replaced by a rename (`mv` onto the served path; `build`
//!   and `merge` refuse to replace a book in use) is noticed, every
//!   connection is closed (waiting for those in use) and the new file
//!   opened ([`Pool::reopen`]);
//! * reads SQLite's `PRAGMA data_version` on a connection of the watcher's
//!   own, which changes whenever another connection commits (e.g.
//!   `learnbook learn`).
//!
//! Either change moves the book's generation on, which tags the answers
//! kept ([`super::cache`]); a check that fails moves it on too (a change
//! could hide behind it) and says not to use kept answers this round.

use std::{
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use anyhow::{anyhow, Context, Result};
use tokio::sync::{mpsc, watch};

use super::pool::Pool;
use crate::book::Book;

/// A round's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fresh {
    /// Rounds done so far (this one included).
    pub round: u64,
    /// The book's generation: answers tagged with it are current.
    pub generation: u64,
    /// Whether kept answers may be used (the check succeeded).
    pub cacheable: bool,
}

/// The requests' side of the watcher.
pub struct BookWatch {
    asks: mpsc::UnboundedSender<()>,
    /// Rounds begun so far.
    begun: Arc<AtomicU64>,
    state: watch::Receiver<Fresh>,
}

impl BookWatch {
    /// Starts the watcher over `pool`'s book; `runtime` is the server's
    /// (the watcher waits on its connection permits when it reopens).
    pub fn start(pool: Arc<Pool>, runtime: tokio::runtime::Handle) -> Result<BookWatch> {
        let path = pool.path().to_path_buf();
        let mut watcher = Watcher {
            id: Some(file_id(&path)?),
            tried: None,
            conn: Some(Book::open_read_only(&path)?),
            path,
            pool,
            runtime,
            version: None,
            generation: 0,
            problem: None,
        };
        let cacheable = watcher.check();
        let begun = Arc::new(AtomicU64::new(0));
        let (state_tx, state) = watch::channel(Fresh {
            round: 0,
            generation: watcher.generation,
            cacheable,
        });
        let (asks, mut asked) = mpsc::unbounded_channel::<()>();
        let rounds = Arc::clone(&begun);
        std::thread::Builder::new()
            .name("learnbook-watch".into())
            .spawn(move || {
                while asked.blocking_recv().is_some() {
                    // Every request waiting now is answered by this round.
                    while asked.try_recv().is_ok() {}
                    let round = rounds.fetch_add(1, Ordering::SeqCst) + 1;
                    let cacheable = watcher.check();
                    let fresh = Fresh {
                        round,
                        generation: watcher.generation,
                        cacheable,
                    };
                    if state_tx.send(fresh).is_err() {
                        break;
                    }
                }
            })
            .context("cannot start the book's watcher thread")?;
        Ok(BookWatch { asks, begun, state })
    }

    /// The result of a check that began after this call.
    pub async fn fresh(&self) -> Result<Fresh> {
        // A round numbered past the ones begun now begins after this load.
        let need = self.begun.load(Ordering::SeqCst) + 1;
        let stopped = || anyhow!("the book's watcher stopped");
        self.asks.send(()).map_err(|_| stopped())?;
        let mut state = self.state.clone();
        let fresh = *state
            .wait_for(|s| s.round >= need)
            .await
            .map_err(|_| stopped())?;
        Ok(fresh)
    }
}

/// A file's identity: its device and inode.
type FileId = (u64, u64);

fn file_id(path: &Path) -> Result<FileId> {
    let m = std::fs::metadata(path).with_context(|| format!("cannot stat {}", path.display()))?;
    Ok((m.dev(), m.ino()))
}

struct Watcher {
    path: PathBuf,
    pool: Arc<Pool>,
    runtime: tokio::runtime::Handle,
    /// The file open now (`None` after a reopen failed: tried again).
    id: Option<FileId>,
    /// The last file a reopen was tried on, so that it is announced once.
    tried: Option<FileId>,
    /// The watcher's connection (`None` while the book cannot be opened).
    conn: Option<Book>,
    /// Its last `data_version`.
    version: Option<i64>,
    generation: u64,
    /// The last problem reported, so that a lasting one is said once.
    problem: Option<String>,
}

impl Watcher {
    /// One round; whether kept answers may be used.
    fn check(&mut self) -> bool {
        match file_id(&self.path) {
            Ok(id) if Some(id) != self.id => self.reopen(id),
            Ok(_) => {}
            // Moved away for a moment, or deleted: the open file is served.
            Err(e) => self.report(format!("{e:#}; serving the book opened before")),
        }
        // Not open: the failed reopen said why, and is tried again next round.
        let Some(conn) = &self.conn else {
            self.generation += 1;
            return false;
        };
        match conn.data_version() {
            Ok(v) => {
                if Some(v) != self.version {
                    self.version = Some(v);
                    self.generation += 1;
                }
                self.problem = None;
                true
            }
            Err(e) => {
                self.report(format!("cannot read the book's version: {e:#}"));
                self.version = None;
                self.generation += 1;
                false
            }
        }
    }

    /// The file at the path is another one: every connection is closed,
    /// then the new file opened.
    fn reopen(&mut self, id: FileId) {
        if self.tried != Some(id) {
            self.tried = Some(id);
            eprintln!(
                "learnbook serve: {} was replaced; opening the new book",
                self.path.display()
            );
        }
        let pool = Arc::clone(&self.pool);
        let path = self.path.clone();
        let conn = &mut self.conn;
        let reopened = pool.reopen(&self.runtime, || {
            *conn = None;
            *conn = Some(Book::open_read_only(&path)?);
            Ok(())
        });
        self.version = None;
        self.generation += 1;
        match reopened {
            Ok(()) => self.id = Some(id),
            Err(e) => {
                // Tried again next round.
                self.id = None;
                self.report(format!("cannot open the replaced book: {e:#}"));
            }
        }
    }

    fn report(&mut self, problem: String) {
        if self.problem.as_deref() != Some(problem.as_str()) {
            eprintln!("learnbook serve: {problem}");
            self.problem = Some(problem);
        }
    }
}
