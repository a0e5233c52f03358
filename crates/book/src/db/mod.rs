//! The SQLite book. Every SQL statement of the crate is in this folder;
//! the rest of the crate goes through [`Book`]'s methods.
//!
//! One file is one book; the tables are in [`schema`] (and the README).
//! Parent links replace an index on `moves(child)` (which cost a third of
//! the build): `positions.parent` is the first position seen to lead to it,
//! and a position reached from two or more positions (a transposition) has
//! all of them in `parents`. The incremental pass finds parents there.
//!
//! * `book`: [`Book`], opening a file, reads of single positions, totals,
//!   upkeep of the file;
//! * `files`: the WAL, index and journal SQLite keeps beside a book, and a
//!   new book put in place (never over a book in use, never beside a
//!   stale WAL);
//! * `schema`: tables, settings in `meta`, migration from older schemas;
//! * `codec`: how a [`Key`](crate::keys::Key), a game hash and a
//!   game's moves are stored in their columns;
//! * `node_rows`: the row format read back: a node's columns, the move
//!   upsert, search inputs from an analysis row;
//! * `rows`: the typed record of each table a new book's bulk writer
//!   writes, its columns listed once;
//! * `graph`: parent links, the whole book as a
//!   [`Graph`](crate::values::minimax::Graph) and its full re-evaluation;
//! * `cache`: what the incremental pass keeps between games;
//! * `learn`: `add_game`, one game in one transaction;
//! * `source_games`: the games one source added, read back in order;
//! * `bulk/`: `build`'s bulk writers: `input` (the plain rows they take,
//!   which `build` counts and prepares), `write` (written at once, each
//!   table's row typed in `rows`), `parts` (a new book too large to value
//!   in memory, written in parts);
//! * `analysis`: search scores (`analyze`);
//! * `grow`: engine moves, as `grow` adds them;
//! * `analysis_file`: a shard's search scores in a file of its own (`analyze --shard`);
//! * `explore`: the explorer's data: game headers, rating sums, games' moves;
//! * `top_games`: each position's top games, their canonical rule and blob;
//! * `import`: the moves of a Polyglot book;
//! * `merge`: another book's rows added to this one (`merge`);
//! * `scan`: whole-table reads for `check` and the export;
//! * `stream`: the whole book a position at a time with its children, within
//!   a memory budget (`check`, the export), and the graph's size;
//! * `tails`: single-game tails, stored as their game's moves, read as rows.
//! * `plan_store`: the PGN export's plan in a temporary database beside the
//!   book (the selected moves, the positions reached and their paths).
//! * `tail_index`: the index of tail positions by key, in buckets.
//!
//! Submodules name the file they import from (`super::book::Book`, not a
//! re-export from here), and the imports form no circle: `codec`, `rows`,
//! `node_rows`, `tail_index` and `files` import no other file here;
//! `plan_store` only `codec` and `files`;
//! `top_games` only `codec`; `tails` those; `graph` and `explore` `tails`
//! (never the reverse); `schema` imports `graph` (a migration re-evaluates
//! the book), and nothing below `graph` imports `schema` (the column
//! encodings they share are in `codec`). The bulk writers import the top
//! lists from `top_games` and the move upsert from `node_rows`. Nothing
//! here imports `build` (the build imports the store): what a build
//! writes crosses as the plain data of `bulk::input`.

pub mod analysis;
pub mod analysis_file;
pub mod book;
pub mod bulk;
mod cache;
pub(crate) mod codec;
pub mod explore;
pub mod files;
mod graph;
pub mod grow;
pub mod import;
mod learn;
pub mod merge;
mod node_rows;
pub mod plan_store;
mod rows;
pub mod scan;
pub mod schema;
pub mod source_games;
pub mod stream;
pub(crate) mod tail_index;
pub(crate) mod tails;
pub mod top_games;
mod values;

pub use analysis::Analysis;
pub use book::{Book, BookMove, BookTotals};
pub use explore::{GameInfo, MoveRating};
pub use learn::{View, ViewAdded, UNKNOWN_PLAYER};
pub use schema::{BookSettings, SCHEMA_VERSION};
pub use top_games::TopEntry;
