//! A thin VFS over SQLite's unix VFS that writes a transaction's WAL
//! frames together, not two system calls a frame (the crate's only FFI:
//! every `unsafe` of the book is here). SQLite writes a frame as its
//! 24-byte header and then its page, two `pwrite`s side by side; a learned
//! game commits about 126 frames, and a `pwrite` costs about as much as
//! copying the page. Here the frames a transaction appends are gathered
//! in memory and passed on together (in parts of less than 128 KB, the
//! most the unix VFS writes at once) when its commit frame's page arrives,
//! so SQLite gets that write's result before it publishes the commit to
//! readers (docs/FASTPATHS.md has the measured gain).
//!
//! Not SQLite's default: the VFS is registered once under its own name
//! ([`name`]) and only a book's writing connection names it when it opens
//! (`open_with_flags_and_vfs`); every other connection of the process, and
//! every file but a WAL (the book, journals, temporary files), is the unix
//! VFS's own. What it assumes is checked as it runs, and it falls back to
//! passing every write straight on:
//!
//! * the VFS under it is the unix VFS (its name starts with `unix`), whose
//!   write size is known; otherwise [`name`] is `None` and the book opens
//!   on SQLite's default VFS;
//! * a transaction's frames arrive as header (24 bytes) then page (the
//!   page size, from the WAL's header or the first frame), each appended
//!   at the end of the WAL, a commit frame's header (its database size not
//!   zero) followed by its page. Gathered are only frames appended so;
//!   rewrites in place inside them are copied in; any other write passes
//!   any gathered bytes on first, and itself straight on; a write that
//!   appends otherwise (another size, a commit header not followed by its
//!   page) turns the file to passing everything straight on for good.
//!
//! So nothing gathered outlives the frames SQLite appends in a row before
//! a commit: a killed process loses only frames of a transaction that had
//! not committed, which recovery ignores anyway.

#![deny(unsafe_op_in_unsafe_fn)]

use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use rusqlite::ffi::{self, sqlite3_file, sqlite3_int64, sqlite3_io_methods, sqlite3_vfs};

/// The size of a WAL frame's header (`WAL_FRAME_HDRSIZE`).
const FRAME_HEADER: usize = 24;
/// The size of the WAL's own header (`WAL_HDRSIZE`).
const WAL_HEADER: usize = 32;

/// Bytes gathered at most before they are written: below the most the unix
/// VFS writes in one call (its `seekAndWrite` keeps 17 bits of the
/// length). A learned game's frames go in about six writes.
const GATHER_LIMIT: usize = 0x1ffff;

const NAME: &CStr = c"learnbook-wal";

/// Frames gathered, and WAL files that fell back to passing every write
/// on: statistics, for the tests.
static FRAMES_GATHERED: AtomicU64 = AtomicU64::new(0);
static FELL_BACK: AtomicU64 = AtomicU64::new(0);

/// A WAL file: our methods first, the unix VFS's file right after us.
#[repr(C)]
struct WalFile {
    base: sqlite3_file,
    real: *mut sqlite3_file,
    /// Bytes written but not yet passed on, from offset `at`.
    gathered: Vec<u8>,
    at: i64,
    /// The end of the frames appended so far (`None`: none seen yet).
    frontier: Option<i64>,
    /// The page size of the frames.
    page_size: Option<usize>,
    /// Where the page of the frame whose header was appended last goes.
    page_at: Option<i64>,
    /// That header was a commit frame's: its page ends the transaction.
    commit_next: bool,
    /// The writes left the pattern: every write passed straight on.
    plain: bool,
}

/// The unix VFS and our methods for WAL files.
struct Shared {
    real: *mut sqlite3_vfs,
    methods: sqlite3_io_methods,
}

// SAFETY: `real` points to a VFS SQLite registered, which lives as long as
// the process and which SQLite lets any thread use; `Shared` is written
// once, before our VFS is registered, and only read after.
unsafe impl Send for Shared {}
// SAFETY: as for `Send`: never written after it is made.
unsafe impl Sync for Shared {}

static SHARED: OnceLock<Option<Shared>> = OnceLock::new();

/// The name to open a book's writing connection with, registering the VFS
/// (once, not as the default) the first time; `None` when SQLite's
/// default VFS is not the unix VFS this one is made for.
pub(super) fn name() -> Option<&'static str> {
    SHARED.get_or_init(register).as_ref()?;
    NAME.to_str().ok()
}

