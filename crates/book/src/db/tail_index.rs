//! The index of single-game tails by key: which games' tails may hold a
//! position.
//!
//! An entry is a tail position's key prefix ([`prefix`], the key's top 32
//! bits) and its game's id. The entries are kept in buckets by the prefix's
//! top 16 bits, one row of `tail_index` per bucket: the entries packed in a
//! blob, sorted, six bytes each (the prefix's low 16 bits, then the game id
//! in 32 bits, both little-endian). The master games' 2.3 M entries are
//! 65,536 rows instead of 2.3 M B-tree cells: written in a fraction of the
//! time, in half the room. A read by key reads one bucket (about 35 entries
//! there).
//!
//! Buckets are numbered as SQLite orders the keys (signed): the positions
//! of bucket `b` are the keys `b << 48 ..= (b << 48) | 0xFFFF_FFFF_FFFF`.

use anyhow::{anyhow, bail, Result};
use rusqlite::{Connection, OptionalExtension};

use crate::keys::Key;

/// `(prefix, game id)`: one tail position of one game.
pub(super) type Entry = (i64, i64);

const ENTRY_BYTES: usize = 6;

/// What the index keeps of a key: its top 32 bits, as a signed 32-bit
/// integer (the order of SQLite's keys).
pub(crate) fn prefix(key: Key) -> i64 {
    i64::from((key.0 >> 32) as u32 as i32)
}

/// The bucket of a prefix.
fn bucket_of(prefix: i64) -> i64 {
    prefix >> 16
}

/// The keys of bucket `b`, as SQLite stores keys: `(first, last)`.
pub(super) fn key_range(bucket: i64) -> (i64, i64) {
    (bucket << 48, (bucket << 48) | 0xFFFF_FFFF_FFFF)
}

/// Packs the entries of one bucket (sorted, each once).
fn encode(entries: &[Entry]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(entries.len() * ENTRY_BYTES);
    for &(p, game) in entries {
        let game = u32::try_from(game)
            .map_err(|_| anyhow!("game id {game} does not fit the tails index (32 bits)"))?;
        out.extend_from_slice(&(p as u16).to_le_bytes());
        out.extend_from_slice(&game.to_le_bytes());
    }
    Ok(out)
}

/// Back from [`encode`], for bucket `bucket`.
fn decode(bucket: i64, blob: &[u8]) -> Result<Vec<Entry>> {
    if !blob.len().is_multiple_of(ENTRY_BYTES) {
        bail!(
            "bucket {bucket} of the tails index is {} bytes long (a damaged book)",
            blob.len()
        );
    }
    Ok(blob
        .chunks_exact(ENTRY_BYTES)
        .map(|e| {
            let low = u16::from_le_bytes([e[0], e[1]]);
            let game = u32::from_le_bytes([e[2], e[3], e[4], e[5]]);
            ((bucket << 16) | i64::from(low), i64::from(game))
        })
        .collect())
}

/// The entries of one bucket of `schema`'s index (`main`, or a shard).
pub(super) fn read_bucket(conn: &Connection, schema: &str, bucket: i64) -> Result<Vec<Entry>> {
    let blob: Option<Vec<u8>> = conn
        .prepare_cached(&format!(
            "SELECT entries FROM {schema}.tail_index WHERE bucket = ?1"
        ))?
        .query_row([bucket], |r| r.get(0))
        .optional()?;
    match blob {
        Some(b) => decode(bucket, &b),
        None => Ok(Vec::new()),
    }
}

/// Replaces the entries of one bucket of this book's index.
fn write_bucket(conn: &Connection, bucket: i64, entries: &[Entry]) -> Result<()> {
    if entries.is_empty() {
        conn.prepare_cached("DELETE FROM tail_index WHERE bucket = ?1")?
            .execute([bucket])?;
    } else {
        // An update in place where the bucket exists (a replace deletes and inserts).
        conn.prepare_cached(
            "INSERT INTO tail_index(bucket, entries) VALUES (?1, ?2)
             ON CONFLICT(bucket) DO UPDATE SET entries = excluded.entries",
        )?
        .execute(rusqlite::params![bucket, encode(entries)?])?;
    }
    Ok(())
}

