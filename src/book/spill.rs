//! `build` within its memory budget (`--memory`, [`Spill`]).
//!
//! While the counts fit the budget, `build` keeps them all in memory and
//! writes the book in one pass. Each game is also appended to a journal, a
//! temporary file of the validated games (moves and keys). When the counts
//! outgrow the budget (or from the start, for a new book from a large
//! input) they are dropped, and counting goes on in a [`SharedFilter`]
//! instead: two Bloom filters that tell a position met once from one met
//! again, in a fixed amount of memory. A position the filter does not call
//! shared is reached by one game only, so it lies in that game's
//! single-game tail or before a position that other games reach.
//!
//! The journal is then read twice: once in input order to count exactly
//! every position the filter calls shared (the rows, and the few single
//! positions a false positive adds) and the moves out of them, once in the
//! games' id order to find each game's true tail from those exact counts,
//! add the single positions before it, and write the book
//! ([`crate::book::db::Book::bulk_load_games`]). The result is the book of
//! the one-pass build, row for row.

use std::{
    fs::File,
    io::{BufReader, BufWriter, Read, Write},
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

use super::db::Aggregate;
use super::ingest::{Game, GameResult, GameTags, Ply};
use super::keys::KeySet;
use super::keys::{Key, MoveCode};

/// A blocked Bloom filter over position keys: each key sets three bits of
/// one 64-bit word, so a look-up costs one cache miss. Zobrist keys are
/// uniformly random: the three bits come from the key's low 18 bits, the
/// word from the bits above them (not the top ones, which a [`KeyRange`]
/// shares: a filter of one range uses all its words).
struct Bloom {
    /// Atomic, so the threads that validate games can fill it together.
    words: Vec<AtomicU64>,
    /// log2 of the number of words.
    log: u32,
}

impl Bloom {
    fn new(bytes: u64) -> Bloom {
        let log = Bloom::log_words(bytes);
        Bloom {
            words: std::iter::repeat_with(|| AtomicU64::new(0))
                .take(1 << log)
                .collect(),
            log,
        }
    }

    /// A power of two of at least 1,024 words within `bytes`.
    fn log_words(bytes: u64) -> u32 {
        (bytes / 8).max(1024).ilog2()
    }

    /// The bytes of a filter made with `bytes`.
    fn new_size(bytes: u64) -> u64 {
        8 << Bloom::log_words(bytes)
    }

    fn slot(&self, key: Key) -> (usize, u64) {
        let k = key.0;
        let word = ((k >> 18) & ((1 << self.log) - 1)) as usize;
        let mask = (1u64 << (k & 63)) | (1u64 << ((k >> 6) & 63)) | (1u64 << ((k >> 12) & 63));
        (word, mask)
    }

    fn contains(&self, key: Key) -> bool {
        let (w, m) = self.slot(key);
        self.words[w].load(Ordering::Relaxed) & m == m
    }

    /// Sets the key's bits; whether they were all set already. One atomic
    /// operation: of two threads adding the same key, one sees it as set.
    fn insert(&self, key: Key) -> bool {
        let (w, m) = self.slot(key);
        self.words[w].fetch_or(m, Ordering::Relaxed) & m == m
    }

    fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    /// About how many keys were inserted, from the bits set (each key sets
    /// up to three; the usual estimate for a filter of `m` bits, `x` set:
    /// `-(m / 3) ln(1 - x / m)`).
    fn estimated_keys(&self) -> u64 {
        let m = (self.words.len() * 64) as f64;
        let x: u64 = self
            .words
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum();
        let fill = (x as f64 / m).min(0.999_999);
        (-(m / 3.0) * (1.0 - fill).ln()) as u64
    }
}

/// Which positions more than one game (or one game twice) reaches: never a
/// false "no", sometimes a false "yes" (a few percent of the single
/// positions when the filters hold 8 bits per position).
pub struct SharedFilter {
    seen: Bloom,
    shared: Bloom,
}

impl SharedFilter {
    /// Two filters in `bytes` together.
    pub fn new(bytes: u64) -> SharedFilter {
        SharedFilter {
            seen: Bloom::new(bytes / 2),
            shared: Bloom::new(bytes / 2),
        }
    }

    /// One more occurrence of `key` (from any thread).
    pub fn add(&self, key: Key) {
        self.add_all(std::iter::once(key));
    }

    /// One more occurrence of each of `keys`, in order (from any thread).
    pub fn add_all(&self, keys: impl Iterator<Item = Key>) {
        const CHUNK: usize = 16;
        let mut todo = [Key(0); CHUNK];
        let mut keys = keys.peekable();
        while keys.peek().is_some() {
            // Plain reads first, one for each key's line in both filters:
            // their cache misses overlap (an atomic write waits for the one
            // before it), and a key already shared (the openings of most
            // games) needs no write, which would take the line from the
            // other core.
            let mut n = 0;
            for key in keys.by_ref().take(CHUNK) {
                let seen = self.seen.contains(key);
                if !self.shared.contains(key) {
                    todo[n] = key;
                    n += 1;
                }
                std::hint::black_box(seen);
            }
            for &key in &todo[..n] {
                if self.seen.insert(key) {
                    self.shared.insert(key);
                }
            }
        }
    }

    /// Frees the filter of the positions met once: when the games are all
    /// in, only the other one is asked ([`SharedFilter::is_shared`]).
    pub fn forget_seen(&mut self) {
        self.seen = Bloom::new(0);
    }

    /// A sharper filter for the keys of `range`, of `bytes` at most: one pass over
    /// the journal adds to it each key of `range` that this filter calls
    /// shared. Holding only those, it calls far fewer single positions
    /// shared; its own filter of positions met once is freed.
    pub fn refine(
        &self,
        reader: &JournalReader,
        range: KeyRange,
        bytes: u64,
    ) -> Result<SharedFilter> {
        // Of the keys a round adds, only the shared ones reach the filter
        // kept while counting: a quarter of the bits of the filter of the
        // positions met once is plenty.
        let mut sharper = SharedFilter {
            seen: Bloom::new(bytes / 2),
            shared: Bloom::new(bytes / 8),
        };
        reader.par_for_each(|game| {
            sharper.add_all(
                game.keys()
                    .filter(|&k| range.contains(k) && self.is_shared(k)),
            );
        })?;
        sharper.forget_seen();
        Ok(sharper)
    }

    /// How many keys a filter of `bytes` tells apart well (16 bits each in the
    /// filter of the positions met once: about one in 200 false).
    pub fn capacity(bytes: u64) -> u64 {
        Bloom::new_size(bytes / 2) * 8 / 16
    }

    /// About how many positions the filter calls shared.
    pub fn estimated_shared(&self) -> u64 {
        self.shared.estimated_keys()
    }

    pub fn is_shared(&self, key: Key) -> bool {
        self.shared.contains(key)
    }

    pub fn bytes(&self) -> u64 {
        self.seen.bytes() + self.shared.bytes()
    }
}

/// Where a game is in the journal. Ordered by hash, then place: the
/// occurrences of one game together, its first one first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub hash: u64,
    pub offset: u64,
    pub len: u32,
    /// Index into the build's source names.
    pub source: u32,
    /// Occurrences of the game in the input (after [`Journal::finish`]).
    pub copies: u32,
}

