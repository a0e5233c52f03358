//! Games between engines: protocol clients, statistics.

pub mod builtin;
pub mod draw_model;
pub mod game;
pub mod journal;
pub mod merge_games;
pub mod protocol;
pub mod report;
pub mod resolution;
pub mod runner;
pub mod selfplay;
pub mod spec;
pub mod stats;
