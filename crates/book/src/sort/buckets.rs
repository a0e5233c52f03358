//! Records handed out to one temporary file per bucket in one pass, then
//! read back a bucket at a time in the order they were added: one pass over
//! the games feeds work that is done a key range at a time.

use std::{
    fs::File,
    io::{BufReader, BufWriter, Read, Write},
    path::Path,
};

use anyhow::{Context, Result};

use super::external::SortRecord;
use learnbook_base::atomic_file::Pending;

/// Bytes buffered for each bucket's file while the records come in.
const WRITE_BUFFER: usize = 1 << 15;

/// One temporary file per bucket, removed when asked (or when dropped).
pub struct Buckets<T: SortRecord> {
    files: Vec<(Pending, Option<BufWriter<File>>)>,
    bytes: Vec<u8>,
    _record: std::marker::PhantomData<T>,
}

impl<T: SortRecord> Buckets<T> {
    /// `count` buckets, written to `dir` as `prefix` + n.
    pub fn new(count: usize, dir: &Path, prefix: &str) -> Result<Buckets<T>> {
        let mut files = Vec::with_capacity(count);
        for i in 0..count {
            let path = dir.join(format!("{prefix}{i}"));
            let guard = Pending::temporary(&path);
            let file = File::create(&path)
                .with_context(|| format!("cannot create the temporary file {}", path.display()))?;
            files.push((guard, Some(BufWriter::with_capacity(WRITE_BUFFER, file))));
        }
        Ok(Buckets {
            files,
            bytes: Vec::with_capacity(T::SIZE),
            _record: std::marker::PhantomData,
        })
    }

    pub fn push(&mut self, bucket: usize, record: &T) -> Result<()> {
        let (guard, writer) = &mut self.files[bucket];
        let Some(w) = writer else {
            anyhow::bail!("bucket {bucket} was already read back");
        };
        self.bytes.clear();
        record.write(&mut self.bytes);
        w.write_all(&self.bytes)
            .with_context(|| format!("cannot write to {}", guard.path().display()))
    }

    /// Every record of `bucket` in the order pushed, handed to `f` one at
    /// a time (no more can be pushed to it).
    pub fn read(&mut self, bucket: usize, mut f: impl FnMut(T) -> Result<()>) -> Result<()> {
        let (guard, writer) = &mut self.files[bucket];
        if let Some(mut w) = writer.take() {
            w.flush()
                .with_context(|| format!("cannot write to {}", guard.path().display()))?;
        }
        let file = File::open(guard.path())
            .with_context(|| format!("cannot read {}", guard.path().display()))?;
        let mut r = BufReader::with_capacity(1 << 20, file);
        let mut bytes = vec![0u8; T::SIZE];
        loop {
            match r.read_exact(&mut bytes) {
                Ok(()) => f(T::read(&bytes))?,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("cannot read {}", guard.path().display()))
                }
            }
        }
        Ok(())
    }

    /// Removes the file of `bucket` now rather than at the end: the
    /// buckets together may be large.
    pub fn remove(&mut self, bucket: usize) {
        let (guard, writer) = &mut self.files[bucket];
        *writer = None;
        let _ = std::fs::remove_file(guard.path());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bucket_gives_back_its_records_in_the_order_pushed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut b: Buckets<(i64, i64)> = Buckets::new(3, dir.path(), "t.bucket").expect("new");
        let mut want = vec![Vec::new(); 3];
        for i in 0..10_000i64 {
            let bucket = ((i * 7919) % 3) as usize;
            let r = (10_000 - i, i % 5);
            b.push(bucket, &r).expect("push");
            want[bucket].push(r);
        }
        for (bucket, want) in want.iter().enumerate() {
            for _ in 0..2 {
                let mut got = Vec::new();
                b.read(bucket, |r| {
                    got.push(r);
                    Ok(())
                })
                .expect("read");
                assert_eq!(&got, want);
            }
        }
        b.remove(0);
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 2);
        drop(b);
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
