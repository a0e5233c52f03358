//! Engine benchmarks: a fixed-depth search over fixed positions (nodes, nps
//! and a node-count signature), EPD test suites at a fixed time per
//! position, and perft against shakmaty's own.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    sync::{atomic::AtomicBool, Arc},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use clap::Args;
use shakmaty::{san::San, CastlingMode};

use learnbook::{
    engine::{
        default_net::NetChoice,
        epd::{self, Epd},
        net::Network,
        params::Weights,
        position::{perft, Position},
        search::{uci_score, Limits, Searcher},
    },
    workers,
};

/// An EPD test suite (bm/am), a fixed time per position: solved/total and the misses.
#[derive(Args, Debug)]
pub struct WacArgs {
    /// The EPD suite (bm/am operations).
    #[arg(value_name = "FILE.epd")]
    file: PathBuf,
    /// Milliseconds per position.
    #[arg(long, default_value_t = 1000)]
    movetime: u64,
    /// Nodes per position instead of time (the result does not depend on the machine).
    #[arg(long)]
    nodes: Option<u64>,
    /// Positions searched at once (one search thread each).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Transposition table per search, MB.
    #[arg(long, default_value_t = 64)]
    hash: usize,
    /// The engine's weights: a TOML file or a preset (default, search-hand, hand, kaissa, kotok).
    #[arg(long, default_value = "default")]
    weights: String,
    /// The evaluation: `default` (the net embedded in the binary), `none` (the weights'
    /// hand-crafted evaluation) or a net file (`train`'s output).
    #[arg(long, value_name = "NET.nnue|default|none", default_value = "default")]
    net: NetChoice,
}

/// The net of `--net`, loaded once and shared by every search.
pub(super) fn load_net(net: &NetChoice) -> Result<Option<Arc<Network>>> {
    net.load().context("--net")
}

impl WacArgs {
    /// `bench wac`: the report on stdout.
    pub(super) fn run(self) -> Result<()> {
        let weights = learnbook::engine::presets::load(&self.weights).context("--weights")?;
        let limits = match self.nodes {
            Some(n) => Limits {
                nodes: Some(n),
                ..Limits::default()
            },
            None => Limits {
                movetime: Some(self.movetime),
                ..Limits::default()
            },
        };
        let net = load_net(&self.net)?;
        let (_, report) = wac(&self.file, &limits, self.threads, self.hash, &weights, net)?;
        print!("{report}");
        Ok(())
    }
}

/// Perft of a perft EPD suite through the engine's position handling, timed against shakmaty's perft.
#[derive(Args, Debug)]
pub struct PerftArgs {
    /// The perft EPD suite.
    #[arg(value_name = "FILE.epd")]
    file: PathBuf,
    /// Perft depth.
    #[arg(long, default_value_t = 4)]
    depth: u32,
}

impl PerftArgs {
    /// `bench perft`: the report on stdout; an error if a count differs.
    pub(super) fn run(self) -> Result<()> {
        let (ok, report) = perft_suite(&self.file, self.depth)?;
        print!("{report}");
        if !ok {
            bail!("perft counts differ from {}", self.file.display());
        }
        Ok(())
    }
}

/// Middlegame and endgame positions for `learnbook bench` (the usual mix:
/// openings, tactics, pawn and piece endings).
pub const BENCH_FENS: [&str; 10] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP2BPPP/R2QKB1R w KQ - 0 8",
    "2rr3k/pp3pp1/1nnqbN1p/3pN3/2pP4/2P3Q1/PPB4P/R4RK1 w - - 0 1",
    "r1b2rk1/2q1b1pp/p2ppn2/1p6/3QP3/1BN1B3/PPP3PP/R4RK1 w - - 0 1",
    "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "8/8/4kpp1/3p1b2/p6P/2B5/6P1/6K1 b - - 0 47",
    "8/3k4/8/8/8/8/3PK3/8 w - - 0 1",
    "6k1/6p1/6Pp/ppp5/3pn2P/1P3K2/1PP2P2/3N4 b - - 0 1",
    "1r6/1pb1k1p1/4p2p/1p1p4/3Pp2P/1R2P1PB/1P2P1K1/8 b - - 0 1",
];