/// The games whose tails may hold `key` (those listed under its prefix).
pub(super) fn candidates(conn: &Connection, key: Key) -> Result<Vec<i64>> {
    let p = prefix(key);
    Ok(read_bucket(conn, "main", bucket_of(p))?
        .into_iter()
        .filter(|e| e.0 == p)
        .map(|e| e.1)
        .collect())
}

/// Takes game `game`'s entries under `prefixes` out of the index.
pub(super) fn unlist(conn: &Connection, game: i64, prefixes: &[i64]) -> Result<()> {
    let mut buckets: Vec<i64> = prefixes.iter().map(|&p| bucket_of(p)).collect();
    buckets.sort_unstable();
    buckets.dedup();
    for b in buckets {
        let mut entries = read_bucket(conn, "main", b)?;
        let before = entries.len();
        entries.retain(|e| !(e.1 == game && prefixes.contains(&e.0)));
        if entries.len() != before {
            write_bucket(conn, b, &entries)?;
        }
    }
    Ok(())
}

/// Adds entries to this book's index (any order, repeats and entries
/// already listed allowed).
pub(super) fn add(conn: &Connection, mut entries: Vec<Entry>) -> Result<()> {
    entries.sort_unstable();
    entries.dedup();
    for group in entries.chunk_by(|a, b| bucket_of(a.0) == bucket_of(b.0)) {
        let b = bucket_of(group[0].0);
        let mut all = read_bucket(conn, "main", b)?;
        let before = all.len();
        all.extend_from_slice(group);
        all.sort_unstable();
        all.dedup();
        if all.len() != before {
            write_bucket(conn, b, &all)?;
        }
    }
    Ok(())
}

/// Calls `f` on every bucket of `schema`'s index (`main`, or a shard), in
/// bucket order, with its entries.
pub(super) fn for_each_bucket(
    conn: &Connection,
    schema: &str,
    mut f: impl FnMut(i64, Vec<Entry>) -> Result<()>,
) -> Result<()> {
    let mut stmt = conn.prepare(&format!(
        "SELECT bucket, entries FROM {schema}.tail_index ORDER BY bucket"
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let bucket: i64 = r.get(0)?;
        let blob: Vec<u8> = r.get(1)?;
        f(bucket, decode(bucket, &blob)?)?;
    }
    Ok(())
}

/// Writes the index of a new book from its entries, handed over in sorted
/// batches (as [`crate::sort::PairSorter::drain`] gives them); a
/// bucket may span two batches.
pub(super) struct IndexWriter<'c> {
    stmt: rusqlite::Statement<'c>,
    bucket: Vec<Entry>,
}

