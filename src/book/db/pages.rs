//! A new book's tables written as SQLite's own pages, for `build`: rows in
//! key order into an empty table's B-tree, without SQLite's per-row insert
//! (bound parameters, a record made by the VDBE, a B-tree insert: about
//! 1 us a row, most of a build's writing).
//!
//! The pages follow SQLite's file format (<https://sqlite.org/fileformat2.html>):
//! records, a rowid table's B-tree ([`TableWriter`]) or an index B-tree
//! (`WITHOUT ROWID` tables and indexes, [`IndexWriter`]), leaves and
//! interior pages filled to a chosen share (room left for rows learned
//! later), the top page written at the tree's own root page, the new pages
//! after the file's last one. The
//! file's header then counts them and moves its change counter, so that
//! SQLite reads the file afresh at its next transaction, as it does after
//! another process's write. SQLite must have no transaction open meanwhile
//! (and no WAL: a new book is written unjournaled, see
//! [`Book::write_unjournaled`](super::book::Book::write_unjournaled)).
//! A row too large for one page (SQLite would give it overflow pages) is
//! handed back, for an ordinary insert.
//!
//! What the writer assumes of the file is checked before a page is written
//! ([`file_unsuitable`]; the tables by [`super::rows::mismatch`]), and the
//! root is checked to be an empty leaf; rows out of key order are refused
//! as they arrive ([`Push::OutOfOrder`]), and [`TableWriter::abandon`]
//! then gives the file back as it was, so that the caller writes the
//! table through SQLite instead (docs/FASTPATHS.md).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use rusqlite::Connection;

/// What became of a row handed to a page writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Push {
    Added,
    /// Too large for one page: nothing added (SQLite gives it overflow
    /// pages; the caller inserts it).
    TooLarge,
    /// Not after the rows before it in the tree's order: nothing added,
    /// and the tree cannot be finished (see [`TableWriter::abandon`]).
    OutOfOrder,
}

/// Why the book at `path`, open on `conn`, cannot take pages written
/// beside SQLite (`None`: it can): a transaction open, a WAL, another text
/// encoding, auto-vacuum (pointer-map pages), a schema format before 4
/// (no serial types 8 and 9), another payload fraction, or a page size
/// SQLite and the header disagree on.
pub(super) fn file_unsuitable(conn: &Connection, path: &Path) -> Result<Option<String>> {
    if !conn.is_autocommit() {
        return Ok(Some("a transaction is open".into()));
    }
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if mode.eq_ignore_ascii_case("wal") {
        return Ok(Some("the book is in WAL mode".into()));
    }
    let encoding: String = conn.query_row("PRAGMA encoding", [], |r| r.get(0))?;
    if encoding != "UTF-8" {
        return Ok(Some(format!("the book's text is {encoding}")));
    }
    let auto_vacuum: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
    if auto_vacuum != 0 {
        return Ok(Some(format!("auto_vacuum is {auto_vacuum}")));
    }
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        return Ok(Some("a WAL file with frames beside the book".into()));
    }
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = [0u8; 100];
    file.read_exact_at(&mut h, 0)
        .with_context(|| format!("reading the header of {}", path.display()))?;
    let header_size = match u16::from_be_bytes([h[16], h[17]]) {
        1 => 65536,
        n => i64::from(n),
    };
    let u32_at = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    Ok(if &h[..16] != b"SQLite format 3\0" {
        Some("not an SQLite file".into())
    } else if header_size != page_size {
        Some(format!(
            "page size {header_size} in the header, {page_size} by SQLite"
        ))
    } else if (h[18], h[19]) != (1, 1) {
        Some(format!("file format versions {} / {}", h[18], h[19]))
    } else if h[21..24] != [64, 32, 32] {
        Some("payload fractions other than 64 / 32 / 32".into())
    } else if u32_at(44) != 4 {
        Some(format!("schema format {}", u32_at(44)))
    } else if u32_at(56) != 1 {
        Some(format!("text encoding {} in the header", u32_at(56)))
    } else if u32_at(52) != 0 {
        Some("auto-vacuum in the header".into())
    } else {
        None
    })
}

/// A value as SQLite stores it (after the column's affinity).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Value<'a> {
    Null,
    Int(i64),
    /// A value of a REAL column: one with no fraction is stored as an
    /// integer, as SQLite stores it (the column's affinity reads it back
    /// as REAL).
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

impl Value<'_> {
    /// `Some(v)` as an integer, `None` as NULL.
    #[cfg(test)]
    pub fn int(v: Option<i64>) -> Value<'static> {
        v.map_or(Value::Null, Value::Int)
    }

    /// The integer SQLite stores a REAL column's value as, if any
    /// (`sqlite3RealSameAsInt`: zero, or a whole number below 2^51).
    fn real_as_int(x: f64) -> Option<i64> {
        let i = x as i64;
        (x == 0.0 || (x.to_bits() == (i as f64).to_bits() && (-(1 << 51)..1 << 51).contains(&i)))
            .then_some(i)
    }

    /// SQLite's serial type of the value and the bytes of its body.
    fn serial(&self) -> (u64, usize) {
        if let Value::Real(x) = *self {
            if let Some(i) = Value::real_as_int(x) {
                return Value::Int(i).serial();
            }
        }
        match *self {
            Value::Null => (0, 0),
            Value::Int(0) => (8, 0),
            Value::Int(1) => (9, 0),
            Value::Int(v) => {
                let len = int_len(v);
                let serial = match len {
                    1..=4 => len as u64,
                    6 => 5,
                    _ => 6,
                };
                (serial, len)
            }
            Value::Real(_) => (7, 8),
            Value::Text(s) => (13 + 2 * s.len() as u64, s.len()),
            Value::Blob(b) => (12 + 2 * b.len() as u64, b.len()),
        }
    }
}

