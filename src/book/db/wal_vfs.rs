//! A thin VFS over SQLite's default one that writes a transaction's WAL
//! frames together, not two system calls a frame. SQLite writes a frame as
//! its 24-byte header and then its page, two `pwrite`s side by side; a learned game
//! commits about 126 frames, and on this project's machines a `pwrite`
//! costs about as much as copying the page. Here the frames a transaction
//! writes in a row are gathered in memory and passed on together (in
//! parts of up to 128 KB, the most the default VFS writes at once) when its
//! commit frame's page arrives, so SQLite gets that write's result before
//! it publishes the commit to readers. Any other call on the WAL (a read of
//! a frame spilled before the commit, a sync, a truncate) writes what is
//! gathered first, and a write that is not next to the gathered bytes (nor
//! inside them) does too: nothing gathered outlives the writes SQLite makes
//! in a row. A killed process loses only frames of a transaction that had
//! not committed, which recovery ignores anyway. Every other file (the
//! book, journals, temporary files) is the default VFS's own, opened in
//! place.

use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::{Once, OnceLock};

use rusqlite::ffi::{self, sqlite3_file, sqlite3_int64, sqlite3_io_methods, sqlite3_vfs};

/// The size of a WAL frame's header (`WAL_FRAME_HDRSIZE`).
const FRAME_HEADER: usize = 24;

/// Bytes gathered at most before they are written: the most the unix VFS
/// writes in one call (its `seekAndWrite` keeps 17 bits of the length). A
/// learned game's frames go in about six writes.
const GATHER_LIMIT: usize = 0x1ffff;

const NAME: &CStr = c"learnbook-wal";

/// A WAL file: our methods first, the default VFS's file right after us.
#[repr(C)]
struct WalFile {
    base: sqlite3_file,
    real: *mut sqlite3_file,
    /// Bytes written but not yet passed on, from offset `at`.
    gathered: Vec<u8>,
    at: i64,
    /// The last write was a commit frame's header: its page ends the
    /// transaction's frames.
    commit_next: bool,
}

/// The default VFS and our methods for WAL files.
struct Shared {
    real: *mut sqlite3_vfs,
    methods: sqlite3_io_methods,
}

// Written once, before SQLite is given the VFS, then only read.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

static SHARED: OnceLock<Shared> = OnceLock::new();
static REGISTER: Once = Once::new();

/// Makes this VFS SQLite's default, once, before the first connection
/// opens. With no default VFS to wrap, nothing changes.
pub(super) fn register() {
    REGISTER.call_once(|| unsafe {
        let real = ffi::sqlite3_vfs_find(ptr::null());
        if real.is_null() {
            return;
        }
        let mut vfs: sqlite3_vfs = ptr::read(real);
        vfs.szOsFile = std::mem::size_of::<WalFile>() as c_int + (*real).szOsFile;
        vfs.zName = NAME.as_ptr();
        vfs.pNext = ptr::null_mut();
        vfs.xOpen = Some(open);
        if SHARED
            .set(Shared {
                real,
                methods: methods(),
            })
            .is_err()
        {
            return;
        }
        ffi::sqlite3_vfs_register(Box::leak(Box::new(vfs)), 1);
    });
}

/// The name of the VFS under this one (SQLite's default before it).
pub(super) fn wrapped_name() -> Option<String> {
    let shared = SHARED.get()?;
    // SAFETY: a registered VFS lives as long as the process.
    let name = unsafe { (*shared.real).zName };
    (!name.is_null()).then(|| {
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    })
}

fn methods() -> sqlite3_io_methods {
    sqlite3_io_methods {
        iVersion: 3,
        xClose: Some(close),
        xRead: Some(read),
        xWrite: Some(write),
        xTruncate: Some(truncate),
        xSync: Some(sync),
        xFileSize: Some(file_size),
        xLock: Some(lock),
        xUnlock: Some(unlock),
        xCheckReservedLock: Some(check_reserved_lock),
        xFileControl: Some(file_control),
        xSectorSize: Some(sector_size),
        xDeviceCharacteristics: Some(device_characteristics),
        xShmMap: Some(shm_map),
        xShmLock: Some(shm_lock),
        xShmBarrier: Some(shm_barrier),
        xShmUnmap: Some(shm_unmap),
        xFetch: Some(fetch),
        xUnfetch: Some(unfetch),
    }
}