impl SortRecord for Entry {
    const SIZE: usize = 28;
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.hash.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.source.to_le_bytes());
        out.extend_from_slice(&self.copies.to_le_bytes());
    }
    fn read(b: &[u8]) -> Self {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Entry {
            hash: read_i64(&b[..8]) as u64,
            offset: read_i64(&b[8..16]) as u64,
            len: u32_at(16),
            source: u32_at(20),
            copies: u32_at(24),
        }
    }
}

/// A game's place in id order (its source's rank among the source names,
/// then its hash) and in the journal.
impl SortRecord for (u32, Entry) {
    const SIZE: usize = 4 + Entry::SIZE;
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_le_bytes());
        self.1.write(out);
    }
    fn read(b: &[u8]) -> Self {
        (
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            Entry::read(&b[4..]),
        )
    }
}

/// The validated games of a build, appended to a temporary file; where
/// each is goes to a [`Sorter`], on disk past its memory.
pub struct Journal {
    file: BufWriter<File>,
    path: std::path::PathBuf,
    /// The records, while they fit `in_memory_limit` bytes: a journal read
    /// from memory is then never written to its file and read back (a read
    /// that held up both cores between the passes).
    in_memory: Option<Vec<u8>>,
    in_memory_limit: u64,
    offset: u64,
    entries: Sorter<Entry>,
    /// Games appended.
    pub games: u64,
    buf: Vec<u8>,
}

/// A journal written to the end, for reading.
pub struct JournalReader {
    file: File,
    path: std::path::PathBuf,
    /// The whole file, when the budget allows: a game is then decoded
    /// from memory instead of read by a system call.
    bytes: Option<Vec<u8>>,
    len: u64,
    /// The places of the games read again that count once (their first
    /// occurrence counts): [`JournalReader::for_each`] skips them.
    repeats: KeySet<u64>,
}

/// What [`Journal::finish`] found: the distinct games in id order, which
/// of them occur more than once, and how many occurrences were repeats.
pub struct Distinct {
    pub order: Sorter<(u32, Entry)>,
    pub games: u64,
    /// The hashes of the games that occur more than once.
    pub copied: KeySet<u64>,
    pub repeats: u64,
}

impl Journal {
    /// A new journal at `path` (the caller removes the file); the places
    /// of its games are sorted within `sort_bytes` of memory, in runs
    /// beside it. Its records are held in memory, not written, while they
    /// take at most `in_memory_limit` bytes.
    pub fn create(path: &Path, sort_bytes: u64, in_memory_limit: u64) -> Result<Journal> {
        let file = File::create(path)
            .with_context(|| format!("cannot create the temporary file {}", path.display()))?;
        let dir = crate::atomic_file::directory_of(path);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Journal {
            file: BufWriter::with_capacity(1 << 20, file),
            path: path.to_path_buf(),
            in_memory: (in_memory_limit > 0).then(Vec::new),
            in_memory_limit,
            offset: 0,
            entries: Sorter::new(sort_bytes, dir, &format!("{name}.places")),
            games: 0,
            buf: Vec::new(),
        })
    }

    pub fn append(&mut self, game: &Game, source: u32) -> Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        encode(game, &mut buf);
        let written = self.append_record(game.hash, &buf, source);
        self.buf = buf;
        written
    }

    /// Appends a record [`record`] made of the game with this `hash`.
    pub fn append_record(&mut self, hash: u64, record: &[u8], source: u32) -> Result<()> {
        match &mut self.in_memory {
            Some(held) if (held.len() + record.len()) as u64 <= self.in_memory_limit => {
                held.extend_from_slice(record);
            }
            _ => {
                self.write_held()?;
                self.file
                    .write_all(record)
                    .with_context(|| format!("cannot write to {}", self.path.display()))?;
            }
        }
        self.entries.push(Entry {
            hash,
            source,
            offset: self.offset,
            len: record.len() as u32,
            copies: 1,
        })?;
        self.offset += record.len() as u64;
        self.games += 1;
        Ok(())
    }

    /// The records held in memory written to the file, and no more held
    /// there (the journal has outgrown its share of memory, or is read from
    /// the file).
    fn write_held(&mut self) -> Result<()> {
        if let Some(held) = self.in_memory.take() {
            self.file
                .write_all(&held)
                .with_context(|| format!("cannot write to {}", self.path.display()))?;
        }
        Ok(())
    }

    /// Every game written so far, in order (the journal stays open).
    pub fn replay(&mut self, f: impl FnMut(Game) -> Result<()>) -> Result<()> {
        self.write_held()?;
        self.file
            .flush()
            .with_context(|| format!("cannot write to {}", self.path.display()))?;
        read_records(&self.path, self.offset, &KeySet::default(), f)
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.offset
    }

    pub fn is_empty(&self) -> bool {
        self.offset == 0
    }

    /// Flushes the file and sorts the games: one entry per distinct game
    /// (its first occurrence), in id order, `sources` ranked by name. With
    /// `count_repeats`, a game read again counts once (the reader skips its
    /// later occurrences); else each occurrence counts, and `copies` says
    /// how many there are. The order is sorted within
    /// `sort_bytes` of memory.
    pub fn finish(
        mut self,
        sources: &[String],
        count_repeats: bool,
        sort_bytes: u64,
    ) -> Result<(JournalReader, Distinct)> {
        self.file
            .flush()
            .with_context(|| format!("cannot write to {}", self.path.display()))?;
        let written = self
            .file
            .into_inner()
            .map_err(|e| anyhow!("cannot write to {}: {}", self.path.display(), e.error()))?;
        drop(written);
        let file = File::open(&self.path)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        let mut names: Vec<u32> = (0..sources.len() as u32).collect();
        names.sort_by(|&a, &b| sources[a as usize].cmp(&sources[b as usize]));
        let mut rank = vec![0u32; sources.len()];
        for (r, &i) in names.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        let dir = crate::atomic_file::directory_of(&self.path);
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut distinct = Distinct {
            order: Sorter::new(sort_bytes, dir, &format!("{name}.order")),
            games: 0,
            copied: KeySet::default(),
            repeats: 0,
        };
        let mut repeats = KeySet::default();
        let mut first: Option<Entry> = None;
        let emit = |e: Entry, d: &mut Distinct| -> Result<()> {
            if e.copies > 1 {
                d.copied.insert(e.hash);
            }
            d.games += 1;
            let r = rank.get(e.source as usize).copied().unwrap_or(u32::MAX);
            d.order.push((r, e))
        };
        // Occurrences of a hash in place order: the first kept.
        self.entries.drain(|sorted| {
            for &e in sorted {
                match &mut first {
                    Some(f) if f.hash == e.hash => {
                        distinct.repeats += 1;
                        if count_repeats {
                            repeats.insert(e.offset);
                        } else {
                            f.copies += 1;
                        }
                    }
                    _ => {
                        if let Some(f) = first.replace(e) {
                            emit(f, &mut distinct)?;
                        }
                    }
                }
            }
            Ok(())
        })?;
        if let Some(f) = first {
            emit(f, &mut distinct)?;
        }
        Ok((
            JournalReader {
                file,
                path: self.path,
                bytes: self.in_memory,
                len: self.offset,
                repeats,
            },
            distinct,
        ))
    }
}