/// The bytes SQLite stores an integer in: 1, 2, 3, 4, 6 or 8.
fn int_len(v: i64) -> usize {
    match v {
        -0x80..=0x7f => 1,
        -0x8000..=0x7fff => 2,
        -0x80_0000..=0x7f_ffff => 3,
        -0x8000_0000..=0x7fff_ffff => 4,
        -0x8000_0000_0000..=0x7fff_ffff_ffff => 6,
        _ => 8,
    }
}

/// Appends SQLite's variable-length integer: big-endian groups of 7 bits,
/// a 9th byte carrying 8.
fn put_varint(v: u64, out: &mut Vec<u8>) {
    if v > 0x00ff_ffff_ffff_ffff {
        let mut buf = [0u8; 9];
        buf[8] = v as u8;
        let mut x = v >> 8;
        for b in buf[..8].iter_mut().rev() {
            *b = (x & 0x7f) as u8 | 0x80;
            x >>= 7;
        }
        out.extend_from_slice(&buf);
        return;
    }
    let mut buf = [0u8; 9];
    let mut n = 0;
    let mut x = v;
    loop {
        buf[n] = (x & 0x7f) as u8 | 0x80;
        n += 1;
        x >>= 7;
        if x == 0 {
            break;
        }
    }
    buf[0] &= 0x7f;
    out.extend(buf[..n].iter().rev());
}

fn varint_len(v: u64) -> usize {
    if v > 0x00ff_ffff_ffff_ffff {
        return 9;
    }
    (64 - v.leading_zeros() as usize).div_ceil(7).max(1)
}

/// Appends the record of `values` (a row's columns in the table's order;
/// a rowid alias column as NULL, as SQLite stores it).
pub(super) fn encode_record(values: &[Value], out: &mut Vec<u8>) {
    let types: usize = values.iter().map(|v| varint_len(v.serial().0)).sum();
    // The header's size counts its own varint.
    let mut header = types + 1;
    while types + varint_len(header as u64) != header {
        header = types + varint_len(header as u64);
    }
    put_varint(header as u64, out);
    for v in values {
        put_varint(v.serial().0, out);
    }
    for v in values {
        match *v {
            Value::Null => {}
            Value::Int(x) => {
                let len = v.serial().1;
                out.extend_from_slice(&x.to_be_bytes()[8 - len..]);
            }
            Value::Real(x) => match Value::real_as_int(x) {
                Some(i) => {
                    let len = v.serial().1;
                    out.extend_from_slice(&i.to_be_bytes()[8 - len..]);
                }
                None => out.extend_from_slice(&x.to_bits().to_be_bytes()),
            },
            Value::Text(s) => out.extend_from_slice(s.as_bytes()),
            Value::Blob(b) => out.extend_from_slice(b),
        }
    }
}

/// The geometry of a database file, from its header.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    page_size: usize,
    /// Bytes of a page SQLite uses (less what an extension reserves).
    usable: usize,
    /// Pages in the file.
    pages: u32,
    change_counter: u32,
}

fn read_geometry(file: &File, path: &Path) -> Result<Geometry> {
    let mut h = [0u8; 100];
    file.read_exact_at(&mut h, 0)
        .with_context(|| format!("reading the header of {}", path.display()))?;
    if &h[..16] != b"SQLite format 3\0" {
        bail!("{} is not an SQLite database", path.display());
    }
    let page_size = match u16::from_be_bytes([h[16], h[17]]) {
        1 => 65536,
        n => usize::from(n),
    };
    if !page_size.is_power_of_two() || page_size < 512 {
        bail!("{}: page size {page_size} in its header", path.display());
    }
    let u32_at = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    let change_counter = u32_at(24);
    let len = file
        .metadata()
        .with_context(|| format!("reading the size of {}", path.display()))?
        .len();
    // The header's page count holds only while its "valid for" matches
    // the change counter; the file's size always does.
    let pages = if u32_at(92) == change_counter && u32_at(28) > 0 {
        u32_at(28)
    } else {
        (len / page_size as u64) as u32
    };
    if len != pages as u64 * page_size as u64 {
        bail!(
            "{}: {len} bytes, not the {pages} pages its header counts",
            path.display()
        );
    }
    Ok(Geometry {
        page_size,
        usable: page_size - usize::from(h[20]),
        pages,
        change_counter,
    })
}

/// The pages of one new B-tree: written after the file's last page as
/// they fill, the top one at the tree's root page, then the header.
struct NewPages {
    file: File,
    path: std::path::PathBuf,
    geometry: Geometry,
    root: u32,
    /// Pages written so far after the file's last one.
    written: u32,
    /// Bytes of a page filled with cells at most (the rest left free:
    /// interior pages too, or a leaf split would split its parent).
    fill_limit: usize,
}

