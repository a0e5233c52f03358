//! The value formula and the choice: every position's value from its games
//! and searches (full and incremental evaluation), and which book move to
//! play from those values (`best`, `weighted`).

pub mod minimax;
pub mod select;