fn quiet_search(
    searcher: &mut Searcher,
    pos: &Position,
    limits: &Limits,
) -> learnbook::engine::search::SearchResult {
    let (stop, ponder) = (AtomicBool::new(false), AtomicBool::new(false));
    searcher.search(pos, &[], limits, &stop, &ponder, &mut |_| {})
}

/// `learnbook bench`: every position searched to `depth` from a cleared table.
pub fn search(depth: i32, hash_mb: usize, net: Option<Arc<Network>>) -> Result<String> {
    let mut out = String::new();
    let mut searcher = Searcher::new(hash_mb, Weights::default());
    searcher.set_net(net);
    let mut total = 0u64;
    let start = Instant::now();
    for (i, fen) in BENCH_FENS.iter().enumerate() {
        let pos = Position::from_fen(fen)?;
        searcher.clear();
        let t = Instant::now();
        let r = quiet_search(
            &mut searcher,
            &pos,
            &Limits {
                depth: Some(depth),
                ..Limits::default()
            },
        );
        let ms = t.elapsed().as_millis();
        let best = r.best.map_or("0000".into(), |m| {
            m.to_uci(CastlingMode::Standard).to_string()
        });
        writeln!(
            out,
            "position {:>2}: bestmove {best:<5} score {:<10} nodes {:>10} time {ms:>6} ms",
            i + 1,
            uci_score(r.score),
            r.nodes
        )?;
        total += r.nodes;
    }
    let secs = start.elapsed().as_secs_f64();
    writeln!(
        out,
        "depth {depth}: {total} nodes in {secs:.2} s, {:.0} nps",
        total as f64 / secs
    )?;
    writeln!(out, "signature {total}")?;
    Ok(out)
}

/// One EPD position's outcome.
#[derive(Clone, Debug)]
pub struct Solve {
    pub id: String,
    pub played: String,
    pub expected: String,
    pub solved: bool,
    /// When the move finally chosen first became the principal move, if solved.
    pub found_after: Option<Duration>,
}

/// Runs every `bm`/`am` position of `file` under `limits` (`movetime`, or
/// `nodes` for a result that does not depend on the machine) on `threads`
/// threads (one position per thread, each with its own table).
pub fn wac(
    file: &Path,
    limits: &Limits,
    threads: usize,
    hash_mb: usize,
    weights: &Weights,
    net: Option<Arc<Network>>,
) -> Result<(Vec<Solve>, String)> {
    let records: Vec<Epd> = epd::read(file)?
        .into_iter()
        .filter(|e| e.op("bm").is_some() || e.op("am").is_some())
        .collect();
    if records.is_empty() {
        bail!("{} has no positions with bm or am", file.display());
    }
    // Every position is searched; the first failure in file order is reported.
    let results = workers::map(
        records.len(),
        threads,
        |_| {
            let mut searcher = Searcher::new(hash_mb, weights.clone());
            searcher.set_net(net.clone());
            Ok::<_, anyhow::Error>(searcher)
        },
        |searcher, i| Ok(solve(searcher, &records[i], limits)),
    )?;
    let solves = results.into_iter().collect::<Result<Vec<Solve>>>()?;
    let solved = solves.iter().filter(|s| s.solved).count();
    let mut out = String::new();
    let per = match (limits.nodes, limits.movetime) {
        (Some(n), _) => format!("{n} nodes"),
        (None, Some(ms)) => format!("{ms} ms"),
        _ => "the given limits".to_string(),
    };
    writeln!(
        out,
        "{}: solved {solved} of {} at {per} per position",
        file.display(),
        solves.len()
    )?;
    if solves.len() <= 20 {
        for s in solves.iter().filter(|s| s.solved) {
            let ms = s.found_after.map_or(0, |d| d.as_millis());
            writeln!(out, "solved {}: {} found after {ms} ms", s.id, s.played)?;
        }
    }
    for s in solves.iter().filter(|s| !s.solved) {
        writeln!(
            out,
            "missed {}: played {}, expected {}",
            s.id, s.played, s.expected
        )?;
    }
    Ok((solves, out))
}

