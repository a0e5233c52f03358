//! External engines as child processes, spoken to in UCI or CECP (xboard
//! protocol 2). Every wait has a timeout; a dead, silent or confused engine
//! becomes a [`Fault`] that the game records, never a hang of the runner.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc::{self, Receiver, RecvTimeoutError},
    time::{Duration, Instant},
};

use shakmaty::{san::San, uci::UciMove, CastlingMode, Chess, Move};

/// Why an engine lost a game other than on the board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The process died or closed its output.
    Crash(String),
    /// No answer within the time allowed.
    Hang(String),
    /// A move that is not legal (or not a move at all).
    Illegal(String),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Crash(s) => write!(f, "crash: {s}"),
            Fault::Hang(s) => write!(f, "no answer: {s}"),
            Fault::Illegal(s) => write!(f, "illegal move: {s}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Uci,
    Xboard,
}

/// How long a move may take: the clocks, or a fixed node count or depth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    /// Remaining times and increments in milliseconds, and moves to the next
    /// time control (if any).
    Clock {
        wtime: u64,
        btime: u64,
        winc: u64,
        binc: u64,
        movestogo: Option<u32>,
    },
    Nodes(u64),
    Depth(u32),
}

/// What a player is asked: the game so far and the budget.
pub struct Request<'a> {
    /// The start position as FEN, `None` for the standard start.
    pub start_fen: Option<&'a str>,
    pub start: &'a Chess,
    pub moves: &'a [Move],
    pub position: &'a Chess,
    pub budget: Budget,
}

/// A player's answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A move with the search's last score (centipawns from the mover's
    /// view, mate in `n` plies as `+-(30000 - n)`) and the depth it came from.
    Move {
        mv: Move,
        score_cp: Option<i32>,
        depth: Option<u32>,
    },
    Resign,
}

/// Anything that can play a game (external engines, the built-in engine).
pub trait Player: Send {
    fn name(&self) -> &str;
    fn new_game(&mut self) -> Result<(), Fault>;
    fn think(&mut self, req: &Request) -> Result<Reply, Fault>;
}

/// A child process with line-based input and output.
pub struct Process {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    pub label: String,
}

impl Process {
    /// Starts `argv` (`argv[0]` the program).
    pub fn spawn(
        argv: &[String],
        dir: Option<&std::path::Path>,
        label: &str,
    ) -> Result<Process, Fault> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| Fault::Crash("empty command".into()))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(d) = dir {
            cmd.current_dir(d);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Fault::Crash(format!("cannot start {program:?}: {e}")))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| Fault::Crash("no stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Fault::Crash("no stdout".into()))?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("{label} reader"))
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    match line {
                        Ok(l) => {
                            if tx.send(l).is_err() {
                                break;
                            }
                        }
                        Err(_) => break,
                    }
                }
            })
            .map_err(|e| Fault::Crash(format!("cannot start a reader thread: {e}")))?;
        Ok(Process {
            child,
            stdin,
            lines: rx,
            label: label.to_string(),
        })
    }

    pub fn send(&mut self, line: &str) -> Result<(), Fault> {
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| Fault::Crash(format!("{}: cannot write {line:?}: {e}", self.label)))
    }

    /// The next line, waiting at most until `deadline`.
    pub fn recv(&mut self, deadline: Instant, waiting_for: &str) -> Result<String, Fault> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(l) => Ok(l),
            Err(RecvTimeoutError::Timeout) => {
                Err(Fault::Hang(format!("{} sent no {waiting_for}", self.label)))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self
                    .child
                    .try_wait()
                    .ok()
                    .flatten()
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                Err(Fault::Crash(format!(
                    "{} exited {status} while we waited for {waiting_for}",
                    self.label
                )))
            }
        }
    }

    /// Lines until one for which `done` is true (that line is returned).
    pub fn until(
        &mut self,
        deadline: Instant,
        waiting_for: &str,
        mut done: impl FnMut(&str) -> bool,
    ) -> Result<String, Fault> {
        loop {
            let line = self.recv(deadline, waiting_for)?;
            if done(&line) {
                return Ok(line);
            }
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        // Give it a moment to exit cleanly, then kill.
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill();
    }
}

