//! The opening book: PGN -> positions/moves -> SQLite -> values -> choices/exports.

pub mod build;
pub mod check;
pub mod db;
pub mod formats;
pub mod keys;
pub mod merge_books;
pub mod pgn;
pub mod spill;
pub mod values;
pub mod view;

pub use db::{Book, BookSettings};