impl JournalReader {
    /// Bytes in the journal.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every game in input order, each occurrence that counts.
    pub fn for_each(&self, mut f: impl FnMut(Game) -> Result<()>) -> Result<()> {
        let Some(bytes) = &self.bytes else {
            return read_records(&self.path, u64::MAX, &self.repeats, f);
        };
        let what = || format!("reading {}", self.path.display());
        self.each_record(bytes, |record| {
            f(decode(record, Fields::Counts).with_context(what)?)
        })
    }

    /// Every game in input order, handed to `f` a batch at a time, decoded
    /// on every core (from the file, a batch ahead of `f`).
    pub fn for_each_batch(&self, mut f: impl FnMut(&[Game]) -> Result<()>) -> Result<()> {
        const BATCH: usize = 2048;
        let Some(bytes) = &self.bytes else {
            return read_games(&self.path, u64::MAX, &self.repeats, |games| f(&games));
        };
        let what = || format!("reading {}", self.path.display());
        let mut decode_all = |records: &[&[u8]]| -> Result<()> {
            let games = records
                .par_iter()
                .map(|b| decode(b, Fields::Counts).with_context(what))
                .collect::<Result<Vec<Game>>>()?;
            f(&games)
        };
        let mut records = Vec::with_capacity(BATCH);
        self.each_record(bytes, |record| {
            records.push(record);
            if records.len() == BATCH {
                decode_all(&records)?;
                records.clear();
            }
            Ok(())
        })?;
        decode_all(&records)
    }

    /// Every game, as [`JournalReader::for_each`], handed to `f` on every
    /// core in no particular order.
    pub fn par_for_each(&self, f: impl Fn(&Game) + Sync) -> Result<()> {
        let what = || format!("reading {}", self.path.display());
        let each = |records: &[&[u8]]| -> Result<()> {
            records.par_iter().try_for_each(|b| {
                f(&decode(b, Fields::Counts).with_context(what)?);
                Ok(())
            })
        };
        let Some(bytes) = &self.bytes else {
            return read_batches(&self.path, u64::MAX, &self.repeats, Ok, |batch| {
                let records: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                each(&records)
            });
        };
        let mut records = Vec::new();
        self.each_record(bytes, |record| {
            records.push(record);
            Ok(())
        })?;
        each(&records)
    }

    /// The records of the journal read into `bytes`, but the repeats.
    fn each_record<'a>(
        &self,
        bytes: &'a [u8],
        mut f: impl FnMut(&'a [u8]) -> Result<()>,
    ) -> Result<()> {
        let what = || format!("reading {}", self.path.display());
        let mut at = 0;
        while at < bytes.len() {
            let len = bytes
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .filter(|&n| n >= 4)
                .ok_or_else(|| anyhow!("a damaged journal (record at {at})"))
                .with_context(what)?;
            let record = bytes
                .get(at + 4..at + len)
                .ok_or_else(|| anyhow!("a damaged journal (record at {at})"))
                .with_context(what)?;
            if !self.repeats.contains(&(at as u64)) {
                f(record)?;
            }
            at += len;
        }
        Ok(())
    }

    /// Whether the journal is held in memory ([`JournalReader::load`]).
    pub fn loaded(&self) -> bool {
        self.bytes.is_some()
    }

    /// Reads the whole journal into memory, for [`JournalReader::for_each`]
    /// and [`JournalReader::read`].
    pub fn load(&mut self) -> Result<()> {
        if self.bytes.is_some() {
            return Ok(());
        }
        let bytes = std::fs::read(&self.path)
            .with_context(|| format!("reading {}", self.path.display()))?;
        self.bytes = Some(bytes);
        Ok(())
    }

    /// The game at `entry`.
    pub fn read(&self, entry: &Entry, buf: &mut Vec<u8>) -> Result<Game> {
        let what = || format!("reading {}", self.path.display());
        if let Some(bytes) = &self.bytes {
            let record = usize::try_from(entry.offset)
                .ok()
                .and_then(|at| bytes.get(at + 4..at + entry.len as usize))
                .ok_or_else(|| anyhow!("a damaged journal (record at {})", entry.offset))
                .with_context(what)?;
            return decode(record, Fields::All).with_context(what);
        }
        buf.resize(entry.len as usize, 0);
        self.file
            .read_exact_at(buf, entry.offset)
            .with_context(what)?;
        decode(&buf[4..], Fields::All).with_context(what)
    }
}

/// The distinct games of a journal in id order ([`Journal::finish`]).
pub struct GamesInOrder<'a> {
    pub reader: &'a JournalReader,
    pub order: Sorter<(u32, Entry)>,
    pub count: u64,
}

