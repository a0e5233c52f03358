//! How `build` shares its memory budget (`--memory`, [`Spill`]): its
//! shares for each structure, and when a build journals from the start.

use std::path::PathBuf;

#[cfg(doc)]
use crate::memory::Spill;

/// The share of the budget the aggregate may fill: writing it (rows sorted,
/// the graph valued) needs about as much again.
pub(crate) const AGGREGATE_SHARE: f64 = 0.45;
/// The share of the budget for the filter of shared positions once the
/// counts no longer fit, at most (it is sized at 16 bits a position the
/// input may hold), and for each [`Sorter`](crate::sort::Sorter) in memory (the games' places,
/// their id order, the tails index, the parent links, the positions by
/// depth; the rest goes to sorted runs on disk; four at most at once).
pub(crate) const FILTER_SHARE: f64 = 0.25;
pub(crate) const SORT_SHARE: f64 = 0.05;
/// The share of the budget for one key range's counts, when all the counts
/// of a build do not fit (`build` counts and writes them range by range;
/// the filter and the keys of the rows are held beside them).
pub(crate) const PART_SHARE: f64 = 0.3;
/// The memory the counts of a position the filter calls shared take, about
/// (the position, its moves and its top games: 530 bytes measured on 2 M
/// generated games), for choosing the number of key ranges.
pub(crate) const PART_BYTES_PER_POSITION: u64 = 600;
/// SQLite's page caches while key ranges are counted and written, then
/// while the games are, then while the values are (shares of the budget).
pub(crate) const CACHE_SHARE_COUNTING: f64 = 0.05;
pub(crate) const CACHE_SHARE_WRITING: f64 = 0.25;
pub(crate) const CACHE_SHARE_VALUES: f64 = 0.5;

/// A journal up to this share of the budget is held in memory for its two
/// reads (and counted on two threads).
pub(crate) const JOURNAL_MEMORY_SHARE: f64 = 0.1;

/// Inputs of more PGN than this (decompressed, estimated) make a new book
/// through the journal from the start.
pub(crate) const JOURNAL_FROM: u64 = 16 << 20;

/// The decompressed size of the inputs, estimated from their files (`None`
/// for standard input or a file that cannot be read: the budget decides).
pub(crate) fn plain_size(inputs: &[PathBuf]) -> Option<u64> {
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
