//! The binary's own modules: each command's arguments (clap) beside its run,
//! grouped by area; what a run computes is in the library.
//!
//! * `args`: the argument groups several commands share (`--book`,
//!   `--threads`, `--memory`, the analysis's search, adjudication, value
//!   parameters, durations).
//! * `build`: build, merge, learn (a book from games).
//! * `book`: show, stats, check, choose, reevaluate (one book read or revalued).
//! * `formats`: export, import, suite (other files from and into a book).
//! * `analyze`: analyze, grow, improve (an engine over a book).
//! * `play`: uci, play, duel, selfplay, merge-games, report (games).
//! * `net`: net-data, train (the learned evaluation).
//! * `tune`: tune, tune-shard, tune-step, fit, tune-report, weights.
//! * `serve`: the explorer over HTTP.
//! * `bench/`: `learnbook bench ...`, one bench a file, figures beside peers.

pub mod analyze;
pub mod args;
pub mod bench;
pub mod book;
pub mod build;
pub mod formats;
pub mod net;
pub mod play;
pub mod serve;
pub mod tune;
