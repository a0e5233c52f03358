//! The book and its learning in front of any UCI engine, as Polyglot's
//! adapter puts a book in front of one: `learnbook uci --engine SPEC --book
//! B [--learn]`.
//!
//! The GUI talks to the adapter as to an engine. Every command goes to the
//! inner engine unchanged, except:
//! * the book options (`OwnBook`, `BookFile`, `BookMode`, `BookLearning`),
//!   which the adapter lists beside the inner engine's own and keeps (the
//!   inner engine's options of those names are hidden, its `OwnBook` set
//!   to false);
//! * `position`, which is checked (an illegal one is refused with an `info
//!   string`, as the search core's engine does) and followed as the game;
//! * `go` in a book position: the adapter answers `bestmove` itself; out
//!   of the book with moves to avoid (lost in every game, or refuted by the
//!   learner's own games) it adds `searchmoves` with the rest, unless the
//!   GUI gave its own.
//!
//! Every line of the inner engine goes to the GUI unchanged (`info`,
//! `bestmove`, `readyok`, ...); a line that is no UCI at all is passed as an
//! `info string`. The inner engine's last score before each `bestmove`
//! (`multipv 1`) is the search evidence for learning, as the search
//! core's own scores are.
//!
//! An inner engine that exits, says no `uciok`, `readyok` or `bestmove`
//! within the timeout after `uci`, `isready` or `stop`, or plays an
//! illegal move is reported with an `info string` and the adapter exits
//! with status 1, so the GUI sees the engine fail. The book is written only
//! in single transactions (a game learned), so it is never left
//! inconsistent.

use std::{
    io::{BufRead, BufReader, Write},
    path::PathBuf,
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc::{self, Receiver, RecvTimeoutError, Sender},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use shakmaty::{uci::UciMove, CastlingMode, Chess, Move, Position as _};

use super::book_side::{parse_position, BookSide};
use super::say;
use crate::book::opening_book::Decision;
use crate::engine_io::{options::parse_option_line, protocol::EngineSpec};

/// How the adapter starts (from the command line).
pub struct AdapterConfig {
    /// The inner engine (a UCI engine).
    pub engine: EngineSpec,
    pub book: Option<PathBuf>,
    pub learn: bool,
    /// How long the inner engine may take to answer `uci`, `isready` and
    /// `stop` before it counts as hung.
    pub timeout: Duration,
}

/// A line from either side, or the end of its output.
enum Event {
    Gui(Option<String>),
    Engine(Option<String>),
}

/// An answer the adapter waits for from the inner engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Awaited {
    UciOk,
    ReadyOk,
    BestMove,
}

impl Awaited {
    fn word(self) -> &'static str {
        match self {
            Awaited::UciOk => "uciok",
            Awaited::ReadyOk => "readyok",
            Awaited::BestMove => "bestmove",
        }
    }
}

/// The inner engine's process.
struct Inner {
    name: String,
    child: Child,
    stdin: ChildStdin,
}

impl Inner {
    fn start(spec: &EngineSpec, events: Sender<Event>) -> Result<Inner> {
        let Some((program, args)) = spec.argv.split_first() else {
            bail!("the inner engine has an empty command");
        };
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(d) = &spec.dir {
            cmd.current_dir(d);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start the inner engine {program:?}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("the inner engine's pipes did not open");
        };
        std::thread::Builder::new()
            .name("inner engine".into())
            .spawn(move || read_lines(BufReader::new(stdout), &events, Event::Engine))?;
        Ok(Inner {
            name: spec.name.clone(),
            child,
            stdin,
        })
    }

    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .with_context(|| format!("cannot write to the inner engine {}", self.name))
    }

    /// Asks it to quit, and kills it if it has not within `grace`.
    fn shut_down(&mut self, grace: Duration) {
        let _ = self.send("quit");
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// How it ended, once its output closed (it may take a moment to exit).
    fn exit_status(&mut self) -> String {
        for _ in 0..40 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.to_string();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        "closed its output".to_string()
    }
}

/// Sends each line of `input` (read lossily: a line that is not UTF-8 is
/// still a line), then the end.
fn read_lines(mut input: impl BufRead, events: &Sender<Event>, wrap: fn(Option<String>) -> Event) {
    let mut raw = Vec::new();
    loop {
        raw.clear();
        match input.read_until(b'\n', &mut raw) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let line = String::from_utf8_lossy(&raw).trim_end().to_string();
                if events.send(wrap(Some(line))).is_err() {
                    return;
                }
            }
        }
    }
    let _ = events.send(wrap(None));
}