impl NewPages {
    /// The tree whose root is page `root` of the book at `path`, its pages
    /// filled to `fill` (0.5 to 1); `leaf` is the page type of an empty
    /// tree of its kind.
    fn open(path: &Path, root: u32, leaf: u8, fill: f64) -> Result<NewPages> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        // Frames in a WAL would hide the pages written here from SQLite.
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            bail!(
                "internal error: {} has a WAL; its pages are written only without one",
                path.display()
            );
        }
        let geometry = read_geometry(&file, path)?;
        if root < 2 || root > geometry.pages {
            bail!("{}: no page {root} for a root", path.display());
        }
        // The root must be an empty leaf of the tree's kind: nothing under
        // it is lost when the new top page takes its place.
        let mut top = [0u8; 8];
        let at = (u64::from(root) - 1) * geometry.page_size as u64;
        file.read_exact_at(&mut top, at)
            .with_context(|| format!("reading {}", path.display()))?;
        if top[0] != leaf || top[3..5] != [0, 0] {
            bail!(
                "internal error: page {root} of {} is not an empty leaf (type {}, {} cells)",
                path.display(),
                top[0],
                u16::from_be_bytes([top[3], top[4]])
            );
        }
        Ok(NewPages {
            file,
            path: path.to_path_buf(),
            geometry,
            root,
            written: 0,
            fill_limit: (geometry.usable as f64 * fill.clamp(0.5, 1.0)) as usize,
        })
    }

    fn usable(&self) -> usize {
        self.geometry.usable
    }

    /// A page of type `kind` holding `cells`; an interior one has its
    /// `right` child.
    fn image(&self, kind: u8, cells: &Cells, right: Option<u32>) -> Vec<u8> {
        let mut page = vec![0u8; self.geometry.page_size];
        let header = if right.is_some() {
            INTERIOR_HEADER
        } else {
            LEAF_HEADER
        };
        lay_out(&mut page, self.usable(), kind, header, cells.iter());
        if let Some(right) = right {
            page[8..12].copy_from_slice(&right.to_be_bytes());
        }
        page
    }

    fn write_at(&mut self, number: u32, page: &[u8]) -> Result<()> {
        let at = (u64::from(number) - 1) * self.geometry.page_size as u64;
        self.file
            .write_all_at(page, at)
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Writes `page` after the last one; returns its number.
    fn append(&mut self, page: &[u8]) -> Result<u32> {
        let number = self.geometry.pages + self.written + 1;
        self.write_at(number, page)?;
        self.written += 1;
        Ok(number)
    }

    /// Gives the file back as it was: the pages written so far (all after
    /// its last page; the root and the header are written only by
    /// [`NewPages::finish`]) cut off.
    fn abandon(self) -> Result<()> {
        let g = self.geometry;
        self.file
            .set_len(u64::from(g.pages) * g.page_size as u64)
            .with_context(|| format!("cutting {} back", self.path.display()))
    }

    /// Writes the top page at the root, and the file's header: its page
    /// count and change counter.
    fn finish(mut self, root_image: &[u8]) -> Result<()> {
        // The top page was built last: it takes the root's page, and the
        // pages written before it follow the file's last page unbroken.
        self.write_at(self.root, root_image)?;
        let g = self.geometry;
        let pages = g.pages + self.written;
        let counter = g.change_counter.wrapping_add(1);
        self.file
            .write_all_at(&counter.to_be_bytes(), 24)
            .and_then(|()| self.file.write_all_at(&pages.to_be_bytes(), 28))
            .and_then(|()| self.file.write_all_at(&counter.to_be_bytes(), 92))
            .with_context(|| format!("writing the header of {}", self.path.display()))
    }
}

/// Lays `cells` out from the end of the usable bytes down, their pointers
/// in order after a header of `header` bytes; writes the page type, the
/// number of cells and where their content starts.
fn lay_out<'c>(
    page: &mut [u8],
    usable: usize,
    kind: u8,
    header: usize,
    cells: impl Iterator<Item = &'c [u8]>,
) {
    let mut top = usable;
    let mut n = 0;
    for cell in cells {
        top -= cell.len();
        page[top..top + cell.len()].copy_from_slice(cell);
        page[header + 2 * n..header + 2 * n + 2].copy_from_slice(&(top as u16).to_be_bytes());
        n += 1;
    }
    page[0] = kind;
    page[3..5].copy_from_slice(&(n as u16).to_be_bytes());
    page[5..7].copy_from_slice(&content_start(top));
}

/// Cells in one buffer, each ending where `ends` says.
#[derive(Default)]
struct Cells {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Cells {
    fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(a, &b)| &self.bytes[a..b])
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Bytes of a page holding these cells and `extra` more bytes of one
    /// more, after a header of `header` bytes.
    fn used_with(&self, header: usize, extra: usize) -> usize {
        header + 2 * (self.ends.len() + 1) + self.bytes.len() + extra
    }