impl GamesInOrder<'_> {
    /// Hands the games to `f` in batches of `batch`, each game with its
    /// source index and copies, read and decoded on every core.
    pub fn for_each_batch(
        self,
        batch: usize,
        mut f: impl FnMut(Vec<(Game, u32, u32)>) -> Result<()>,
    ) -> Result<()> {
        let reader = self.reader;
        self.order.drain(|entries| {
            for chunk in entries.chunks(batch) {
                let games = chunk
                    .par_iter()
                    .map(|(_, e)| Ok((reader.read(e, &mut Vec::new())?, e.source, e.copies)))
                    .collect::<Result<Vec<_>>>()?;
                f(games)?;
            }
            Ok(())
        })
    }
}

/// Reads the records of the journal at `path`, up to byte `end`, and hands
/// the games to `f` in order, but those at the places in `skip`. A thread
/// reads and decodes them (on every core) a batch ahead of `f`.
fn read_records(
    path: &Path,
    end: u64,
    skip: &KeySet<u64>,
    mut f: impl FnMut(Game) -> Result<()>,
) -> Result<()> {
    read_games(path, end, skip, |games| {
        games.into_iter().try_for_each(&mut f)
    })
}

/// [`read_records`], the games handed to `f` a batch at a time.
fn read_games(
    path: &Path,
    end: u64,
    skip: &KeySet<u64>,
    f: impl FnMut(Vec<Game>) -> Result<()>,
) -> Result<()> {
    let what = || format!("reading {}", path.display());
    let decode_all = |records: Vec<Vec<u8>>| -> Result<Vec<Game>> {
        records
            .par_iter()
            .map(|b| decode(b, Fields::Counts).with_context(what))
            .collect()
    };
    read_batches(path, end, skip, decode_all, f)
}

/// Reads the records of the journal at `path`, up to byte `end`, but those
/// at the places in `skip`, and hands them to `f` in batches, in order,
/// each made into a `T` by `prepare` on the thread that reads them, a batch
/// ahead of `f`.
fn read_batches<T: Send>(
    path: &Path,
    end: u64,
    skip: &KeySet<u64>,
    prepare: impl Fn(Vec<Vec<u8>>) -> Result<T> + Send,
    mut f: impl FnMut(T) -> Result<()>,
) -> Result<()> {
    const BATCH: usize = 2048;
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let what = || format!("reading {}", path.display());
    std::thread::scope(|scope| -> Result<()> {
        let (send, batches) = std::sync::mpsc::sync_channel::<Result<T>>(2);
        scope.spawn(move || {
            let mut r = BufReader::with_capacity(1 << 20, file);
            let mut at = 0u64;
            loop {
                let mut records: Vec<Vec<u8>> = Vec::with_capacity(BATCH);
                let mut failed = None;
                while at < end && records.len() < BATCH {
                    let mut len = [0u8; 4];
                    match r.read_exact(&mut len) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                        Err(e) => {
                            failed = Some(anyhow::Error::from(e).context(what()));
                            break;
                        }
                    }
                    let n = u32::from_le_bytes(len) as usize;
                    let mut body = vec![0; n.saturating_sub(4)];
                    if let Err(e) = r.read_exact(&mut body) {
                        failed = Some(anyhow::Error::from(e).context(what()));
                        break;
                    }
                    if !skip.contains(&at) {
                        records.push(body);
                    }
                    at += n as u64;
                }
                let last = records.len() < BATCH || failed.is_some();
                let batch = match failed {
                    Some(e) => Err(e),
                    None => prepare(records),
                };
                if send.send(batch).is_err() || last {
                    return;
                }
            }
        });
        for batch in batches {
            f(batch?)?;
        }
        Ok(())
    })
}

/// The journal record of `game`, for [`Journal::append_record`] (made on
/// the thread that validated the game).
pub fn record(game: &Game) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 11 * game.plies.len());
    encode(game, &mut out);
    out
}

/// A record: its length (u32, itself included), then the game's fields
/// and, per stored move, its code, castling flag and the key it leads to.
fn encode(g: &Game, out: &mut Vec<u8>) {
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&g.hash.to_le_bytes());
    out.push(match g.result {
        GameResult::WhiteWins => 0,
        GameResult::Draw => 1,
        GameResult::BlackWins => 2,
        GameResult::Unknown => 3,
    });
    out.extend_from_slice(&g.start.0.to_le_bytes());
    out.extend_from_slice(&g.start_ply.to_le_bytes());
    out.extend_from_slice(&g.total_plies.to_le_bytes());
    let terminal = g.terminal.map_or(f64::NAN, |t| t);
    out.push(u8::from(g.terminal.is_some()));
    out.extend_from_slice(&terminal.to_le_bytes());
    for elo in [g.white_elo, g.black_elo] {
        out.push(u8::from(elo.is_some()));
        out.extend_from_slice(&elo.unwrap_or(0).to_le_bytes());
    }
    for name in [&g.white, &g.black] {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
    }
    out.extend_from_slice(&(g.plies.len() as u32).to_le_bytes());
    for p in &g.plies {
        out.extend_from_slice(&p.mv.0.to_le_bytes());
        out.push(u8::from(p.castle));
        out.extend_from_slice(&p.child.0.to_le_bytes());
    }
    let t = &g.tags;
    for tag in [&t.event, &t.site, &t.date, &t.round, &t.fen] {
        match tag {
            Some(v) => {
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v.as_bytes());
            }
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
    }
    out.extend_from_slice(&(g.rest.len() as u32).to_le_bytes());
    for m in &g.rest {
        out.extend_from_slice(&m.to_le_bytes());
    }
    let len = out.len() as u32;
    out[..4].copy_from_slice(&len.to_le_bytes());
}

/// What [`decode`] reads of a record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fields {
    /// Everything: the game as the book stores it.
    All,
    /// What the counts need: no names, tags or moves past max-ply (the
    /// passes that count read every record, some twice).
    Counts,
}

