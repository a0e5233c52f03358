//! `import` of a Polyglot `.bin` within the book's memory budget, whatever
//! the file's size up to 2^32 - 1 entries (a larger file is refused; issue
//! 53). Measured on files of 2 M and 174 M entries (docs/BENCHMARKS.md).
//!
//! The entries stay on disk: in the file itself when it is sorted by key,
//! as Polyglot books are, else in a sorted copy beside the book. A sparse
//! index (the key of every [`BLOCK`]-th entry) finds a key's entries with
//! one read. The walk from the start position goes a ply at a time, a ply's
//! positions past a share of the budget waiting in a file. What the walk
//! finds (each reached entry's child and UCI, each position's smallest
//! depth) goes through external sorts and comes back in the order the book
//! takes it: positions by key, moves in file order. What stays in memory
//! whatever the size: a bit an entry (the positions reached) and the index
//! (8 bytes a block).

use std::{
    fs::File,
    io::{BufRead, BufReader, BufWriter, Read, Write},
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
};

use anyhow::{bail, Context, Result};
use shakmaty::{fen::Fen, CastlingMode, Chess, EnPassantMode, Position};

use crate::db::import::ImportedMove;
use crate::db::Book;
use crate::keys::{polyglot_key, Key, MoveCode};
use crate::memory::default_memory;
use crate::sort::{SortRecord, Sorted, Sorter, TempFiles};
use learnbook_base::atomic_file::Pending;

/// What `import` did.
#[derive(Clone, Debug, Default)]
pub struct ImportSummary {
    pub entries: usize,
    /// Entries whose position was reached from the start position through
    /// book moves: their child positions are known.
    pub reached: usize,
    /// Entries whose move is not legal in the position reached for its key.
    pub illegal: usize,
}

/// Entries a block of the sparse index covers (4 KB of the file).
const BLOCK: u64 = 256;
const ENTRY: u64 = 16;

/// `import --polyglot`: every entry becomes a move with its weight. Positions
/// reachable from the start position through book moves get their depth and
/// child keys; the rest are kept with unknown children (export still writes
/// them, minimax ignores them).
pub fn import(book: &mut Book, path: &Path) -> Result<ImportSummary> {
    let memory = book.memory_budget().unwrap_or_else(default_memory);
    let temp = TempFiles::named(&book.path, None, "import")?;
    let by_key = ByKey::open(path, &temp, memory / 4)?;
    learnbook_base::peak_memory::trace("import: entries indexed");
    let walked = walk(&by_key, &temp, memory / 4)?;
    learnbook_base::peak_memory::trace("import: breadth-first pass");
    let summary = ImportSummary {
        entries: by_key.len as usize,
        reached: walked.reached_count,
        illegal: walked.illegal,
    };
    let positions = PositionsFile::write(&by_key, walked.depths.into_sorted()?, &temp)?;
    drop(by_key);
    learnbook_base::peak_memory::trace("import: positions listed");
    let moves = MovesInFileOrder::new(path, walked.reached.into_sorted()?)?;
    book.add_imported(|| positions.read(), moves)?;
    learnbook_base::peak_memory::trace("import: moves added");
    Ok(summary)
}

/// A `.bin` entry's fields as `import` uses them.
fn parse_entry(e: &[u8]) -> (Key, u16, u16, u32) {
    let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
    (
        Key(be(&e[0..8])),
        be(&e[8..10]) as u16,
        be(&e[10..12]) as u16,
        be(&e[12..16]) as u32,
    )
}

/// The entries in the order by key, on disk: the `.bin` itself when it is
/// sorted (an entry's slot is then its index in the file), else a sorted
/// copy that keeps each entry's index in the file in its `learn` field
/// (ties in file order, as a stable sort leaves them).
struct ByKey {
    file: File,
    path: PathBuf,
    len: u64,
    /// The key at every [`BLOCK`]-th slot.
    index: Vec<Key>,
    /// Whether this is the sorted copy (indices in the `learn` field).
    copy: bool,
    /// The sorted copy, removed when done.
    _copy: Option<Pending>,
}

