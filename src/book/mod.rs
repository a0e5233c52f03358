//! The opening book: PGN -> positions/moves -> SQLite -> values -> choices/exports.

pub mod abk;
pub mod build;
pub mod check;
pub mod db;
pub mod experience;
pub mod explorer_view;
pub mod formats;
pub mod generate;
pub mod ingest;
pub mod keys;
pub mod merge_books;
pub mod minimax;
pub mod movetext;
pub mod openings;
pub mod pgn_out;
pub mod pgn_tree;
pub mod polyglot;
pub mod read_games;
pub mod report;
pub mod san;
pub mod select;
pub mod sf_keys;
pub mod spill;
pub mod suite;

pub use db::{Book, BookSettings};