/// How to start an engine: cutechess-style `name=`, `cmd=`, `proto=`, `option.X=`.
#[derive(Clone, Debug)]
pub struct EngineSpec {
    pub name: String,
    pub argv: Vec<String>,
    pub proto: Proto,
    pub options: Vec<(String, String)>,
    pub dir: Option<std::path::PathBuf>,
}

/// Time allowed for the handshake and `isready`.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Slack on top of a move's own budget before an engine is declared hung.
const GRACE: Duration = Duration::from_secs(2);
/// A move under a node or depth budget may take at most this long.
const FIXED_BUDGET_LIMIT: Duration = Duration::from_secs(120);

fn parse_move(pos: &Chess, text: &str) -> Option<Move> {
    if let Ok(u) = text.parse::<UciMove>() {
        if let Ok(m) = u.to_move(pos) {
            return Some(m);
        }
    }
    text.parse::<San>().ok().and_then(|s| s.to_move(pos).ok())
}

/// The time this move may take before the engine is declared hung.
fn move_deadline(req: &Request) -> Instant {
    let allowed = match req.budget {
        Budget::Clock {
            wtime,
            btime,
            winc,
            binc,
            ..
        } => {
            let (t, i) = match shakmaty::Position::turn(req.position) {
                shakmaty::Color::White => (wtime, winc),
                shakmaty::Color::Black => (btime, binc),
            };
            Duration::from_millis(t + i) + GRACE
        }
        Budget::Nodes(_) | Budget::Depth(_) => FIXED_BUDGET_LIMIT,
    };
    Instant::now() + allowed
}

/// A UCI engine.
pub struct UciEngine {
    spec: EngineSpec,
    p: Process,
    /// What the engine calls itself (`id name`: name and version).
    id_name: Option<String>,
    /// The engine offers the `MultiPV` option.
    has_multipv: bool,
    /// `MultiPV` as last set (1 unless the spec or `analyse_lines` set it).
    multipv: u32,
    /// The `bestmove` line of the last `go_lines`.
    last_bestmove: String,
}

impl UciEngine {
    pub fn start(spec: &EngineSpec) -> Result<UciEngine, Fault> {
        let mut p = Process::spawn(&spec.argv, spec.dir.as_deref(), &spec.name)?;
        p.send("uci")?;
        let mut has_multipv = false;
        let mut id_name = None;
        p.until(Instant::now() + HANDSHAKE, "uciok", |l| {
            has_multipv |= l.starts_with("option name MultiPV ");
            if let Some(n) = l.strip_prefix("id name ") {
                let n = n.trim();
                if !n.is_empty() {
                    id_name = Some(n.chars().take(100).collect());
                }
            }
            l.trim() == "uciok"
        })?;
        let mut multipv = 1;
        for (k, v) in &spec.options {
            p.send(&format!("setoption name {k} value {v}"))?;
            if k == "MultiPV" {
                multipv = v.parse().unwrap_or(1);
            }
        }
        let mut e = UciEngine {
            spec: spec.clone(),
            p,
            id_name,
            has_multipv,
            multipv,
            last_bestmove: String::new(),
        };
        e.ready()?;
        Ok(e)
    }

    fn ready(&mut self) -> Result<(), Fault> {
        self.p.send("isready")?;
        self.p.until(Instant::now() + HANDSHAKE, "readyok", |l| {
            l.trim() == "readyok"
        })?;
        Ok(())
    }
}

impl Player for UciEngine {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn new_game(&mut self) -> Result<(), Fault> {
        self.p.send("ucinewgame")?;
        self.ready()
    }

