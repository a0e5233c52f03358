//! Who searches: the search core in-process, or a UCI engine process; as
//! `--engine` names it ([`AnalystSpec`], parsed by the command line) and as
//! chosen for a run ([`EngineChoice`]: the weights loaded, the engine's name
//! read).

use std::{
    path::{Path, PathBuf},
    str::FromStr,
    sync::{atomic::AtomicBool, Arc},
    time::Duration,
};

use anyhow::{anyhow, bail, Context, Result};
use shakmaty::{Chess, Move, Position as _};

use super::Budget;
use crate::{
    engine::{
        default_net::{NetChoice, EMBEDDED_NAME},
        net::Network,
        params::Weights,
        position::Position,
        search::{Limits, Searcher},
    },
    engine_io::protocol::{EngineSpec, Proto, UciEngine},
    play::{runner::PlayerSpec, spec::parse_player},
};

/// The last part of `p`, as a label shows it.
fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or(String::new(), |f| f.to_string_lossy().into_owned())
}

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

    /// Whether [`Analyst::search_lines`] scores its lines in one search.
    fn has_multipv(&self) -> bool {
        false
    }

    /// The best `k` of `among` (not empty), best first, and the searches it
    /// took: here one search each, `searchmoves` less the moves found. Ends
    /// early, with the stray line last, if the engine answers a move it was
    /// not asked to search.
    fn search_lines(
        &mut self,
        pos: &Chess,
        among: &[Move],
        k: usize,
        fresh: bool,
    ) -> Result<(Vec<Searched>, usize)> {
        one_by_one(self, pos, among, k, fresh)
    }
}

/// `search_lines` by one search a move, `searchmoves` less the moves found.
fn one_by_one<A: Analyst + ?Sized>(
    a: &mut A,
    pos: &Chess,
    among: &[Move],
    k: usize,
    fresh: bool,
) -> Result<(Vec<Searched>, usize)> {
    let mut left = among.to_vec();
    let mut lines = Vec::new();
    let mut searches = 0;
    while lines.len() < k && !left.is_empty() {
        let r = a.search(pos, &left, fresh && searches == 0)?;
        searches += 1;
        let Some(b) = r.best else { break };
        let asked = left.contains(&b);
        left.retain(|m| *m != b);
        lines.push(r);
        if !asked {
            break;
        }
    }
    Ok((lines, searches))
}

/// Which engine analyses.
#[derive(Clone, Debug)]
pub enum EngineChoice {
    /// The search core with these weights and net (`None`: the weights'
    /// evaluation); `label` names them in the records.
    Builtin {
        weights: Box<Weights>,
        net: Option<Arc<Network>>,
        label: String,
    },
    /// A UCI engine; `label` is its `id name` (name and version), read
    /// when the choice was made ([`EngineChoice::uci`]).
    Uci { spec: EngineSpec, label: String },
}

/// An analysing engine as `--engine` names it: `builtin` or
/// `cmd=builtin[,weights=W.toml|PRESET][,net=NET.nnue|default|none]` for the search core, else a match
/// runner spec of a UCI engine (`cmd=stockfish,option.Threads=1`).
#[derive(Clone, Debug)]
pub enum AnalystSpec {
    /// The search core, with these weights (a file or a preset; default:
    /// the default weights) and evaluation (default: the embedded net).
    Builtin {
        weights: Option<PathBuf>,
        net: NetChoice,
    },
    Uci(EngineSpec),
}

impl AnalystSpec {
    /// Parses `spec`; nothing is started or read.
    pub fn parse(spec: &str) -> Result<AnalystSpec> {
        let spec = if spec == "builtin" {
            "cmd=builtin"
        } else {
            spec
        };
        match parse_player(spec).with_context(|| format!("bad --engine {spec:?}"))? {
            PlayerSpec::Builtin {
                weights, book, net, ..
            } => {
                if book.is_some() {
                    bail!("--engine: an analysing engine takes no book=");
                }
                Ok(AnalystSpec::Builtin { weights, net })
            }
            PlayerSpec::External(e) => {
                if e.proto != Proto::Uci {
                    bail!("--engine: analysis needs a UCI engine (proto=uci)");
                }
                Ok(AnalystSpec::Uci(e))
            }
            PlayerSpec::Booked { .. } | PlayerSpec::DeepStart { .. } => {
                bail!("--engine: an analysing engine takes no book=")
            }
        }
    }
}

/// As the command line parses `--engine` (clap shows the message).
impl FromStr for AnalystSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<AnalystSpec, String> {
        AnalystSpec::parse(s).map_err(|e| format!("{e:#}"))
    }
}

/// `NAME=SPEC`, as `bench book-quality --engine-player` takes an engine.
pub fn parse_named(text: &str) -> Result<(String, AnalystSpec), String> {
    match text.split_once('=') {
        Some((name, spec)) if !name.is_empty() => Ok((name.to_string(), spec.parse()?)),
        _ => Err(format!("--engine-player {text:?}: expected NAME=SPEC")),
    }
}

impl EngineChoice {
    /// The engine of `spec` for a run (default: the search core with its
    /// default weights and net): the weights and the net loaded, or the UCI
    /// engine started once to read its name ([`EngineChoice::uci`]).
    pub fn open(spec: Option<&AnalystSpec>) -> Result<EngineChoice> {
        match spec {
            None => EngineChoice::builtin(None, &NetChoice::Embedded),
            Some(AnalystSpec::Builtin { weights, net }) => {
                EngineChoice::builtin(weights.as_deref(), net)
            }
            Some(AnalystSpec::Uci(e)) => EngineChoice::uci(e.clone()),
        }
    }

