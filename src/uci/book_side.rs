//! The book's side of a UCI engine, the same for the search core's engine
//! and for the adapter in front of another engine: the book options
//! (`OwnBook`, `BookFile`, `BookMode`, `BookLearning`), the game as the
//! engine sees it, the book's decision in a position, and learning each
//! game when it ends.

use std::{path::PathBuf, str::FromStr};

use shakmaty::{Chess, Move};

use super::learning::{self, OwnSearch, SeenGame};
use super::say;
use crate::book::choose::Mode;
use crate::book::opening_book::{Decision, OpeningBook};
use crate::book::own_losses::OwnLosses;
use crate::engine::position::Position;

/// A `position` command read: its start (FEN as given, `None` for
/// `startpos`) and its moves, all legal.
pub struct PositionCommand {
    pub fen: Option<String>,
    pub start: Chess,
    pub moves: Vec<Move>,
}

/// Reads `position startpos|fen F [moves ...]`; the error says why it is
/// not a position (an illegal move names the move).
pub fn parse_position(args: &[&str]) -> Result<PositionCommand, String> {
    let moves_at = args.iter().position(|&w| w == "moves");
    let setup = &args[..moves_at.unwrap_or(args.len())];
    let start = match setup.first() {
        Some(&"startpos") => Chess::default(),
        Some(&"fen") => {
            Position::from_fen(&setup[1..].join(" "))
                .map_err(|e| format!("{e:#}"))?
                .chess
        }
        _ => return Err("position needs startpos or fen".into()),
    };
    let fen = (setup.first() == Some(&"fen")).then(|| learning::start_fen(&start));
    let mut pos = Position::new(start.clone());
    let mut moves = Vec::new();
    for &uci in moves_at.map_or(&[][..], |i| &args[i + 1..]) {
        let m = pos
            .parse_uci(uci)
            .ok_or_else(|| format!("illegal move {uci:?}"))?;
        moves.push(m);
        pos.play_in_place(m);
    }
    Ok(PositionCommand { fen, start, moves })
}

/// The book options, the book, and the game being played.
pub struct BookSide {
    pub own_book: bool,
    file: Option<PathBuf>,
    book: Option<OpeningBook>,
    mode: Mode,
    learning: bool,
    /// Why the book of `file` is not open.
    unusable: Option<String>,
    game: Option<SeenGame>,
    /// The moves the learner's own games lost with (refreshed at each game).
    own: OwnLosses,
}

impl BookSide {
    /// The book of `file` (none: no book); a book that does not open is
    /// said in an `info string`, and play goes on without it.
    pub fn new(file: Option<PathBuf>, learning: bool) -> BookSide {
        let mut side = BookSide {
            own_book: file.is_some(),
            file: None,
            book: None,
            mode: Mode::Best,
            learning,
            unusable: None,
            game: None,
            own: OwnLosses::new(learning::SOURCE),
        };
        if let Some(f) = file {
            side.set_file(f);
        }
        side
    }

    fn set_file(&mut self, path: PathBuf) {
        match OpeningBook::open(&path) {
            Ok(b) => {
                self.book = Some(b);
                self.unusable = None;
                self.refresh_losses();
            }
            Err(err) => {
                let why = format!("cannot open book {}: {err:#}", path.display());
                say(&format!("info string {why}; playing without a book"));
                self.book = None;
                self.unusable = Some(why);
            }
        }
        self.file = Some(path);
    }

    fn refresh_losses(&mut self) {
        if let Some(book) = self.book.as_ref().and_then(OpeningBook::learnbook) {
            if let Err(err) = self.own.refresh(book) {
                say(&format!(
                    "info string cannot read the learned games: {err:#}"
                ));
            }
        }
    }

    /// The book options' `option` lines, as `uci` lists them.
    pub fn option_lines(&self) -> Vec<String> {
        let file = self
            .file
            .as_ref()
            .map_or("<empty>".to_string(), |p| p.display().to_string());
        vec![
            format!("option name OwnBook type check default {}", self.own_book),
            format!("option name BookFile type string default {file}"),
            "option name BookMode type combo default best var best var weighted".to_string(),
            format!(
                "option name BookLearning type check default {}",
                self.learning
            ),
        ]
    }