    fn think(&mut self, req: &Request) -> Result<Reply, Fault> {
        let mut pos = match req.start_fen {
            Some(fen) => format!("position fen {fen}"),
            None => "position startpos".to_string(),
        };
        if !req.moves.is_empty() {
            pos.push_str(" moves");
            for m in req.moves {
                pos.push(' ');
                pos.push_str(&m.to_uci(CastlingMode::Standard).to_string());
            }
        }
        self.p.send(&pos)?;
        let go = match req.budget {
            Budget::Clock {
                wtime,
                btime,
                winc,
                binc,
                movestogo,
            } => {
                let mut g = format!("go wtime {wtime} btime {btime} winc {winc} binc {binc}");
                if let Some(m) = movestogo {
                    g.push_str(&format!(" movestogo {m}"));
                }
                g
            }
            Budget::Nodes(n) => format!("go nodes {n}"),
            Budget::Depth(d) => format!("go depth {d}"),
        };
        self.p.send(&go)?;
        let deadline = move_deadline(req);
        let (mut score, mut depth) = (None, None);
        let line = self.p.until(deadline, "bestmove", |l| {
            if let Some(info) = parse_info(l) {
                // Under MultiPV, the best line's score only.
                if info.score.is_some() && info.multipv.unwrap_or(1) == 1 {
                    score = info.score;
                    depth = info.depth.or(depth);
                }
            }
            l.starts_with("bestmove")
        })?;
        let text = line.split_whitespace().nth(1).unwrap_or("");
        match parse_move(req.position, text) {
            Some(mv) => Ok(Reply::Move {
                mv,
                score_cp: score,
                depth,
            }),
            None => Err(Fault::Illegal(format!(
                "{} played {text:?} in {}",
                self.spec.name,
                shakmaty::fen::Fen::from_position(req.position, shakmaty::EnPassantMode::Legal)
            ))),
        }
    }
}

/// What an engine's `info` line says about its search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InfoLine {
    pub depth: Option<u32>,
    /// Centipawns from the side to move; mate in `n` as `+-(30000 - n)`.
    pub score: Option<i32>,
    /// `lowerbound` or `upperbound`: not the final score of that depth.
    pub bound: bool,
    /// `multipv k`: the k-th best line (absent: the only one).
    pub multipv: Option<u32>,
    /// The first move of the principal variation, as sent.
    pub pv_first: Option<String>,
}

/// Parses a UCI `info` line (`None` for any other line).
pub fn parse_info(line: &str) -> Option<InfoLine> {
    let rest = line.strip_prefix("info ")?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let mut info = InfoLine::default();
    let mut i = 0;
    while i < words.len() {
        match words[i] {
            "depth" => info.depth = words.get(i + 1).and_then(|v| v.parse().ok()),
            "score" => {
                let v = words.get(i + 2).and_then(|v| v.parse::<i32>().ok());
                info.score = match (words.get(i + 1), v) {
                    (Some(&"cp"), Some(v)) => Some(v.clamp(-19_999, 19_999)),
                    (Some(&"mate"), Some(v)) if v > 0 => Some(30_000 - 2 * v + 1),
                    (Some(&"mate"), Some(v)) => Some(-30_000 - 2 * v),
                    _ => None,
                };
            }
            "lowerbound" | "upperbound" => info.bound = true,
            "multipv" => info.multipv = words.get(i + 1).and_then(|v| v.parse().ok()),
            // The rest of the line is moves or text.
            "pv" => {
                info.pv_first = words.get(i + 1).map(|m| m.to_string());
                break;
            }
            "string" => break,
            _ => {}
        }
        i += 1;
    }
    Some(info)
}

/// One analysis by a UCI engine: its best move, the final score and depth.
#[derive(Clone, Debug)]
pub struct Analysed {
    pub best: Option<Move>,
    pub score: i32,
    pub depth: u32,
}

impl UciEngine {
    /// The engine's identity for records: its `name=`.
    pub fn label(&self) -> &str {
        &self.spec.name
    }

    /// Sends `setoption name K value V` for each option, to take effect
    /// from the next game (the tuner's way to change a live engine).
    pub fn set_options(&mut self, options: &[(String, String)]) -> Result<(), Fault> {
        for (k, v) in options {
            self.p.send(&format!("setoption name {k} value {v}"))?;
        }
        Ok(())
    }

    /// Searches `pos` (given as FEN, no history) with `go <budget>` and, if
    /// given, `searchmoves`. `fresh`: clear the hash first (`ucinewgame`),
    /// so the result does not depend on what was searched before.
    pub fn analyse(
        &mut self,
        pos: &Chess,
        go: &str,
        searchmoves: &[Move],
        allowed: Duration,
        fresh: bool,
    ) -> Result<Analysed, Fault> {
        self.set_multipv(1)?;
        let lines = self.go_lines(pos, go, searchmoves, allowed, fresh)?;
        let (score, depth) = match lines.first() {
            Some(&(1, score, depth, _)) => (score, depth),
            _ => {
                return Err(Fault::Illegal(format!(
                    "{} gave no score before bestmove",
                    self.spec.name
                )))
            }
        };
        let best = self.bestmove(pos)?;
        if let Some(b) = best
            .as_ref()
            .filter(|b| !searchmoves.is_empty() && !searchmoves.contains(b))
        {
            return Err(Fault::Illegal(format!(
                "{} played {} outside the searchmoves it was given: it ignores searchmoves",
                self.spec.name,
                b.to_uci(shakmaty::CastlingMode::Standard)
            )));
        }
        Ok(Analysed { best, score, depth })
    }

