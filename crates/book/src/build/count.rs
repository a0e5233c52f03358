//! Counting the games: in memory while they fit, else in a filter of
//! shared positions and then exactly from the journal, key range by range.

use std::sync::Arc;

use anyhow::Result;

use super::aggregate::Aggregate;
use super::filter::SharedFilter;
use super::key_range::KeyRange;
use crate::journal::{Journal, JournalReader};
use crate::keys::{Key, KeySet};
use crate::pgn::game::Game;

/// Counts games in memory while they fit; past the budget, in a filter of
/// shared positions (see [`crate::build`]). Every game is journalled.
pub(crate) struct Counter {
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
pub(crate) fn count_shared(
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

/// [`count_shared`] for the keys of `part` only, and the keys of `part`
/// that games without a tail reach (rows whatever their counts): in two
/// halves of the range, counted on two threads.
pub(crate) fn count_part(
    reader: &JournalReader,
    copied: &KeySet<u64>,
    shared: &SharedFilter,
    tails: bool,
    part: KeyRange,
) -> Result<[(Aggregate, KeySet<Key>); 2]> {
    let standard = crate::keys::polyglot_key(&shakmaty::Chess::default());
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
