//! A thin VFS over SQLite's default one that writes each WAL frame with one
//! system call instead of two. SQLite writes a frame as its 24-byte header
//! and then its page, two `pwrite`s side by side; a learned game commits
//! about 126 frames, and on this project's machines a `pwrite` costs about
//! as much as copying the page (a header and a page apart: 4.5 us, the
//! two in one write: 2.7 us). A header is held back only between two
//! writes: when the write before it on the same file was a write too (a
//! frame of `walWriteOneFrame`, whose page comes next); any other call on
//! the file writes it first, so nothing held outlives the writes SQLite
//! makes in a row. Every other file (the book, journals, temporary files)
//! is the default VFS's own, opened in place.

use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::{Once, OnceLock};

use rusqlite::ffi::{self, sqlite3_file, sqlite3_int64, sqlite3_io_methods, sqlite3_vfs};

/// The size of a WAL frame's header (`WAL_FRAME_HDRSIZE`).
const FRAME_HEADER: usize = 24;

const NAME: &CStr = c"learnbook-wal";

/// A WAL file: our methods first, the default VFS's file right after us.
#[repr(C)]
struct WalFile {
    base: sqlite3_file,
    real: *mut sqlite3_file,
    /// A frame header written but not yet passed on: its offset and bytes.
    held: Option<(i64, [u8; FRAME_HEADER])>,
    /// Whether the last call on this file was a write.
    after_write: bool,
    /// A frame's header and page put together.
    frame: Vec<u8>,
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
            held: None,
            after_write: false,
            frame: Vec::new(),
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

/// Writes the held header, if any: before any call but a write.
unsafe fn flush(w: &mut WalFile) -> c_int {
    w.after_write = false;
    let Some((offset, header)) = w.held.take() else {
        return ffi::SQLITE_OK;
    };
    match real_methods(w).xWrite {
        Some(x) => x(
            w.real,
            header.as_ptr().cast(),
            FRAME_HEADER as c_int,
            offset,
        ),
        None => ffi::SQLITE_IOERR_WRITE,
    }
}

unsafe extern "C" fn write(
    file: *mut sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: sqlite3_int64,
) -> c_int {
    let w = wal(file);
    let Some(real_write) = real_methods(w).xWrite else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let after_write = std::mem::replace(&mut w.after_write, true);
    let Ok(len) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    if let Some((at, header)) = w.held.take() {
        if at + FRAME_HEADER as i64 == offset {
            // The page of the held header: one write for the frame.
            w.frame.clear();
            w.frame.extend_from_slice(&header);
            w.frame
                .extend_from_slice(std::slice::from_raw_parts(buf.cast::<u8>(), len));
            return real_write(w.real, w.frame.as_ptr().cast(), w.frame.len() as c_int, at);
        }
        let rc = real_write(w.real, header.as_ptr().cast(), FRAME_HEADER as c_int, at);
        if rc != ffi::SQLITE_OK {
            w.after_write = false;
            return rc;
        }
    }
    if len == FRAME_HEADER && after_write {
        let mut header = [0u8; FRAME_HEADER];
        header.copy_from_slice(std::slice::from_raw_parts(buf.cast::<u8>(), len));
        w.held = Some((offset, header));
        return ffi::SQLITE_OK;
    }
    real_write(w.real, buf, amount, offset)
}

unsafe extern "C" fn close(file: *mut sqlite3_file) -> c_int {
    let w = wal(file);
    let flushed = flush(w);
    let closed = match real_methods(w).xClose {
        Some(x) => x(w.real),
        None => ffi::SQLITE_OK,
    };
    ptr::drop_in_place(ptr::addr_of_mut!(w.frame));
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

/// The rest: the held header written, then the default VFS's method.
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

    #[test]
    fn a_copy_of_the_files_of_an_open_book_recovers_every_commit() {
        super::register();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("b.sqlite");
        let conn = Connection::open(&path).expect("open");
        let vfs: String = conn
            .query_row("PRAGMA main.journal_mode = WAL", [], |r| r.get(0))
            .expect("WAL");
        assert_eq!(vfs, "wal");
        // A cache of a few pages: transactions spill pages into the WAL and
        // write them again, so SQLite rewrites frame headers alone.
        conn.execute_batch(
            "PRAGMA cache_size = 4; PRAGMA wal_autocheckpoint = 0;
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