/// Reads what [`encode`] wrote (after the length).
fn decode(b: &[u8], fields: Fields) -> Result<Game> {
    let mut r = Cursor { b, at: 0 };
    let hash = r.u64()?;
    let result = match r.u8()? {
        0 => GameResult::WhiteWins,
        1 => GameResult::Draw,
        2 => GameResult::BlackWins,
        3 => GameResult::Unknown,
        x => bail!("a damaged journal record (result {x})"),
    };
    let start = Key(r.u64()?);
    let start_ply = r.u32()?;
    let total_plies = r.u32()?;
    let has_terminal = r.u8()? != 0;
    let terminal = f64::from_bits(r.u64()?);
    let mut elo = [None; 2];
    for e in &mut elo {
        let has = r.u8()? != 0;
        let v = r.u32()?;
        *e = has.then_some(v);
    }
    let (white, black) = if fields == Fields::All {
        (r.string()?, r.string()?)
    } else {
        r.skip_string()?;
        r.skip_string()?;
        (String::new(), String::new())
    };
    let n = r.u32()? as usize;
    let mut plies = Vec::with_capacity(n.min(b.len()));
    let mut parent = start;
    for _ in 0..n {
        let mv = MoveCode(r.u16()?);
        let castle = r.u8()? != 0;
        let child = Key(r.u64()?);
        plies.push(Ply {
            parent,
            mv,
            child,
            castle,
        });
        parent = child;
    }
    let (tags, rest) = if fields == Fields::All {
        let mut tag = || r.optional_string();
        let tags = GameTags {
            event: tag()?,
            site: tag()?,
            date: tag()?,
            round: tag()?,
            fen: tag()?,
        };
        let n = r.u32()? as usize;
        let mut rest = Vec::with_capacity(n.min(b.len()));
        for _ in 0..n {
            rest.push(r.u16()?);
        }
        (tags, rest)
    } else {
        (GameTags::default(), Vec::new())
    };
    Ok(Game {
        white,
        black,
        result,
        hash,
        start,
        start_ply,
        plies,
        total_plies,
        terminal: has_terminal.then_some(terminal),
        white_elo: elo[0],
        black_elo: elo[1],
        tags,
        rest,
    })
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let s = self
            .b
            .get(self.at..self.at + n)
            .ok_or_else(|| anyhow!("a damaged journal record (cut short)"))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        let mut a = [0; 2];
        a.copy_from_slice(self.take(2)?);
        Ok(u16::from_le_bytes(a))
    }
    fn u32(&mut self) -> Result<u32> {
        let mut a = [0; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    fn u64(&mut self) -> Result<u64> {
        let mut a = [0; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn string(&mut self) -> Result<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|_| anyhow!("a damaged journal record (a name is not UTF-8)"))
    }
    fn skip_string(&mut self) -> Result<()> {
        let n = self.u32()? as usize;
        self.take(n).map(|_| ())
    }
    /// A string or nothing (length `u32::MAX`).
    fn optional_string(&mut self) -> Result<Option<String>> {
        let n = self.u32()?;
        if n == u32::MAX {
            return Ok(None);
        }
        String::from_utf8(self.take(n as usize)?.to_vec())
            .map(Some)
            .map_err(|_| anyhow!("a damaged journal record (a tag is not UTF-8)"))
    }
}

/// A record [`Sorter`] can write to its runs on disk: a fixed number of
/// bytes.
pub trait SortRecord: Ord + Copy + Send {
    const SIZE: usize;
    fn write(&self, out: &mut Vec<u8>);
    fn read(bytes: &[u8]) -> Self;
}

impl SortRecord for (i64, i64) {
    const SIZE: usize = 16;
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_le_bytes());
        out.extend_from_slice(&self.1.to_le_bytes());
    }
    fn read(b: &[u8]) -> Self {
        (read_i64(&b[..8]), read_i64(&b[8..16]))
    }
}

fn read_i64(b: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    i64::from_le_bytes(a)
}

/// Pairs sorted within a memory limit (the tails index, the parent links,
/// the positions by depth).
pub type PairSorter = Sorter<(i64, i64)>;

/// Records sorted in memory up to a limit, then in sorted runs on disk
/// merged at the end; equal records are kept once.
pub struct Sorter<T: SortRecord> {
    buf: Vec<T>,
    limit: usize,
    dir: std::path::PathBuf,
    prefix: String,
    runs: Vec<crate::atomic_file::Pending>,
}

impl<T: SortRecord> Sorter<T> {
    /// At most `bytes` in memory; runs written to `dir` as `prefix` + n.
    pub fn new(bytes: u64, dir: &Path, prefix: &str) -> Sorter<T> {
        Sorter {
            buf: Vec::new(),
            limit: (bytes / std::mem::size_of::<T>().max(1) as u64).max(1024) as usize,
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            runs: Vec::new(),
        }
    }

    pub fn push(&mut self, record: T) -> Result<()> {
        if self.buf.capacity() == 0 {
            // At once: a doubling Vec would hold twice its records while
            // it grows (pages of the capacity left untouched cost nothing).
            self.buf.reserve_exact(self.limit);
        }
        self.buf.push(record);
        if self.buf.len() >= self.limit {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<()> {
        self.buf.par_sort_unstable();
        self.buf.dedup();
        let path = self
            .dir
            .join(format!("{}{}", self.prefix, self.runs.len() + 1));
        // Never committed: the guard removes the run when the build ends.
        let guard = crate::atomic_file::Pending::new(&path, "");
        let file = File::create(&path)
            .with_context(|| format!("cannot create the temporary file {}", path.display()))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let mut bytes = Vec::with_capacity(T::SIZE);
        for r in &self.buf {
            bytes.clear();
            r.write(&mut bytes);
            w.write_all(&bytes)
                .with_context(|| format!("cannot write to {}", path.display()))?;
        }
        w.flush()
            .with_context(|| format!("cannot write to {}", path.display()))?;
        self.runs.push(guard);
        self.buf.clear();
        Ok(())
    }

    /// Every record pushed, sorted, each once, handed to `f` in batches.
    pub fn drain(mut self, mut f: impl FnMut(&[T]) -> Result<()>) -> Result<()> {
        if self.runs.is_empty() {
            self.buf.par_sort_unstable();
            self.buf.dedup();
            return f(&self.buf);
        }
        if !self.buf.is_empty() {
            self.spill()?;
        }
        self.buf = Vec::new();
        let mut readers = Vec::new();
        for run in &self.runs {
            let file = File::open(run.path())
                .with_context(|| format!("cannot read {}", run.path().display()))?;
            readers.push(BufReader::with_capacity(1 << 18, file));
        }
        let mut bytes = vec![0u8; T::SIZE];
        let mut next = |r: &mut BufReader<File>| -> Result<Option<T>> {
            match r.read_exact(&mut bytes) {
                Ok(()) => Ok(Some(T::read(&bytes))),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
                Err(e) => Err(e.into()),
            }
        };
        let mut heap = std::collections::BinaryHeap::new();
        for (i, r) in readers.iter_mut().enumerate() {
            if let Some(p) = next(r)? {
                heap.push(std::cmp::Reverse((p, i)));
            }
        }
        let mut out: Vec<T> = Vec::with_capacity(1 << 16);
        let mut last = None;
        while let Some(std::cmp::Reverse((p, i))) = heap.pop() {
            if last != Some(p) {
                if out.len() == out.capacity() {
                    f(&out)?;
                    out.clear();
                }
                out.push(p);
                last = Some(p);
            }
            if let Some(q) = next(&mut readers[i])? {
                heap.push(std::cmp::Reverse((q, i)));
            }
        }
        f(&out)
    }
}

/// How much memory `build` may hold, and where it spills what does not fit.
#[derive(Clone, Debug)]
pub struct Spill {
    /// The budget in bytes: the counts while they fit, then the filter of
    /// shared positions and the tails index's sorting (SQLite's page cache
    /// and the reading threads come on top, a few tens of MB; the rows, the
    /// positions two games reach, are held whatever the budget).
    pub memory: u64,
    /// Directory of the temporary files (default: the book's own directory).
    pub temp_dir: Option<PathBuf>,
}

impl Default for Spill {
    fn default() -> Spill {
        Spill {
            memory: default_memory(),
            temp_dir: None,
        }
    }
}

/// The default budget: half of the machine's memory, at least 256 MiB.
pub fn default_memory() -> u64 {
    // SAFETY: sysconf reads a system constant and has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let total = if pages > 0 && page > 0 {
        pages as u64 * page as u64
    } else {
        4 << 30
    };
    (total / 2).max(256 << 20)
}

/// Reads a size as `--memory` takes it: bytes, or a number with K, M, G or
/// T (powers of 1024; a trailing B or iB is allowed): `1G`, `256M`, `1.5G`.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    let upper = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (number, unit) = match upper.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&upper[..i], Some(c)),
        _ => (upper, None),
    };
    let shift = match unit {
        None => 0,
        Some('K') => 10,
        Some('M') => 20,
        Some('G') => 30,
        Some('T') => 40,
        Some(c) => return Err(format!("unknown unit {c:?} in {t:?} (K, M, G or T)")),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{t:?} is not a size (e.g. 512M, 2G)"))?;
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("{t:?}: a size is a positive number"));
    }
    let bytes = value * (1u64 << shift) as f64;
    if bytes >= u64::MAX as f64 {
        return Err(format!("{t:?} is too large"));
    }
    Ok(bytes as u64)
}

