//! What people read of a book: the text of `show`, `stats` and `learn`, the
//! explorer's view of a position with its games, and lichess's opening
//! names by position key.

pub mod explorer;
pub mod openings;
pub mod report;