    /// Whether the engine keeps to `searchmoves` (Ethereal 12 ignores
    /// them): a one-ply search of the start position limited to `a2a3`.
    pub fn honours_searchmoves(&mut self) -> Result<bool, Fault> {
        use shakmaty::Position as _;
        let pos = Chess::default();
        let Some(a3) = pos
            .legal_moves()
            .into_iter()
            .find(|m| m.from() == Some(shakmaty::Square::A2) && m.to() == shakmaty::Square::A3)
        else {
            return Ok(true);
        };
        match self.analyse(&pos, "depth 1", &[a3], Duration::from_secs(60), true) {
            Ok(_) => Ok(true),
            Err(Fault::Illegal(e)) if e.contains("ignores searchmoves") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The engine's `id name` (name and version), if it sent one.
    pub fn id_name(&self) -> Option<&str> {
        self.id_name.as_deref()
    }

    /// Whether `analyse_lines` gets its lines from one search (the engine
    /// offers `MultiPV`).
    pub fn has_multipv(&self) -> bool {
        self.has_multipv
    }

    /// The best `k` of `searchmoves` (all moves if empty) in one MultiPV
    /// search, best first, each with its own score and depth; fewer when the
    /// engine reported fewer lines. A line not updated in the last, stopped
    /// iteration may repeat a move a better line now has: only the first
    /// is kept. Needs `has_multipv`.
    pub fn analyse_lines(
        &mut self,
        pos: &Chess,
        go: &str,
        searchmoves: &[Move],
        k: u32,
        allowed: Duration,
        fresh: bool,
    ) -> Result<Vec<Analysed>, Fault> {
        self.set_multipv(k.max(1))?;
        let lines = self.go_lines(pos, go, searchmoves, allowed, fresh)?;
        self.bestmove(pos)?;
        let mut out = Vec::with_capacity(lines.len());
        for (_, score, depth, first) in lines {
            let best = parse_move(pos, &first);
            if best.is_none() {
                return Err(Fault::Illegal(format!(
                    "{} gave the line {first:?}",
                    self.spec.name
                )));
            }
            if out.iter().any(|a: &Analysed| a.best == best) {
                continue;
            }
            out.push(Analysed { best, score, depth });
        }
        Ok(out)
    }

    fn set_multipv(&mut self, k: u32) -> Result<(), Fault> {
        if self.has_multipv && self.multipv != k {
            self.p.send(&format!("setoption name MultiPV value {k}"))?;
            self.multipv = k;
        }
        Ok(())
    }

    /// Sends the position and `go`, and reads up to `bestmove`: the last
    /// exact score of each line as (line, score, depth, first move), in line
    /// order. The `bestmove` line is kept for `bestmove`.
    fn go_lines(
        &mut self,
        pos: &Chess,
        go: &str,
        searchmoves: &[Move],
        allowed: Duration,
        fresh: bool,
    ) -> Result<Vec<(u32, i32, u32, String)>, Fault> {
        if fresh {
            self.new_game()?;
        }
        let fen = shakmaty::fen::Fen::from_position(pos, shakmaty::EnPassantMode::Legal);
        self.p.send(&format!("position fen {fen}"))?;
        let mut cmd = format!("go {go}");
        if !searchmoves.is_empty() {
            cmd.push_str(" searchmoves");
            for m in searchmoves {
                cmd.push(' ');
                cmd.push_str(&m.to_uci(CastlingMode::Standard).to_string());
            }
        }
        self.p.send(&cmd)?;
        let mut lines: std::collections::BTreeMap<u32, (i32, u32, String)> =
            std::collections::BTreeMap::new();
        let line = self
            .p
            .until(Instant::now() + allowed + GRACE, "bestmove", |l| {
                if let Some(info) = parse_info(l) {
                    if let (Some(s), false) = (info.score, info.bound) {
                        let at = lines.entry(info.multipv.unwrap_or(1)).or_default();
                        at.0 = s;
                        at.1 = info.depth.unwrap_or(at.1);
                        if let Some(m) = info.pv_first {
                            at.2 = m;
                        }
                    }
                }
                l.starts_with("bestmove")
            })?;
        self.last_bestmove = line;
        Ok(lines
            .into_iter()
            .map(|(i, (s, d, m))| (i, s, d, m))
            .collect())
    }

    /// The move of the last `bestmove` line (`None` for `(none)`/`0000`).
    fn bestmove(&self, pos: &Chess) -> Result<Option<Move>, Fault> {
        let text = self.last_bestmove.split_whitespace().nth(1).unwrap_or("");
        let best = parse_move(pos, text);
        if best.is_none() && !matches!(text, "(none)" | "0000") {
            return Err(Fault::Illegal(format!(
                "{} played {text:?}",
                self.spec.name
            )));
        }
        Ok(best)
    }
}

/// A CECP (xboard protocol 2) engine, kept in force mode except while it
/// thinks, as cutechess does.
pub struct XboardEngine {
    spec: EngineSpec,
    p: Process,
    usermove: bool,
    setboard: bool,
    /// Moves of the current game the engine has been told.
    synced: usize,
}

impl XboardEngine {
    pub fn start(spec: &EngineSpec) -> Result<XboardEngine, Fault> {
        let mut p = Process::spawn(&spec.argv, spec.dir.as_deref(), &spec.name)?;
        p.send("xboard")?;
        p.send("protover 2")?;
        let (mut usermove, mut setboard) = (false, false);
        // Features arrive until done=1; engines without protocol 2 send none:
        // after 2 s of silence, go on with the defaults.
        let mut deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let line = match p.recv(deadline, "feature done=1") {
                Ok(l) => l,
                Err(Fault::Hang(_)) => break,
                Err(e) => return Err(e),
            };
            if !line.starts_with("feature") {
                continue;
            }
            for (k, v) in features(&line) {
                match (k.as_str(), v.as_str()) {
                    ("usermove", "1") => usermove = true,
                    ("setboard", "1") => setboard = true,
                    ("done", "0") => deadline = Instant::now() + Duration::from_secs(3600),
                    _ => {}
                }
                if k != "done" {
                    p.send(&format!("accepted {k}"))?;
                }
            }
            if line.contains("done=1") {
                break;
            }
        }
        for (k, v) in &spec.options {
            p.send(&format!("option {k}={v}"))?;
        }
        Ok(XboardEngine {
            spec: spec.clone(),
            p,
            usermove,
            setboard,
            synced: 0,
        })
    }

    fn send_move(&mut self, m: &Move) -> Result<(), Fault> {
        let text = m.to_uci(CastlingMode::Standard).to_string();
        if self.usermove {
            self.p.send(&format!("usermove {text}"))
        } else {
            self.p.send(&text)
        }
    }
}

/// `feature a=1 b="x y"` as pairs.
fn features(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = line.trim_start_matches("feature").trim();
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim().to_string();
        rest = &rest[eq + 1..];
        let (value, tail) = if let Some(stripped) = rest.strip_prefix('"') {
            match stripped.find('"') {
                Some(end) => (stripped[..end].to_string(), &stripped[end + 1..]),
                None => (stripped.to_string(), ""),
            }
        } else {
            match rest.find(char::is_whitespace) {
                Some(end) => (rest[..end].to_string(), &rest[end..]),
                None => (rest.to_string(), ""),
            }
        };
        out.push((key, value));
        rest = tail.trim_start();
    }
    out
}

