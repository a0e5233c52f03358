//! learnbook: opening books that learn.
//!
//! The book pipeline lives in [`book`]: `pgn -> db -> values ->
//! select/formats`. See `docs/FORMULA.md` for the value formula and `docs/SCHEMA.md` for the schema.

pub mod analyze;
pub mod atomic_file;
pub mod book;
pub mod engine;
pub mod engine_io;
pub mod fnv;
pub mod interrupt;
pub mod peak_memory;
pub mod play;
pub mod plot;
pub mod serve;
pub mod shard;
pub mod sys;
pub mod tune;
pub mod uci;
pub mod workers;
