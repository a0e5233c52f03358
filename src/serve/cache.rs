//! `/masters` answers kept while the book does not change.
//!
//! Explorer traffic is mostly the same few thousand popular positions, and
//! an answer costs a dozen SQLite reads; kept, it costs a look-up. An
//! answer is valid for one state of the book: each is tagged with the
//! book's generation when it was asked for (the book watcher's, `watch.rs`: it moves on
//! whenever another connection commits to the book, or the file is
//! replaced), and a look-up under another generation misses. The
//! generation is read before the answer's snapshot is taken, so an answer
//! is never older than its tag says; a client never sees a count go down.
//!
//! Answers are keyed on the query as parsed ([`AnswerKey`]): the position
//! as the answer writes it, its opening name, and the lists' lengths. Two
//! spellings of one question (parameters in another order, `+` or `%20`,
//! unknown parameters, which are ignored as lichess ignores them) share one
//! answer, so a client padding its queries neither pins memory nor misses.
//!
//! The cache is bounded in bytes (`serve --cache-bytes`) and in answers
//! (`serve --cache`): each answer is counted as its body, its key and
//! [`ENTRY_OVERHEAD`]. When a new answer would pass either bound, answers
//! of older generations go first, then the least recently used, down to
//! three quarters of the bounds (so eviction runs once per many inserts).

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
};

use axum::body::Bytes;
use shakmaty::{fen::Fen, EnPassantMode};

use super::query::MastersQuery;
use crate::book::view::openings::{self, Opening};

/// Answers kept at most by default.
pub const DEFAULT_ENTRIES: usize = 20_000;
/// Bytes of answers kept at most by default: 64 MiB (20,000 answers of the
/// master book's popular positions take about 60 MB).
pub const DEFAULT_BYTES: usize = 64 << 20;
/// What an answer costs beyond its body and key: the table's slot, the
/// entry, the allocations' headers.
pub const ENTRY_OVERHEAD: usize = 160;
/// `moves` in a key: a position has at most 218 legal moves, so any
/// larger number lists the same moves.
const MOVES_IN_KEY: usize = 256;

/// A `/masters` question as parsed: what its answer depends on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AnswerKey {
    /// The position as the answer writes it (move counters included).
    fen: Box<str>,
    /// The opening named along the line, by its place in the static table.
    opening: Option<usize>,
    moves: u16,
    top_games: u16,
}

impl AnswerKey {
    pub fn of(q: &MastersQuery) -> AnswerKey {
        AnswerKey {
            fen: Fen::from_position(&q.pos, EnPassantMode::PseudoLegal)
                .to_string()
                .into_boxed_str(),
            opening: openings::last_named(&q.line).map(|o| o as *const Opening as usize),
            moves: q.moves.min(MOVES_IN_KEY) as u16,
            top_games: q.top_games.min(usize::from(u16::MAX)) as u16,
        }
    }

    fn bytes(&self) -> usize {
        self.fen.len()
    }
}

pub struct AnswerCache {
    entries: Mutex<Entries>,
    max_entries: usize,
    max_bytes: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Default)]
struct Entries {
    map: HashMap<AnswerKey, Entry>,
    /// Bytes counted for the answers in `map`.
    bytes: usize,
    /// Look-ups so far: an entry's last use, for eviction.
    tick: u64,
}

struct Entry {
    generation: u64,
    body: Bytes,
    used: u64,
}

fn cost(key: &AnswerKey, body: &Bytes) -> usize {
    key.bytes() + body.len() + ENTRY_OVERHEAD
}

