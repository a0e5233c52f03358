//! The UCI engine loop: reads commands, searches on a second thread so that
//! `stop`, `isready` and `quit` are answered at once, and plays the book's
//! choice while the position is in the book. Malformed commands are answered
//! with an `info string` and otherwise ignored. With `--learn` (or the
//! option `BookLearning`) each game it plays is learned into its book when
//! it ends ([`learning`]).

pub mod adapter;
pub mod book_side;
pub mod learning;

use std::{
    io::{BufRead, Write},
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex, PoisonError,
    },
    thread::JoinHandle,
    time::Duration,
};

use shakmaty::CastlingMode;

use book_side::{parse_position, BookSide};

use crate::book::opening_book::Decision;
use crate::engine::{
    default_net::{NetChoice, EMBEDDED_NAME},
    params::Weights,
    position::Position,
    search::{uci_score, Info, Limits, Searcher},
};

const NAME: &str = concat!("learnbook ", env!("CARGO_PKG_VERSION"));
const DEFAULT_HASH_MB: usize = 64;

/// How the engine starts (from the command line).
#[derive(Default)]
pub struct Config {
    pub book: Option<PathBuf>,
    pub weights: Option<PathBuf>,
    /// Learn every game into the book (`BookLearning`).
    pub learn: bool,
    /// The evaluation (`--net`; UCI `EvalFile`): the embedded net unless told.
    pub net: NetChoice,
}

/// What the last search found, for the game's record: its score (side to
/// move) and its move.
type LastSearch = Arc<Mutex<Option<(i32, Option<shakmaty::Move>)>>>;

struct Engine {
    searcher: Option<Searcher>,
    thread: Option<JoinHandle<Searcher>>,
    stop: Arc<AtomicBool>,
    ponder: Arc<AtomicBool>,
    /// Set by the search thread just before it prints `bestmove`.
    reported: Arc<AtomicBool>,
    pos: Position,
    /// Keys of the game's positions before `pos`.
    history: Vec<u64>,
    hash_mb: usize,
    /// The book options, the book and the game being played.
    book: BookSide,
    weights_file: Option<PathBuf>,
    last_search: LastSearch,
    /// The evaluation chosen (`EvalFile`) and its net (`None`: the weights').
    net: (NetChoice, Option<Arc<crate::engine::net::Network>>),
}

/// Where the engine writes: standard output unless [`capture_output`] says.
static OUTPUT: Mutex<Option<Box<dyn Write + Send>>> = Mutex::new(None);

/// Sends the engine's output (of every [`run`] in this process) to `out`
/// instead of standard output; `None` goes back to standard output. For
/// tests and the fuzzer, which read the answers in process.
pub fn capture_output(out: Option<Box<dyn Write + Send>>) {
    *OUTPUT.lock().unwrap_or_else(PoisonError::into_inner) = out;
}

