//! The row format of positions and moves: the columns a node is read
//! from, the statement that adds a move's counts, and a node's search
//! inputs from its analysis.

use crate::pgn::game::Counts;
use crate::values::minimax::{self, NodeInfo};

/// Adds one move's counts (a new move, or more games for a known one).
pub(super) const MOVE_UPSERT: &str = "INSERT INTO moves(parent, move, uci, child, white, draws, black, rating_sum, rated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
     ON CONFLICT(parent, move) DO UPDATE SET
       child = excluded.child,
       white = white + excluded.white, draws = draws + excluded.draws, black = black + excluded.black,
       rating_sum = rating_sum + excluded.rating_sum, rated = rated + excluded.rated";

/// The columns of a node, from `positions p LEFT JOIN analysis a`.
pub(super) const NODE_COLS: &str =
    "p.key, p.depth, p.white, p.draws, p.black, p.exact, p.value, p.expected, a.score, a.interior, a.deviation";
/// How many columns [`NODE_COLS`] has.
pub(super) const NODE_WIDTH: usize = 11;

/// A node from [`NODE_WIDTH`] columns from `at`, as [`NODE_COLS`] selects
/// them: key, depth, white, draws, black, exact, value, expected, and the
/// analysis's score, interior and deviation.
pub(super) fn node_from_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<NodeInfo> {
    let (search, deviation) = search_inputs(r.get(at + 8)?, r.get(at + 9)?, r.get(at + 10)?);
    Ok(NodeInfo {
        key: r.get(at)?,
        depth: r.get::<_, Option<i64>>(at + 1)?.map(|d| d as u32),
        counts: Counts {
            white: r.get(at + 2)?,
            draws: r.get(at + 3)?,
            black: r.get(at + 4)?,
        },
        exact: r.get(at + 5)?,
        value: r.get(at + 6)?,
        expected: r.get(at + 7)?,
        search,
        deviation,
    })
}

/// A node's `search` and `deviation` from its `analysis` row's score,
/// interior and deviation (all `None`: not analysed).
pub(super) fn search_inputs(
    score: Option<i32>,
    interior: Option<bool>,
    deviation: Option<i32>,
) -> (Option<f64>, Option<Option<f64>>) {
    (
        score.map(minimax::score_to_value),
        match interior {
            Some(true) => Some(deviation.map(minimax::score_to_value)),
            _ => None,
        },
    )
}