/// An entry of a key, as the walk plays it.
#[derive(Clone, Copy)]
struct KeyEntry {
    /// Its index in the `.bin`.
    idx: u32,
    mv: u16,
}

impl ByKey {
    /// Checks `path` (the errors of [`super::polyglot::read_bin`]) and
    /// sorts a copy of it if it is not sorted by key.
    fn open(path: &Path, temp: &TempFiles, sort_memory: u64) -> Result<ByKey> {
        let cannot = || format!("cannot read {}", path.display());
        let file = File::open(path).with_context(cannot)?;
        let size = file.metadata().with_context(cannot)?.len();
        if size % ENTRY != 0 {
            bail!(
                "{} is not a Polyglot book: size {} is not a multiple of 16",
                path.display(),
                size
            );
        }
        let len = size / ENTRY;
        if u32::try_from(len).is_err() {
            bail!("{} has more entries than import takes", path.display());
        }
        let mut index = Vec::with_capacity((len / BLOCK + 1) as usize);
        let mut sorted = true;
        let mut last = Key(0);
        for_each_entry(path, |i, e| {
            let (key, ..) = parse_entry(e);
            if i.is_multiple_of(BLOCK) {
                index.push(key);
            }
            sorted &= key >= last;
            last = key;
            Ok(sorted)
        })?;
        if sorted {
            return Ok(ByKey {
                file,
                path: path.to_path_buf(),
                len,
                index,
                copy: false,
                _copy: None,
            });
        }
        let mut sorter: Sorter<Unsorted> =
            Sorter::new(sort_memory, &temp.dir, &format!("{}sort-", temp.prefix));
        for_each_entry(path, |i, e| {
            let (key, mv, weight, _) = parse_entry(e);
            sorter.push(Unsorted {
                key,
                idx: i as u32,
                mv,
                weight,
            })?;
            Ok(true)
        })?;
        let copy_path = temp.path("by-key");
        let guard = Pending::temporary(&copy_path);
        let cannot_write = || format!("cannot write {}", copy_path.display());
        let mut w = BufWriter::with_capacity(
            1 << 16,
            File::create(&copy_path).with_context(cannot_write)?,
        );
        index.clear();
        let mut slot = 0u64;
        sorter.drain(|batch| {
            for u in batch {
                if slot.is_multiple_of(BLOCK) {
                    index.push(u.key);
                }
                slot += 1;
                w.write_all(&u.key.0.to_be_bytes())?;
                w.write_all(&u.mv.to_be_bytes())?;
                w.write_all(&u.weight.to_be_bytes())?;
                w.write_all(&u.idx.to_be_bytes())?;
            }
            Ok(())
        })?;
        w.flush().with_context(cannot_write)?;
        drop(w);
        Ok(ByKey {
            file: File::open(&copy_path).with_context(cannot_write)?,
            path: copy_path,
            len,
            index,
            copy: true,
            _copy: Some(guard),
        })
    }

    /// `key`'s entries into `out`; the slot of the first, if any.
    fn entries_of(
        &self,
        key: Key,
        buf: &mut Vec<u8>,
        out: &mut Vec<KeyEntry>,
    ) -> Result<Option<u64>> {
        out.clear();
        // The key's entries may begin in the block before the first block
        // that begins at or past it.
        let block = self.index.partition_point(|&k| k < key);
        let mut slot = block.saturating_sub(1) as u64 * BLOCK;
        let mut first = None;
        while slot < self.len {
            let count = (BLOCK - slot % BLOCK).min(self.len - slot);
            buf.resize((count * ENTRY) as usize, 0);
            self.file
                .read_exact_at(buf, slot * ENTRY)
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            for (j, e) in buf.chunks_exact(ENTRY as usize).enumerate() {
                let (k, mv, _, learn) = parse_entry(e);
                if k < key {
                    continue;
                }
                if k > key {
                    return Ok(first);
                }
                let at = slot + j as u64;
                first.get_or_insert(at);
                let idx = if self.copy { learn } else { at as u32 };
                out.push(KeyEntry { idx, mv });
            }
            slot += count;
        }
        Ok(first)
    }

