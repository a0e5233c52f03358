//! Games in PGN: reading them (inputs opened and decompressed, raw games
//! streamed, validated into games in parallel, SAN resolved fast, dropped
//! tokens caught) and writing them (movetext as the exports write it). Games
//! generated from a book are [`crate::generate`], a floor above the store.

pub mod game;
pub mod input;
pub mod movetext;
pub mod read_games;
pub mod san;
pub mod validate;
pub mod write;
