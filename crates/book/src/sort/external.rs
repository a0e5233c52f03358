//! An external sort: records sorted in memory up to a limit, then in
//! sorted runs on disk merged at the end.

use std::{
    fs::File,
    io::{BufReader, BufWriter, Read, Write},
    path::Path,
};

use anyhow::{Context, Result};
use rayon::prelude::*;

use learnbook_base::atomic_file::Pending;

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

pub(crate) fn read_i64(b: &[u8]) -> i64 {
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
    runs: Vec<Pending>,
    /// Run files written so far (their names' numbers).
    written: usize,
}

/// Runs merged at once: each has a file open and a read buffer
/// ([`READ_BUFFER`]), so more runs (a sort many times its memory) are
/// first merged in groups into longer runs, and the merge holds 16 MB
/// whatever the size.
const MAX_MERGE: usize = 64;
const READ_BUFFER: usize = 1 << 18;

impl<T: SortRecord> Sorter<T> {
    /// At most `bytes` in memory; runs written to `dir` as `prefix` + n +
    /// `.` + this process's id. Runs of the same prefix left by a process
    /// that no longer runs (a killed sort's) are removed first.
    pub fn new(bytes: u64, dir: &Path, prefix: &str) -> Sorter<T> {
        remove_leftover_runs(dir, prefix);
        Sorter {
            buf: Vec::new(),
            limit: (bytes / std::mem::size_of::<T>().max(1) as u64).max(1024) as usize,
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            runs: Vec::new(),
            written: 0,
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
        let buf = std::mem::take(&mut self.buf);
        let run = self.write_run(buf.iter().map(|&r| Ok(r)))?;
        self.runs.push(run);
        self.buf = buf;
        self.buf.clear();
        Ok(())
    }

    /// A new run file holding `records` (in order).
    fn write_run(&mut self, records: impl Iterator<Item = Result<T>>) -> Result<Pending> {
        self.written += 1;
        let path = self
            .dir
            .join(run_name(&self.prefix, self.written, std::process::id()));
        // Never committed: the guard removes the run when the sort ends.
        let guard = Pending::new(&path, "");
        let file = File::create(&path)
            .with_context(|| format!("cannot create the temporary file {}", path.display()))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let mut bytes = Vec::with_capacity(T::SIZE);
        for r in records {
            bytes.clear();
            r?.write(&mut bytes);
            w.write_all(&bytes)
                .with_context(|| format!("cannot write to {}", path.display()))?;
        }
        w.flush()
            .with_context(|| format!("cannot write to {}", path.display()))?;
        Ok(guard)
    }

    /// Every record pushed, sorted, each once, handed to `f` in batches.
    pub fn drain(mut self, mut f: impl FnMut(&[T]) -> Result<()>) -> Result<()> {
        if self.runs.is_empty() {
            self.buf.par_sort_unstable();
            self.buf.dedup();
            return f(&self.buf);
        }
        let mut sorted = self.into_sorted()?;
        let mut out: Vec<T> = Vec::with_capacity(1 << 16);
        while let Some(p) = sorted.next_record()? {
            if out.len() == out.capacity() {
                f(&out)?;
                out.clear();
            }
            out.push(p);
        }
        f(&out)
    }

    /// Every record pushed, sorted, each once, to be read one at a time
    /// ([`Sorted::next_record`]).
    pub fn into_sorted(mut self) -> Result<Sorted<T>> {
        if self.runs.is_empty() {
            self.buf.par_sort_unstable();
            self.buf.dedup();
            return Ok(Sorted {
                bytes: Vec::new(),
                held: std::mem::take(&mut self.buf).into_iter(),
                readers: Vec::new(),
                heap: std::collections::BinaryHeap::new(),
                last: None,
                _runs: Vec::new(),
            });
        }
        if !self.buf.is_empty() {
            self.spill()?;
        }
        self.buf = Vec::new();
        while self.runs.len() > MAX_MERGE {
            let mut runs = std::mem::take(&mut self.runs).into_iter();
            loop {
                let group: Vec<Pending> = runs.by_ref().take(MAX_MERGE).collect();
                if group.is_empty() {
                    break;
                }
                let mut merged = merge(group)?;
                let run =
                    self.write_run(std::iter::from_fn(|| merged.next_record().transpose()))?;
                self.runs.push(run);
            }
        }
        merge(std::mem::take(&mut self.runs))
    }
}

/// The file name of run `n` of a sort by process `pid`.
fn run_name(prefix: &str, n: usize, pid: u32) -> String {
    format!("{prefix}{n}.{pid}")
}

/// The process that wrote run file `name` of a sort named `prefix`, if the
/// name is one of its runs (`prefix` + n + `.` + pid).
fn run_owner(name: &str, prefix: &str) -> Option<u32> {
    let (n, pid) = name.strip_prefix(prefix)?.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(n) && digits(pid)).then(|| pid.parse().ok())?
}

