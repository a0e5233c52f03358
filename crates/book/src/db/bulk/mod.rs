//! `build`'s bulk load: many games aggregated in memory, the rows, tails
//! and graph made of them, written at once (each table's typed row in
//! `rows`), and a book too large to value in memory written in parts.

pub mod aggregate;
pub(super) mod graph;
pub mod parts;
pub mod write;