    /// Every key once, in order.
    fn for_each_key(&self, mut f: impl FnMut(Key) -> Result<()>) -> Result<()> {
        let mut last = None;
        for_each_entry(&self.path, |_, e| {
            let (key, ..) = parse_entry(e);
            if last != Some(key) {
                f(key)?;
                last = Some(key);
            }
            Ok(true)
        })
    }
}

/// Hands `f` each entry of `path` with its index, until it returns false.
fn for_each_entry(path: &Path, mut f: impl FnMut(u64, &[u8]) -> Result<bool>) -> Result<()> {
    let cannot = || format!("cannot read {}", path.display());
    let mut r = BufReader::with_capacity(1 << 16, File::open(path).with_context(cannot)?);
    let mut e = [0u8; ENTRY as usize];
    let mut i = 0;
    loop {
        match r.read_exact(&mut e) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(err) => return Err(err).with_context(cannot),
        }
        if !f(i, &e)? {
            return Ok(());
        }
        i += 1;
    }
}

/// An entry of an unsorted file, sorted by key, then its index in the file.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Unsorted {
    key: Key,
    idx: u32,
    mv: u16,
    weight: u16,
}

impl SortRecord for Unsorted {
    const SIZE: usize = 16;
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.0.to_le_bytes());
        out.extend_from_slice(&self.idx.to_le_bytes());
        out.extend_from_slice(&self.mv.to_le_bytes());
        out.extend_from_slice(&self.weight.to_le_bytes());
    }
    fn read(b: &[u8]) -> Self {
        Unsorted {
            key: Key(u64_le(&b[0..8])),
            idx: u32_le(&b[8..12]),
            mv: u16::from_le_bytes([b[12], b[13]]),
            weight: u16::from_le_bytes([b[14], b[15]]),
        }
    }
}

/// A reached entry: its index in the file, the position its move leads to
/// and the move in UCI (zero-padded).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Reached {
    idx: u32,
    child: Key,
    uci: [u8; 5],
}

impl SortRecord for Reached {
    const SIZE: usize = 17;
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.idx.to_le_bytes());
        out.extend_from_slice(&self.child.0.to_le_bytes());
        out.extend_from_slice(&self.uci);
    }
    fn read(b: &[u8]) -> Self {
        let mut uci = [0; 5];
        uci.copy_from_slice(&b[12..17]);
        Reached {
            idx: u32_le(&b[0..4]),
            child: Key(u64_le(&b[4..12])),
            uci,
        }
    }
}

/// A position reached, at a depth: the first record of a key has its
/// smallest depth.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Depth {
    key: Key,
    depth: u32,
}

impl SortRecord for Depth {
    const SIZE: usize = 12;
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.0.to_le_bytes());
        out.extend_from_slice(&self.depth.to_le_bytes());
    }
    fn read(b: &[u8]) -> Self {
        Depth {
            key: Key(u64_le(&b[0..8])),
            depth: u32_le(&b[8..12]),
        }
    }
}

fn u64_le(b: &[u8]) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

fn u32_le(b: &[u8]) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

/// What the walk from the start position found.
struct Walked {
    reached: Sorter<Reached>,
    /// Every position reached with its depth: those with entries once,
    /// those without (leaves) once a move into them.
    depths: Sorter<Depth>,
    reached_count: usize,
    illegal: usize,
}

