//! The files SQLite keeps beside a book, and a new book put in their place.
//!
//! SQLite names a book's WAL, the WAL's index and a rollback journal after
//! the book's path (`BOOK-wal`, `BOOK-shm`, `BOOK-journal`), and nothing in
//! them names the database they belong to: a WAL's frames carry checksums
//! of their own chain only. A WAL left at a path by another book (a crash,
//! then only the book deleted) is replayed into the next book opened there,
//! and a build that renamed a finished book into place reported success on
//! a book `check` then found thousands of faults in. So before a command
//! puts a new book at a path (renames it there, or creates it there), it
//! asks whether a process has a book open there, and:
//!
//! * if one has, it refuses (exit 2): it never replaces a live book, whose
//!   process would go on writing the WAL that the new book reads by name,
//!   and never takes over the WAL of a book deleted while still open;
//! * if none has, the `-wal`, `-shm` and `-journal` beside the path belong
//!   to no open book (a book that existed there was read, its WAL with it,
//!   by the command that replaces it: `merge` into an existing book), and
//!   are removed just before the rename.
//!
//! "Open" is what SQLite's own unix VFS shows: every connection to a book
//! in WAL mode (all of learnbook's, read-only ones too) holds a read lock
//! on the index's DMS byte for as long as it is open, and one on the
//! book's shared-lock range; a crashed process holds none. The check and
//! the rename are two steps, so a process that opens the path in the
//! instant between them is not seen; nothing in learnbook does that.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::Book;
use learnbook_base::atomic_file::Pending;

/// What SQLite may keep beside a database.
const SIDE_FILES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// The bytes of `-shm` SQLite's unix VFS locks: eight locks from
/// `UNIX_SHM_BASE` (120), then the DMS byte (128), held by every
/// connection while it is open.
const SHM_LOCKS: (u64, u64) = (120, 9);

/// The database file's lock bytes: `PENDING_BYTE` (0x40000000), the
/// reserved byte, and the 510 shared bytes after them.
const DB_LOCKS: (u64, u64) = (0x4000_0000, 512);

fn side_file(book: &Path, suffix: &str) -> PathBuf {
    let mut p = book.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Whether some process holds a SQLite lock on `path` in `range` (false
/// for a missing file). This process must not have a connection to it:
/// closing the descriptor opened here would drop that connection's locks
/// (POSIX locks belong to the process, not to a descriptor).
fn locked(path: &Path, (start, len): (u64, u64)) -> Result<bool> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
    };
    learnbook_base::sys::byte_range_locked(&file, start, len)
        .with_context(|| format!("cannot read the locks of {}", path.display()))
}

/// Whether a process has the database at `path` open in SQLite's
/// exclusive locking mode, or in a transaction (false for a missing
/// file). As [`locked`]: this process must not have a connection to it.
pub(super) fn in_use(path: &Path) -> Result<bool> {
    locked(path, DB_LOCKS)
}

/// Refuses when a process has a book open at `book`, or has the WAL beside
/// it open (a book deleted while a process had it). Call it with no
/// connection of this process to `book`.
pub fn refuse_if_open(book: &Path) -> Result<()> {
    let db = locked(book, DB_LOCKS)?;
    let wal = locked(&side_file(book, "-shm"), SHM_LOCKS)?;
    if db || (wal && book.exists()) {
        bail!(
            "{} is open in another process: a new book is never put in place of a book in \
             use (stop that process, or give another --book)",
            book.display()
        );
    }
    if wal {
        bail!(
            "{} is open in another process: there is no book there, but {} is the WAL of a \
             book that process still has open (deleted from under it); stop that process, or \
             give another --book",
            book.display(),
            side_file(book, "-wal").display()
        );
    }
    Ok(())
}

/// Makes `book`'s path ready for a new book: refuses if it is open
/// ([`refuse_if_open`]), else removes the WAL, index and journal beside it,
/// which then belong to no open book.
pub fn clear_for_new_book(book: &Path) -> Result<()> {
    refuse_if_open(book)?;
    for suffix in SIDE_FILES {
        let p = side_file(book, suffix);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot remove {}, left by another book", p.display())
                })
            }
        }
    }
    Ok(())
}