fn solve(searcher: &mut Searcher, e: &Epd, limits: &Limits) -> Result<Solve> {
    let bm = e.moves("bm")?;
    let am = e.moves("am")?;
    searcher.clear();
    let (stop, ponder) = (AtomicBool::new(false), AtomicBool::new(false));
    let mut changes: Vec<(Duration, Option<shakmaty::Move>)> = Vec::new();
    let r = searcher.search(&e.pos, &[], limits, &stop, &ponder, &mut |i| {
        let first = i.pv.first().copied();
        if changes.last().map(|c| c.1) != Some(first) {
            changes.push((i.time, first));
        }
    });
    let ok = |m: &shakmaty::Move| (bm.is_empty() || bm.contains(m)) && !am.contains(m);
    let solved = r.best.as_ref().is_some_and(ok);
    let found_after = if solved {
        changes
            .iter()
            .rev()
            .take_while(|c| c.1 == r.best)
            .last()
            .map(|c| c.0)
    } else {
        None
    };
    let san = |m: &shakmaty::Move| San::from_move(&e.pos.chess, *m).to_string();
    let expected = if bm.is_empty() {
        format!("not {}", am.iter().map(san).collect::<Vec<_>>().join(" "))
    } else {
        bm.iter().map(san).collect::<Vec<_>>().join(" ")
    };
    Ok(Solve {
        id: e.id(),
        played: r.best.as_ref().map_or("(none)".into(), san),
        expected,
        solved,
        found_after,
    })
}

/// Perft of every position of a perft EPD (`;D1 20 ;D2 400 ...`) to `depth`:
/// our counts checked against the file, and timed against shakmaty's perft.
pub fn perft_suite(file: &Path, depth: u32) -> Result<(bool, String)> {
    let records = epd::read(file)?;
    let mut out = String::new();
    let (mut ours_t, mut theirs_t) = (Duration::ZERO, Duration::ZERO);
    let mut nodes = 0u64;
    let mut all_ok = true;
    for (i, e) in records.iter().enumerate() {
        let Some(expected) = e.op(&format!("D{depth}")) else {
            continue;
        };
        let expected: u64 = expected
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("record {}: bad D{depth} count", i + 1))?;
        let t = Instant::now();
        let ours = perft(&e.pos, depth);
        ours_t += t.elapsed();
        let t = Instant::now();
        let theirs = shakmaty::perft(&e.pos.chess, depth);
        theirs_t += t.elapsed();
        nodes += ours;
        if ours != expected || theirs != expected {
            all_ok = false;
            writeln!(
                out,
                "MISMATCH record {}: {} expected {expected}, ours {ours}, shakmaty {theirs}",
                i + 1,
                e.fen
            )?;
        }
    }
    writeln!(
        out,
        "perft depth {depth}: {} positions, {nodes} leaves, {}; learnbook {:.3} s ({:.1} M/s), shakmaty {:.3} s ({:.1} M/s), ratio {:.3}",
        records.len(),
        if all_ok { "all counts match" } else { "COUNTS DIFFER" },
        ours_t.as_secs_f64(),
        nodes as f64 / ours_t.as_secs_f64() / 1e6,
        theirs_t.as_secs_f64(),
        nodes as f64 / theirs_t.as_secs_f64() / 1e6,
        ours_t.as_secs_f64() / theirs_t.as_secs_f64()
    )?;
    Ok((all_ok, out))
}