pub(crate) fn say(line: &str) {
    if let Some(out) = OUTPUT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
    {
        let _ = writeln!(out, "{line}");
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn info_line(i: &Info) -> String {
    let ms = i.time.as_millis().max(1);
    let nps = i.nodes as u128 * 1000 / ms;
    let pv: Vec<String> =
        i.pv.iter()
            .map(|m| m.to_uci(CastlingMode::Standard).to_string())
            .collect();
    format!(
        "info depth {} seldepth {} multipv 1 score {} nodes {} nps {} hashfull {} time {} pv {}",
        i.depth,
        i.seldepth,
        uci_score(i.score),
        i.nodes,
        nps,
        i.hashfull,
        i.time.as_millis(),
        pv.join(" ")
    )
}

/// Runs the UCI loop on `input` until `quit` or end of input.
pub fn run(input: impl BufRead, config: Config) -> anyhow::Result<()> {
    let weights = match &config.weights {
        Some(p) => crate::engine::presets::load(&p.to_string_lossy())?,
        None => Weights::default(),
    };
    let net = (config.net.clone(), config.net.load()?);
    let mut searcher = Searcher::new(DEFAULT_HASH_MB, weights);
    searcher.set_net(net.1.clone());
    let mut e = Engine {
        searcher: Some(searcher),
        thread: None,
        stop: Arc::new(AtomicBool::new(false)),
        ponder: Arc::new(AtomicBool::new(false)),
        reported: Arc::new(AtomicBool::new(false)),
        pos: Position::default(),
        history: Vec::new(),
        hash_mb: DEFAULT_HASH_MB,
        book: BookSide::new(config.book, config.learn),
        weights_file: config.weights,
        last_search: Arc::new(Mutex::new(None)),
        net,
    };
    // Bytes, not `lines()`: a line that is not UTF-8 (a Latin-1 path) used
    // to end the session; it is read lossily and answered like any other.
    let mut input = input;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        match input.read_until(b'\n', &mut raw) {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) => {
                say(&format!("info string cannot read input: {err}"));
                break;
            }
        }
        let line = String::from_utf8_lossy(&raw);
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&cmd, args)) = words.split_first() else {
            continue;
        };
        match cmd {
            "uci" => e.uci(),
            "isready" => say("readyok"),
            "ucinewgame" => {
                e.finish_search();
                e.end_game();
                if let Some(s) = e.searcher.as_mut() {
                    s.clear();
                }
            }
            "setoption" => e.setoption(args),
            "position" => e.position(args),
            "go" => e.go(args),
            "stop" => e.finish_search(),
            "ponderhit" => {
                e.ponder.store(false, Ordering::Relaxed);
                e.book.pondering(false);
            }
            "quit" => break,
            "eval" => {
                if let Some(s) = &e.searcher {
                    say(&format!(
                        "info string static eval {} cp (side to move)",
                        s.evaluate(&e.pos)
                    ));
                }
            }
            _ => say(&format!("info string unknown command {cmd:?} ignored")),
        }
    }
    e.finish_search();
    e.end_game();
    Ok(())
}

impl Engine {
    fn searcher(&mut self) -> &mut Searcher {
        self.wait_search();
        let net = self.net.1.clone();
        self.searcher.get_or_insert_with(|| {
            let mut s = Searcher::new(DEFAULT_HASH_MB, Weights::default());
            s.set_net(net);
            s
        })
    }

    fn uci(&mut self) {
        say(&format!("id name {NAME}"));
        say("id author the learnbook developers");
        say(&format!(
            "option name Hash type spin default {DEFAULT_HASH_MB} min 1 max 65536"
        ));
        say("option name Clear Hash type button");
        say("option name Move Overhead type spin default 30 min 0 max 5000");
        say("option name Ponder type check default false");
        for line in self.book.option_lines() {
            say(&line);
        }
        say("option name WeightsFile type string default <empty>");
        let net = match &self.net.0 {
            NetChoice::Embedded => EMBEDDED_NAME.to_string(),
            other => other.to_string(),
        };
        say(&format!("option name EvalFile type string default {net}"));
        for p in Weights::default().params() {
            say(&format!(
                "option name {} type spin default {} min {} max {}",
                p.name, p.value, p.min, p.max
            ));
        }
        say("uciok");
    }

    /// Is a search still running (one that has printed `bestmove` is joined)?
    fn busy(&mut self) -> bool {
        if self.thread.is_some() && self.reported.load(Ordering::Acquire) {
            self.wait_search();
        }
        self.thread.is_some()
    }

