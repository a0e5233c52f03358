//! The opening book: PGN -> positions/moves -> SQLite -> values -> choices/exports.

pub mod build;
pub mod check;
pub mod ingest;
pub mod keys;
pub mod learn;
pub mod minimax;
pub mod movetext;
pub mod polyglot;
pub mod report;
pub mod select;
pub mod store;

pub use store::{Book, BookSettings};