/// The share of the budget the aggregate may fill: writing it (rows sorted,
/// the graph valued) needs about as much again.
pub(super) const AGGREGATE_SHARE: f64 = 0.45;
/// The share of the budget for the filter of shared positions once the
/// counts no longer fit, at most (it is sized at 16 bits a position the
/// input may hold), and for each [`Sorter`] in memory (the games' places,
/// their id order, the tails index, the parent links, the positions by
/// depth; the rest goes to sorted runs on disk; four at most at once).
pub(super) const FILTER_SHARE: f64 = 0.25;
pub(super) const SORT_SHARE: f64 = 0.05;
/// The share of the budget for one key range's counts, when all the counts
/// of a build do not fit (`build` counts and writes them range by range;
/// the filter and the keys of the rows are held beside them).
pub(super) const PART_SHARE: f64 = 0.3;
/// The memory the counts of a position the filter calls shared take, about
/// (the position, its moves and its top games: 530 bytes measured on 2 M
/// generated games), for choosing the number of key ranges.
pub(super) const PART_BYTES_PER_POSITION: u64 = 600;
/// SQLite's page caches while key ranges are counted and written, then
/// while the games are, then while the values are (shares of the budget).
pub(super) const CACHE_SHARE_COUNTING: f64 = 0.05;
pub(super) const CACHE_SHARE_WRITING: f64 = 0.25;
pub(super) const CACHE_SHARE_VALUES: f64 = 0.5;

/// A journal up to this share of the budget is held in memory for its two
/// reads (and counted on two threads).
pub(super) const JOURNAL_MEMORY_SHARE: f64 = 0.1;

/// Inputs of more PGN than this (decompressed, estimated) make a new book
/// through the journal from the start.
pub(super) const JOURNAL_FROM: u64 = 16 << 20;

/// The decompressed size of the inputs, estimated from their files (`None`
/// for standard input or a file that cannot be read: the budget decides).
pub(super) fn plain_size(inputs: &[PathBuf]) -> Option<u64> {
    let mut total = 0u64;
    for p in inputs {
        if p.as_os_str() == "-" {
            return None;
        }
        let len = std::fs::metadata(p).ok()?.len();
        let name = p.to_string_lossy();
        // PGN compresses about 4 times with gzip, 5 with zstd.
        let factor = if name.ends_with(".gz") {
            4
        } else if name.ends_with(".zst") {
            5
        } else {
            1
        };
        total = total.saturating_add(len.saturating_mul(factor));
    }
    Some(total)
}

/// Counts games in memory while they fit; past the budget, in a filter of
/// shared positions (see [`super::spill`]). Every game is journalled.
pub(super) struct Counter {
    pub agg: Option<Aggregate>,
    pub filter: Option<Arc<SharedFilter>>,
    pub journal: Journal,
    pub sources: Vec<String>,
    pub tails: bool,
    pub limit: u64,
    pub filter_bytes: u64,
    /// Games counted when the budget was reached.
    pub spilled_at: Option<u64>,
    pub games: u64,
    /// Positions the games reach, each time (an upper bound of the
    /// distinct ones).
    pub positions: u64,
}

impl Counter {
    /// Counts `game`; `record`: its journal record, made (and its positions
    /// added to the filter) by the thread that validated it.
    pub fn add(&mut self, game: &Game, record: Option<Vec<u8>>, source: &str) -> Result<()> {
        if self.sources.last().is_none_or(|s| s != source) {
            self.sources.push(source.to_string());
        }
        let index = self.sources.len() as u32 - 1;
        self.games += 1;
        self.positions += game.plies.len() as u64 + 1;
        if let Some(r) = record {
            return self.journal.append_record(game.hash, &r, index);
        }
        self.journal.append(game, index)?;
        if let Some(f) = &self.filter {
            f.add_all(game.keys());
            return Ok(());
        }
        let Some(agg) = &mut self.agg else {
            return Ok(());
        };
        agg.add(game, source);
        if agg.approx_bytes() > self.limit && self.tails {
            // The counts are freed before the filter takes their place,
            // filled from the journal: the two are never held together.
            self.agg = None;
            let f = SharedFilter::new(self.filter_bytes);
            self.journal.replay(|g| {
                f.add_all(g.keys());
                Ok(())
            })?;
            self.filter = Some(Arc::new(f));
            self.spilled_at = Some(self.games);
        }
        Ok(())
    }
}

