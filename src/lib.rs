//! learnbook: opening books that learn.
//!
//! The book pipeline lives in [`book`]: `pgn -> db -> values ->
//! select/formats`. See `docs/FORMULA.md` for the value formula and `docs/SCHEMA.md` for the schema.

pub use learnbook_base::{atomic_file, fnv, interrupt, peak_memory, shard, sys};
pub use learnbook_book as book;
pub use learnbook_engine as engine;
pub use learnbook_engine_io as engine_io;

pub mod analyze;
pub mod play;
pub mod plot;
pub mod serve;
pub mod tune;
pub mod uci;
pub mod workers;