/// The adapter's state between lines.
struct Adapter {
    inner: Inner,
    book: BookSide,
    timeout: Duration,
    /// The position of the last accepted `position` command.
    pos: Chess,
    /// The position of the `go` sent to the inner engine, until its
    /// `bestmove` comes; and whether a `position` came since (the answer
    /// is then no reply in the game).
    search: Option<(Chess, bool)>,
    /// The inner engine's last score (its side) in the current search.
    score: Option<i32>,
    /// Answers awaited from the inner engine, with their deadline.
    awaited: Vec<(Awaited, Instant)>,
    /// The inner engine declared an `OwnBook` option (set to false).
    inner_own_book: bool,
    /// The spec's options (`option.X=V`), set after the first `uciok`.
    spec_options: Vec<(String, String)>,
}

/// Runs the adapter on `input` (the GUI) until `quit` or end of input.
/// An inner engine that fails is an error (said in an `info string`).
pub fn run(input: impl BufRead + Send + 'static, config: AdapterConfig) -> Result<()> {
    let (tx, rx) = mpsc::channel();
    let inner = match Inner::start(&config.engine, tx.clone()) {
        Ok(inner) => inner,
        Err(err) => {
            say(&format!("info string {err:#}"));
            return Err(err);
        }
    };
    let gui = tx;
    std::thread::Builder::new()
        .name("gui".into())
        .spawn(move || read_lines(input, &gui, Event::Gui))?;
    let mut a = Adapter {
        inner,
        book: BookSide::new(config.book, config.learn),
        timeout: config.timeout,
        pos: Chess::default(),
        search: None,
        score: None,
        awaited: Vec::new(),
        inner_own_book: false,
        spec_options: config.engine.options.clone(),
    };
    let out = a.run(&rx);
    if let Err(err) = &out {
        say(&format!("info string {err:#}"));
        a.inner.shut_down(Duration::from_millis(100));
    }
    out
}

