//! Who searches: the search core in-process, or a UCI engine process.

use std::{sync::atomic::AtomicBool, time::Duration};

use anyhow::{anyhow, Result};
use shakmaty::{Chess, Move};

use super::Budget;
use crate::{
    engine::{
        params::Weights,
        position::Position,
        search::{Limits, Searcher},
    },
    play::protocol::{EngineSpec, UciEngine},
};

/// One search's result: score in centipawns from the side to move (mate:
/// +-(30000 - plies)).
#[derive(Clone, Debug)]
pub struct Searched {
    pub best: Option<Move>,
    pub score: i32,
    pub depth: u32,
}

pub trait Analyst: Send {
    /// Searches `pos` without history; `searchmoves` (if not empty) limits
    /// the root moves. `fresh`: forget earlier searches first (a new
    /// position), so a result does not depend on the order of the work.
    fn search(&mut self, pos: &Chess, searchmoves: &[Move], fresh: bool) -> Result<Searched>;
}

/// Which engine analyses.
#[derive(Clone, Debug)]
pub enum EngineChoice {
    /// The search core with these weights; `label` names them in the records.
    Builtin {
        weights: Box<Weights>,
        label: String,
    },
    Uci(EngineSpec),
}

impl EngineChoice {
    /// The name stored with every analysis (`analysis.engine`).
    pub fn label(&self) -> String {
        match self {
            EngineChoice::Builtin { label, .. } => label.clone(),
            EngineChoice::Uci(spec) => spec.name.clone(),
        }
    }

    /// Starts one engine (one per thread).
    pub fn start(&self, budget: Budget) -> Result<Box<dyn Analyst>> {
        Ok(match self {
            EngineChoice::Builtin { weights, .. } => Box::new(Builtin {
                searcher: Searcher::new(8, (**weights).clone()),
                budget,
            }),
            EngineChoice::Uci(spec) => Box::new(Uci {
                engine: UciEngine::start(spec)
                    .map_err(|e| anyhow!("cannot start engine {:?}: {e}", spec.name))?,
                budget,
            }),
        })
    }
}

struct Builtin {
    searcher: Searcher,
    budget: Budget,
}

impl Analyst for Builtin {
    fn search(&mut self, pos: &Chess, searchmoves: &[Move], fresh: bool) -> Result<Searched> {
        if fresh {
            self.searcher.clear();
        }
        let limits = Limits {
            nodes: match self.budget {
                Budget::Nodes(n) => Some(n),
                Budget::Movetime(_) => None,
            },
            movetime: match self.budget {
                Budget::Movetime(ms) => Some(ms),
                Budget::Nodes(_) => None,
            },
            searchmoves: searchmoves.to_vec(),
            ..Limits::default()
        };
        let (stop, ponder) = (AtomicBool::new(false), AtomicBool::new(false));
        let root = Position::new(pos.clone());
        let r = self
            .searcher
            .search(&root, &[], &limits, &stop, &ponder, &mut |_| {});
        Ok(Searched {
            best: r.best,
            score: r.score,
            depth: r.depth.max(0) as u32,
        })
    }
}

struct Uci {
    engine: UciEngine,
    budget: Budget,
}

impl Analyst for Uci {
    fn search(&mut self, pos: &Chess, searchmoves: &[Move], fresh: bool) -> Result<Searched> {
        let (go, allowed) = match self.budget {
            Budget::Nodes(n) => (format!("nodes {n}"), Duration::from_secs(120)),
            Budget::Movetime(ms) => (format!("movetime {ms}"), Duration::from_millis(ms)),
        };
        let r = self
            .engine
            .analyse(pos, &go, searchmoves, allowed, fresh)
            .map_err(|e| anyhow!("{e}"))?;
        Ok(Searched {
            best: r.best,
            score: r.score,
            depth: r.depth,
        })
    }
}