/// Breadth-first from the start position: a position's depth is the
/// smallest ply it is reached at, its entries are played in the first
/// position reached with its key.
fn walk(by_key: &ByKey, temp: &TempFiles, memory: u64) -> Result<Walked> {
    let share = memory / 4;
    let mut walked = Walked {
        reached: Sorter::new(share, &temp.dir, &format!("{}reached-", temp.prefix)),
        depths: Sorter::new(share, &temp.dir, &format!("{}depths-", temp.prefix)),
        reached_count: 0,
        illegal: 0,
    };
    let (mut buf, mut entries, mut child_entries) = (Vec::new(), Vec::new(), Vec::new());
    let start = Chess::default();
    let Some(first) = by_key.entries_of(polyglot_key(&start), &mut buf, &mut entries)? else {
        return Ok(walked);
    };
    // By slot of a key's first entry: reached.
    let mut seen = vec![0u64; (by_key.len as usize).div_ceil(64)];
    let mut mark = |slot: u64| {
        let (word, bit) = ((slot / 64) as usize, 1u64 << (slot % 64));
        let new = seen[word] & bit == 0;
        seen[word] |= bit;
        new
    };
    mark(first);
    walked.depths.push(Depth {
        key: polyglot_key(&start),
        depth: 0,
    })?;
    let mut ply = Ply::new(temp, 0, share / 2);
    ply.push(start)?;
    let mut depth = 0;
    while !ply.is_empty() {
        let mut next = Ply::new(temp, depth + 1, share / 2);
        for pos in ply.into_positions()? {
            let pos = pos?;
            by_key.entries_of(polyglot_key(&pos), &mut buf, &mut entries)?;
            for e in &entries {
                let Some(m) = MoveCode(e.mv).to_move(&pos) else {
                    walked.illegal += 1;
                    continue;
                };
                let mut after = pos.clone();
                after.play_unchecked(m);
                let child = polyglot_key(&after);
                walked.reached.push(Reached {
                    idx: e.idx,
                    child,
                    uci: uci_bytes(&m.to_uci(CastlingMode::Standard).to_string()),
                })?;
                walked.reached_count += 1;
                let reached = Depth {
                    key: child,
                    depth: depth + 1,
                };
                match by_key.entries_of(child, &mut buf, &mut child_entries)? {
                    None => walked.depths.push(reached)?,
                    Some(slot) if mark(slot) => {
                        walked.depths.push(reached)?;
                        next.push(after)?;
                    }
                    Some(_) => {}
                }
            }
        }
        ply = next;
        depth += 1;
    }
    Ok(walked)
}

/// One ply's positions in the order they were reached: the first ones in
/// memory, those past the limit as FEN lines in a file.
struct Ply {
    held: Vec<Chess>,
    limit: usize,
    path: PathBuf,
    file: Option<(Pending, BufWriter<File>)>,
}

impl Ply {
    fn new(temp: &TempFiles, depth: u32, bytes: u64) -> Ply {
        Ply {
            held: Vec::new(),
            limit: (bytes / std::mem::size_of::<Chess>() as u64) as usize,
            path: temp.path(&format!("ply-{depth}")),
            file: None,
        }
    }

    fn is_empty(&self) -> bool {
        self.held.is_empty() && self.file.is_none()
    }

    fn push(&mut self, pos: Chess) -> Result<()> {
        if self.held.len() < self.limit {
            self.held.push(pos);
            return Ok(());
        }
        if self.file.is_none() {
            let guard = Pending::temporary(&self.path);
            let file = File::create(&self.path)
                .with_context(|| format!("cannot create {}", self.path.display()))?;
            self.file = Some((guard, BufWriter::with_capacity(1 << 16, file)));
        }
        if let Some((_, w)) = &mut self.file {
            // `Always`: the square exactly as the position holds it, which
            // the key depends on.
            writeln!(w, "{}", Fen::from_position(&pos, EnPassantMode::Always))
                .with_context(|| format!("cannot write {}", self.path.display()))?;
        }
        Ok(())
    }