unsafe extern "C" fn open(
    _vfs: *mut sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(shared) = SHARED.get() else {
        return ffi::SQLITE_ERROR;
    };
    let Some(real_open) = (*shared.real).xOpen else {
        return ffi::SQLITE_ERROR;
    };
    if flags & ffi::SQLITE_OPEN_WAL == 0 {
        // Not a WAL: the default VFS's file, in our room (it is larger).
        return real_open(shared.real, name, file, flags, out_flags);
    }
    let wal = file.cast::<WalFile>();
    let real = file
        .cast::<u8>()
        .add(std::mem::size_of::<WalFile>())
        .cast::<sqlite3_file>();
    (*wal).base.pMethods = ptr::null();
    let rc = real_open(shared.real, name, real, flags, out_flags);
    if rc != ffi::SQLITE_OK || (*real).pMethods.is_null() {
        // SQLite calls no method of a file it failed to open: close what
        // the default VFS may have left open.
        if let Some(close) = (*real).pMethods.as_ref().and_then(|m| m.xClose) {
            close(real);
        }
        return if rc == ffi::SQLITE_OK {
            ffi::SQLITE_CANTOPEN
        } else {
            rc
        };
    }
    ptr::write(
        wal,
        WalFile {
            base: sqlite3_file {
                pMethods: &shared.methods,
            },
            real,
            gathered: Vec::new(),
            at: 0,
            commit_next: false,
        },
    );
    rc
}

unsafe fn wal<'a>(file: *mut sqlite3_file) -> &'a mut WalFile {
    &mut *file.cast::<WalFile>()
}

unsafe fn real_methods(w: &WalFile) -> &sqlite3_io_methods {
    &*(*w.real).pMethods
}

/// Writes what is gathered, if anything: before any call but a write.
unsafe fn flush(w: &mut WalFile) -> c_int {
    w.commit_next = false;
    if w.gathered.is_empty() {
        return ffi::SQLITE_OK;
    }
    let rc = write_through(
        w,
        w.gathered.as_ptr().cast(),
        w.gathered.len() as c_int,
        w.at,
    );
    w.gathered.clear();
    rc
}

/// The default VFS's write.
unsafe fn write_through(w: &WalFile, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    match real_methods(w).xWrite {
        Some(x) => x(w.real, buf, amount, offset),
        None => ffi::SQLITE_IOERR_WRITE,
    }
}

/// Whether `header` (a frame header) is a commit frame's: its second field,
/// the database size after the commit, is not zero.
fn is_commit_header(header: &[u8]) -> bool {
    header.len() == FRAME_HEADER && header[4..8] != [0, 0, 0, 0]
}

unsafe extern "C" fn write(
    file: *mut sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: sqlite3_int64,
) -> c_int {
    let w = wal(file);
    let Ok(len) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let bytes = std::slice::from_raw_parts(buf.cast::<u8>(), len);
    let commit = std::mem::replace(&mut w.commit_next, false);
    let end = w.at + w.gathered.len() as i64;
    if !w.gathered.is_empty() && offset >= w.at && offset + len as i64 <= end {
        // A frame of this transaction written again (SQLite rewrites
        // headers, and pages it changes again, in place).
        let from = (offset - w.at) as usize;
        w.gathered[from..from + len].copy_from_slice(bytes);
    } else if !w.gathered.is_empty() && offset == end && w.gathered.len() + len <= GATHER_LIMIT {
        w.gathered.extend_from_slice(bytes);
    } else {
        let rc = flush(w);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        if len > GATHER_LIMIT {
            return write_through(w, buf, amount, offset);
        }
        w.at = offset;
        w.gathered.extend_from_slice(bytes);
    }
    if commit {
        return flush(w);
    }
    w.commit_next = is_commit_header(bytes);
    ffi::SQLITE_OK
}

