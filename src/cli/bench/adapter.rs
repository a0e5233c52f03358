//! `bench adapter`: what `uci --engine` costs against the bare engine, on
//! the same node-limited searches in the same run: the time per move
//! through the adapter and bare (alternating, position by position), the
//! time from `stop` to `bestmove` after `go infinite`, and learning's time
//! per game (a mating game learned at `ucinewgame`, against the same game
//! with learning off).

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use clap::Args;
use learnbook::engine_io::protocol::Process;

/// The adapter (`uci --engine`) against the bare engine: time per node-limited move, `stop`
/// to `bestmove` after `go infinite`, and learning's time per game (on a copy of --book).
#[derive(Args, Debug)]
pub struct AdapterArgs {
    /// The inner UCI engine's command.
    #[arg(long, default_value = "/usr/games/stockfish")]
    engine: String,
    /// Positions (EPD, one a line), searched through both.
    #[arg(long, default_value = "data/openings-sample.epd")]
    positions: PathBuf,
    /// Nodes a search.
    #[arg(long, default_value_t = 20_000)]
    nodes: u64,
    /// Positions taken from the file.
    #[arg(long, default_value_t = 100)]
    count: usize,
    /// A book for the learning figure (copied; learning writes to the copy).
    #[arg(long)]
    book: Option<PathBuf>,
    /// Games learned for the learning figure.
    #[arg(long, default_value_t = 20)]
    games: usize,
}

const WAIT: Duration = Duration::from_secs(60);

/// An engine process after the handshake.
fn start(argv: &[String], label: &str) -> Result<Process> {
    let mut p = Process::spawn(argv, None, label).map_err(anyhow::Error::msg)?;
    p.send("uci").map_err(anyhow::Error::msg)?;
    p.until(Instant::now() + WAIT, "uciok", |l| l == "uciok")
        .map_err(anyhow::Error::msg)?;
    ready(&mut p)?;
    Ok(p)
}

fn ready(p: &mut Process) -> Result<()> {
    p.send("isready").map_err(anyhow::Error::msg)?;
    p.until(Instant::now() + WAIT, "readyok", |l| l == "readyok")
        .map_err(anyhow::Error::msg)?;
    Ok(())
}

/// Sends `commands` and waits for `bestmove`: the time it took.
fn timed_move(p: &mut Process, commands: &[String]) -> Result<Duration> {
    let t = Instant::now();
    for c in commands {
        p.send(c).map_err(anyhow::Error::msg)?;
    }
    p.until(Instant::now() + WAIT, "bestmove", |l| {
        l.starts_with("bestmove")
    })
    .map_err(anyhow::Error::msg)?;
    Ok(t.elapsed())
}

/// `go infinite`, a moment, `stop`: the time from `stop` to `bestmove`.
fn stop_latency(p: &mut Process, fen: &str) -> Result<Duration> {
    p.send(&format!("position fen {fen}"))
        .map_err(anyhow::Error::msg)?;
    p.send("go infinite").map_err(anyhow::Error::msg)?;
    std::thread::sleep(Duration::from_millis(200));
    timed_move(p, &["stop".to_string()])
}