    /// The positions in the order pushed.
    fn into_positions(self) -> Result<impl Iterator<Item = Result<Chess>>> {
        let path = self.path;
        let lines = match self.file {
            Some((guard, mut w)) => {
                w.flush()
                    .with_context(|| format!("cannot write {}", path.display()))?;
                let file =
                    File::open(&path).with_context(|| format!("cannot read {}", path.display()))?;
                Some((guard, BufReader::new(file).lines()))
            }
            None => None,
        };
        let spilled = lines.into_iter().flat_map(move |(guard, lines)| {
            let path = path.clone();
            lines.map(move |line| {
                let _keep = &guard;
                let line = line.with_context(|| format!("cannot read {}", path.display()))?;
                let fen: Fen = line
                    .parse()
                    .with_context(|| format!("{}: a bad line {line:?}", path.display()))?;
                fen.into_position(CastlingMode::Standard)
                    .with_context(|| format!("{}: a bad position {line:?}", path.display()))
            })
        });
        Ok(self.held.into_iter().map(Ok).chain(spilled))
    }
}

/// The first depth record after `d`'s key (records by key, the smallest
/// depth first: the rest of a key's are skipped).
fn next_key(depths: &mut Sorted<Depth>, d: Depth) -> Result<Option<Depth>> {
    loop {
        match depths.next_record()? {
            Some(n) if n.key == d.key => {}
            other => return Ok(other),
        }
    }
}

/// Every position of the import, by key, in a temporary file: the entries'
/// keys and the positions their moves lead to, with the depth where
/// reached.
struct PositionsFile {
    guard: Pending,
}

/// A position's record: key, then depth (`u32::MAX`: not reached).
const POSITION: usize = 12;

impl PositionsFile {
    fn write(by_key: &ByKey, mut depths: Sorted<Depth>, temp: &TempFiles) -> Result<PositionsFile> {
        let guard = Pending::temporary(&temp.path("positions"));
        let path = guard.path().to_path_buf();
        let cannot = || format!("cannot write {}", path.display());
        let mut w = BufWriter::with_capacity(1 << 16, File::create(&path).with_context(cannot)?);
        let mut write = |key: Key, depth: Option<u32>| -> Result<()> {
            w.write_all(&key.0.to_le_bytes())?;
            w.write_all(&depth.unwrap_or(u32::MAX).to_le_bytes())?;
            Ok(())
        };
        let mut next = depths.next_record()?;
        by_key.for_each_key(|key| {
            // Leaves (no entries) before the key, then the key.
            while let Some(d) = next.filter(|d| d.key < key) {
                write(d.key, Some(d.depth))?;
                next = next_key(&mut depths, d)?;
            }
            let depth = match next {
                Some(d) if d.key == key => {
                    next = next_key(&mut depths, d)?;
                    Some(d.depth)
                }
                _ => None,
            };
            write(key, depth)
        })?;
        while let Some(d) = next {
            write(d.key, Some(d.depth))?;
            next = next_key(&mut depths, d)?;
        }
        w.flush().with_context(cannot)?;
        Ok(PositionsFile { guard })
    }