    fn push(&mut self, cell: &[u8]) {
        self.bytes.extend_from_slice(cell);
        self.ends.push(self.bytes.len());
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

/// A table's B-tree being written: rows go in rowid order; leaves and
/// interior pages are written as they fill, the root last at its page.
pub(super) struct TableWriter {
    pages: NewPages,
    leaf: Cells,
    leaf_last: i64,
    /// Interior levels, lowest first: each the (child page, largest rowid
    /// under it) entries of the page it fills.
    levels: Vec<Vec<(u32, i64)>>,
    last_rowid: Option<i64>,
    buf: Vec<u8>,
}

/// Interior pages: a 12-byte header (its last 4 bytes the right child).
const INTERIOR_HEADER: usize = 12;
/// Leaves: an 8-byte header.
const LEAF_HEADER: usize = 8;

impl TableWriter {
    /// Starts the B-tree of the empty table whose root is page `root` of
    /// the book at `path`, its leaves filled to `fill` (0.5 to 1) of a page.
    pub fn new(path: &Path, root: u32, fill: f64) -> Result<TableWriter> {
        let pages = NewPages::open(path, root, 0x0d, fill)?;
        Ok(TableWriter {
            pages,
            leaf: Cells::default(),
            leaf_last: 0,
            levels: Vec::new(),
            last_rowid: None,
            buf: Vec::new(),
        })
    }

    /// The largest record a leaf holds whole (SQLite's `U - 35`).
    pub fn max_local(&self) -> usize {
        self.pages.usable() - 35
    }

    /// Adds the row `rowid` with the record `record` ([`encode_record`]),
    /// after every row added before it.
    pub fn push(&mut self, rowid: i64, record: &[u8]) -> Result<Push> {
        if self.last_rowid.is_some_and(|last| rowid <= last) {
            return Ok(Push::OutOfOrder);
        }
        if record.len() > self.max_local() {
            return Ok(Push::TooLarge);
        }
        self.last_rowid = Some(rowid);
        let mut cell = std::mem::take(&mut self.buf);
        cell.clear();
        put_varint(record.len() as u64, &mut cell);
        put_varint(rowid as u64, &mut cell);
        cell.extend_from_slice(record);
        if self.leaf.len() > 0
            && self.leaf.used_with(LEAF_HEADER, cell.len()) > self.pages.fill_limit
        {
            self.seal_leaf()?;
        }
        self.leaf.push(&cell);
        self.leaf_last = rowid;
        self.buf = cell;
        Ok(Push::Added)
    }

    /// Stops, the file as it was before [`TableWriter::new`]: the table
    /// still empty, for SQLite to fill.
    pub fn abandon(self) -> Result<()> {
        self.pages.abandon()
    }

    /// Writes the leaf as a new page and lists it in the level above.
    fn seal_leaf(&mut self) -> Result<()> {
        let image = self.leaf_image();
        let number = self.pages.append(&image)?;
        self.leaf.clear();
        self.add_child(0, number, self.leaf_last)
    }

    fn leaf_image(&self) -> Vec<u8> {
        self.pages.image(0x0d, &self.leaf, None)
    }

    /// Lists page `child` (rowids up to `last`) in interior level `level`,
    /// writing that level's page when it is full.
    fn add_child(&mut self, level: usize, child: u32, last: i64) -> Result<()> {
        if self.levels.len() == level {
            self.levels.push(Vec::new());
        }
        let entries = &self.levels[level];
        // All entries but the last are cells; the last is the right child.
        let cells: usize = entries.iter().map(|&(_, k)| 4 + varint_len(k as u64)).sum();
        if INTERIOR_HEADER + 2 * entries.len() + cells > self.pages.fill_limit {
            // Full with this one as a cell: the page keeps all but its last
            // entry, which opens the next page with the new one, so that no
            // page is left with a right child and no cell.
            let mut entries = std::mem::take(&mut self.levels[level]);
            let carried = entries.pop();
            let image = self.interior_image(&entries);
            let number = self.pages.append(&image)?;
            let largest = entries.last().map_or(0, |&(_, k)| k);
            self.levels[level].extend(carried);
            self.add_child(level + 1, number, largest)?;
        }
        self.levels[level].push((child, last));
        Ok(())
    }

    /// An interior page of `entries` (the last as its right child).
    fn interior_image(&self, entries: &[(u32, i64)]) -> Vec<u8> {
        // A level always holds two entries or more when its page is made.
        let (right, cells) = entries
            .split_last()
            .map_or((0, &[][..]), |(&(right, _), cells)| (right, cells));
        let mut all = Cells::default();
        let mut cell = Vec::with_capacity(13);
        for &(child, key) in cells {
            cell.clear();
            cell.extend_from_slice(&child.to_be_bytes());
            put_varint(key as u64, &mut cell);
            all.push(&cell);
        }
        self.pages.image(0x05, &all, Some(right))
    }

    /// Writes what is left, the top page at the table's root, and the
    /// file's header.
    pub fn finish(mut self) -> Result<()> {
        let root_image = if self.levels.is_empty() {
            self.leaf_image()
        } else {
            if self.leaf.len() > 0 {
                self.seal_leaf()?;
            }
            let mut level = 0;
            loop {
                let entries = std::mem::take(&mut self.levels[level]);
                if level + 1 == self.levels.len() {
                    break self.interior_image(&entries);
                }
                let image = self.interior_image(&entries);
                let number = self.pages.append(&image)?;
                let largest = entries.last().map_or(0, |&(_, k)| k);
                self.add_child(level + 1, number, largest)?;
                level += 1;
            }
        };
        self.pages.finish(&root_image)
    }
}

/// An index B-tree being written (a `WITHOUT ROWID` table's, or an
/// index's): records in the index's order, each once. Unlike a table's,
/// an interior page holds records: the one between two pages moves up.
pub(super) struct IndexWriter {
    pages: NewPages,
    leaf: Cells,
    /// Interior levels, lowest first: the cells (child page, then the
    /// record after everything under it) of the page each fills.
    levels: Vec<Cells>,
    buf: Vec<u8>,
    /// The key of the last record added.
    last_key: Option<(i64, i64)>,
}

impl IndexWriter {
    /// Starts the B-tree whose root is page `root` of the book at `path`,
    /// its leaves filled to `fill` (0.5 to 1) of a page.
    pub fn new(path: &Path, root: u32, fill: f64) -> Result<IndexWriter> {
        let pages = NewPages::open(path, root, 0x0a, fill)?;
        Ok(IndexWriter {
            pages,
            leaf: Cells::default(),
            levels: Vec::new(),
            buf: Vec::new(),
            last_key: None,
        })
    }

    /// The largest record an index page holds whole (SQLite's
    /// `(U - 12) * 64 / 255 - 23`).
    pub fn max_local(&self) -> usize {
        (self.pages.usable() - 12) * 64 / 255 - 23
    }

    /// Adds `record`, whose first two columns are the integers `key`,
    /// after every record added before it: keys strictly ascending (as
    /// SQLite orders integers under any collation), each once.
    pub fn push(&mut self, key: (i64, i64), record: &[u8]) -> Result<Push> {
        if self.last_key.is_some_and(|last| key <= last) {
            return Ok(Push::OutOfOrder);
        }
        if record.len() > self.max_local() {
            return Ok(Push::TooLarge);
        }
        self.last_key = Some(key);
        let mut cell = std::mem::take(&mut self.buf);
        cell.clear();
        put_varint(record.len() as u64, &mut cell);
        cell.extend_from_slice(record);
        // Two records always fit in a page: a leaf is sealed with one at
        // least after its last moves up.
        if self.leaf.len() > 1
            && self.leaf.used_with(LEAF_HEADER, cell.len()) > self.pages.fill_limit
        {
            // The leaf's last record goes up, between this leaf and the next.
            let last = self.leaf.ends.len() - 1;
            let from = if last == 0 {
                0
            } else {
                self.leaf.ends[last - 1]
            };
            let divider = self.leaf.bytes[from..].to_vec();
            self.leaf.bytes.truncate(from);
            self.leaf.ends.pop();
            let image = self.leaf_image();
            let number = self.pages.append(&image)?;
            self.leaf.clear();
            self.add_child(0, number, &divider)?;
        }
        self.leaf.push(&cell);
        self.buf = cell;
        Ok(Push::Added)
    }

    /// Stops, the file as it was before [`IndexWriter::new`].
    pub fn abandon(self) -> Result<()> {
        self.pages.abandon()
    }

    fn leaf_image(&self) -> Vec<u8> {
        self.pages.image(0x0a, &self.leaf, None)
    }

    /// Lists page `child` in interior level `level`, followed by
    /// `divider` (a leaf cell: the record's size and the record). A level's
    /// last child is its page's right child, set by [`IndexWriter::finish`].
    fn add_child(&mut self, level: usize, child: u32, divider: &[u8]) -> Result<()> {
        if self.levels.len() == level {
            self.levels.push(Cells::default());
        }
        let mut cell = Vec::with_capacity(4 + divider.len());
        cell.extend_from_slice(&child.to_be_bytes());
        cell.extend_from_slice(divider);
        let cells = &self.levels[level];
        if cells.len() > 1 && cells.used_with(INTERIOR_HEADER, cell.len()) > self.pages.fill_limit {
            // Full: its last cell's child becomes its right child, and that
            // cell's record goes up, between this page and the next.
            let mut cells = std::mem::take(&mut self.levels[level]);
            let last = cells.ends.len() - 1;
            let from = if last == 0 { 0 } else { cells.ends[last - 1] };
            let right = u32::from_be_bytes([
                cells.bytes[from],
                cells.bytes[from + 1],
                cells.bytes[from + 2],
                cells.bytes[from + 3],
            ]);
            let up = cells.bytes[from + 4..].to_vec();
            cells.bytes.truncate(from);
            cells.ends.pop();
            let image = self.interior_image(&cells, right);
            let number = self.pages.append(&image)?;
            self.add_child(level + 1, number, &up)?;
        }
        self.levels[level].push(&cell);
        Ok(())
    }

    fn interior_image(&self, cells: &Cells, right: u32) -> Vec<u8> {
        self.pages.image(0x02, cells, Some(right))
    }

    /// Writes what is left, the top page at the root, and the header.
    pub fn finish(mut self) -> Result<()> {
        let mut image = self.leaf_image();
        let mut level = 0;
        while level < self.levels.len() {
            // The page below is this level's last child.
            let child = self.pages.append(&image)?;
            let cells = std::mem::take(&mut self.levels[level]);
            image = self.interior_image(&cells, child);
            level += 1;
        }
        self.pages.finish(&image)
    }
}

/// A page header's "start of the cell content area" (0 for 65536).
fn content_start(top: usize) -> [u8; 2] {
    (top as u32 as u16).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn varint(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(v, &mut out);
        out
    }

    #[test]
    fn varints_are_sqlites() {
        assert_eq!(varint(0), [0]);
        assert_eq!(varint(0x7f), [0x7f]);
        assert_eq!(varint(0x80), [0x81, 0x00]);
        assert_eq!(varint(0x3fff), [0xff, 0x7f]);
        assert_eq!(varint(0x4000), [0x81, 0x80, 0x00]);
        assert_eq!(varint(u64::MAX), [0xff; 9]);
        for v in [
            0u64,
            1,
            127,
            128,
            16383,
            16384,
            1 << 56,
            (1 << 56) - 1,
            u64::MAX,
        ] {
            assert_eq!(varint(v).len(), varint_len(v), "{v}");
        }
    }

    /// A row of the test table `t(id INTEGER PRIMARY KEY, i INTEGER, r
    /// REAL, s TEXT, b BLOB)`.
    type Row = (i64, Option<i64>, Option<f64>, String, Vec<u8>);

    fn values(row: &Row) -> [Value<'_>; 5] {
        [
            Value::Null,
            Value::int(row.1),
            row.2.map_or(Value::Null, Value::Real),
            Value::Text(&row.3),
            Value::Blob(&row.4),
        ]
    }

    /// A book-like file whose table `t` is written by the page writer
    /// (between two tables SQLite wrote), the rows too large for it
    /// inserted by SQLite after.
    fn table_of(dir: &Path, page_size: u32, fill: f64, rows: &[Row]) -> Connection {
        let path = dir.join("t.sqlite");
        let _ = std::fs::remove_file(&path);
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(&format!(
            "PRAGMA page_size = {page_size}; PRAGMA journal_mode = OFF;
             CREATE TABLE a(x); INSERT INTO a VALUES (1);
             CREATE TABLE t(id INTEGER PRIMARY KEY, i INTEGER, r REAL, s TEXT, b BLOB);
             CREATE TABLE z(y); INSERT INTO z VALUES (2);"
        ))
        .expect("schema");
        let root: u32 = conn
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 't'",
                [],
                |r| r.get(0),
            )
            .expect("root");
        let mut w = TableWriter::new(&path, root, fill).expect("writer");
        let mut record = Vec::new();
        let mut apart = Vec::new();
        for row in rows {
            record.clear();
            encode_record(&values(row), &mut record);
            match w.push(row.0, &record).expect("push") {
                Push::Added => {}
                Push::TooLarge => apart.push(row),
                Push::OutOfOrder => panic!("rows out of order"),
            }
        }
        w.finish().expect("finish");
        for (id, i, r, s, b) in apart {
            conn.execute(
                "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![id, i, r, s, b],
            )
            .expect("insert apart");
        }
        conn
    }

    fn integrity(conn: &Connection) -> String {
        conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("integrity_check")
    }

    /// SQLite reads back exactly `rows` (each value with its type), and
    /// the tables around `t` are untouched.
    fn check_table(conn: &Connection, rows: &[Row]) {
        assert_eq!(integrity(conn), "ok");
        let quoted = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> Vec<String> {
            let mut st = conn.prepare(sql).expect("prepare");
            let got = st
                .query_map(params, |r| r.get::<_, String>(0))
                .expect("query")
                .collect::<rusqlite::Result<Vec<_>>>()
                .expect("rows");
            got
        };
        let got = quoted(
            "SELECT id || ' ' || quote(i) || ' ' || quote(r) || ' ' || quote(s) || ' ' || quote(b) FROM t ORDER BY id",
            &[],
        );
        let want: Vec<String> = rows
            .iter()
            .flat_map(|(id, i, r, s, b)| {
                quoted(
                    "SELECT ?1 || ' ' || quote(?2) || ' ' || quote(?3) || ' ' || quote(?4) || ' ' || quote(?5)",
                    &[id, i, r, s, b],
                )
            })
            .collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "rows differ");
        let a: i64 = conn
            .query_row("SELECT x FROM a", [], |r| r.get(0))
            .expect("a");
        let z: i64 = conn
            .query_row("SELECT y FROM z", [], |r| r.get(0))
            .expect("z");
        assert_eq!((a, z), (1, 2));
    }