/// The time of `ucinewgame` + `isready` after a game in which the engine,
/// Black, mates (learned there when learning is on), median of `games`.
fn new_game_time(p: &mut Process, games: usize) -> Result<f64> {
    let firsts = [
        "a2a3", "a2a4", "b2b3", "b2b4", "h2h3", "h2h4", "c2c3", "d2d3",
    ];
    let replies = ["e7e5", "e7e6", "d7d6", "c7c6", "b7b6"];
    let mut times = Vec::new();
    for i in 0..games {
        let (first, reply) = (
            firsts[i % firsts.len()],
            replies[i / firsts.len() % replies.len()],
        );
        timed_move(
            p,
            &[
                format!("position startpos moves {first} {reply} f2f3 a7a6 g2g4"),
                "go depth 2".to_string(),
            ],
        )?;
        let t = Instant::now();
        p.send("ucinewgame").map_err(anyhow::Error::msg)?;
        ready(p)?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(super::median(&mut times))
}

impl AdapterArgs {
    pub(super) fn run(self) -> Result<()> {
        let text = std::fs::read_to_string(&self.positions)
            .with_context(|| format!("cannot read {}", self.positions.display()))?;
        let fens: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(self.count)
            .map(|l| l.split_whitespace().take(4).collect::<Vec<_>>().join(" ") + " 0 1")
            .collect();
        let me = std::env::current_exe()?.to_string_lossy().into_owned();
        let bare_argv: Vec<String> = self.engine.split_whitespace().map(String::from).collect();
        let adapter_argv = |book: Option<&Path>, learn: bool| {
            let mut v = vec![
                me.clone(),
                "uci".into(),
                "--engine".into(),
                self.engine.clone(),
            ];
            if let Some(b) = book {
                v.extend(["--book".to_string(), b.to_string_lossy().into_owned()]);
            }
            if learn {
                v.push("--learn".into());
            }
            v
        };
        let mut bare = start(&bare_argv, "bare")?;
        let mut adapted = start(&adapter_argv(None, false), "adapter")?;
        let (mut t_bare, mut t_adapted) = (Vec::new(), Vec::new());
        for fen in &fens {
            let commands = [
                format!("position fen {fen}"),
                format!("go nodes {}", self.nodes),
            ];
            t_bare.push(timed_move(&mut bare, &commands)?.as_secs_f64() * 1000.0);
            t_adapted.push(timed_move(&mut adapted, &commands)?.as_secs_f64() * 1000.0);
        }
        let (mb, ma) = (super::median(&mut t_bare), super::median(&mut t_adapted));
        let (sb, sa) = (t_bare.iter().sum::<f64>(), t_adapted.iter().sum::<f64>());
        println!(
            "{} positions at {} nodes: bare {:.2} ms a move (median), through the adapter {:.2} ms; \
             in all {:.0} ms against {:.0} ms: ratio {:.3}, {:+.3} ms a move",
            fens.len(),
            self.nodes,
            mb,
            ma,
            sb,
            sa,
            sa / sb,
            (sa - sb) / fens.len() as f64
        );
        let (mut stop_bare, mut stop_adapted) = (Vec::new(), Vec::new());
        for fen in fens.iter().take(10) {
            stop_bare.push(stop_latency(&mut bare, fen)?.as_secs_f64() * 1000.0);
            stop_adapted.push(stop_latency(&mut adapted, fen)?.as_secs_f64() * 1000.0);
        }
        println!(
            "stop after go infinite, to bestmove (median of {}): bare {:.2} ms, through the adapter {:.2} ms (max {:.2} ms)",
            stop_bare.len(),
            super::median(&mut stop_bare),
            super::median(&mut stop_adapted),
            stop_adapted.iter().cloned().fold(0.0, f64::max)
        );
        drop(adapted);
        let Some(book) = &self.book else {
            println!("learning per game: give --book");
            return Ok(());
        };
        let dir = super::tempfile_dir()?;
        let copy = dir.join("learning.sqlite");
        std::fs::copy(book, &copy).with_context(|| format!("cannot copy {}", book.display()))?;
        let mut off = start(&adapter_argv(Some(&copy), false), "adapter")?;
        let t_off = new_game_time(&mut off, self.games)?;
        drop(off);
        let mut on = start(&adapter_argv(Some(&copy), true), "adapter --learn")?;
        let t_on = new_game_time(&mut on, self.games)?;
        drop(on);
        let _ = std::fs::remove_dir_all(&dir);
        println!(
            "ucinewgame + isready after a game (median of {}): learning off {:.2} ms, on {:.2} ms: learning {:.2} ms a game",
            self.games,
            t_off,
            t_on,
            t_on - t_off
        );
        Ok(())
    }
}