    fn read(&self) -> Result<impl Iterator<Item = Result<(Key, Option<u32>)>> + '_> {
        let path = self.guard.path();
        let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut r = BufReader::with_capacity(1 << 16, file);
        let mut b = [0u8; POSITION];
        Ok(std::iter::from_fn(move || match r.read_exact(&mut b) {
            Ok(()) => {
                let depth = u32_le(&b[8..12]);
                Some(Ok((
                    Key(u64_le(&b[0..8])),
                    (depth != u32::MAX).then_some(depth),
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
            Err(e) => Some(Err(
                anyhow::Error::new(e).context(format!("cannot read {}", path.display()))
            )),
        }))
    }
}

/// The entries as moves, in file order (the first move into a position
/// links its parent), with what the walk found for those it reached.
struct MovesInFileOrder {
    reader: BufReader<File>,
    path: PathBuf,
    idx: u32,
    reached: Sorted<Reached>,
    next: Option<Reached>,
}

impl MovesInFileOrder {
    fn new(path: &Path, mut reached: Sorted<Reached>) -> Result<MovesInFileOrder> {
        let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        Ok(MovesInFileOrder {
            reader: BufReader::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            idx: 0,
            next: reached.next_record()?,
            reached,
        })
    }

    fn next_move(&mut self) -> Result<Option<ImportedMove>> {
        let mut e = [0u8; ENTRY as usize];
        match self.reader.read_exact(&mut e) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(err) => {
                return Err(err).with_context(|| format!("cannot read {}", self.path.display()))
            }
        }
        let (parent, mv, weight, _) = parse_entry(&e);
        let idx = self.idx;
        self.idx += 1;
        let (child, uci) = match self.next {
            Some(r) if r.idx == idx => {
                self.next = self.reached.next_record()?;
                (Some(r.child), uci_of(&r.uci))
            }
            _ => (None, MoveCode(mv).to_string()),
        };
        Ok(Some(ImportedMove {
            parent,
            mv: MoveCode(mv),
            uci,
            child,
            weight,
        }))
    }
}

impl Iterator for MovesInFileOrder {
    type Item = Result<ImportedMove>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_move().transpose()
    }
}

fn uci_bytes(uci: &str) -> [u8; 5] {
    let mut b = [0; 5];
    for (to, from) in b.iter_mut().zip(uci.bytes()) {
        *to = from;
    }
    b
}

fn uci_of(b: &[u8; 5]) -> String {
    let len = b.iter().position(|&x| x == 0).unwrap_or(5);
    String::from_utf8_lossy(&b[..len]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::uci::UciMove;

    /// The position after `line` (UCI moves from the start).
    fn after(line: &[&str]) -> Chess {
        let mut pos = Chess::default();
        for u in line {
            let m = u
                .parse::<UciMove>()
                .expect("uci")
                .to_move(&pos)
                .expect("legal");
            pos.play_unchecked(m);
        }
        pos
    }

    fn code(pos: &Chess, uci: &str) -> u16 {
        let m = uci
            .parse::<UciMove>()
            .expect("uci")
            .to_move(pos)
            .expect("legal");
        MoveCode::from_move(&m).0
    }

    /// (key, move, the child and UCI where the walk reached it), by entry
    /// in file order
    type Reached = (Key, u16, Option<(Key, String)>);
    /// What `import` hands the book: positions, moves, and the illegal count.
    type Imported = (Vec<(Key, Option<u32>)>, Vec<Reached>, usize);

    /// Walks the `.bin` of `entries` (in this order) within `memory`: the
    /// positions and the moves as `import` hands them to the book.
    fn import_of(entries: &[(Key, u16)], memory: u64) -> Imported {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("x.bin");
        let mut bytes = Vec::new();
        for &(k, m) in entries {
            bytes.extend_from_slice(&k.0.to_be_bytes());
            bytes.extend_from_slice(&m.to_be_bytes());
            bytes.extend_from_slice(&[0, 1, 0, 0, 0, 0]);
        }
        std::fs::write(&bin, bytes).expect("write");
        let temp = TempFiles::named(&dir.path().join("b.sqlite"), None, "import").expect("temp");
        let by_key = ByKey::open(&bin, &temp, memory).expect("open");
        let walked = walk(&by_key, &temp, memory).expect("walk");
        let positions =
            PositionsFile::write(&by_key, walked.depths.into_sorted().expect("sorted"), &temp)
                .expect("positions");
        let listed: Vec<_> = positions
            .read()
            .expect("read")
            .map(|p| p.expect("position"))
            .collect();
        let moves = MovesInFileOrder::new(&bin, walked.reached.into_sorted().expect("sorted"))
            .expect("moves")
            .map(|m| {
                let m = m.expect("move");
                (m.parent, m.mv.0, m.child.map(|c| (c, m.uci)))
            })
            .collect();
        drop((by_key, positions));
        // Every temporary file gone.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .filter(|n| n != "x.bin")
            .collect();
        assert!(left.is_empty(), "{left:?}");
        (listed, moves, walked.illegal)
    }

    /// Issue 53: the walk gives each position its smallest depth (a
    /// transposition reached a longer way too), a move back to the start
    /// leaves it at depth 0, moves into positions without entries give
    /// those their smallest depth, an illegal move and an unreached
    /// position are kept without a child; the same whether the file is
    /// sorted by key or not, and whether a ply waits in memory or on disk.
    #[test]
    fn the_walk_gives_smallest_depths_sorted_or_not_within_any_budget() {
        let lines: &[(&[&str], &str)] = &[
            (&[], "e2e3"),
            (&[], "e2e4"),
            (&[], "g1f3"),
            (&["e2e3"], "e7e6"),
            (&["e2e3", "e7e6"], "e3e4"),
            (&["e2e3", "e7e6", "e3e4"], "e6e5"),
            (&["e2e4"], "e7e5"),
            (&["e2e4", "e7e5"], "g1f3"),
            (&["g1f3"], "g8f6"),
            (&["g1f3", "g8f6"], "f3g1"),
            (&["g1f3", "g8f6", "f3g1"], "f6g8"),
            // En passant possible: the key holds the square.
            (&["e2e4", "e7e5"], "d2d4"),
            (&["e2e4", "e7e5", "d2d4"], "e5d4"),
            (&["e2e4", "e7e5", "d2d4", "e5d4"], "c2c4"),
            (&["e2e4", "e7e5", "d2d4", "e5d4", "c2c4"], "d4c3"),
        ];
        let mut entries: Vec<(Key, u16)> = lines
            .iter()
            .map(|(line, uci)| {
                let pos = after(line);
                (polyglot_key(&pos), code(&pos, uci))
            })
            .collect();
        // a1a8 at the start (from a1 = 0, to a8 = 56: illegal), and a
        // position never reached.
        let start = polyglot_key(&Chess::default());
        entries.push((start, 56));
        entries.push((Key(12345), 1));
        let depth_of = |line: &[&str]| (polyglot_key(&after(line)), Some(line.len() as u32));
        let mut expected = vec![
            depth_of(&[]),
            depth_of(&["e2e3"]),
            depth_of(&["e2e4"]),
            depth_of(&["g1f3"]),
            depth_of(&["e2e3", "e7e6"]),
            depth_of(&["e2e3", "e7e6", "e3e4"]),
            depth_of(&["e2e4", "e7e5"]),
            depth_of(&["e2e4", "e7e5", "g1f3"]),
            depth_of(&["e2e4", "e7e5", "d2d4"]),
            depth_of(&["e2e4", "e7e5", "d2d4", "e5d4"]),
            depth_of(&["e2e4", "e7e5", "d2d4", "e5d4", "c2c4"]),
            depth_of(&["e2e4", "e7e5", "d2d4", "e5d4", "c2c4", "d4c3"]),
            depth_of(&["g1f3", "g8f6"]),
            depth_of(&["g1f3", "g8f6", "f3g1"]),
            (Key(12345), None),
        ];
        expected.sort_unstable();
        let mut sorted = entries.clone();
        sorted.sort_unstable();
        let mut results = Vec::new();
        for file in [entries.clone(), sorted, entries.into_iter().rev().collect()] {
            for memory in [0, 1 << 20] {
                let (positions, mut moves, illegal) = import_of(&file, memory);
                assert_eq!(illegal, 1);
                assert_eq!(positions, expected, "memory {memory}");
                // In file order.
                assert_eq!(moves.iter().map(|m| (m.0, m.1)).collect::<Vec<_>>(), file,);
                moves.sort();
                results.push(moves);
            }
        }
        let back = &results[0]
            .iter()
            .find(|(k, _, _)| *k == polyglot_key(&after(&["g1f3", "g8f6", "f3g1"])))
            .expect("entry");
        assert_eq!(back.2, Some((start, "f6g8".to_string())));
        let ep = polyglot_key(&after(&["e2e4", "e7e5", "d2d4", "e5d4", "c2c4"]));
        let ep_move = results[0].iter().find(|(k, _, _)| *k == ep).expect("entry");
        assert_eq!(ep_move.2.as_ref().map(|r| r.1.as_str()), Some("d4c3"));
        assert!(results.iter().all(|r| r[..] == results[0][..]));
        let unreached = results[0].iter().filter(|(_, _, r)| r.is_none()).count();
        assert_eq!(unreached, 2, "the illegal and the unreached entry");
    }
}