    fn setoption(&mut self, args: &[&str]) {
        if self.busy() {
            say("info string setoption ignored while searching");
            return;
        }
        // setoption name <id...> [value <x...>]
        let Some(name_at) = args.iter().position(|w| w.eq_ignore_ascii_case("name")) else {
            say("info string setoption without a name ignored");
            return;
        };
        // After the name: `value` before `name` used to panic on the slice.
        let value_at = (name_at + 1..args.len()).find(|&i| args[i].eq_ignore_ascii_case("value"));
        let name = args[name_at + 1..value_at.unwrap_or(args.len())].join(" ");
        let value = value_at
            .map(|v| args[v + 1..].join(" "))
            .unwrap_or_default();
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "hash" => match value.parse::<usize>() {
                Ok(mb) if (1..=65536).contains(&mb) => {
                    self.hash_mb = mb;
                    self.searcher().resize(mb);
                }
                _ => say(&format!(
                    "info string Hash must be 1..65536 MB, not {value:?}"
                )),
            },
            "clear hash" => self.searcher().clear(),
            "move overhead" => match value.parse::<u64>() {
                Ok(ms) if ms <= 5000 => self.searcher().move_overhead = Duration::from_millis(ms),
                _ => say(&format!(
                    "info string Move Overhead must be 0..5000 ms, not {value:?}"
                )),
            },
            "ponder" => {}
            book if BookSide::is_option(book) => self.book.setoption(book, &value),
            "evalfile" => {
                let choice = match value.as_str() {
                    "" | "<empty>" => NetChoice::HandCrafted,
                    v => NetChoice::named(v),
                };
                // A net that does not load changes nothing: the evaluation in use stays.
                match choice.load() {
                    Ok(n) => {
                        self.searcher().set_net(n.clone());
                        match &n {
                            Some(n) => say(&format!(
                                "info string EvalFile {value}: (768 -> {}) x 2 -> 1",
                                n.hidden()
                            )),
                            None => say("info string EvalFile none: the weights' evaluation"),
                        }
                        self.net = (choice, n);
                    }
                    Err(err) => say(&format!(
                        "info string EvalFile not loaded, the evaluation in use stays: {err:#}"
                    )),
                }
            }
            "weightsfile" => {
                if value.is_empty() || value == "<empty>" {
                    self.weights_file = None;
                    self.searcher().set_weights(Weights::default());
                    return;
                }
                let path = PathBuf::from(&value);
                // A file, or a preset's name (`hand`, `kaissa`, ...).
                match crate::engine::presets::load(&value) {
                    Ok(w) => {
                        self.searcher().set_weights(w);
                        self.weights_file = Some(path);
                    }
                    Err(err) => say(&format!("info string {err:#}")),
                }
            }
            _ => {
                let Some(p) = Weights::default()
                    .params()
                    .into_iter()
                    .find(|p| p.name.eq_ignore_ascii_case(&name))
                else {
                    say(&format!("info string unknown option {name:?} ignored"));
                    return;
                };
                match value.parse::<i32>() {
                    Ok(v) => {
                        if let Err(err) = self.searcher().weights.set(&p.name, v) {
                            say(&format!("info string {err}"));
                        } else if !p.is_search() && self.net.1.is_some() {
                            // Set, but a net evaluates: say so rather than tune in vain.
                            say(&format!(
                                "info string {} is a weight of the hand-crafted evaluation, \
                                 not in use while a net evaluates (EvalFile none uses it)",
                                p.name
                            ));
                        }
                    }
                    Err(_) => say(&format!(
                        "info string {} needs an integer value, not {value:?}",
                        p.name
                    )),
                }
            }
        }
    }

    fn position(&mut self, args: &[&str]) {
        let cmd = match parse_position(args) {
            Ok(c) => c,
            Err(why) => {
                say(&format!("info string position ignored: {why}"));
                return;
            }
        };
        let mut pos = Position::new(cmd.start.clone());
        let mut history = Vec::with_capacity(cmd.moves.len());
        for &m in &cmd.moves {
            history.push(pos.key);
            pos.play_in_place(m);
        }
        self.pos = pos;
        self.history = history;
        // A search that has said bestmove is joined (its reply recorded);
        // one still running (`go infinite`) is left to run.
        self.busy();
        self.book.follow(cmd);
    }

    /// The game ends: learned into the book if learning is on.
    fn end_game(&mut self) {
        self.busy();
        self.book.end_game();
    }

    fn go(&mut self, args: &[&str]) {
        if self.busy() {
            say("info string go ignored: already searching (send stop first)");
            return;
        }
        let mut limits = Limits::default();
        let mut bad = None;
        let mut i = 0;
        while i < args.len() {
            let word = args[i];
            let mut number = |field: &mut Option<u64>| {
                let v = args.get(i + 1).and_then(|s| s.parse::<i64>().ok());
                match v {
                    Some(v) => *field = Some(v.max(0) as u64),
                    None => bad = Some(format!("go {word}: expected a number")),
                }
                i += 1;
            };
            match word {
                "wtime" => number(&mut limits.wtime),
                "btime" => number(&mut limits.btime),
                "winc" => number(&mut limits.winc),
                "binc" => number(&mut limits.binc),
                "movestogo" => number(&mut limits.movestogo),
                "movetime" => number(&mut limits.movetime),
                "nodes" => number(&mut limits.nodes),
                "depth" | "mate" => {
                    let mut d = None;
                    number(&mut d);
                    let d = d.map(|d| d.min(200) as i32);
                    limits.depth = if word == "mate" { d.map(|m| 2 * m) } else { d };
                }
                "infinite" => limits.infinite = true,
                "ponder" => limits.ponder = true,
                "searchmoves" => {
                    // Moves follow until the next word that is not a legal move.
                    while let Some(m) = args.get(i + 1).and_then(|w| self.pos.parse_uci(w)) {
                        limits.searchmoves.push(m);
                        i += 1;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if let Some(reason) = bad {
            say(&format!("info string {reason}; go ignored"));
            return;
        }
        let timed = limits.wtime.is_some() || limits.btime.is_some() || limits.movetime.is_some();
        if !timed && limits.depth.is_none() && limits.nodes.is_none() {
            // A bare `go` searches until `stop`, as in other engines.
            limits.infinite = true;
        }
        self.book.pondering(limits.ponder);
        if !limits.infinite && !limits.ponder {
            match self.book.decide(&self.pos.chess) {
                Some(Decision::Play(m)) => {
                    self.book.record_reply(Some(m), None);
                    say("info string book move");
                    say(&format!("bestmove {}", m.to_uci(CastlingMode::Standard)));
                    return;
                }
                // Out of book: leave out the moves that lost every book game.
                Some(Decision::Search(moves)) if limits.searchmoves.is_empty() => {
                    limits.searchmoves = moves
                }
                _ => {}
            }
        }
        let Some(mut searcher) = self.searcher.take() else {
            say("info string internal: no searcher");
            return;
        };
        self.stop.store(false, Ordering::Relaxed);
        self.ponder.store(limits.ponder, Ordering::Relaxed);
        self.reported.store(false, Ordering::Release);
        let reported = Arc::clone(&self.reported);
        let stop = Arc::clone(&self.stop);
        let ponder = Arc::clone(&self.ponder);
        let pos = self.pos.clone();
        let history = self.history.clone();
        let last_search = Arc::clone(&self.last_search);
        let handle = std::thread::Builder::new()
            .name("search".into())
            .stack_size(64 << 20)
            .spawn(move || {
                let result = searcher.search(&pos, &history, &limits, &stop, &ponder, &mut |i| {
                    say(&info_line(i))
                });
                // UCI: after `infinite` or `ponder`, bestmove waits for stop (or ponderhit).
                while (limits.infinite && !stop.load(Ordering::Relaxed))
                    || (ponder.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed))
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                *last_search.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some((result.score, result.best));
                reported.store(true, Ordering::Release);
                match result.best {
                    Some(m) => match result.ponder {
                        Some(p) => say(&format!(
                            "bestmove {} ponder {}",
                            m.to_uci(CastlingMode::Standard),
                            p.to_uci(CastlingMode::Standard)
                        )),
                        None => say(&format!("bestmove {}", m.to_uci(CastlingMode::Standard))),
                    },
                    None => say("bestmove 0000"),
                }
                searcher
            });
        match handle {
            Ok(h) => self.thread = Some(h),
            Err(err) => say(&format!("info string cannot start the search: {err}")),
        }
    }

    /// Stops a running search (its bestmove is printed) and takes the searcher back.
    fn finish_search(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wait_search();
    }

    fn wait_search(&mut self) {
        if let Some(h) = self.thread.take() {
            match h.join() {
                Ok(s) => self.searcher = Some(s),
                Err(_) => {
                    say("info string the search thread failed; starting afresh");
                    let mut s = Searcher::new(self.hash_mb, Weights::default());
                    s.set_net(self.net.1.clone());
                    self.searcher = Some(s);
                }
            }
            let last = self
                .last_search
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some((score, best)) = last {
                self.book.record_reply(best, Some(score));
            }
        }
    }
}