impl AnswerCache {
    /// A cache of at most `max_entries` answers and `max_bytes` bytes
    /// (either 0: nothing is kept, every request reads the book).
    pub fn new(max_entries: usize, max_bytes: usize) -> AnswerCache {
        AnswerCache {
            entries: Mutex::default(),
            max_entries,
            max_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub fn enabled(&self) -> bool {
        self.max_entries > 0 && self.max_bytes > 0
    }

    /// The answer to `key` under `generation`, if kept.
    pub fn get(&self, key: &AnswerKey, generation: u64) -> Option<Bytes> {
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        e.tick += 1;
        let tick = e.tick;
        let found = match e.map.get_mut(key) {
            Some(entry) if entry.generation == generation => {
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

    /// Keeps `body` as the answer to `key` under `generation`. An answer
    /// larger than an eighth of the byte bound is not kept.
    pub fn put(&self, key: AnswerKey, generation: u64, body: Bytes) {
        let size = cost(&key, &body);
        if !self.enabled() || size > self.max_bytes / 8 {
            return;
        }
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = e.map.remove(&key) {
            e.bytes -= cost(&key, &old.body);
        }
        if e.bytes + size > self.max_bytes || e.map.len() >= self.max_entries {
            evict(&mut e, self.max_entries, self.max_bytes, generation);
        }
        let used = e.tick;
        e.bytes += size;
        e.map.insert(
            key,
            Entry {
                generation,
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

    /// Answers kept and the bytes counted for them.
    pub fn size(&self) -> (usize, usize) {
        let e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        (e.map.len(), e.bytes)
    }
}

/// Makes room: answers of other generations go first, then the least
/// recently used, down to three quarters of both bounds.
fn evict(e: &mut Entries, max_entries: usize, max_bytes: usize, generation: u64) {
    let mut freed = 0;
    e.map.retain(|k, v| {
        let keep = v.generation == generation;
        if !keep {
            freed += cost(k, &v.body);
        }
        keep
    });
    e.bytes -= freed;
    let (entry_goal, byte_goal) = (max_entries / 4 * 3, max_bytes / 4 * 3);
    if e.map.len() <= entry_goal && e.bytes <= byte_goal {
        return;
    }
    let mut by_use: Vec<(u64, usize)> = e
        .map
        .iter()
        .map(|(k, v)| (v.used, cost(k, &v.body)))
        .collect();
    by_use.sort_unstable();
    let (mut n, mut bytes) = (e.map.len(), e.bytes);
    let mut threshold = 0;
    for (used, size) in by_use {
        if n <= entry_goal && bytes <= byte_goal {
            break;
        }
        threshold = used;
        n -= 1;
        bytes -= size;
    }
    let mut freed = 0;
    e.map.retain(|k, v| {
        let keep = v.used > threshold;
        if !keep {
            freed += cost(k, &v.body);
        }
        keep
    });
    e.bytes -= freed;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::query::parse;

    fn key(q: &str) -> AnswerKey {
        AnswerKey::of(&parse(q.as_bytes()).expect(q))
    }

    #[test]
    fn spellings_of_one_question_share_a_key() {
        let a = key("play=e2e4,c7c5&moves=12");
        assert_eq!(a, key("moves=12&play=e2e4%2Cc7c5"));
        assert_eq!(
            a,
            key("play=e2e4,c7c5&variant=standard&pad=xxxxxxxxxxxxxxxx")
        );
        assert_eq!(a, key("play=e2e4,c7c5&moves=12&topGames=15"));
        // The same position by its FEN (named itself, so the same name).
        assert_eq!(
            a,
            key("fen=rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR_w_KQkq_-_0_2")
        );
        // Any number of moves past the legal ones lists the same moves.
        assert_eq!(key("moves=300"), key("moves=100000000000000000000"));
        assert_ne!(a, key("play=e2e4,c7c5&moves=11"));
        assert_ne!(a, key("play=e2e4,c7c5&topGames=3"));
        assert_ne!(
            key(""),
            key("fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR+w+KQkq+-+0+7")
        );
    }

    fn put_n(c: &AnswerCache, n: usize, generation: u64, body: &'static [u8]) {
        for i in 0..n {
            let k = key(&format!("moves={i}"));
            c.put(k, generation, Bytes::from_static(body));
        }
    }

    #[test]
    fn the_byte_bound_holds_and_the_recent_answers_stay() {
        static BODY: [u8; 1000] = [b' '; 1000];
        let per = cost(&key("moves=0"), &Bytes::from_static(&BODY));
        let c = AnswerCache::new(1_000_000, 50 * per);
        put_n(&c, 200, 1, &BODY);
        let (n, bytes) = c.size();
        assert!(bytes <= 50 * per, "{bytes} > {}", 50 * per);
        assert!((30..=50).contains(&n), "{n}");
        // The last put is kept, the first is gone.
        assert!(c.get(&key("moves=199"), 1).is_some());
        assert!(c.get(&key("moves=0"), 1).is_none());
        // Another generation misses; its answers push the old ones out.
        assert!(c.get(&key("moves=199"), 2).is_none());
        put_n(&c, 50, 2, &BODY);
        assert!(c.get(&key("moves=49"), 2).is_some());
        assert!(c.size().1 <= 50 * per);
        // Too large an answer is not kept.
        static BIG: [u8; 8000] = [b' '; 8000];
        c.put(key("moves=7"), 2, Bytes::from_static(&BIG));
        assert!(c.size().1 <= 50 * per);
    }

    #[test]
    fn the_entry_bound_holds() {
        let c = AnswerCache::new(8, usize::MAX);
        put_n(&c, 100, 1, b"{}");
        assert!(c.size().0 <= 8);
        assert!(c.get(&key("moves=99"), 1).is_some());
        let none = AnswerCache::new(0, 1 << 20);
        put_n(&none, 3, 1, b"{}");
        assert_eq!(none.size(), (0, 0));
    }
}
