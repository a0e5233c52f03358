//! What the bulk writers take: plain data, made by `build`'s room
//! (`build::aggregate` counts them, `build::graph` makes rows of them) and
//! written here (`write`, `parts`). A position and the moves out of it
//! counted over many games, a game's row, a game with its tail, a valued
//! position's row. Nothing here speaks SQL or counts; the typed record
//! of each table they become is in `rows`.

use crate::db::top_games::TopList;
use crate::keys::Key;
use crate::pgn::game::{Counts, GameTags};
use crate::values::minimax::NodeInfo;

/// A position counted over many games (`build`'s aggregate).
#[derive(Clone, Debug, Default)]
pub struct NodeAgg {
    pub depth: u32,
    pub counts: Counts,
    /// White's expected points in thousandths (see [`NodeInfo::expected`]).
    pub expected: i64,
    pub exact: Option<f64>,
    /// The first move counted from here (most positions have one, in one
    /// game): kept with the position, so counting a game's move touches
    /// memory already in the cache instead of a second table.
    pub first: Option<(u16, EdgeAgg)>,
    /// The explorer's top games of the position ([`TopList`]).
    pub top: TopList,
}

/// A move counted over many games.
#[derive(Clone, Copy, Debug)]
pub struct EdgeAgg {
    pub child: Key,
    pub castle: bool,
    pub counts: Counts,
    /// The mover's ratings summed, over the `rated` games that have one.
    pub rating_sum: u64,
    pub rated: u32,
}

/// A game's row.
#[derive(Clone, Debug)]
pub struct GameRow {
    pub hash: u64,
    /// Index into the aggregate's sources (the names the writer is given).
    pub source: u32,
    pub white: String,
    pub black: String,
    pub result: &'static str,
    pub plies: u32,
    pub start: Key,
    pub copies: u32,
    /// The stored moves (`codec::moves_to_blob`).
    pub moves: Vec<u8>,
    /// White's expected points in thousandths (the ratings).
    pub expected: i64,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
    pub tags: GameTags,
    /// The moves after the stored ones (`codec::moves_to_blob`;
    /// empty: none).
    pub rest: Vec<u8>,
    /// The keys of its stored positions, start first, while it may get a
    /// tail (a game from the standard start, counted once).
    pub keys: Option<Vec<Key>>,
}

/// A position row before it is written ([`crate::db::rows::PositionRecord`]
/// once encoded): the valued node, its best move, its first parent, its
/// top list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PositionRow<'a> {
    pub node: &'a NodeInfo,
    pub best: Option<u16>,
    pub parent: Option<i64>,
    pub top: &'a TopList,
}

/// A game as a journalled build writes it: its row, its tail (the
/// first ply, the value of the first position, the keys), the tail
/// positions the aggregate counted (to take out of the rows), and the
/// positions before the tail it did not count (to add to them).
pub(crate) struct GameTail {
    pub row: GameRow,
    pub tail: Option<u32>,
    pub head: Option<NodeInfo>,
    pub keys: Vec<Key>,
    pub counted: Vec<Key>,
    pub rows: Vec<(Key, NodeAgg)>,
}
