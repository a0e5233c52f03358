//! The shared search core: evaluation weights, position keys, search, UCI.

#![forbid(unsafe_code)]

pub mod epd;
pub mod eval;
pub mod params;
pub mod position;
pub mod presets;
pub mod search;
pub mod tt;
