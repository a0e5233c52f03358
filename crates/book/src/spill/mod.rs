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
//! ([`crate::db::Book::bulk_load_games`]). The result is the book of
//! the one-pass build, row for row.
//!
//! One job a file:
//!
//! * `budget`: the budget (`--memory`) and its shares;
//! * `filter`: the Bloom filters of shared positions (and of any key set);
//! * `record`: a game encoded as a journal record;
//! * `journal`: the journal, written and read back;
//! * `sort`: the external sort of the games' places and of pairs;
//! * `buckets`: records handed out to a file per key range, read back a
//!   range at a time;
//! * `count`: counting the games, in memory or from the journal;
//! * `key_range`: ranges of position keys, counted one at a time;
//! * `temp_files`: where the temporary files go, and their removal.

mod buckets;
mod budget;
mod count;
mod filter;
mod journal;
mod key_range;
mod record;
mod sort;
mod temp_files;
#[cfg(test)]
mod test_games;

pub use buckets::Buckets;
pub use budget::{default_memory, parse_size, Spill};
pub(super) use budget::{
    plain_size, AGGREGATE_SHARE, CACHE_SHARE_COUNTING, CACHE_SHARE_VALUES, CACHE_SHARE_WRITING,
    FILTER_SHARE, JOURNAL_FROM, JOURNAL_MEMORY_SHARE, PART_BYTES_PER_POSITION, PART_SHARE,
    SORT_SHARE,
};
pub(super) use count::{count_part, count_shared, Counter};
pub use filter::{KeyFilter, SharedFilter};
pub use journal::{Distinct, Entry, GamesInOrder, Journal, JournalReader};
pub use key_range::KeyRange;
pub use record::record;
pub use sort::{PairSorter, SortRecord, Sorted, Sorter};
pub(super) use temp_files::TempFiles;