impl Adapter {
    fn run(&mut self, rx: &Receiver<Event>) -> Result<()> {
        loop {
            let event = match self.awaited.iter().map(|w| w.1).min() {
                None => rx.recv().ok(),
                Some(deadline) => {
                    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                        Ok(e) => Some(e),
                        Err(RecvTimeoutError::Timeout) => {
                            let late = self.awaited[0].0;
                            bail!(
                                "the inner engine {} sent no {} within {} s",
                                self.inner.name,
                                late.word(),
                                self.timeout.as_secs_f64()
                            );
                        }
                        Err(RecvTimeoutError::Disconnected) => None,
                    }
                }
            };
            match event {
                Some(Event::Gui(Some(line))) => {
                    if !self.gui_line(&line)? {
                        break;
                    }
                }
                Some(Event::Engine(Some(line))) => self.engine_line(&line)?,
                Some(Event::Engine(None)) => {
                    let status = self.inner.exit_status();
                    bail!("the inner engine {} exited ({status})", self.inner.name)
                }
                Some(Event::Gui(None)) | None => break,
            }
        }
        // `quit` or the end of input: what the inner engine still says
        // goes to the GUI (a last bestmove is the game's last reply), then
        // the game ends, learned.
        let until = Instant::now() + self.timeout;
        if self.inner.send("quit").is_ok() {
            loop {
                match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Ok(Event::Engine(Some(line))) => {
                        // Failing now changes nothing: the session is over.
                        let _ = self.engine_line(&line);
                    }
                    Ok(Event::Gui(_)) => {}
                    _ => break,
                }
            }
        }
        self.book.end_game();
        self.inner.shut_down(Duration::from_millis(100));
        Ok(())
    }

    fn wait_for(&mut self, what: Awaited) {
        self.awaited.push((what, Instant::now() + self.timeout));
    }

    fn answered(&mut self, what: Awaited) {
        if let Some(i) = self.awaited.iter().position(|w| w.0 == what) {
            self.awaited.remove(i);
        }
    }

    /// One GUI command; `false` at `quit`.
    fn gui_line(&mut self, line: &str) -> Result<bool> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&cmd, args)) = words.split_first() else {
            return Ok(true);
        };
        match cmd {
            "quit" => return Ok(false),
            "uci" => {
                self.wait_for(Awaited::UciOk);
                self.inner.send(line)?;
            }
            "isready" => {
                self.wait_for(Awaited::ReadyOk);
                self.inner.send(line)?;
            }
            "setoption" => self.setoption(line, args)?,
            "ucinewgame" => {
                self.book.end_game();
                self.inner.send(line)?;
            }
            "position" => match parse_position(args) {
                Ok(cmd) => {
                    if let Some((_, stale)) = self.search.as_mut() {
                        *stale = true;
                    }
                    self.pos = cmd.moves.iter().fold(cmd.start.clone(), |mut p, m| {
                        p.play_unchecked(*m);
                        p
                    });
                    self.book.follow(cmd);
                    self.inner.send(line)?;
                }
                Err(why) => say(&format!("info string position ignored: {why}")),
            },
            "go" => self.go(line, args)?,
            "ponderhit" => {
                self.book.pondering(false);
                self.inner.send(line)?;
            }
            "stop" => {
                if self.search.is_some() && !self.awaited.iter().any(|w| w.0 == Awaited::BestMove) {
                    self.wait_for(Awaited::BestMove);
                }
                self.inner.send(line)?;
            }
            // `debug`, `register` and anything the inner engine may know.
            _ => self.inner.send(line)?,
        }
        Ok(true)
    }

    fn setoption(&mut self, line: &str, args: &[&str]) -> Result<()> {
        let name_at = args.iter().position(|w| w.eq_ignore_ascii_case("name"));
        let Some(name_at) = name_at else {
            return self.inner.send(line);
        };
        let value_at = (name_at + 1..args.len()).find(|&i| args[i].eq_ignore_ascii_case("value"));
        let name = args[name_at + 1..value_at.unwrap_or(args.len())]
            .join(" ")
            .to_ascii_lowercase();
        if !BookSide::is_option(&name) {
            return self.inner.send(line);
        }
        let value = value_at
            .map(|v| args[v + 1..].join(" "))
            .unwrap_or_default();
        self.book.setoption(&name, &value);
        Ok(())
    }

    fn go(&mut self, line: &str, args: &[&str]) -> Result<()> {
        if self.search.is_some() {
            say("info string go ignored: already searching (send stop first)");
            return Ok(());
        }
        let has = |w: &str| args.contains(&w);
        let ponder = has("ponder");
        self.book.pondering(ponder);
        let mut line = line.to_string();
        if !ponder && !has("infinite") {
            match self.book.decide(&self.pos) {
                Some(Decision::Play(m)) => {
                    self.book.record_reply(Some(m), None);
                    say("info string book move");
                    say(&format!("bestmove {}", m.to_uci(CastlingMode::Standard)));
                    return Ok(());
                }
                Some(Decision::Search(moves)) if !moves.is_empty() && !has("searchmoves") => {
                    line.push_str(" searchmoves");
                    for m in moves {
                        line.push(' ');
                        line.push_str(&m.to_uci(CastlingMode::Standard).to_string());
                    }
                }
                _ => {}
            }
        }
        self.search = Some((self.pos.clone(), false));
        self.score = None;
        self.inner.send(&line)
    }

    /// One line of the inner engine, to the GUI.
    fn engine_line(&mut self, line: &str) -> Result<()> {
        let first = line.split_whitespace().next().unwrap_or("");
        match first {
            "uciok" => {
                self.answered(Awaited::UciOk);
                for option in self.book.option_lines() {
                    say(&option);
                }
                say(line);
                if self.inner_own_book {
                    self.inner.send("setoption name OwnBook value false")?;
                }
                for (name, value) in std::mem::take(&mut self.spec_options) {
                    self.inner
                        .send(&format!("setoption name {name} value {value}"))?;
                }
            }
            "id" => match line.strip_prefix("id name ") {
                Some(name) => say(&format!("id name {name} (learnbook book)")),
                None => say(line),
            },
            "option" => {
                let name = parse_option_line(line).map(|o| o.name.to_ascii_lowercase());
                match name {
                    Some(n) if BookSide::is_option(&n) => {
                        self.inner_own_book |= n == "ownbook";
                    }
                    _ => say(line),
                }
            }
            "readyok" => {
                self.answered(Awaited::ReadyOk);
                say(line);
            }
            "info" => {
                if let Some(info) = crate::engine_io::protocol::parse_info(line) {
                    if info.multipv.unwrap_or(1) == 1 && info.score.is_some() {
                        self.score = info.score;
                    }
                }
                say(line);
            }
            "bestmove" => self.bestmove(line)?,
            "copyprotection" | "registration" => say(line),
            "" => {}
            _ => say(&format!("info string {}: {line}", self.inner.name)),
        }
        Ok(())
    }

    fn bestmove(&mut self, line: &str) -> Result<()> {
        self.answered(Awaited::BestMove);
        let Some((searched, stale)) = self.search.take() else {
            // Not asked for (a second bestmove): the GUI would take it as
            // an answer it did not ask for.
            say(&format!(
                "info string {} sent a bestmove nobody asked for: {line}",
                self.inner.name
            ));
            return Ok(());
        };
        let text = line.split_whitespace().nth(1).unwrap_or("");
        let mv: Option<Move> = text
            .parse::<UciMove>()
            .ok()
            .and_then(|u| u.to_move(&searched).ok());
        match mv {
            Some(m) if !stale => self.book.record_reply(Some(m), self.score),
            Some(_) => {}
            // No move: the position is mate or stalemate (or the engine is
            // wrong, which the GUI sees as well).
            None if searched.legal_moves().is_empty() => {}
            None => bail!(
                "the inner engine {} played an illegal move: {line:?}",
                self.inner.name
            ),
        }
        say(line);
        Ok(())
    }
}
