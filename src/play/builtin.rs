//! The search core as an in-process player (no pipes, no process per game):
//! what the tuner and fast self-play use.

use std::{path::Path, sync::atomic::AtomicBool};

use rand::{rngs::StdRng, SeedableRng};

use crate::engine_io::protocol::{Budget, Fault, Player, Reply, Request};
use crate::{
    book::choose::Mode,
    book::opening_book::{Decision, OpeningBook},
    engine::{
        params::Weights,
        position::Position,
        search::{Limits, Searcher},
    },
};

pub struct Builtin {
    name: String,
    searcher: Searcher,
    book: Option<OpeningBook>,
    book_mode: Mode,
    rng: StdRng,
}

impl Builtin {
    pub fn new(
        name: &str,
        weights: Weights,
        book: Option<&Path>,
        book_mode: Mode,
        seed: u64,
    ) -> anyhow::Result<Builtin> {
        let book = book.map(OpeningBook::open).transpose()?;
        Ok(Builtin {
            name: name.to_string(),
            searcher: Searcher::new(16, weights),
            book,
            book_mode,
            rng: StdRng::seed_from_u64(seed),
        })
    }

    /// The search alone (no book) with a transposition table of `hash_mb`:
    /// what the tuner plays, thousands of short games, each with new weights.
    pub fn search_only(name: &str, weights: Weights, hash_mb: usize) -> Builtin {
        Builtin {
            name: name.to_string(),
            searcher: Searcher::new(hash_mb, weights),
            book: None,
            book_mode: Mode::Best,
            rng: StdRng::seed_from_u64(0),
        }
    }

    /// The player evaluating with `net` (`None`: the weights' evaluation).
    pub fn with_net(mut self, net: Option<std::sync::Arc<crate::engine::net::Network>>) -> Builtin {
        self.searcher.set_net(net);
        self
    }
}

impl Player for Builtin {
    fn name(&self) -> &str {
        &self.name
    }

    fn new_game(&mut self) -> Result<(), Fault> {
        self.searcher.clear();
        Ok(())
    }

    fn think(&mut self, req: &Request) -> Result<Reply, Fault> {
        let mut searchmoves = Vec::new();
        if let Some(book) = &self.book {
            let book_err = |e: anyhow::Error| Fault::Crash(format!("{}: book: {e:#}", self.name));
            match book.decide(req.position, self.book_mode, &mut self.rng) {
                Ok(Decision::Play(mv)) => {
                    return Ok(Reply::Move {
                        mv,
                        score_cp: None,
                        depth: None,
                    })
                }
                Ok(Decision::Search(moves)) => searchmoves = moves,
                Err(e) => return Err(book_err(e)),
            }
        }
        let mut pos = Position::new(req.start.clone());
        let mut history = Vec::with_capacity(req.moves.len());
        for &m in req.moves {
            history.push(pos.key);
            pos = pos.play(m);
        }
        let limits = match req.budget {
            Budget::Clock {
                wtime,
                btime,
                winc,
                binc,
                movestogo,
            } => Limits {
                wtime: Some(wtime),
                btime: Some(btime),
                winc: Some(winc),
                binc: Some(binc),
                movestogo: movestogo.map(u64::from),
                ..Limits::default()
            },
            Budget::Nodes(n) => Limits {
                nodes: Some(n),
                ..Limits::default()
            },
            Budget::Depth(d) => Limits {
                depth: Some(d as i32),
                ..Limits::default()
            },
        };
        let limits = Limits {
            searchmoves,
            ..limits
        };
        let (stop, ponder) = (AtomicBool::new(false), AtomicBool::new(false));
        let r = self
            .searcher
            .search(&pos, &history, &limits, &stop, &ponder, &mut |_| {});
        match r.best {
            // A search stopped inside its first iteration has a move but no score.
            Some(mv) => Ok(Reply::Move {
                mv,
                score_cp: (r.depth > 0).then_some(r.score),
                depth: (r.depth > 0).then_some(r.depth as u32),
            }),
            None => Err(Fault::Illegal(format!(
                "{}: no move in a position with legal moves",
                self.name
            ))),
        }
    }
}