    /// Pseudo-random numbers (xorshift), the same for a seed.
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed | 1;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// `n` rows in rowid order with every kind of value, about one in a
    /// hundred too large for a page of 4 KB.
    fn rows(n: i64, seed: u64) -> Vec<Row> {
        let mut next = xorshift(seed);
        let ints = [
            0i64,
            1,
            -1,
            127,
            -128,
            128,
            32767,
            -32769,
            1 << 23,
            1 << 31,
            -(1 << 40),
            1 << 47,
            i64::MIN,
            i64::MAX,
        ];
        let mut id = i64::MIN / 2;
        (0..n)
            .map(|_| {
                id += 1 + (next() % 1000) as i64;
                let r = next();
                let i = match r % 3 {
                    0 => None,
                    1 => Some(ints[(r >> 8) as usize % ints.len()]),
                    _ => Some(next() as i64),
                };
                let reals = [
                    2.0,
                    0.0,
                    -0.0,
                    -1.0,
                    1.5,
                    4503599627370496.0,
                    -2251799813685248.0,
                ];
                let real = match r % 5 {
                    0 => None,
                    1 => Some(reals[(r >> 40) as usize % reals.len()]),
                    _ => Some(f64::from_bits(next() >> 2)),
                };
                let s = "é".repeat((r >> 16) as usize % 64 * 7);
                let b = if r.is_multiple_of(97) {
                    vec![9; 5000]
                } else {
                    vec![(r >> 24) as u8; (r >> 32) as usize % 200]
                };
                (id, i, real, s, b)
            })
            .collect()
    }

