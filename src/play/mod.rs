//! Games between engines: protocol clients, statistics.

pub mod stats;
