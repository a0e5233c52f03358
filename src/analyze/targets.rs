//! Which positions of a book to analyse: every position with at least
//! `min_games` games (interior: the position and its best move outside the
//! book are searched) and every book move's child of those with fewer games
//! (the analysis's leaves: the position is searched). Found by walking the
//! book from the start position, so each target comes with its board.

use std::collections::{HashSet, VecDeque};

use anyhow::Result;
use shakmaty::{Chess, Position};

use crate::book::{keys::MoveCode, Book};

/// A position to search.
#[derive(Clone, Debug)]
pub struct Target {
    pub key: u64,
    pub pos: Chess,
    /// Search its best move outside the book too.
    pub interior: bool,
    /// The book moves with games: the deviation search leaves them out.
    pub book_moves: Vec<MoveCode>,
}

/// The positions still to analyse, and how many are already analysed with
/// this engine and budget.
#[derive(Debug, Default)]
pub struct Targets {
    pub todo: Vec<Target>,
    pub done: usize,
}

/// Whether `t` already has an analysis by `engine` at `budget` that is still
/// valid (for an interior position: made with the same book moves).
fn already_done(book: &Book, t: &Target, engine: &str, budget: &str) -> Result<bool> {
    Ok(match book.analysis(t.key)? {
        Some(a) if a.engine == engine && a.budget == budget => {
            !t.interior || (a.interior && a.book_moves as usize == t.book_moves.len())
        }
        _ => false,
    })
}

/// A book move with games: its code, the child's board, key and games, and
/// whether the child is checkmate or stalemate.
type Child = (MoveCode, Chess, u64, u32, bool);

/// The book moves of `pos` that have games, with their children.
fn book_children(book: &Book, pos: &Chess, key: u64) -> Result<Vec<Child>> {
    let mut out = Vec::new();
    for m in book.moves(key)? {
        if m.q.is_none() || m.child_games == 0 || m.counts.total() == 0 {
            continue;
        }
        let (Some(child), Some(mv)) = (m.child, m.mv.to_move(pos)) else {
            continue;
        };
        let mut next = pos.clone();
        next.play_unchecked(mv);
        out.push((m.mv, next, child, m.child_games, m.child_exact));
    }
    Ok(out)
}

/// Walks the book breadth first from the start position (shallow, important
/// positions first).
pub fn find(book: &Book, min_games: u32, engine: &str, budget: &str) -> Result<Targets> {
    let mut out = Targets::default();
    let root = Chess::default();
    let root_key = crate::book::keys::polyglot_key(&root);
    let Some(node) = book.position(root_key)? else {
        return Ok(out);
    };
    let mut seen = HashSet::new();
    let mut queue = VecDeque::new();
    if node.counts.total() >= min_games.max(1) {
        queue.push_back((root, root_key));
        seen.insert(root_key);
    }
    let push = |out: &mut Targets, t: Target| -> Result<()> {
        if already_done(book, &t, engine, budget)? {
            out.done += 1;
        } else {
            out.todo.push(t);
        }
        Ok(())
    };
    while let Some((pos, key)) = queue.pop_front() {
        let kids = book_children(book, &pos, key)?;
        let book_moves = kids.iter().map(|k| k.0).collect();
        for (_, child_pos, child, games, exact) in kids {
            if exact || !seen.insert(child) {
                continue;
            }
            if games >= min_games {
                queue.push_back((child_pos, child));
            } else {
                push(
                    &mut out,
                    Target {
                        key: child,
                        pos: child_pos,
                        interior: false,
                        book_moves: Vec::new(),
                    },
                )?;
            }
        }
        push(
            &mut out,
            Target {
                key,
                pos,
                interior: true,
                book_moves,
            },
        )?;
    }
    Ok(out)
}

/// The targets along one game's positions (`positions`: the boards of the
/// game, start first): what a learned game adds or changes.
pub fn on_path(
    book: &Book,
    positions: &[Chess],
    min_games: u32,
    engine: &str,
    budget: &str,
) -> Result<Targets> {
    let mut out = Targets::default();
    let mut seen = HashSet::new();
    for pos in positions {
        let key = crate::book::keys::polyglot_key(pos);
        let Some(node) = book.position(key)? else {
            continue;
        };
        if node.counts.total() < min_games.max(1) || node.exact.is_some() || !seen.insert(key) {
            continue;
        }
        let kids = book_children(book, pos, key)?;
        let book_moves = kids.iter().map(|k| k.0).collect();
        for (_, child_pos, child, games, exact) in kids {
            if exact || games >= min_games || !seen.insert(child) {
                continue;
            }
            let t = Target {
                key: child,
                pos: child_pos,
                interior: false,
                book_moves: Vec::new(),
            };
            if already_done(book, &t, engine, budget)? {
                out.done += 1;
            } else {
                out.todo.push(t);
            }
        }
        let t = Target {
            key,
            pos: pos.clone(),
            interior: true,
            book_moves,
        };
        if already_done(book, &t, engine, budget)? {
            out.done += 1;
        } else {
            out.todo.push(t);
        }
    }
    Ok(out)
}