    #[test]
    fn sqlite_reads_the_rows_the_pages_hold_at_any_depth_and_fill() {
        let dir = tempfile::tempdir().expect("dir");
        for (n, page_size, fill) in [
            (0, 4096, 1.0),
            (1, 4096, 1.0),
            (3, 512, 0.9),
            (2_000, 4096, 0.89),
            (20_000, 512, 1.0),
            (20_000, 1024, 0.6),
        ] {
            let rows = rows(n, 7 + n as u64);
            let conn = table_of(dir.path(), page_size, fill, &rows);
            check_table(&conn, &rows);
            // SQLite keeps writing the table as its own.
            conn.execute_batch(
                "INSERT INTO t(id, s) VALUES (-5, 'new'), (9223372036854775807, 'last');
                 DELETE FROM t WHERE id % 3 = 0;",
            )
            .expect("write after");
            assert_eq!(integrity(&conn), "ok", "{n} rows, pages of {page_size}");
        }
    }

    /// `n` distinct `(a, b)` keys in index order (integers, then text as
    /// SQLite's BINARY collation compares it), each with a blob.
    fn keyed(n: usize, seed: u64) -> Vec<(i64, String, Vec<u8>)> {
        let mut next = xorshift(seed);
        let mut rows: Vec<(i64, String, Vec<u8>)> = (0..n)
            .map(|i| {
                let r = next();
                let a = (r % 50) as i64 - 25 + if r.is_multiple_of(7) { i64::MIN / 3 } else { 0 };
                // Records of up to 70 bytes: a page of 512 holds them whole.
                let b = format!("{}{i}", "ü".repeat((r >> 8) as usize % 10));
                (a, b, vec![(r >> 16) as u8; (r >> 24) as usize % 40])
            })
            .collect();
        rows.sort_by(|x, y| (x.0, x.1.as_bytes()).cmp(&(y.0, y.1.as_bytes())));
        rows
    }

