//! A book an engine plays from (a learnbook book or a Polyglot `.bin`) and
//! its decision in a position: the book's move, or the moves to search. It
//! joins the move choice ([`crate::choose`]), the Polyglot reader
//! ([`crate::formats::polyglot`]) and a learner's own losses
//! ([`crate::own_losses`]), so it sits above all three.

use anyhow::Result;
use rand::Rng;
use shakmaty::{Chess, Move, Position as _};
use std::path::Path;

use crate::choose::{choose, search_moves, Mode};
use crate::db::Book;
use crate::formats::polyglot::{is_polyglot_path, PolyglotBook};
use crate::keys::MoveCode;
use crate::own_losses::OwnLosses;

/// An engine's move source in a position: the book's move, or a search
/// restricted to these moves (empty: all legal moves).
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Play(Move),
    Search(Vec<Move>),
}

/// A book an engine plays from: a learnbook book, or a Polyglot `.bin`
/// (`weighted`: a move at random in proportion to its weights, as GUIs play
/// it; `best`: the heaviest move, the first in the file among equals).
pub enum OpeningBook {
    Learnbook(Box<Book>),
    Polyglot(PolyglotBook),
}

impl OpeningBook {
    /// Opens `path`: a Polyglot book if it ends in `.bin`, else a learnbook book.
    pub fn open(path: &Path) -> Result<OpeningBook> {
        Ok(if is_polyglot_path(path) {
            OpeningBook::Polyglot(PolyglotBook::open(path)?)
        } else {
            OpeningBook::Learnbook(Box::new(Book::open(path)?))
        })
    }

    /// The learnbook book (`None` for a Polyglot file).
    pub fn learnbook(&self) -> Option<&Book> {
        match self {
            OpeningBook::Learnbook(b) => Some(b),
            OpeningBook::Polyglot(_) => None,
        }
    }

    /// The learnbook book, to learn into (`None` for a Polyglot file).
    pub fn learnbook_mut(&mut self) -> Option<&mut Book> {
        match self {
            OpeningBook::Learnbook(b) => Some(b),
            OpeningBook::Polyglot(_) => None,
        }
    }

    /// What an engine with this book does in `pos`: the one place that
    /// decides "book move, or search these moves" for every engine we run.
    pub fn decide<R: Rng>(&self, pos: &Chess, mode: Mode, rng: &mut R) -> Result<Decision> {
        Ok(match self.choose(pos, mode, rng)? {
            Some(mv) => Decision::Play(mv),
            None => Decision::Search(self.search_moves(pos)?),
        })
    }

    /// [`OpeningBook::decide`] for a learner: where it searches, the moves
    /// its own games lost with are left out too (a searched deviation, see
    /// [`crate::own_losses`]), unless that leaves nothing to search.
    pub fn decide_learning<R: Rng>(
        &self,
        pos: &Chess,
        mode: Mode,
        rng: &mut R,
        own: &OwnLosses,
    ) -> Result<Decision> {
        let moves = match self.decide(pos, mode, rng)? {
            Decision::Search(moves) => moves,
            play => return Ok(play),
        };
        let legal = pos.legal_moves();
        let candidates: &[Move] = if moves.is_empty() { &legal } else { &moves };
        let kept: Vec<Move> = candidates
            .iter()
            .filter(|m| !own.refuted(pos, MoveCode::from_move(m)))
            .copied()
            .collect();
        Ok(Decision::Search(if kept.is_empty() {
            moves
        } else if kept.len() == legal.len() {
            Vec::new()
        } else {
            kept
        }))
    }

    /// The book's move in `pos`, if it has one.
    fn choose<R: Rng>(&self, pos: &Chess, mode: Mode, rng: &mut R) -> Result<Option<Move>> {
        match self {
            OpeningBook::Learnbook(b) => choose(b, pos, mode, rng),
            OpeningBook::Polyglot(b) => Ok(match mode {
                Mode::Weighted => b.pick(pos, rng),
                Mode::Best => b.heaviest(pos),
            }),
        }
    }

    /// The moves to search out of book (empty: all); see [`search_moves`].
    fn search_moves(&self, pos: &Chess) -> Result<Vec<Move>> {
        match self {
            OpeningBook::Learnbook(b) => search_moves(b, pos),
            OpeningBook::Polyglot(_) => Ok(Vec::new()),
        }
    }
}
