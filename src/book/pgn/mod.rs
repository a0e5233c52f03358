//! Games in PGN: reading them (inputs opened and decompressed, games
//! streamed and validated in parallel, SAN resolved fast, dropped tokens
//! caught) and writing them (movetext as the exports write it, realistic
//! games generated from a book for benchmarks).

pub mod generate;
pub mod ingest;
pub mod movetext;
pub mod read_games;
pub mod san;
pub mod write;