/// The exact counts of every position `shared` says two games may reach,
/// and of the moves out of them, from the journal; of every position of a
/// game that cannot have a tail (from a FEN, or repeated in the input). The
/// positions before a tail that one game alone reaches are added from that
/// game when the book is written.
pub(super) fn count_shared(
    reader: &JournalReader,
    copied: &KeySet<u64>,
    shared: &SharedFilter,
    tails: bool,
) -> Result<Aggregate> {
    let [(mut agg, _), (high, _)] = count_part(reader, copied, shared, tails, KeyRange::WHOLE)?;
    agg.nodes.extend(high.nodes);
    agg.edges.extend(high.edges);
    Ok(agg)
}

/// A range of position keys, `start..end` (`build` counts one range at a
/// time when all the counts do not fit its budget). Zobrist keys are
/// uniformly random: equal ranges hold about equal numbers of positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRange {
    start: u128,
    end: u128,
}

impl KeyRange {
    pub const WHOLE: KeyRange = KeyRange {
        start: 0,
        end: 1 << 64,
    };

    pub fn contains(&self, key: Key) -> bool {
        let k = u128::from(key.0);
        self.start <= k && k < self.end
    }

    /// Part `index` of `count` equal parts of this range.
    pub fn part(&self, index: u64, count: u64) -> KeyRange {
        let width = self.end - self.start;
        let count = u128::from(count.max(1));
        let at = |i: u128| self.start + width * i / count;
        KeyRange {
            start: at(u128::from(index)),
            end: at(u128::from(index) + 1),
        }
    }
}

/// [`count_shared`] for the keys of `part` only, and the keys of `part`
/// that games without a tail reach (rows whatever their counts): in two
/// halves of the range, counted on two threads.
pub(super) fn count_part(
    reader: &JournalReader,
    copied: &KeySet<u64>,
    shared: &SharedFilter,
    tails: bool,
    part: KeyRange,
) -> Result<[(Aggregate, KeySet<Key>); 2]> {
    let standard = crate::book::keys::polyglot_key(&shakmaty::Chess::default());
    let count = |games: &[Game], part: KeyRange, (agg, untailed): &mut (Aggregate, KeySet<Key>)| {
        for game in games {
            if game.start_ply == 0 && game.start == standard && !copied.contains(&game.hash) {
                agg.count_positions(game, |_, k| part.contains(k) && shared.is_shared(k));
            } else {
                agg.count_positions(game, |_, k| part.contains(k));
                untailed.extend(game.keys().filter(|&k| part.contains(k)));
            }
        }
    };
    // Two threads, each the keys of one half of the range: the two counts
    // have no key in common.
    let [low, high] = [part.part(0, 2), part.part(1, 2)];
    let mut counts = [(); 2].map(|()| (Aggregate::new(tails), KeySet::default()));
    reader.for_each_batch(|games| {
        let [a, b] = &mut counts;
        rayon::join(|| count(games, low, a), || count(games, high, b));
        Ok(())
    })?;
    Ok(counts)
}

/// Temporary files of one build, beside the book or in `--temp-dir`, named
/// after the book: removed when the build ends, and a killed build's by the
/// next build of the same book.
pub(super) struct TempFiles {
    pub dir: PathBuf,
    pub prefix: String,
}

impl TempFiles {
    pub fn new(book: &Path, spill: &Spill) -> Result<TempFiles> {
        let dir = match &spill.temp_dir {
            Some(d) => d.clone(),
            None => crate::atomic_file::directory_of(book).to_path_buf(),
        };
        if !dir.is_dir() {
            bail!(
                "the temporary directory {} is not a directory (--temp-dir)",
                dir.display()
            );
        }
        let name = book
            .file_name()
            .ok_or_else(|| anyhow::anyhow!("{}: not a file name", book.display()))?
            .to_string_lossy();
        let prefix = format!("{name}.spill-");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        Ok(TempFiles { dir, prefix })
    }

