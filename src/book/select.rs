//! Which book move to play.
//!
//! * `best`: the stored choice of the position (highest `q - Z/sqrt(N+1)`
//!   among moves with games, if it beats leaving the book; see
//!   [`minimax::best_choice`]).
//! * `weighted`: a random move, in proportion to [`value_weight`] of its
//!   value (moves worse than leaving the book get weight 0).
//!
//! Books imported from Polyglot carry no games; there both modes fall back
//! to the imported weights (`best` = highest weight).

use anyhow::Result;
use rand::Rng;
use shakmaty::{Chess, Move, Position as _};

use super::keys::{polyglot_key, MoveCode};
use super::minimax;
use super::store::{Book, BookMove};

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

/// A move's weight from its value: 0 at or below the deviation value `D`,
/// rising as the square of the distance to `D`, 10000 at a sure win.
pub fn value_weight(q: f64, deviation: f64) -> u16 {
    let x = ((q - deviation) / (1.0 - deviation)).clamp(0.0, 1.0);
    if x <= 0.0 {
        0
    } else {
        (1.0 + 9999.0 * x * x).round() as u16
    }
}

/// The weight `weighted` uses for a book move.
pub fn move_weight(m: &BookMove, deviation: f64) -> u32 {
    match m.q {
        Some(_) if m.all_lost => 0,
        Some(q) if m.child_games > 0 => u32::from(value_weight(q, deviation)),
        _ => m.weight.unwrap_or(0),
    }
}

/// The book's move in `pos`, or `None` when the book has none to offer
/// (position unknown, or leaving the book is better).
pub fn choose<R: Rng>(book: &Book, pos: &Chess, mode: Mode, rng: &mut R) -> Result<Option<Move>> {
    let key = polyglot_key(pos);
    let moves = book.moves(key)?;
    if moves.is_empty() {
        return Ok(None);
    }
    let has_games = moves.iter().any(|m| m.child_games > 0);
    let code: Option<MoveCode> = match mode {
        Mode::Best if has_games => book.stored_best(key)?,
        Mode::Best => best_of(&moves, book),
        Mode::Weighted => {
            let d = book.settings.params.deviation;
            let weights: Vec<u32> = moves.iter().map(|m| move_weight(m, d)).collect();
            let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
            if total == 0 {
                None
            } else {
                let mut pick = rng.random_range(0..total);
                let mut chosen = None;
                for (m, &w) in moves.iter().zip(&weights) {
                    if pick < u64::from(w) {
                        chosen = Some(m.mv);
                        break;
                    }
                    pick -= u64::from(w);
                }
                chosen
            }
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
pub fn best_of(moves: &[BookMove], book: &Book) -> Option<MoveCode> {
    if !moves.iter().any(|m| m.child_games > 0) {
        return moves
            .iter()
            .filter(|m| m.weight.unwrap_or(0) > 0)
            .max_by_key(|m| (m.weight, std::cmp::Reverse(m.mv)))
            .map(|m| m.mv);
    }
    let choices: Vec<minimax::Choice> = moves
        .iter()
        .filter_map(|m| {
            m.q.map(|q| minimax::Choice {
                mv: m.mv,
                q,
                games: m.child_games,
                exact: m.child_exact,
                all_lost: m.all_lost,
            })
        })
        .collect();
    minimax::best_choice(&choices, &book.settings.params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_is_zero_below_deviation_and_monotone() {
        assert_eq!(value_weight(-0.5, -0.3), 0);
        assert_eq!(value_weight(1.0, -0.3), 10000);
        assert!(value_weight(0.1, -0.3) < value_weight(0.2, -0.3));
    }
}