    /// The search core with `weights` (a file or a preset; `None`: the
    /// default) and `net`, labelled `learnbook[ weights=W][ net=N]`: the
    /// hand-crafted evaluation's records keep the label they had before
    /// the net.
    pub fn builtin(weights: Option<&Path>, net: &NetChoice) -> Result<EngineChoice> {
        let mut label = "learnbook".to_string();
        let w = match weights {
            Some(p) => {
                label += &format!(" weights={}", file_name(p));
                crate::engine::presets::load(&p.to_string_lossy())?
            }
            None => Weights::default(),
        };
        match net {
            NetChoice::Embedded => label += &format!(" net={EMBEDDED_NAME}"),
            NetChoice::HandCrafted => {}
            NetChoice::File(p) => label += &format!(" net={}", file_name(p)),
        }
        Ok(EngineChoice::Builtin {
            weights: Box::new(w),
            net: net.load().context("net=")?,
            label,
        })
    }

    /// The name stored with every analysis (`analysis.engine`).
    pub fn label(&self) -> String {
        match self {
            EngineChoice::Builtin { label, .. } => label.clone(),
            EngineChoice::Uci { label, .. } => label.clone(),
        }
    }

    /// A UCI engine, started once to read the name and version it gives
    /// (`id name`), which label its scores; the spec's `name=` where it
    /// gives none.
    pub fn uci(spec: EngineSpec) -> Result<EngineChoice> {
        let engine = UciEngine::start(&spec)
            .map_err(|e| anyhow!("cannot start engine {:?}: {e}", spec.name))?;
        let label = engine
            .id_name()
            .map_or_else(|| spec.name.clone(), str::to_string);
        Ok(EngineChoice::Uci { spec, label })
    }

    /// Starts one engine (one per thread).
    pub fn start(&self, budget: Budget) -> Result<Box<dyn Analyst>> {
        Ok(match self {
            EngineChoice::Builtin { weights, net, .. } => {
                let mut searcher = Searcher::new(8, (**weights).clone());
                searcher.set_net(net.clone());
                Box::new(Builtin { searcher, budget })
            }
            EngineChoice::Uci { spec, .. } => Box::new(Uci {
                engine: UciEngine::start(spec)
                    .map_err(|e| anyhow!("cannot start engine {:?}: {e}", spec.name))?,
                budget,
                searchmoves_checked: false,
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
        let (nodes, movetime, depth) = match self.budget {
            Budget::Nodes(n) => (Some(n), None, None),
            Budget::Movetime(ms) => (None, Some(ms), None),
            Budget::Depth(d) => (None, None, Some(i32::try_from(d).unwrap_or(i32::MAX))),
        };
        let limits = Limits {
            nodes,
            movetime,
            depth,
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
    /// The engine was seen to keep to `searchmoves` (checked once, before
    /// the first search that needs them).
    searchmoves_checked: bool,
}

impl Uci {
    /// An engine that ignores `searchmoves` would score the moves outside
    /// the book with its own best move: refused before it is used so.
    fn check_searchmoves(&mut self, searchmoves: &[Move]) -> Result<()> {
        if searchmoves.is_empty() || self.searchmoves_checked {
            return Ok(());
        }
        if !self
            .engine
            .honours_searchmoves()
            .map_err(|e| anyhow!("{e}"))?
        {
            bail!(
                "{} ignores searchmoves: it cannot analyse a book (the moves outside it are searched with searchmoves); it can judge or play",
                self.engine.label()
            );
        }
        self.searchmoves_checked = true;
        Ok(())
    }

    fn go(&self) -> (String, Duration) {
        match self.budget {
            Budget::Nodes(n) => (format!("nodes {n}"), Duration::from_secs(120)),
            Budget::Movetime(ms) => (format!("movetime {ms}"), Duration::from_millis(ms)),
            // A deep search of a quiet opening position takes seconds; one
            // that takes ten minutes is a hung engine.
            Budget::Depth(d) => (format!("depth {d}"), Duration::from_secs(600)),
        }
    }
}

impl Analyst for Uci {
    fn search(&mut self, pos: &Chess, searchmoves: &[Move], fresh: bool) -> Result<Searched> {
        self.check_searchmoves(searchmoves)?;
        let (go, allowed) = self.go();
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

    fn has_multipv(&self) -> bool {
        self.engine.has_multipv()
    }

    /// One MultiPV search where the engine offers it (the engine's own
    /// ranking of its lines, as a GUI's analysis shows), else one search
    /// a move.
    fn search_lines(
        &mut self,
        pos: &Chess,
        among: &[Move],
        k: usize,
        fresh: bool,
    ) -> Result<(Vec<Searched>, usize)> {
        if k < 2 || !self.engine.has_multipv() {
            return one_by_one(self, pos, among, k, fresh);
        }
        let (go, allowed) = self.go();
        let k = u32::try_from(k).unwrap_or(u32::MAX);
        // Every legal move: no `searchmoves`, the engine's own root order.
        let among = if among.len() == pos.legal_moves().len() {
            &[][..]
        } else {
            among
        };
        self.check_searchmoves(among)?;
        let lines = self
            .engine
            .analyse_lines(pos, &go, among, k, allowed, fresh)
            .map_err(|e| anyhow!("{e}"))?;
        Ok((
            lines
                .into_iter()
                .map(|r| Searched {
                    best: r.best,
                    score: r.score,
                    depth: r.depth,
                })
                .collect(),
            1,
        ))
    }
}