impl Player for XboardEngine {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn new_game(&mut self) -> Result<(), Fault> {
        self.p.send("new")?;
        self.p.send("force")?;
        self.p.send("post")?;
        self.p.send("easy")?;
        self.synced = usize::MAX; // the start position is set on the first think
        Ok(())
    }

    fn think(&mut self, req: &Request) -> Result<Reply, Fault> {
        if self.synced == usize::MAX || self.synced > req.moves.len() {
            if let Some(fen) = req.start_fen {
                if !self.setboard {
                    return Err(Fault::Illegal(format!(
                        "{} cannot start from a FEN (no setboard)",
                        self.spec.name
                    )));
                }
                self.p.send(&format!("setboard {fen}"))?;
            }
            self.synced = 0;
        }
        for m in &req.moves[self.synced..] {
            self.send_move(m)?;
        }
        self.synced = req.moves.len();
        match req.budget {
            Budget::Clock {
                wtime,
                btime,
                winc,
                binc,
                movestogo,
            } => {
                let white = shakmaty::Position::turn(req.position) == shakmaty::Color::White;
                let (own, other, inc) = if white {
                    (wtime, btime, winc)
                } else {
                    (btime, wtime, binc)
                };
                let mps = movestogo.unwrap_or(0);
                // `level` takes whole seconds of increment; the clocks below are exact.
                let base = own / 1000;
                self.p.send(&format!(
                    "level {mps} {}:{:02} {}",
                    base / 60,
                    base % 60,
                    inc as f64 / 1000.0
                ))?;
                self.p.send(&format!("time {}", own / 10))?;
                self.p.send(&format!("otim {}", other / 10))?;
            }
            Budget::Depth(d) => self.p.send(&format!("sd {d}"))?,
            Budget::Nodes(_) => {
                return Err(Fault::Illegal(format!(
                    "{}: xboard has no node limit",
                    self.spec.name
                )))
            }
        }
        self.p.send("go")?;
        let deadline = move_deadline(req);
        let (mut score, mut depth) = (None, None);
        loop {
            let line = self.p.recv(deadline, "move")?;
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["move", text, ..] => {
                    self.p.send("force")?;
                    return match parse_move(req.position, text) {
                        Some(mv) => {
                            self.synced += 1;
                            Ok(Reply::Move {
                                mv,
                                score_cp: score,
                                depth,
                            })
                        }
                        None => Err(Fault::Illegal(format!(
                            "{} played {text:?}",
                            self.spec.name
                        ))),
                    };
                }
                ["resign", ..] => return Ok(Reply::Resign),
                [first, ..] if first.starts_with("Illegal") || first.starts_with("Error") => {
                    return Err(Fault::Illegal(format!(
                        "{} rejected our input: {line}",
                        self.spec.name
                    )));
                }
                // Thinking output: ply score time nodes pv.
                [ply, sc, ..] => {
                    if let (Ok(d), Ok(v)) = (ply.parse::<u32>(), sc.parse::<i32>()) {
                        score = Some(v);
                        depth = Some(d);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Starts the engine `spec` in its protocol.
pub fn start(spec: &EngineSpec) -> Result<Box<dyn Player>, Fault> {
    Ok(match spec.proto {
        Proto::Uci => Box::new(UciEngine::start(spec)?),
        Proto::Xboard => Box::new(XboardEngine::start(spec)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_lines() {
        let f = features(r#"feature usermove=1 myname="Fairy Max 5.0" setboard=1 done=1"#);
        assert_eq!(
            f,
            vec![
                ("usermove".into(), "1".into()),
                ("myname".into(), "Fairy Max 5.0".into()),
                ("setboard".into(), "1".into()),
                ("done".into(), "1".into())
            ]
        );
    }

    #[test]
    fn info_lines() {
        let i =
            parse_info("info depth 12 seldepth 18 score cp -35 nodes 1000 pv e2e4 e7e5").unwrap();
        assert_eq!((i.depth, i.score, i.bound), (Some(12), Some(-35), false));
        let i = parse_info("info depth 9 score mate 3 pv d1h5").unwrap();
        assert_eq!(i.score, Some(30_000 - 5));
        let i = parse_info("info depth 9 score mate -2").unwrap();
        assert_eq!(i.score, Some(-30_000 + 4));
        assert!(
            parse_info("info depth 5 score cp 10 lowerbound")
                .unwrap()
                .bound
        );
        assert_eq!(parse_info("info string score cp 99").unwrap().score, None);
        let i = parse_info("info multipv 2 score cp 1 depth 8 nodes 5 pv e2e4 b8c6").unwrap();
        assert_eq!(
            (i.multipv, i.score, i.depth, i.pv_first.as_deref()),
            (Some(2), Some(1), Some(8), Some("e2e4"))
        );
        assert!(parse_info("bestmove e2e4").is_none());
    }

    #[test]
    fn moves_in_uci_or_san() {
        let pos = Chess::default();
        assert!(parse_move(&pos, "e2e4").is_some());
        assert!(parse_move(&pos, "Nf3").is_some());
        assert!(parse_move(&pos, "e2e5").is_none());
        assert!(parse_move(&pos, "garbage").is_none());
    }
}
