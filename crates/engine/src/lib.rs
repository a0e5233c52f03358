//! The shared search core: evaluation weights, position keys, search, UCI.

pub mod epd;
pub mod eval;
pub mod net;
pub mod params;
pub mod position;
pub mod presets;
pub mod search;
pub mod tt;
