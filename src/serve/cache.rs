//! `/masters` answers kept while the book does not change.
//!
//! Explorer traffic is mostly the same few thousand popular positions, and
//! an answer costs a dozen SQLite reads; kept, it costs a look-up. An
//! answer is valid for one state of the book: the cache tags each with the
//! book's version when it was asked for (SQLite's `PRAGMA data_version` on
//! one connection of its own, which changes whenever another connection
//! commits, e.g. `learnbook learn`), and a look-up under another version
//! misses. The version is read before the answer's snapshot is taken, so
//! an answer is never older than its tag says; a client never sees a count
//! go down.

use std::{
    collections::HashMap,
    path::Path,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
};

use anyhow::Result;
use axum::body::Bytes;

use crate::book::Book;

/// Answers kept by default (a few KB each).
pub const DEFAULT_ENTRIES: usize = 20_000;

pub struct AnswerCache {
    /// The connection whose `data_version` is the book's version.
    watch: Mutex<Book>,
    entries: Mutex<Entries>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Default)]
struct Entries {
    map: HashMap<String, Entry>,
    /// Look-ups so far: an entry's last use, for eviction.
    tick: u64,
}

struct Entry {
    version: i64,
    body: Bytes,
    used: u64,
}

impl AnswerCache {
    /// A cache of at most `capacity` answers over the book at `path`
    /// (0: nothing is kept, every request reads the book).
    pub fn open(path: &Path, capacity: usize) -> Result<AnswerCache> {
        Ok(AnswerCache {
            watch: Mutex::new(Book::open_read_only(path)?),
            entries: Mutex::default(),
            capacity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
    }

    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The book's version now.
    pub fn version(&self) -> Result<i64> {
        self.watch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .data_version()
    }

    /// The answer to `query` under `version`, if kept.
    pub fn get(&self, query: &str, version: i64) -> Option<Bytes> {
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        e.tick += 1;
        let tick = e.tick;
        let found = match e.map.get_mut(query) {
            Some(entry) if entry.version == version => {
                entry.used = tick;
                Some(entry.body.clone())
            }
            _ => None,
        };
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `body` as the answer to `query` under `version`.
    pub fn put(&self, query: &str, version: i64, body: Bytes) {
        if !self.enabled() {
            return;
        }
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if e.map.len() >= self.capacity && !e.map.contains_key(query) {
            evict(&mut e.map, self.capacity, version);
        }
        let used = e.tick;
        e.map.insert(
            query.to_string(),
            Entry {
                version,
                body,
                used,
            },
        );
    }

    /// Look-ups answered from the cache, and those that were not.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

/// Makes room: answers of older versions go first, then the least recently
/// used quarter.
fn evict(map: &mut HashMap<String, Entry>, capacity: usize, version: i64) {
    map.retain(|_, e| e.version == version);
    if map.len() < capacity {
        return;
    }
    let mut used: Vec<u64> = map.values().map(|e| e.used).collect();
    let cut = used.len() / 4;
    let (_, &mut threshold, _) = used.select_nth_unstable(cut);
    map.retain(|_, e| e.used > threshold);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_of_another_version_miss_and_a_full_cache_keeps_the_recent_ones() {
        let mut map = HashMap::new();
        for i in 0..8u64 {
            map.insert(
                format!("q{i}"),
                Entry {
                    version: if i == 0 { 1 } else { 2 },
                    body: Bytes::from_static(b"{}"),
                    used: i,
                },
            );
        }
        evict(&mut map, 8, 2);
        // The stale one went; then room was made among the oldest.
        assert!(!map.contains_key("q0"));
        assert!(map.contains_key("q7") && map.contains_key("q6"));
        assert!(map.len() < 8);
        // All current: the least recently used quarter goes.
        for i in 8..12u64 {
            map.insert(
                format!("q{i}"),
                Entry {
                    version: 2,
                    body: Bytes::from_static(b"{}"),
                    used: i,
                },
            );
        }
        let before = map.len();
        evict(&mut map, before, 2);
        assert!(map.len() < before);
        assert!(!map.contains_key("q1") && map.contains_key("q11"));
    }
}