    #[test]
    fn sqlite_reads_an_index_tree_the_pages_hold_at_any_depth_and_fill() {
        let dir = tempfile::tempdir().expect("dir");
        for (n, page_size, fill) in [
            (0, 4096, 1.0),
            (1, 4096, 0.9),
            (5, 512, 0.6),
            (3_000, 4096, 0.9),
            (30_000, 512, 1.0),
            (30_000, 1024, 0.7),
        ] {
            let path = dir.path().join("w.sqlite");
            let _ = std::fs::remove_file(&path);
            let conn = Connection::open(&path).expect("open");
            conn.execute_batch(&format!(
                "PRAGMA page_size = {page_size}; PRAGMA journal_mode = OFF;
                 CREATE TABLE a(x); INSERT INTO a VALUES (1);
                 CREATE TABLE w(a INTEGER NOT NULL, b TEXT NOT NULL, c BLOB, PRIMARY KEY(a, b)) WITHOUT ROWID;"
            ))
            .expect("schema");
            let root: u32 = conn
                .query_row(
                    "SELECT rootpage FROM sqlite_schema WHERE name = 'w'",
                    [],
                    |r| r.get(0),
                )
                .expect("root");
            let rows = keyed(n, 11 + n as u64);
            let mut w = IndexWriter::new(&path, root, fill).expect("writer");
            let mut record = Vec::new();
            for (i, (a, b, c)) in rows.iter().enumerate() {
                record.clear();
                encode_record(
                    &[Value::Int(*a), Value::Text(b), Value::Blob(c)],
                    &mut record,
                );
                // Sorted by (a, b): (a, rank) ascends with it.
                let pushed = w.push((*a, i as i64), &record).expect("push");
                assert_eq!(pushed, Push::Added);
            }
            w.finish().expect("finish");
            assert_eq!(integrity(&conn), "ok", "{n} rows, pages of {page_size}");
            let mut st = conn
                .prepare("SELECT a, b, c FROM w ORDER BY a, b")
                .expect("select");
            let got: Vec<(i64, String, Vec<u8>)> = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows");
            assert!(got == rows, "{n} rows read back differ");
            // Looked up by key, and written by SQLite afterwards.
            if let Some((a, b, c)) = rows.get(n / 2) {
                let found: Vec<u8> = conn
                    .query_row(
                        "SELECT c FROM w WHERE a = ?1 AND b = ?2",
                        rusqlite::params![a, b],
                        |r| r.get(0),
                    )
                    .expect("lookup");
                assert_eq!(&found, c);
            }
            conn.execute_batch(
                "INSERT INTO w VALUES (0, 'new', x'00'); DELETE FROM w WHERE a % 3 = 0;",
            )
            .expect("write after");
            assert_eq!(
                integrity(&conn),
                "ok",
                "{n} rows, pages of {page_size}, after"
            );
        }
    }

