//! The binary's own modules: what only the command line needs.

pub mod analyze;
pub mod args;
pub mod bench;
pub mod book;
pub mod build;
pub mod formats;
pub mod play;
pub mod serve;