fn register() -> Option<Shared> {
    // SAFETY: `sqlite3_vfs_find` initialises SQLite if needed and returns
    // the default VFS, or NULL; a VFS it returns stays registered.
    let real = unsafe { ffi::sqlite3_vfs_find(ptr::null()) };
    if real.is_null() {
        return None;
    }
    // SAFETY: `real` is a registered VFS (above); its name is a C string
    // it owns for as long as it is registered.
    let real_name = unsafe { (*real).zName };
    if real_name.is_null()
        // SAFETY: as above, `real_name` is not NULL.
        || !unsafe { CStr::from_ptr(real_name) }
            .to_bytes()
            .starts_with(b"unix")
    {
        return None;
    }
    // SAFETY: `real` is a valid VFS (above); a copy of it is a VFS with
    // the same methods, whose open we replace and whose files we make
    // larger by a `WalFile`.
    let mut vfs: sqlite3_vfs = unsafe { ptr::read(real) };
    // SAFETY: as above.
    vfs.szOsFile = std::mem::size_of::<WalFile>() as c_int + unsafe { (*real).szOsFile };
    vfs.zName = NAME.as_ptr();
    vfs.pNext = ptr::null_mut();
    vfs.xOpen = Some(open);
    let shared = Shared {
        real,
        methods: methods(),
    };
    // SAFETY: the VFS is leaked (SQLite keeps the pointer for the life of
    // the process); 0: not the default. Our `open` reads `SHARED`, which
    // is set when this function returns, before `name` gives any
    // connection the name to open it by.
    let rc = unsafe { ffi::sqlite3_vfs_register(Box::leak(Box::new(vfs)), 0) };
    (rc == ffi::SQLITE_OK).then_some(shared)
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

/// The VFS's `xOpen`: a WAL as a [`WalFile`] over the unix VFS's file,
/// anything else the unix VFS's file itself.
///
/// SAFETY (for callers, i.e. SQLite): `file` points to `szOsFile` bytes
/// (our `WalFile` and the unix VFS's file after it), `name` and
/// `out_flags` as `xOpen` documents.
unsafe extern "C" fn open(
    _vfs: *mut sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(Some(shared)) = SHARED.get() else {
        return ffi::SQLITE_ERROR;
    };
    // SAFETY: `shared.real` is the registered unix VFS.
    let Some(real_open) = (unsafe { (*shared.real).xOpen }) else {
        return ffi::SQLITE_ERROR;
    };
    if flags & ffi::SQLITE_OPEN_WAL == 0 {
        // SAFETY: not a WAL: the unix VFS's file, in our room (larger).
        return unsafe { real_open(shared.real, name, file, flags, out_flags) };
    }
    let wal = file.cast::<WalFile>();
    // SAFETY: the room SQLite gives is a `WalFile` and then the unix
    // VFS's file (`szOsFile`); `WalFile` is `repr(C)` and its alignment
    // (of pointers) is the unix file's.
    let real = unsafe {
        file.cast::<u8>()
            .add(std::mem::size_of::<WalFile>())
            .cast::<sqlite3_file>()
    };
    // SAFETY: `wal` and `real` point into the room above; the unix VFS
    // opens its file in its part; SQLite calls no method of a file it
    // failed to open, so ours are set only once the file is open, and on
    // failure the unix VFS's file is closed here.
    unsafe {
        (*wal).base.pMethods = ptr::null();
        let rc = real_open(shared.real, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK || (*real).pMethods.is_null() {
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
                frontier: None,
                page_size: None,
                page_at: None,
                commit_next: false,
                plain: false,
            },
        );
        rc
    }
}

/// Our file behind SQLite's pointer.
///
/// SAFETY (for callers): `file` is a file our `open` opened as a WAL (our
/// methods are set only on those), not closed, and SQLite calls one
/// method of a file at a time.
unsafe fn wal<'a>(file: *mut sqlite3_file) -> &'a mut WalFile {
    // SAFETY: as the function's contract says.
    unsafe { &mut *file.cast::<WalFile>() }
}

/// The unix VFS's methods of `w`'s file.
fn real_methods(w: &WalFile) -> &sqlite3_io_methods {
    // SAFETY: `w.real` was opened by the unix VFS, which set its methods
    // (checked not NULL in `open`), and stays open while `w` is.
    unsafe { &*(*w.real).pMethods }
}

/// Writes what is gathered, if anything: before any call but a write.
fn flush(w: &mut WalFile) -> c_int {
    w.commit_next = false;
    if w.gathered.is_empty() {
        return ffi::SQLITE_OK;
    }
    let gathered = std::mem::take(&mut w.gathered);
    let rc = write_through(w, &gathered, w.at);
    w.gathered = gathered;
    w.gathered.clear();
    rc
}

/// The unix VFS's write of `bytes` at `offset`.
fn write_through(w: &WalFile, bytes: &[u8], offset: i64) -> c_int {
    let Ok(amount) = c_int::try_from(bytes.len()) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    match real_methods(w).xWrite {
        // SAFETY: `w.real` is open (see `real_methods`); `bytes` is valid
        // for `amount` bytes during the call.
        Some(x) => unsafe { x(w.real, bytes.as_ptr().cast(), amount, offset) },
        None => ffi::SQLITE_IOERR_WRITE,
    }
}

/// Whether `header` (a frame header) is a commit frame's: its second field,
/// the database size after the commit, is not zero.
fn is_commit_header(header: &[u8]) -> bool {
    header.len() == FRAME_HEADER && header[4..8] != [0, 0, 0, 0]
}

/// What a write to the WAL is, against the pattern it is expected in.
#[derive(Debug, PartialEq, Eq)]
enum Write {
    /// Inside the gathered bytes: copied in.
    Within,
    /// A frame's header or page appended at the end: gathered.
    Append { page: bool },
    /// Anything else behind the end (a checksum rewritten, a page spilled
    /// before written again, the WAL's header): passed straight on.
    Through,
    /// An append out of the pattern: passed on, and so is every write after.
    OutOfPattern,
}

/// Sorts the write of `len` bytes at `offset` (see [`Write`]).
fn classify(w: &WalFile, len: usize, offset: i64) -> Write {
    let end = w.at + w.gathered.len() as i64;
    if !w.gathered.is_empty() && offset >= w.at && offset + len as i64 <= end {
        return Write::Within;
    }
    let appends = w.frontier.is_none_or(|f| offset >= f);
    if w.commit_next && w.page_at != Some(offset) {
        // A commit frame's header not followed by its page.
        return Write::OutOfPattern;
    }
    let frame = |p: usize| (FRAME_HEADER + p) as i64;
    if len == FRAME_HEADER && w.frontier.is_none_or(|f| offset == f) {
        let aligned = w.page_size.is_none_or(|p| {
            offset >= WAL_HEADER as i64 && (offset - WAL_HEADER as i64) % frame(p) == 0
        });
        if aligned {
            return Write::Append { page: false };
        }
    }
    if w.page_at == Some(offset) && w.frontier == Some(offset) {
        let size_ok = match w.page_size {
            Some(p) => len == p,
            None => len.is_power_of_two() && (512..=65536).contains(&len),
        };
        if size_ok {
            return Write::Append { page: true };
        }
    }
    if appends {
        Write::OutOfPattern
    } else {
        Write::Through
    }
}

/// The VFS's `xWrite` for a WAL.
///
/// SAFETY (for callers, i.e. SQLite): `file` as for [`wal`]; `buf` is
/// valid for `amount` bytes.
unsafe extern "C" fn write(
    file: *mut sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: sqlite3_int64,
) -> c_int {
    // SAFETY: as the function's contract says.
    let w = unsafe { wal(file) };
    let Ok(len) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: as the function's contract says.
    let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
    if w.plain {
        return write_through(w, bytes, offset);
    }
    if offset == 0 && len == WAL_HEADER {
        // The WAL's header: a new WAL (or one started again), its page
        // size at bytes 8..12. Frames follow it.
        let rc = flush(w);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let size = u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
        w.page_size = (size.is_power_of_two() && (512..=65536).contains(&size)).then_some(size);
        w.frontier = Some(WAL_HEADER as i64);
        w.page_at = None;
        return write_through(w, bytes, offset);
    }
    match classify(w, len, offset) {
        Write::Within => {
            let from = (offset - w.at) as usize;
            w.gathered[from..from + len].copy_from_slice(bytes);
            ffi::SQLITE_OK
        }
        Write::Append { page } => {
            let end = w.at + w.gathered.len() as i64;
            if !w.gathered.is_empty() && (offset != end || w.gathered.len() + len > GATHER_LIMIT) {
                let rc = flush(w);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
            }
            if w.gathered.is_empty() {
                w.at = offset;
            }
            w.gathered.extend_from_slice(bytes);
            w.frontier = Some(offset + len as i64);
            if page {
                FRAMES_GATHERED.fetch_add(1, Ordering::Relaxed);
                w.page_size = Some(len);
                w.page_at = None;
                if std::mem::replace(&mut w.commit_next, false) {
                    return flush(w);
                }
            } else {
                w.page_at = Some(offset + len as i64);
                w.commit_next = is_commit_header(bytes);
            }
            ffi::SQLITE_OK
        }
        Write::Through => {
            let rc = flush(w);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            write_through(w, bytes, offset)
        }
        Write::OutOfPattern => {
            FELL_BACK.fetch_add(1, Ordering::Relaxed);
            w.plain = true;
            let rc = flush(w);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            write_through(w, bytes, offset)
        }
    }
}

/// The VFS's `xClose` for a WAL: what is gathered written, the unix VFS's
/// file closed, our part dropped.
///
/// SAFETY (for callers, i.e. SQLite): as for [`wal`]; SQLite calls no
/// method of the file after this one.
unsafe extern "C" fn close(file: *mut sqlite3_file) -> c_int {
    // SAFETY: as the function's contract says.
    let w = unsafe { wal(file) };
    let flushed = flush(w);
    let closed = match real_methods(w).xClose {
        // SAFETY: the unix VFS's file is open until this call.
        Some(x) => unsafe { x(w.real) },
        None => ffi::SQLITE_OK,
    };
    // SAFETY: the `Vec` was written by `open` and is dropped once, here;
    // SQLite frees the room itself.
    unsafe { ptr::drop_in_place(ptr::addr_of_mut!(w.gathered)) };
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

/// The rest: what is gathered written, then the unix VFS's method.
macro_rules! pass {
    ($name:ident, $method:ident, $missing:expr, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        /// SAFETY (for callers, i.e. SQLite): as for [`wal`], the
        /// arguments as the method documents.
        unsafe extern "C" fn $name(file: *mut sqlite3_file $(, $arg: $ty)*) -> $ret {
            // SAFETY: as the function's contract says.
            let w = unsafe { wal(file) };
            let rc = flush(w);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            match real_methods(w).$method {
                // SAFETY: the unix VFS's file is open; the arguments are
                // SQLite's own, passed on.
                Some(x) => unsafe { x(w.real $(, $arg)*) },
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

/// SAFETY (for callers, i.e. SQLite): as for [`wal`].
unsafe extern "C" fn sector_size(file: *mut sqlite3_file) -> c_int {
    // SAFETY: as the function's contract says.
    let w = unsafe { wal(file) };
    flush(w);
    match real_methods(w).xSectorSize {
        // SAFETY: the unix VFS's file is open.
        Some(x) => unsafe { x(w.real) },
        None => 4096,
    }
}

/// SAFETY (for callers, i.e. SQLite): as for [`wal`].
unsafe extern "C" fn device_characteristics(file: *mut sqlite3_file) -> c_int {
    // SAFETY: as the function's contract says.
    let w = unsafe { wal(file) };
    flush(w);
    match real_methods(w).xDeviceCharacteristics {
        // SAFETY: the unix VFS's file is open.
        Some(x) => unsafe { x(w.real) },
        None => 0,
    }
}

/// SAFETY (for callers, i.e. SQLite): as for [`wal`].
unsafe extern "C" fn shm_barrier(file: *mut sqlite3_file) {
    // SAFETY: as the function's contract says.
    let w = unsafe { wal(file) };
    flush(w);
    if let Some(x) = real_methods(w).xShmBarrier {
        // SAFETY: the unix VFS's file is open.
        unsafe { x(w.real) };
    }
}

/// The name of SQLite's default VFS (for the tests: never this one).
#[cfg(test)]
fn default_name() -> Option<String> {
    // SAFETY: as in `register`: the default VFS, or NULL.
    let vfs = unsafe { ffi::sqlite3_vfs_find(ptr::null()) };
    if vfs.is_null() {
        return None;
    }
    // SAFETY: a registered VFS and its name live as long as the process.
    let name = unsafe { (*vfs).zName };
    // SAFETY: not NULL, a C string (as above).
    (!name.is_null()).then(|| {
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    })
}

/// Frames gathered and WAL files that fell back, since the process began.
#[cfg(test)]
fn statistics() -> (u64, u64) {
    (
        FRAMES_GATHERED.load(Ordering::Relaxed),
        FELL_BACK.load(Ordering::Relaxed),
    )
}

#[cfg(test)]
mod tests {
    use rusqlite::{Connection, OpenFlags};

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

    /// A connection through this VFS.
    fn open(path: &std::path::Path) -> Connection {
        let name = super::name().expect("the unix VFS under ours");
        Connection::open_with_flags_and_vfs(path, OpenFlags::default(), name).expect("open")
    }

    /// A new database `b.sqlite` through this VFS, in a directory of its own.
    fn new_database() -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("b.sqlite");
        let conn = open(&path);
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
        // A reader on SQLite's own VFS.
        let reader = Connection::open(&path).expect("open a reader");
        let mut ids = std::collections::HashSet::new();
        let (gathered, _) = super::statistics();
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
        // SQLite wrote its frames as this VFS expects: gathered, and no
        // WAL fell back (a newer SQLite writing otherwise fails here).
        let (after, fell_back) = super::statistics();
        assert!(
            after >= gathered + 20 * 40,
            "{gathered} -> {after} frames gathered"
        );
        assert_eq!(fell_back, 0);
    }

    #[test]
    fn a_copy_of_the_files_of_an_open_book_recovers_every_commit() {
        let (dir, path, conn) = new_database();
        let mode: String = conn
            .query_row("PRAGMA main.journal_mode = WAL", [], |r| r.get(0))
            .expect("WAL");
        assert_eq!(mode, "wal");
        // A cache of a few pages: transactions spill pages into the WAL and
        // write them again, so SQLite rewrites frames in place and their
        // checksums after the commit frame. No sync at a commit, as a book
        // has it: nothing but the commit's own write passes the frames on.
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
    }

    /// The VFS is never SQLite's default: a connection that does not name
    /// it is the unix VFS's.
    #[test]
    fn the_vfs_is_named_by_a_connection_never_the_default() {
        let (_dir, _path, _conn) = new_database();
        let default = super::default_name().expect("a default VFS");
        assert_ne!(default, super::NAME.to_string_lossy());
        assert!(default.starts_with("unix"), "{default}");
    }

    /// Writes out of the pattern (another size appended, a commit header
    /// without its page) turn the file to passing every write on.
    #[test]
    fn writes_out_of_the_pattern_are_passed_straight_on() {
        use super::{classify, WalFile, Write};
        let mut w = WalFile {
            // Never used as a file here: only `classify` reads it.
            base: rusqlite::ffi::sqlite3_file {
                pMethods: std::ptr::null(),
            },
            real: std::ptr::null_mut(),
            gathered: Vec::new(),
            at: 0,
            frontier: Some(32),
            page_size: Some(4096),
            page_at: None,
            commit_next: false,
            plain: false,
        };
        assert_eq!(classify(&w, 24, 32), Write::Append { page: false });
        // A frame written whole, in one write.
        assert_eq!(classify(&w, 24 + 4096, 32), Write::OutOfPattern);
        // A header behind the end: a checksum rewritten.
        w.frontier = Some(32 + 10 * 4120);
        assert_eq!(classify(&w, 24, 32 + 3 * 4120), Write::Through);
        // A header off the frames' places.
        assert_eq!(classify(&w, 24, 32 + 10 * 4120 + 8), Write::OutOfPattern);
        // After a commit header, anything but its page.
        w.page_at = Some(32 + 10 * 4120 + 24);
        w.frontier = w.page_at;
        w.commit_next = true;
        assert_eq!(
            classify(&w, 4096, 32 + 10 * 4120 + 24),
            Write::Append { page: true }
        );
        assert_eq!(classify(&w, 24, 32), Write::OutOfPattern);
        assert_eq!(classify(&w, 512, 32 + 10 * 4120 + 24), Write::OutOfPattern);
    }
}