    /// A table and its unique index both written as pages: SQLite's
    /// `integrity_check` finds every row in the index and nothing more.
    #[test]
    fn a_table_and_its_index_written_as_pages_agree() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("g.sqlite");
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode = OFF;
             CREATE TABLE g(id INTEGER PRIMARY KEY, h INTEGER NOT NULL UNIQUE, s TEXT);",
        )
        .expect("schema");
        let root = |name: &str| -> u32 {
            conn.query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .expect("root")
        };
        let (table, index) = (root("g"), root("sqlite_autoindex_g_1"));
        let mut next = xorshift(99);
        let mut hashes: Vec<(i64, i64)> = (1..=40_000).map(|id| (next() as i64, id)).collect();
        let mut record = Vec::new();
        let mut t = TableWriter::new(&path, table, 1.0).expect("table");
        for &(h, id) in &hashes {
            record.clear();
            let s = format!("game {id}");
            encode_record(&[Value::Null, Value::Int(h), Value::Text(&s)], &mut record);
            assert_eq!(t.push(id, &record).expect("push"), Push::Added);
        }
        t.finish().expect("table finish");
        hashes.sort_unstable();
        let mut i = IndexWriter::new(&path, index, 0.9).expect("index");
        for &(h, id) in &hashes {
            record.clear();
            encode_record(&[Value::Int(h), Value::Int(id)], &mut record);
            assert_eq!(i.push((h, id), &record).expect("push"), Push::Added);
        }
        i.finish().expect("index finish");
        assert_eq!(integrity(&conn), "ok");
        let (h, id) = hashes[12_345];
        let found: i64 = conn
            .query_row("SELECT id FROM g WHERE h = ?1", [h], |r| r.get(0))
            .expect("by hash");
        assert_eq!(found, id);
        // The unique index refuses a repeated hash, as SQLite's own would.
        assert!(conn.execute("INSERT INTO g(h) VALUES (?1)", [h]).is_err());
    }

    /// A file with an empty table `t` (rowid) and an empty index tree `w`
    /// between tables SQLite wrote; their root pages.
    fn empty_trees(path: &Path) -> (Connection, u32, u32) {
        let conn = Connection::open(path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode = OFF;
             CREATE TABLE a(x); INSERT INTO a VALUES (1);
             CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT);
             CREATE TABLE w(a INTEGER NOT NULL, b INTEGER NOT NULL, PRIMARY KEY(a, b)) WITHOUT ROWID;
             CREATE TABLE z(y); INSERT INTO z VALUES (2);",
        )
        .expect("schema");
        let root = |name: &str| -> u32 {
            conn.query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .expect("root")
        };
        let (t, w) = (root("t"), root("w"));
        (conn, t, w)
    }

    /// Rows out of order are refused as they arrive, and the writer
    /// abandoned leaves the file as it was: SQLite fills the tables itself.
    #[test]
    fn rows_out_of_order_are_refused_and_the_file_given_back() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("o.sqlite");
        let (conn, t, w) = empty_trees(&path);
        let before = std::fs::read(&path).expect("read");
        let mut table = TableWriter::new(&path, t, 1.0).expect("writer");
        let mut record = Vec::new();
        for id in 1..=3000 {
            record.clear();
            let s = format!("row {id} {}", "x".repeat(40));
            encode_record(&[Value::Null, Value::Text(&s)], &mut record);
            assert_eq!(table.push(id, &record).expect("push"), Push::Added);
        }
        assert_eq!(table.push(3000, &record).expect("push"), Push::OutOfOrder);
        assert_eq!(table.push(17, &record).expect("push"), Push::OutOfOrder);
        table.abandon().expect("abandon");
        let mut index = IndexWriter::new(&path, w, 1.0).expect("index writer");
        for k in 0..2000 {
            record.clear();
            encode_record(&[Value::Int(k), Value::Int(1)], &mut record);
            assert_eq!(index.push((k, 1), &record).expect("push"), Push::Added);
        }
        assert_eq!(
            index.push((1999, 0), &record).expect("push"),
            Push::OutOfOrder
        );
        // A record too large for an index page is handed back.
        assert_eq!(
            index.push((5000, 0), &[0u8; 2000]).expect("push"),
            Push::TooLarge
        );
        index.abandon().expect("abandon");
        assert!(
            std::fs::read(&path).expect("read") == before,
            "the file changed"
        );
        conn.execute_batch("INSERT INTO t(s) VALUES ('by SQLite'); INSERT INTO w VALUES (1, 2);")
            .expect("SQLite writes the tables");
        assert_eq!(integrity(&conn), "ok");
        let rows: i64 = conn
            .query_row(
                "SELECT (SELECT count(*) FROM t) + (SELECT count(*) FROM w)",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(rows, 2);
    }

    #[test]
    fn a_root_that_is_not_an_empty_leaf_or_a_damaged_file_are_errors() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.sqlite");
        let (conn, t, w) = empty_trees(&path);
        // The tree's kind: a table's writer on an index root and back.
        assert!(TableWriter::new(&path, w, 1.0).is_err());
        assert!(IndexWriter::new(&path, t, 1.0).is_err());
        conn.execute("INSERT INTO t(s) VALUES ('x')", [])
            .expect("insert");
        assert!(
            TableWriter::new(&path, t, 1.0).is_err(),
            "a table with a row"
        );
        assert!(TableWriter::new(&path, 10_000, 1.0).is_err());
        // A WAL with frames: refused.
        std::fs::write(dir.path().join("d.sqlite-wal"), [1u8; 32]).expect("wal");
        assert!(IndexWriter::new(&path, w, 1.0).is_err());
        let junk = dir.path().join("junk");
        std::fs::write(&junk, [7u8; 4096]).expect("junk");
        assert!(TableWriter::new(&junk, 2, 1.0).is_err());
    }

    /// Each assumption about the file, broken, is named before a page is
    /// written; a book as `build` makes it passes.
    #[test]
    fn a_file_the_writer_cannot_take_is_found() {
        let dir = tempfile::tempdir().expect("dir");
        for (setup, said) in [
            ("PRAGMA journal_mode = OFF", None),
            ("PRAGMA journal_mode = WAL", Some("WAL")),
            ("PRAGMA encoding = 'UTF-16le'", Some("UTF-16")),
            ("PRAGMA auto_vacuum = FULL", Some("auto_vacuum")),
            ("PRAGMA legacy_file_format = ON", None),
            ("BEGIN", Some("transaction")),
        ] {
            let path = dir.path().join(format!("f{}.sqlite", setup.len()));
            let _ = std::fs::remove_file(&path);
            let conn = Connection::open(&path).expect("open");
            // Settings that apply to a new file come before its first table.
            let (before, after) = if setup == "BEGIN" {
                ("", setup)
            } else {
                (setup, "")
            };
            conn.execute_batch(&format!(
                "{before}; CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT); {after};"
            ))
            .expect(setup);
            let why = file_unsuitable(&conn, &path).expect("check");
            match said {
                None => assert_eq!(why, None, "{setup}"),
                Some(s) => assert!(
                    why.as_deref().is_some_and(|w| w.contains(s)),
                    "{setup}: {why:?}"
                ),
            }
        }
    }
}