impl<'c> IndexWriter<'c> {
    pub fn new(conn: &'c Connection) -> Result<IndexWriter<'c>> {
        Ok(IndexWriter {
            stmt: conn.prepare("INSERT INTO tail_index(bucket, entries) VALUES (?1, ?2)")?,
            bucket: Vec::new(),
        })
    }

    /// Entries after those of the previous batches, sorted, each once.
    pub fn push(&mut self, entries: &[Entry]) -> Result<()> {
        for &e in entries {
            if self
                .bucket
                .first()
                .is_some_and(|f| bucket_of(f.0) != bucket_of(e.0))
            {
                self.flush()?;
            }
            self.bucket.push(e);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if let Some(first) = self.bucket.first() {
            let b = bucket_of(first.0);
            self.stmt
                .execute(rusqlite::params![b, encode(&self.bucket)?])?;
            self.bucket.clear();
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        self.flush()
    }
}

/// Schema 5 -> 6: the `tails` table (a row per entry) becomes
/// `tail_index`'s buckets.
pub(super) fn migrate_rows(conn: &Connection) -> Result<()> {
    let has_rows: bool = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'tails'",
        [],
        |r| r.get(0),
    )?;
    if !has_rows {
        return Ok(());
    }
    {
        let mut writer = IndexWriter::new(conn)?;
        let mut stmt = conn.prepare("SELECT prefix, game FROM tails ORDER BY prefix, game")?;
        let mut rows = stmt.query([])?;
        let mut batch = Vec::with_capacity(1 << 16);
        while let Some(r) = rows.next()? {
            batch.push((r.get(0)?, r.get(1)?));
            if batch.len() == batch.capacity() {
                writer.push(&batch)?;
                batch.clear();
            }
        }
        writer.push(&batch)?;
        writer.finish()?;
    }
    conn.execute_batch("DROP TABLE tails")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> Connection {
        let conn = Connection::open_in_memory().expect("sqlite");
        conn.execute_batch(
            "CREATE TABLE tail_index(bucket INTEGER PRIMARY KEY, entries BLOB NOT NULL)",
        )
        .expect("table");
        conn
    }

    /// Keys with the given top 32 bits.
    fn key(prefix: u32, low: u32) -> Key {
        Key((u64::from(prefix) << 32) | u64::from(low))
    }

    #[test]
    fn a_key_finds_the_games_listed_under_its_prefix_and_no_others() {
        let conn = book();
        // Two prefixes in one bucket, one in the next, and negative ones.
        let keys = [
            key(0x0001_0002, 7),
            key(0x0001_0003, 9),
            key(0x0002_0000, 1),
            key(0xFFFF_FFFF, 3),
            key(0x8000_0000, 4),
        ];
        let mut entries: Vec<Entry> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (prefix(k), i as i64 + 1))
            .collect();
        entries.push((prefix(keys[0]), 40));
        entries.sort_unstable();
        let mut w = IndexWriter::new(&conn).expect("writer");
        // Split mid-bucket, as a sorter's batches may be.
        w.push(&entries[..2]).expect("push");
        w.push(&entries[2..]).expect("push");
        w.finish().expect("finish");
        assert_eq!(candidates(&conn, keys[0]).expect("read"), vec![1, 40]);
        assert_eq!(
            candidates(&conn, key(0x0001_0002, 1234)).expect("read"),
            vec![1, 40]
        );
        assert_eq!(candidates(&conn, keys[1]).expect("read"), vec![2]);
        assert_eq!(candidates(&conn, keys[2]).expect("read"), vec![3]);
        assert_eq!(candidates(&conn, keys[3]).expect("read"), vec![4]);
        assert_eq!(candidates(&conn, keys[4]).expect("read"), vec![5]);
        assert!(candidates(&conn, key(0x0001_0004, 7))
            .expect("read")
            .is_empty());
        // Every entry back, in order, bucket by bucket in key order.
        let mut all = Vec::new();
        let mut buckets = Vec::new();
        for_each_bucket(&conn, "main", |b, e| {
            buckets.push(b);
            all.extend(e);
            Ok(())
        })
        .expect("scan");
        assert_eq!(all, entries);
        assert!(buckets.windows(2).all(|w| w[0] < w[1]));
        for (b, k) in [(bucket_of(prefix(keys[4])), keys[4]), (1, keys[0])] {
            let (lo, hi) = key_range(b);
            assert!((lo..=hi).contains(&k.to_sql()));
        }
    }

    #[test]
    fn unlisting_and_adding_change_only_the_entries_named() {
        let conn = book();
        let (a, b) = (key(0x0005_0001, 0), key(0x0005_0002, 0));
        add(&conn, vec![(prefix(a), 1), (prefix(b), 1), (prefix(a), 2)]).expect("add");
        add(&conn, vec![(prefix(a), 2), (prefix(b), 3)]).expect("add again");
        assert_eq!(candidates(&conn, a).expect("read"), vec![1, 2]);
        assert_eq!(candidates(&conn, b).expect("read"), vec![1, 3]);
        unlist(&conn, 1, &[prefix(a)]).expect("unlist");
        assert_eq!(candidates(&conn, a).expect("read"), vec![2]);
        assert_eq!(candidates(&conn, b).expect("read"), vec![1, 3]);
        unlist(&conn, 2, &[prefix(a)]).expect("unlist");
        unlist(&conn, 1, &[prefix(b)]).expect("unlist");
        unlist(&conn, 3, &[prefix(b)]).expect("unlist");
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM tail_index", [], |r| r.get(0))
            .expect("count");
        assert_eq!(rows, 0, "an empty bucket leaves no row");
    }

    #[test]
    fn a_damaged_bucket_is_an_error_not_a_panic() {
        let conn = book();
        conn.execute(
            "INSERT INTO tail_index(bucket, entries) VALUES (5, x'0102030405')",
            [],
        )
        .expect("insert");
        let err = candidates(&conn, key(0x0005_0000, 0)).expect_err("damaged");
        assert!(err.to_string().contains("damaged"), "{err}");
    }
}
