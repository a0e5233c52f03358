//! The bulk writers of `build`: the rows `build` prepares from many games
//! (plain data, `input`) written at once (each table's typed row in
//! `rows`), and a book too large to value in memory written in parts.
//! Counting the games and making the rows are `build`'s own
//! (`build::aggregate`, `build::graph`); nothing here imports `build`.

pub mod input;
pub mod parts;
pub mod write;