unsafe extern "C" fn close(file: *mut sqlite3_file) -> c_int {
    let w = wal(file);
    let flushed = flush(w);
    let closed = match real_methods(w).xClose {
        Some(x) => x(w.real),
        None => ffi::SQLITE_OK,
    };
    ptr::drop_in_place(ptr::addr_of_mut!(w.gathered));
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

/// The rest: what is gathered written, then the default VFS's method.
macro_rules! pass {
    ($name:ident, $method:ident, $missing:expr, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        unsafe extern "C" fn $name(file: *mut sqlite3_file $(, $arg: $ty)*) -> $ret {
            let w = wal(file);
            let rc = flush(w);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            match real_methods(w).$method {
                Some(x) => x(w.real $(, $arg)*),
                None => $missing,
            }
        }
    };
}

pass!(read, xRead, ffi::SQLITE_IOERR_READ, (buf: *mut c_void, amount: c_int, offset: sqlite3_int64) -> c_int);
pass!(truncate, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, (size: sqlite3_int64) -> c_int);
pass!(sync, xSync, ffi::SQLITE_IOERR_FSYNC, (flags: c_int) -> c_int);
pass!(file_size, xFileSize, ffi::SQLITE_IOERR_FSTAT, (size: *mut sqlite3_int64) -> c_int);
pass!(lock, xLock, ffi::SQLITE_OK, (level: c_int) -> c_int);
pass!(unlock, xUnlock, ffi::SQLITE_OK, (level: c_int) -> c_int);
pass!(check_reserved_lock, xCheckReservedLock, ffi::SQLITE_OK, (out: *mut c_int) -> c_int);
pass!(file_control, xFileControl, ffi::SQLITE_NOTFOUND, (op: c_int, arg: *mut c_void) -> c_int);
pass!(shm_map, xShmMap, ffi::SQLITE_IOERR_SHMMAP, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int);
pass!(shm_lock, xShmLock, ffi::SQLITE_IOERR_SHMLOCK, (offset: c_int, n: c_int, flags: c_int) -> c_int);
pass!(shm_unmap, xShmUnmap, ffi::SQLITE_OK, (delete: c_int) -> c_int);
pass!(fetch, xFetch, ffi::SQLITE_OK, (offset: sqlite3_int64, amount: c_int, out: *mut *mut c_void) -> c_int);
pass!(unfetch, xUnfetch, ffi::SQLITE_OK, (offset: sqlite3_int64, page: *mut c_void) -> c_int);

unsafe extern "C" fn sector_size(file: *mut sqlite3_file) -> c_int {
    let w = wal(file);
    flush(w);
    match real_methods(w).xSectorSize {
        Some(x) => x(w.real),
        None => 4096,
    }
}

unsafe extern "C" fn device_characteristics(file: *mut sqlite3_file) -> c_int {
    let w = wal(file);
    flush(w);
    match real_methods(w).xDeviceCharacteristics {
        Some(x) => x(w.real),
        None => 0,
    }
}

unsafe extern "C" fn shm_barrier(file: *mut sqlite3_file) {
    let w = wal(file);
    flush(w);
    if let Some(x) = real_methods(w).xShmBarrier {
        x(w.real);
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    /// Rows of `n` transactions of 40 rows each, a page of text a row.
    fn fill(conn: &Connection, from: i64, n: i64) {
        for t in from..from + n {
            let tx = conn.unchecked_transaction().expect("transaction");
            for r in 0..40 {
                let id = t * 100 + r;
                tx.execute(
                    "INSERT OR REPLACE INTO t(id, v) VALUES (?1, ?2)",
                    rusqlite::params![id % 997, format!("{id:04000}")],
                )
                .expect("insert");
            }
            tx.commit().expect("commit");
        }
    }

    /// A new database `b.sqlite` through this VFS, in a directory of its own.
    fn new_database() -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        super::register();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("b.sqlite");
        let conn = Connection::open(&path).expect("open");
        (dir, path, conn)
    }

    #[test]
    fn another_connection_sees_each_commit_at_once() {
        let (_dir, path, writer) = new_database();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
                 CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);",
            )
            .expect("schema");
        let reader = Connection::open(&path).expect("open a reader");
        let mut ids = std::collections::HashSet::new();
        for t in 0..20 {
            ids.extend((0..40).map(|r| (t * 100 + r) % 997));
            // 40 pages a transaction: more than one write's worth of frames.
            fill(&writer, t, 1);
            let rows: i64 = reader
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .expect("the reader's query");
            assert_eq!(rows, ids.len() as i64, "after commit {t}");
        }
        let ok: String = reader
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("integrity_check");
        assert_eq!(ok, "ok");
    }

    #[test]
    fn a_copy_of_the_files_of_an_open_book_recovers_every_commit() {
        let (dir, path, conn) = new_database();
        let vfs: String = conn
            .query_row("PRAGMA main.journal_mode = WAL", [], |r| r.get(0))
            .expect("WAL");
        assert_eq!(vfs, "wal");
        // A cache of a few pages: transactions spill pages into the WAL and
        // write them again, so SQLite rewrites frame headers alone. No sync
        // at a commit, as a book has it: nothing but the commit's own write
        // passes the frames on.
        conn.execute_batch(
            "PRAGMA cache_size = 4; PRAGMA wal_autocheckpoint = 0; PRAGMA synchronous = NORMAL;
             CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);",
        )
        .expect("schema");
        fill(&conn, 0, 30);
        let wal = dir.path().join("b.sqlite-wal");
        let frames = std::fs::metadata(&wal).expect("a WAL").len();
        assert!(frames > 100 * 4120, "{frames} bytes of WAL");
        // What a killed process leaves: the book and its WAL, no index.
        let copy = dir.path().join("c.sqlite");
        std::fs::copy(&path, &copy).expect("copy");
        std::fs::copy(&wal, dir.path().join("c.sqlite-wal")).expect("copy WAL");
        let expected: Vec<(i64, String)> = conn
            .prepare("SELECT id, v FROM t ORDER BY id")
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .expect("rows");
        let recovered = Connection::open(&copy).expect("open the copy");
        let rows: Vec<(i64, String)> = recovered
            .prepare("SELECT id, v FROM t ORDER BY id")
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .expect("rows of the copy");
        assert_eq!(rows.len(), expected.len());
        assert!(rows == expected, "the recovered rows differ");
        let ok: String = recovered
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("integrity_check");
        assert_eq!(ok, "ok");
        // The connections went through this VFS.
        let default = unsafe {
            std::ffi::CStr::from_ptr((*rusqlite::ffi::sqlite3_vfs_find(std::ptr::null())).zName)
        };
        assert_eq!(default, super::NAME);
    }
}
