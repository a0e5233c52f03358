//! Which book move to play.
//!
//! * `best`: the stored choice of the position (see [`minimax::choose`]):
//!   the option with the highest score among the book moves and, where the
//!   position was analysed, leaving the book.
//! * `weighted`: a random option, with probability proportional to
//!   `exp((score - top) / T)`, `T = B / 2` (half the popularity weight;
//!   0.02 at least): a move as popular and as good as the best is played as
//!   often; one with a tenth of the games, a twentieth as often... Options
//!   below 1/1000 of the top weight, moves worse than `D` (unanalysed
//!   positions) and moves lost in every game get weight 0.
//!
//! Books imported from Polyglot carry no games; there both modes fall back
//! to the imported weights (`best` = highest weight).

use anyhow::Result;
use rand::Rng;
use shakmaty::{Chess, Move, Position as _};

use crate::db::{Book, BookMove};
use crate::keys::{polyglot_key, MoveCode};
use crate::values::minimax::{self, option_weights, Choice, NodeInfo, ValueParams};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Best,
    Weighted,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s.to_ascii_lowercase().as_str() {
            "best" => Ok(Mode::Best),
            "weighted" => Ok(Mode::Weighted),
            _ => Err(format!(
                "unknown book mode {s:?} (expected best or weighted)"
            )),
        }
    }
}

/// The [`Choice`] of a book move, if it has a value.
pub fn choice_of(m: &BookMove) -> Option<Choice> {
    m.q.map(|q| Choice {
        mv: m.mv,
        q,
        games: m.child_games,
        points: m.child_points,
        exact: m.child_exact,
        all_lost: m.all_lost,
        engine: m.child_engine,
    })
}

/// The book's move in `pos`, or `None` when the book has none to offer
/// (position unknown, or leaving the book is better).
pub fn choose<R: Rng>(book: &Book, pos: &Chess, mode: Mode, rng: &mut R) -> Result<Option<Move>> {
    let key = polyglot_key(pos);
    let moves = book.moves(key)?;
    if moves.is_empty() {
        return Ok(None);
    }
    let Some(parent) = book.position(key)? else {
        return Ok(None);
    };
    let has_games = moves.iter().any(|m| m.child_games > 0 || m.child_engine);
    let code: Option<MoveCode> = match mode {
        _ if !has_games => best_of(&parent, &moves, &book.settings.params),
        Mode::Best => book.stored_best(key)?,
        Mode::Weighted => {
            let choices: Vec<Choice> = moves.iter().filter_map(choice_of).collect();
            let w = option_weights(&parent, &choices, &book.settings.params);
            let mut pick: f64 = rng.random_range(0.0..1.0);
            let mut chosen = None;
            for (m, p) in &w {
                chosen = *m;
                if pick < *p {
                    break;
                }
                pick -= p;
            }
            chosen
        }
    };
    // A key collision or a stale row must never produce an illegal move.
    Ok(code.and_then(|c| c.to_move(pos)))
}

/// What an engine out of book should search in `pos` (UCI `searchmoves`):
/// the legal moves except those that lost every book game they were played
/// in, so a deterministic engine does not lose the same way twice. Empty
/// (search everything) when no move lost that way or every move did.
pub fn search_moves(book: &Book, pos: &Chess) -> Result<Vec<Move>> {
    let lost: Vec<MoveCode> = book
        .moves(polyglot_key(pos))?
        .iter()
        .filter(|m| m.all_lost)
        .map(|m| m.mv)
        .collect();
    if lost.is_empty() {
        return Ok(Vec::new());
    }
    let rest: Vec<Move> = pos
        .legal_moves()
        .into_iter()
        .filter(|m| !lost.contains(&MoveCode::from_move(m)))
        .collect();
    Ok(rest)
}

/// The `best` choice computed from the moves (what `show` marks): the
/// minimax choice, equal to the stored one in a consistent book; in an
/// imported book without games, the highest weight (ties to the lower move).
pub fn best_of(parent: &NodeInfo, moves: &[BookMove], p: &ValueParams) -> Option<MoveCode> {
    if !moves.iter().any(|m| m.child_games > 0 || m.child_engine) {
        return moves
            .iter()
            .filter(|m| m.weight.unwrap_or(0) > 0)
            .max_by_key(|m| (m.weight, std::cmp::Reverse(m.mv)))
            .map(|m| m.mv);
    }
    let choices: Vec<Choice> = moves.iter().filter_map(choice_of).collect();
    minimax::best_choice(&choices, parent.points(), parent.deviation, p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Key;
    use crate::pgn::game::Counts;

    fn book_move(mv: u16, q: f64, games: u32) -> BookMove {
        BookMove {
            mv: MoveCode(mv),
            uci: String::new(),
            child: Some(Key(u64::from(mv))),
            counts: Counts {
                white: games,
                draws: 0,
                black: 0,
            },
            weight: None,
            q: Some(q),
            child_games: games,
            child_points: 2 * games,
            child_exact: false,
            child_depth: None,
            all_lost: false,
            engine: false,
            child_engine: false,
        }
    }

    #[test]
    fn weighted_prefers_popular_and_good_moves_and_sums_to_one() {
        let p = ValueParams::default();
        let parent = NodeInfo::from_counts(
            Key(1),
            Some(0),
            Counts {
                white: 1000,
                draws: 0,
                black: 0,
            },
        );
        let moves = [
            book_move(1, 0.05, 600),
            book_move(2, 0.05, 60),
            book_move(3, -0.2, 300),
            book_move(4, -0.5, 40),
        ];
        let choices: Vec<Choice> = moves.iter().filter_map(choice_of).collect();
        let w = option_weights(&parent, &choices, &p);
        let of = |m: u16| {
            w.iter()
                .find(|x| x.0 == Some(MoveCode(m)))
                .map_or(0.0, |x| x.1)
        };
        assert!((w.iter().map(|x| x.1).sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(of(1) > 0.9, "{w:?}");
        assert!(of(2) > 0.0 && of(2) < of(1) / 10.0, "{w:?}");
        assert_eq!(of(3), 0.0, "much worse: {w:?}");
        assert_eq!(of(4), 0.0, "below D: {w:?}");
    }
}