/// Removes the runs of sorts named `prefix` in `dir` whose process is gone
/// (a killed run's; a running sort's are kept). Best effort: a file that
/// cannot be listed or removed is left as it was.
fn remove_leftover_runs(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| run_owner(n, prefix)) else {
            continue;
        };
        if !learnbook_base::sys::process_exists(pid) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The records of sorted `runs` (at most [`MAX_MERGE`]) in order, each once.
fn merge<T: SortRecord>(runs: Vec<Pending>) -> Result<Sorted<T>> {
    let mut readers = Vec::new();
    for run in &runs {
        let file = File::open(run.path())
            .with_context(|| format!("cannot read {}", run.path().display()))?;
        readers.push(BufReader::with_capacity(READ_BUFFER, file));
    }
    let mut heap = std::collections::BinaryHeap::new();
    let mut bytes = Vec::new();
    for (i, r) in readers.iter_mut().enumerate() {
        if let Some(p) = read_record(r, &mut bytes)? {
            heap.push(std::cmp::Reverse((p, i)));
        }
    }
    Ok(Sorted {
        bytes,
        held: Vec::new().into_iter(),
        readers,
        heap,
        last: None,
        _runs: runs,
    })
}

fn read_record<T: SortRecord>(r: &mut BufReader<File>, bytes: &mut Vec<u8>) -> Result<Option<T>> {
    bytes.resize(T::SIZE, 0);
    match r.read_exact(bytes) {
        Ok(()) => Ok(Some(T::read(bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What [`Sorter::into_sorted`] gives: the records in order, each once.
pub struct Sorted<T: SortRecord> {
    /// The records, when they all fitted in memory.
    held: std::vec::IntoIter<T>,
    readers: Vec<BufReader<File>>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(T, usize)>>,
    last: Option<T>,
    bytes: Vec<u8>,
    /// The runs, removed when this is dropped.
    _runs: Vec<Pending>,
}

impl<T: SortRecord> Sorted<T> {
    pub fn next_record(&mut self) -> Result<Option<T>> {
        if self.readers.is_empty() {
            return Ok(self.held.next());
        }
        while let Some(std::cmp::Reverse((p, i))) = self.heap.pop() {
            if let Some(q) = read_record(&mut self.readers[i], &mut self.bytes)? {
                self.heap.push(std::cmp::Reverse((q, i)));
            }
            if self.last != Some(p) {
                self.last = Some(p);
                return Ok(Some(p));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_sorts_runs_are_removed_by_the_next_sort_of_that_name_and_a_running_ones_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A process that has ended: its pid names no process now.
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let gone = child.id();
        child.wait().expect("wait");
        let mine = std::process::id();
        let names = [
            run_name("b.sqlite.values-layers", 1, gone),
            run_name("b.sqlite.values-layers", 12, gone),
            run_name("b.sqlite.values-layers", 1, mine),
            run_name("b.sqlite.values-tail-heads", 1, gone),
            "b.sqlite.values-layersX.1".to_string(),
            "b.sqlite".to_string(),
        ];
        for n in &names {
            std::fs::write(dir.path().join(n), b"x").expect("write");
        }
        let _s: PairSorter = Sorter::new(1 << 20, dir.path(), "b.sqlite.values-layers");
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want = vec![
            names[2].clone(),
            names[3].clone(),
            names[4].clone(),
            names[5].clone(),
        ];
        want.sort();
        assert_eq!(left, want);
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
        for limit in [16 * 1024, 1 << 20] {
            let mut s = PairSorter::new(limit, dir.path(), "t.run");
            for i in 0..10_000i64 {
                s.push(((i * 7919) % 3001, i % 5)).expect("push");
            }
            let mut sorted = s.into_sorted().expect("sorted");
            let mut got = Vec::new();
            while let Some(p) = sorted.next_record().expect("next") {
                got.push(p);
            }
            assert_eq!(got, want, "limit {limit}");
            drop(sorted);
            assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
        }
    }

    #[test]
    fn more_runs_than_are_merged_at_once_are_merged_in_passes() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The smallest run: 1,024 records.
        let mut s = PairSorter::new(0, dir.path(), "t.run");
        let n = (2 * MAX_MERGE as i64 + 3) * 1024;
        let mut want = Vec::new();
        for i in 0..n {
            let p = ((i * 7919) % 100_003, i % 3);
            s.push(p).expect("push");
            want.push(p);
        }
        want.sort_unstable();
        want.dedup();
        assert!(s.runs.len() > 2 * MAX_MERGE, "{} runs", s.runs.len());
        let mut sorted = s.into_sorted().expect("sorted");
        assert!(
            sorted.readers.len() <= MAX_MERGE,
            "{} runs open",
            sorted.readers.len()
        );
        let mut got = Vec::new();
        while let Some(p) = sorted.next_record().expect("next") {
            got.push(p);
        }
        assert_eq!(got, want);
        drop(sorted);
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
