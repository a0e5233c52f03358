//! The value formula: every position's value from its games and searches
//! (full and incremental evaluation). Pure: it reads no storage; which move
//! to play from the stored values is [`crate::choose`].

pub mod minimax;
