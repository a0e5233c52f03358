//! Which positions two games reach, in a fixed amount of memory: two
//! Bloom filters, one of the positions met once, one of those met again.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;

use super::key_range::KeyRange;
use crate::journal::JournalReader;
use crate::keys::Key;

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

/// A set of position keys in a fixed amount of memory: never a false
/// "no", sometimes a false "yes" (about one key in ten thousand with 8
/// bytes a key).
pub struct KeyFilter(Bloom);

impl KeyFilter {
    /// A filter of `bytes` at most (1,024 words at least).
    pub fn new(bytes: u64) -> KeyFilter {
        KeyFilter(Bloom::new(bytes))
    }

    pub fn insert(&self, key: Key) {
        self.0.insert(key);
    }

    pub fn contains(&self, key: Key) -> bool {
        self.0.contains(key)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::test_games::game_through;
    use crate::journal::Journal;

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
    fn a_key_filter_holds_every_key_inserted_and_few_others() {
        let key = |i: u64| Key(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x1234);
        // 8 bytes a key.
        let f = KeyFilter::new(8 * 20_000);
        for i in 0..20_000 {
            f.insert(key(i));
        }
        assert!((0..20_000).all(|i| f.contains(key(i))));
        let false_yes = (20_000..220_000).filter(|&i| f.contains(key(i))).count();
        assert!(false_yes < 200, "{false_yes} of 200,000 other keys");
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
}