    /// Whether `name` (lower case) is a book option.
    pub fn is_option(name: &str) -> bool {
        matches!(name, "ownbook" | "bookfile" | "bookmode" | "booklearning")
    }

    /// Sets a book option (`name` in lower case, see [`BookSide::is_option`]).
    pub fn setoption(&mut self, name: &str, value: &str) {
        let flag = |v: &str, option: &str| match v {
            "true" => Some(true),
            "false" => Some(false),
            _ => {
                say(&format!(
                    "info string {option} must be true or false, not {v:?}"
                ));
                None
            }
        };
        match name {
            "ownbook" => self.own_book = flag(value, "OwnBook").unwrap_or(self.own_book),
            "booklearning" => self.learning = flag(value, "BookLearning").unwrap_or(self.learning),
            "bookmode" => match Mode::from_str(value) {
                Ok(m) => self.mode = m,
                Err(err) => say(&format!("info string BookMode: {err}")),
            },
            "bookfile" if value.is_empty() || value == "<empty>" => {
                self.file = None;
                self.book = None;
                self.unusable = None;
            }
            "bookfile" => self.set_file(PathBuf::from(value)),
            _ => {}
        }
    }

    /// Keeps the game up to date with a `position`: the same game if it
    /// continues it (or replaces a pondered last move), else the game
    /// before ends (and is learned) and a new one starts.
    pub fn follow(&mut self, cmd: PositionCommand) {
        match &mut self.game {
            Some(g) if g.continued_by(cmd.fen.as_deref(), &cmd.moves) => {
                if cmd.moves.len() != g.moves.len() {
                    g.reply = None;
                }
                g.moves = cmd.moves;
                g.pondered = false;
            }
            Some(g) if g.pondered && g.continued_without_last(cmd.fen.as_deref(), &cmd.moves) => {
                // The pondered move was not played: the game goes on
                // from the move that was.
                g.moves = cmd.moves;
                g.reply = None;
                g.pondered = false;
            }
            _ => {
                self.end_game();
                self.refresh_losses();
                self.game = Some(SeenGame {
                    fen: cmd.fen,
                    start: cmd.start,
                    moves: cmd.moves,
                    ..SeenGame::default()
                });
            }
        }
    }

    /// A `go ponder`: the game's last move is the opponent's predicted one
    /// until `ponderhit`.
    pub fn pondering(&mut self, on: bool) {
        if let Some(g) = self.game.as_mut() {
            g.pondered = on;
        }
    }

    /// The game ends: learned into the book if learning is on.
    pub fn end_game(&mut self) {
        let Some(game) = self.game.take() else {
            return;
        };
        if !self.learning {
            return;
        }
        let Some(book) = self.book.as_mut() else {
            match &self.unusable {
                Some(why) => say(&format!("info string game not learned: {why}")),
                None => say("info string game not learned: no book (BookFile)"),
            }
            return;
        };
        let Some(book) = book.learnbook_mut() else {
            say("info string game not learned: a Polyglot book does not learn");
            return;
        };
        say(&format!("info string {}", learning::learn(book, &game)));
    }

    /// Records the engine's answer to the current position (with its
    /// search's score, for a searched move).
    pub fn record_reply(&mut self, mv: Option<Move>, score: Option<i32>) {
        if let Some(g) = self.game.as_mut() {
            if g.pondered {
                return;
            }
            g.reply = mv;
            if let Some(score) = score {
                g.searches.push(OwnSearch {
                    ply: g.moves.len(),
                    score,
                });
            }
        }
    }

    /// The book's decision in `pos`: `None` without a book (or with
    /// OwnBook off), or when the lookup failed (said; the engine searches).
    /// A learner leaves out the moves its own games lost with where it
    /// searches.
    pub fn decide(&self, pos: &Chess) -> Option<Decision> {
        let book = self.book.as_ref().filter(|_| self.own_book)?;
        let rng = &mut rand::rng();
        let decision = if self.learning {
            book.decide_learning(pos, self.mode, rng, &self.own)
        } else {
            book.decide(pos, self.mode, rng)
        };
        match decision {
            Ok(d) => Some(d),
            Err(err) => {
                say(&format!("info string book lookup failed: {err:#}"));
                None
            }
        }
    }
}
