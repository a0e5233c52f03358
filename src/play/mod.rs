//! Games between engines (the processes through [`crate::engine_io`]):
//! the match runner, statistics.

pub mod book_front;
pub mod builtin;
pub mod draw_model;
pub mod duel;
pub mod game;
pub mod journal;
pub mod merge_games;
pub mod report;
pub mod resolution;
pub mod runner;
pub mod selfplay;
pub mod spec;
pub mod stats;
