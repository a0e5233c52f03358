//! The shared search core: positions and their keys, the evaluation and its
//! named weights (with presets), search with its transposition table, EPD
//! test suites. It plays in-process; the UCI front end that serves it sits
//! above it, in the application (`src/uci`), and other engines' clients in
//! `engine_io`.

#![forbid(unsafe_code)]

pub mod default_net;
pub mod epd;
pub mod eval;
pub mod net;
pub mod params;
pub mod position;
pub mod presets;
pub mod search;
pub mod tt;