    pub fn path(&self, what: &str) -> PathBuf {
        self.dir.join(format!("{}{what}", self.prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_binary_units_and_bad_ones_are_refused() {
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("256m"), Ok(256 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("2KB"), Ok(2048));
        for bad in ["", "G", "12X", "-1G", "0", "nanM", "1e30T"] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_filter_never_calls_a_shared_position_single() {
        let f = SharedFilter::new(1 << 16);
        let keys: Vec<Key> = (0..20_000u64)
            .map(|i| Key(i.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x1234_5678))
            .collect();
        for k in &keys {
            f.add(*k);
        }
        for k in keys.iter().step_by(7) {
            f.add(*k);
        }
        for k in keys.iter().step_by(7) {
            assert!(f.is_shared(*k));
        }
        let false_shared = keys
            .iter()
            .enumerate()
            .filter(|(i, k)| i % 7 != 0 && f.is_shared(**k))
            .count();
        // 20,000 keys in 2^18 bits each: a few percent at most.
        assert!(false_shared < 1_000, "{false_shared} false positives");
    }

    #[test]
    fn games_added_whole_mark_what_two_of_them_or_one_twice_reach() {
        let f = SharedFilter::new(1 << 16);
        let key = |i: u64| Key(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xABCD);
        // Two games of 40 positions sharing their first 12. The second
        // reaches one of its own positions twice 16 plies apart (in two
        // chunks of the reads), and another twice 3 plies apart (in one).
        let first: Vec<u64> = (0..40).collect();
        let mut second: Vec<u64> = (0..12).chain(100..128).collect();
        second[30] = second[14];
        second[35] = second[32];
        f.add_all(first.iter().map(|&i| key(i)));
        f.add_all(second.iter().map(|&i| key(i)));
        for &i in &first[..12] {
            assert!(f.is_shared(key(i)));
        }
        assert!(f.is_shared(key(second[14])), "twice, 16 plies apart");
        assert!(f.is_shared(key(second[32])), "twice, 3 plies apart");
        let once: Vec<u64> = first[12..]
            .iter()
            .chain(&second[12..])
            .copied()
            .filter(|&i| i != second[14] && i != second[32])
            .collect();
        let false_shared = once.iter().filter(|&&i| f.is_shared(key(i))).count();
        assert!(
            false_shared <= 2,
            "{false_shared} of {} single positions called shared",
            once.len()
        );
    }

    /// A game through the positions `keys` (the first its start).
    fn game_through(hash: u64, keys: &[Key]) -> Game {
        Game {
            white: String::new(),
            black: String::new(),
            result: GameResult::Draw,
            hash,
            start: keys[0],
            start_ply: 0,
            plies: keys
                .windows(2)
                .map(|w| Ply {
                    parent: w[0],
                    mv: MoveCode(1),
                    child: w[1],
                    castle: false,
                })
                .collect(),
            total_plies: keys.len() as u32 - 1,
            terminal: None,
            white_elo: None,
            black_elo: None,
            tags: GameTags::default(),
            rest: Vec::new(),
        }
    }

    #[test]
    fn sharper_filters_of_key_ranges_keep_every_shared_position_and_few_single_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("games");
        let key = |i: u64| Key(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5EED);
        // 3,000 games of 30 positions: 10 of a pool of 60 that many games
        // reach, then 20 that this game alone reaches.
        let mut journal = Journal::create(&path, 1 << 20, 0).expect("journal");
        // A first filter far too small for the 60,000 single positions.
        let mut first = SharedFilter::new(1 << 13);
        for g in 0..3_000u64 {
            let keys: Vec<Key> = (0..10)
                .map(|p| key((g * 7 + p * 13) % 60))
                .chain((0..20).map(|p| key(1_000 + g * 20 + p)))
                .collect();
            let game = game_through(g, &keys);
            first.add_all(game.keys());
            journal.append(&game, 0).expect("append");
        }
        first.forget_seen();
        let (reader, _) = journal
            .finish(&["t".to_string()], false, 1 << 20)
            .expect("finish");
        let single: Vec<Key> = (1_000..1_000 + 60_000).map(key).collect();
        let first_false = single.iter().filter(|&&k| first.is_shared(k)).count();
        assert!(
            first_false > 30_000,
            "the first filter is not saturated: {first_false}"
        );
        let mut sharper_false = 0;
        for round in 0..3 {
            let range = KeyRange::WHOLE.part(round, 3);
            let sharper = first.refine(&reader, range, 1 << 17).expect("refine");
            for k in (0..60).map(key).filter(|&k| range.contains(k)) {
                assert!(sharper.is_shared(k), "a shared position called single");
            }
            sharper_false += single
                .iter()
                .filter(|&&k| range.contains(k) && sharper.is_shared(k))
                .count();
        }
        // About 20,000 keys a range, 2^19 bits to tell them: well under 1%.
        assert!(sharper_false < 300, "{sharper_false} false positives");
    }

    #[test]
    fn a_journal_reads_back_alike_held_in_memory_outgrowing_it_or_on_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = |i: u64| Key(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5EED);
        // 200 games (every tenth one read twice).
        let games: Vec<Game> = (0..200u64)
            .flat_map(|g| {
                let keys: Vec<Key> = (0..8).map(|p| key(g * 8 + p)).collect();
                let game = game_through(g, &keys);
                let again = (g % 10 == 0).then(|| game.clone());
                std::iter::once(game).chain(again)
            })
            .collect();
        let read_back = |name: &str, in_memory_limit: u64, replay_midway: bool| {
            let path = dir.path().join(name);
            let mut journal = Journal::create(&path, 1 << 20, in_memory_limit).expect("journal");
            let mut replayed = 0;
            for (i, g) in games.iter().enumerate() {
                journal.append(g, 0).expect("append");
                if replay_midway && i == 50 {
                    journal
                        .replay(|_| {
                            replayed += 1;
                            Ok(())
                        })
                        .expect("replay");
                }
            }
            let (reader, distinct) = journal
                .finish(&["t".to_string()], true, 1 << 20)
                .expect("finish");
            let file_len = std::fs::metadata(&path).expect("file").len();
            let mut hashes = Vec::new();
            reader
                .for_each(|g| {
                    hashes.push(g.hash);
                    Ok(())
                })
                .expect("read");
            (
                hashes,
                distinct.repeats,
                reader.loaded(),
                file_len,
                replayed,
            )
        };
        let (on_file, repeats, loaded, file_len, _) = read_back("file", 0, false);
        assert_eq!(repeats, 20);
        assert_eq!(on_file, (0..200).collect::<Vec<u64>>(), "each game once");
        assert!(!loaded && file_len > 10_000, "{file_len} bytes");
        // All of it in memory: nothing written, nothing to load.
        let held = read_back("held", 1 << 20, false);
        assert_eq!(
            (held.0, held.1, held.2, held.3),
            (on_file.clone(), 20, true, 0)
        );
        // Past 5 KB the held records go to the file and the rest follows.
        let outgrown = read_back("outgrown", 5_000, false);
        assert_eq!(outgrown.0, on_file);
        assert!(!outgrown.2 && outgrown.3 == file_len);
        // A replay (a build spilling its counts) reads what was held.
        let replayed = read_back("replayed", 1 << 20, true);
        assert_eq!((replayed.0, replayed.4), (on_file.clone(), 51));
        assert!(!replayed.2 && replayed.3 == file_len);
    }

    #[test]
    fn key_ranges_split_the_keys_without_gap_or_overlap() {
        let whole = KeyRange::WHOLE;
        for k in [0, 1, u64::MAX / 3, u64::MAX / 3 + 1, u64::MAX - 1, u64::MAX] {
            let key = Key(k);
            assert!(whole.contains(key));
            for count in [1, 2, 3, 7] {
                let parts: Vec<KeyRange> = (0..count).map(|i| whole.part(i, count)).collect();
                assert_eq!(parts.iter().filter(|p| p.contains(key)).count(), 1);
                let sub = (0..count)
                    .flat_map(|i| (0..5).map(move |j| whole.part(i, count).part(j, 5)))
                    .filter(|p| p.contains(key))
                    .count();
                assert_eq!(sub, 1, "key {k:#x} in {count} x 5 parts");
            }
        }
    }

    #[test]
    fn sorted_pairs_come_back_in_order_and_once_across_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = PairSorter::new(16 * 1024, dir.path(), "t.run");
        let mut want = Vec::new();
        for i in 0..10_000i64 {
            let p = ((i * 7919) % 3001, i % 5);
            s.push(p).expect("push");
            want.push(p);
        }
        want.sort_unstable();
        want.dedup();
        assert!(s.runs.len() > 1);
        let mut got = Vec::new();
        s.drain(|b| {
            got.extend_from_slice(b);
            Ok(())
        })
        .expect("drain");
        assert_eq!(got, want);
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
