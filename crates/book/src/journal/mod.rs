//! The journal: the validated games of a build in a temporary file (or in
//! memory while they fit), read back in input order to count and in id
//! order to write the book.

mod record;
#[cfg(test)]
pub(crate) mod test_games;

pub use record::record;

use std::{
    fs::File,
    io::{BufReader, BufWriter, Read, Write},
    os::unix::fs::FileExt,
    path::Path,
};

use anyhow::{anyhow, Context, Result};
use rayon::prelude::*;

use crate::keys::KeySet;
use crate::pgn::game::Game;
use crate::sort::{read_i64, SortRecord, Sorter};
use record::{decode, encode, Fields};

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
        let dir = learnbook_base::atomic_file::directory_of(path);
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
        let dir = learnbook_base::atomic_file::directory_of(&self.path);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::test_games::game_through;
    use crate::keys::Key;

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
}