/// Renames the finished book `pending` into place, after
/// [`clear_for_new_book`]. `replaces`: the command read the book there and
/// means to replace it (`merge` into an existing book); otherwise a book
/// that appeared there meanwhile is not overwritten. Call it with every
/// connection to the new book and to the old one closed.
pub fn commit_new_book(pending: Pending, replaces: bool) -> Result<()> {
    let dest = pending.destination().to_path_buf();
    if !replaces && dest.exists() {
        bail!(
            "{} appeared while this book was being written: it is left as it is (the new \
             book is not kept; give another --book)",
            dest.display()
        );
    }
    clear_for_new_book(&dest)?;
    pending.commit()
}

impl Book {
    /// For a new book in a temporary file: no journal and no syncs, which
    /// is much faster, and a crash only loses a file that is thrown away.
    /// [`Book::make_durable`] undoes it once the book is complete.
    pub fn write_unjournaled(&self) -> Result<()> {
        self.conn.pragma_update(None, "journal_mode", "OFF")?;
        self.conn.pragma_update(None, "synchronous", "OFF")?;
        Ok(())
    }

    /// Back to a journal (WAL) with full syncs, and everything written into
    /// the file itself, before a new book is renamed into place.
    pub fn make_durable(&self) -> Result<()> {
        self.conn.pragma_update(None, "journal_mode", "WAL")?;
        self.conn.pragma_update(None, "synchronous", "FULL")?;
        self.checkpoint()?;
        // What was written without a journal is in the file but maybe not
        // yet on the disk, and an empty WAL's checkpoint syncs nothing: sync
        // the file itself, so that the renamed book survives a power loss.
        std::fs::File::open(&self.path)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("syncing {}", self.path.display()))
    }

    /// Writes the WAL back into the file and empties it, so that the file
    /// alone is the whole book (to be copied, say).
    pub fn checkpoint(&self) -> Result<()> {
        self.conn
            .execute_batch("PRAGMA main.wal_checkpoint(TRUNCATE);")
            .with_context(|| format!("checkpointing {}", self.path.display()))
    }

    /// A compacted copy of the book at `path` (SQLite's `VACUUM INTO`).
    pub fn vacuum_into(&self, path: &Path) -> Result<()> {
        let target = path
            .to_str()
            .with_context(|| format!("{} is not valid UTF-8", path.display()))?;
        self.conn
            .execute("VACUUM INTO ?1", [target])
            .with_context(|| format!("copying {} to {}", self.path.display(), path.display()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Book, BookSettings};

    #[test]
    fn a_book_open_here_or_elsewhere_shows_its_locks_and_a_closed_one_none() {
        // Within one process the Linux OFD query sees this process's own
        // locks too, which is what makes this test possible; the commands
        // ask about other processes.
        if !cfg!(target_os = "linux") {
            return;
        }
        let dir = tempfile::TempDir::new().expect("tmp");
        let path = dir.path().join("b.sqlite");
        drop(Book::open_or_create(&path, BookSettings::default()).expect("create"));
        assert!(!locked(&path, DB_LOCKS).expect("locks"));
        assert!(!side_file(&path, "-shm").exists());
        let open = Book::open(&path).expect("open");
        assert!(locked(&side_file(&path, "-shm"), SHM_LOCKS).expect("locks"));
        assert!(locked(&path, DB_LOCKS).expect("locks"));
        // Asking closed descriptors of the files, which dropped this
        // process's POSIX locks on them: the connection is not used again.
        drop(open);
    }

    #[test]
    fn stale_side_files_are_removed_and_a_book_that_appeared_is_kept() {
        let dir = tempfile::TempDir::new().expect("tmp");
        let dest = dir.path().join("x.sqlite");
        for suffix in SIDE_FILES {
            std::fs::write(side_file(&dest, suffix), b"stale").expect("write");
        }
        let pending = Pending::new(&dest, ".building");
        std::fs::write(pending.path(), b"new").expect("write");
        commit_new_book(pending, false).expect("commit");
        assert_eq!(std::fs::read(&dest).expect("read"), b"new");
        for suffix in SIDE_FILES {
            assert!(!side_file(&dest, suffix).exists(), "{suffix} is left");
        }
        let pending = Pending::new(&dest, ".building");
        std::fs::write(pending.path(), b"newer").expect("write");
        let err = commit_new_book(pending, false).expect_err("a book is there");
        assert!(err.to_string().contains("appeared"), "{err}");
        assert_eq!(std::fs::read(&dest).expect("read"), b"new");
        assert!(!side_file(&dest, ".building").exists());
    }
}
