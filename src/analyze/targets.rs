//! Which positions of a book to analyse: every position with at least
//! `min_games` games (interior: the position and its best move outside the
//! book are searched) and every book move's child of those with fewer games
//! (the analysis's leaves: the position is searched). Found by walking the
//! book from the start position, so each target comes with its board.

use std::collections::{HashSet, VecDeque};

use anyhow::Result;
use shakmaty::{Chess, Position};

use crate::book::{
    keys::{Key, MoveCode},
    Book,
};

/// A position to search.
#[derive(Clone, Debug)]
pub struct Target {
    pub key: Key,
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

/// A book move with games: its code, the child's board, key and games, and
/// whether the child is checkmate or stalemate.
type Child = (MoveCode, Chess, Key, u32, bool);

/// The book moves of `pos` that have games, with their children.
fn book_children(book: &Book, pos: &Chess, key: Key) -> Result<Vec<Child>> {
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

/// Collects targets, each position once.
struct Walk<'a> {
    book: &'a Book,
    min_games: u32,
    engine: &'a str,
    budget: &'a str,
    /// Positions already a target or queued.
    seen: HashSet<Key>,
    out: Targets,
}

impl Walk<'_> {
    /// Adds `t` unless it already has a valid analysis by this engine at
    /// this budget (for an interior position: made with the same book moves).
    fn add(&mut self, t: Target) -> Result<()> {
        let done = match self.book.analysis(t.key)? {
            Some(a) if a.engine == self.engine && a.budget == self.budget => {
                !t.interior || (a.interior && a.book_moves as usize == t.book_moves.len())
            }
            _ => false,
        };
        if done {
            self.out.done += 1;
        } else {
            self.out.todo.push(t);
        }
        Ok(())
    }

    /// Adds `pos` as an interior target and its children with fewer than
    /// `min_games` games as leaves; returns its other children not seen yet.
    fn expand(&mut self, pos: Chess, key: Key) -> Result<Vec<(Chess, Key)>> {
        let kids = book_children(self.book, &pos, key)?;
        let book_moves = kids.iter().map(|k| k.0).collect();
        let mut busy = Vec::new();
        for (_, child_pos, child, games, exact) in kids {
            if exact || !self.seen.insert(child) {
                continue;
            }
            if games >= self.min_games {
                busy.push((child_pos, child));
            } else {
                self.add(Target {
                    key: child,
                    pos: child_pos,
                    interior: false,
                    book_moves: Vec::new(),
                })?;
            }
        }
        self.add(Target {
            key,
            pos,
            interior: true,
            book_moves,
        })?;
        Ok(busy)
    }
}

/// Walks the book breadth first from the start position (shallow, important
/// positions first).
pub fn find(book: &Book, min_games: u32, engine: &str, budget: &str) -> Result<Targets> {
    let mut walk = Walk {
        book,
        min_games,
        engine,
        budget,
        seen: HashSet::new(),
        out: Targets::default(),
    };
    let root = Chess::default();
    let root_key = crate::book::keys::polyglot_key(&root);
    let Some(node) = book.position(root_key)? else {
        return Ok(walk.out);
    };
    let mut queue = VecDeque::new();
    if node.counts.total() >= min_games.max(1) {
        queue.push_back((root, root_key));
        walk.seen.insert(root_key);
    }
    while let Some((pos, key)) = queue.pop_front() {
        queue.extend(walk.expand(pos, key)?);
    }
    Ok(walk.out)
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
    let mut walk = Walk {
        book,
        min_games,
        engine,
        budget,
        seen: HashSet::new(),
        out: Targets::default(),
    };
    let mut expanded = HashSet::new();
    for pos in positions {
        let key = crate::book::keys::polyglot_key(pos);
        let Some(node) = book.position(key)? else {
            continue;
        };
        if node.counts.total() < min_games.max(1) || node.exact.is_some() || !expanded.insert(key) {
            continue;
        }
        walk.expand(pos.clone(), key)?;
    }
    Ok(walk.out)
}

/// `positions` as leaf targets (the position searched, not its moves),
/// each once: the exits of an opening suite, say.
pub fn leaves(
    book: &Book,
    positions: &[(Key, Chess)],
    engine: &str,
    budget: &str,
) -> Result<Targets> {
    let mut walk = Walk {
        book,
        min_games: u32::MAX,
        engine,
        budget,
        seen: HashSet::new(),
        out: Targets::default(),
    };
    for (key, pos) in positions {
        if walk.seen.insert(*key) {
            walk.add(Target {
                key: *key,
                pos: pos.clone(),
                interior: false,
                book_moves: Vec::new(),
            })?;
        }
    }
    Ok(walk.out)
}
