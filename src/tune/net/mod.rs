//! The learned evaluation's data and trainer: training positions from the
//! core's self-play games in bullet's `ChessBoard` layout ([`data`]), and a
//! CPU trainer of the perspective net the search core reads
//! ([`crate::engine::net`]).

pub mod data;
pub mod train;
