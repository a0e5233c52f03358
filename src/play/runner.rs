//! Many games between two players: openings, colours, worker threads that
//! own their engines, PGN output, statistics, SPRT, and the learning loop
//! (each finished game of one player goes into its book at once).

use std::{
    fs::OpenOptions,
    io::Write,
    path::{Path, PathBuf},
    sync::atomic::{AtomicBool, Ordering},
};

use anyhow::{anyhow, bail, Context, Result};
use rand::{rngs::StdRng, seq::SliceRandom, SeedableRng};
use shakmaty::{Chess, Color, Move, Position};

use super::{
    book_front::{BookFront, DeepStart, NodeJitter},
    builtin::Builtin,
    game::{play_game, Adjudication, GameRecord, Limit, Opening},
    stats::{Pentanomial, Sprt, SprtState, Wdl},
};
use crate::{
    book::{
        choose::Mode,
        opening_book::OpeningBook,
        pgn::{
            game::{Game, GameResult},
            input::{open_input, GameStream, RawGame},
            validate::Header,
        },
        Book,
    },
    engine::{epd::Epd, params::Weights},
    engine_io::protocol::{self, EngineSpec, Fault, Player},
    workers,
};

/// One side of the match.
#[derive(Clone, Debug)]
pub enum PlayerSpec {
    External(EngineSpec),
    /// An external engine behind an opening book (`book=`), as cutechess
    /// plays one: the book's moves until it has none, then the engine.
    Booked {
        engine: EngineSpec,
        book: PathBuf,
        book_mode: Mode,
        /// The engine at these nodes chooses wherever the book has a move
        /// (`duel --deep-book`).
        deep_nodes: Option<u64>,
    },
    /// An external engine that searches the game's first `plies` at `nodes`
    /// (a better opening player than any book: `duel --deep-start`).
    DeepStart {
        engine: EngineSpec,
        plies: usize,
        nodes: u64,
    },
    /// The search core in-process.
    Builtin {
        name: String,
        weights: Option<PathBuf>,
        /// The evaluation (`net=`): the embedded net unless told.
        net: crate::engine::default_net::NetChoice,
        book: Option<PathBuf>,
        book_mode: Mode,
    },
}

impl PlayerSpec {
    pub fn name(&self) -> &str {
        match self {
            PlayerSpec::External(e)
            | PlayerSpec::Booked { engine: e, .. }
            | PlayerSpec::DeepStart { engine: e, .. } => &e.name,
            PlayerSpec::Builtin { name, .. } => name,
        }
    }

    /// The search core with an opening book.
    fn has_book(&self) -> bool {
        matches!(
            self,
            PlayerSpec::Builtin { book: Some(_), .. } | PlayerSpec::Booked { .. }
        )
    }

    fn start(&self, seed: u64) -> Result<Box<dyn Player>, Fault> {
        match self {
            PlayerSpec::External(e) => protocol::start(e),
            PlayerSpec::Booked {
                engine,
                book,
                book_mode,
                deep_nodes,
            } => {
                let opened = OpeningBook::open(book)
                    .map_err(|e| Fault::Crash(format!("{}: book: {e:#}", engine.name)))?;
                let inner = protocol::start(engine)?;
                Ok(Box::new(
                    BookFront::new(inner, opened, *book_mode, seed).with_deep_nodes(*deep_nodes),
                ))
            }
            PlayerSpec::DeepStart {
                engine,
                plies,
                nodes,
            } => Ok(Box::new(DeepStart::new(
                protocol::start(engine)?,
                *plies,
                *nodes,
            ))),
            PlayerSpec::Builtin {
                name,
                weights,
                net,
                book,
                book_mode,
            } => {
                let net = net
                    .load()
                    .map_err(|e| Fault::Crash(format!("{name}: {e:#}")))?;
                let w = match weights {
                    Some(p) => crate::engine::presets::load(&p.to_string_lossy())
                        .map_err(|e| Fault::Crash(format!("{e:#}")))?,
                    None => Weights::default(),
                };
                Builtin::new(name, w, book.as_deref(), *book_mode, seed)
                    .map(|b| Box::new(b.with_net(net)) as Box<dyn Player>)
                    .map_err(|e| Fault::Crash(format!("{name}: {e:#}")))
            }
        }
    }
}

/// What the runner calls after learning a game: the book, the game's start
/// position and its moves.
pub type AfterLearn = Box<dyn Fn(&mut Book, &Chess, &[Move]) -> Result<()> + Send + Sync>;

pub struct MatchConfig {
    pub players: [PlayerSpec; 2],
    pub limit: Limit,
    /// Per-player limits overriding `limit` (cutechess's per-engine `tc=`, `nodes=`, `depth=`).
    pub limits: [Option<Limit>; 2],
    /// A node limit varies by up to this fraction either way, drawn anew
    /// every move (0: fixed).
    pub node_jitter: f64,
    pub games: usize,
    pub concurrency: usize,
    pub openings: Vec<Opening>,
    /// Shuffle the openings with this seed (else in file order).
    pub random_seed: Option<u64>,
    /// Each opening twice, colours swapped.
    pub repeat: bool,
    /// The first player always has White (cutechess `-noswap`).
    pub noswap: bool,
    pub pgn_out: Option<PathBuf>,
    pub sprt: Option<Sprt>,
    /// After the SPRT decides, play on to `games` (the decision is kept).
    pub sprt_play_on: bool,
    pub adjudication: Adjudication,
    /// Add every game of the named player to this book, re-evaluating at once.
    pub learn: Option<(PathBuf, String)>,
    /// Called after each learned game with the book, the game's start and
    /// its moves (e.g. to analyse what the game added, at once).
    pub after_learn: Option<AfterLearn>,
    pub event: String,
}

/// The match so far, from the first player's point of view.
#[derive(Clone, Debug, Default)]
pub struct Standing {
    pub played: usize,
    pub wdl: Wdl,
    pub pairs: Pentanomial,
    pub llr: Option<f64>,
    pub sprt: Option<SprtState>,
    /// Games counted when the SPRT decided.
    pub sprt_decided_after: Option<usize>,
    pub learned: usize,
    /// Of `played`, games an earlier run of the same match wrote to
    /// `--pgnout` (read back, not played again).
    pub resumed: usize,
    /// Scores of the first game of each pair whose second is not in yet.
    pending_pairs: std::collections::HashMap<usize, f64>,
    /// Per player with a book: the plies of the games played in this run
    /// up to and including its first move not from the book, summed, and
    /// those games.
    pub book_exit: [(u64, u64); 2],
}

/// The ply (1-based, counted from the game's start) of `color`'s first
/// move not from its book or the opening: the first with a search score.
/// Past the end of the game if it never left its book.
fn book_exit_ply(record: &GameRecord, color: Color) -> u64 {
    let start = Opening {
        fen: record.start_fen.clone(),
        moves: Vec::new(),
    }
    .start_position()
    .map_or(Color::White, |p| p.turn());
    let mut mover = start;
    for (i, e) in record.evals.iter().enumerate() {
        if mover == color && e.is_some() {
            return i as u64 + 1;
        }
        mover = !mover;
    }
    record.moves.len() as u64 + 1
}

impl Standing {
    /// Counts the result of game `i` (the first player's `score`) and
    /// updates the SPRT; true when the SPRT has just decided.
    fn add(&mut self, cfg: &MatchConfig, i: usize, score: f64) -> bool {
        self.played += 1;
        self.wdl.add(score);
        if cfg.repeat {
            if let Some(other) = self.pending_pairs.remove(&(i / 2)) {
                self.pairs.add_pair(other, score);
            } else {
                self.pending_pairs.insert(i / 2, score);
            }
        }
        let decided = self.sprt.is_some_and(|st| st != SprtState::Continue);
        let Some(sprt) = cfg.sprt.as_ref().filter(|_| !decided) else {
            return false;
        };
        // Games still running when the test decides are recorded but do not reopen it.
        let llr = if cfg.repeat && self.pairs.pairs() > 0 {
            sprt.llr_pentanomial(&self.pairs)
        } else {
            sprt.llr_trinomial(&self.wdl)
        };
        self.llr = Some(llr);
        let state = sprt.state(llr);
        self.sprt = Some(state);
        if state == SprtState::Continue {
            return false;
        }
        self.sprt_decided_after = Some(self.played);
        !cfg.sprt_play_on
    }
}

/// Reads openings: EPD (one position per line) or PGN (.gz/.zst; the moves of each game).
pub fn read_openings(path: &Path) -> Result<Vec<Opening>> {
    let name = path.to_string_lossy().to_ascii_lowercase();
    let mut out = Vec::new();
    if name.ends_with(".epd") || name.ends_with(".epd.gz") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut open_input(path)?, &mut text)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let e = Epd::parse(line).with_context(|| format!("{}:{}", path.display(), i + 1))?;
            out.push(Opening {
                fen: Some(e.fen.clone()),
                moves: Vec::new(),
            });
        }
    } else {
        for raw in GameStream::new(open_input(path)?) {
            let raw = raw.map_err(|e| anyhow!("{}: {e}", path.display()))?;
            if let Some(why) = &raw.unreadable {
                bail!("{}: game {}: {why}", path.display(), raw.number);
            }
            if let Some(o) = opening_of(&raw) {
                out.push(o);
            }
        }
    }
    if out.is_empty() {
        bail!("no openings in {}", path.display());
    }
    Ok(out)
}

fn opening_of(raw: &RawGame) -> Option<Opening> {
    let o = Opening {
        fen: raw.fen.clone(),
        moves: Vec::new(),
    };
    let mut pos = o.start_position().ok()?;
    let mut moves = Vec::new();
    for san in &raw.sans {
        let m = san.san.to_move(&pos).ok()?;
        pos.play_unchecked(m);
        moves.push(m);
    }
    Some(Opening { moves, ..o })
}

/// Which opening and colours game `i` gets: (opening index, first player has white).
fn schedule(i: usize, repeat: bool, n_openings: usize) -> (usize, bool) {
    if repeat {
        ((i / 2) % n_openings, i.is_multiple_of(2))
    } else {
        (i % n_openings, i.is_multiple_of(2))
    }
}

/// The index in `cfg.openings` of game `i`'s (from 0) opening.
pub fn opening_index(cfg: &MatchConfig, i: usize) -> usize {
    let order = opening_order(cfg);
    order[schedule(i, cfg.repeat, order.len().max(1)).0 % order.len().max(1)]
}

/// The openings' indices in the order the match plays them.
fn opening_order(cfg: &MatchConfig) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cfg.openings.len().max(1)).collect();
    if let Some(seed) = cfg.random_seed {
        order.shuffle(&mut StdRng::seed_from_u64(seed));
    }
    order
}

/// Whether the first player has White in game `i` (from 0) of the match.
pub fn first_player_white(cfg: &MatchConfig, i: usize) -> bool {
    cfg.noswap || schedule(i, cfg.repeat, cfg.openings.len().max(1)).1
}

/// Plays the match; `progress` is called after every game with its round and record.
pub fn run_match(
    cfg: &MatchConfig,
    progress: impl FnMut(usize, &GameRecord, &Standing),
) -> Result<Standing> {
    resume_match(cfg, &[], progress)
}

/// [`run_match`] that counts `earlier` games, `(game index, first player's
/// score)` known from elsewhere (a results journal), and does not play them
/// again; games in `cfg.pgn_out` are counted too.
pub fn resume_match(
    cfg: &MatchConfig,
    earlier: &[(usize, f64)],
    mut progress: impl FnMut(usize, &GameRecord, &Standing),
) -> Result<Standing> {
    if cfg.openings.is_empty() {
        bail!("no openings");
    }
    let order = opening_order(cfg);
    let mut book = match &cfg.learn {
        Some((path, _)) => Some(Book::open(path)?),
        None => None,
    };
    let mut standing = Standing::default();
    let mut done: Vec<(usize, f64)> = earlier
        .iter()
        .filter(|(i, _)| *i < cfg.games)
        .copied()
        .collect();
    if let Some(p) = &cfg.pgn_out {
        done.extend(already_played(p, cfg, &order)?);
    }
    let mut skip = vec![false; cfg.games];
    for &(i, score) in &done {
        // A game both in the journal and in the PGN file counts once.
        if skip[i] {
            continue;
        }
        skip[i] = true;
        standing.add(cfg, i, score);
        standing.resumed += 1;
    }
    let mut pgn = match &cfg.pgn_out {
        Some(p) => Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("cannot open {}", p.display()))?,
        ),
        None => None,
    };
    let date = today();
    let stop = AtomicBool::new(
        !cfg.sprt_play_on && standing.sprt.is_some_and(|st| st != SprtState::Continue),
    );
    // The games still to play, in index order: job k is game todo[k].
    let todo: Vec<usize> = (0..cfg.games).filter(|&i| !skip[i]).collect();
    workers::run(
        todo.len(),
        cfg.concurrency,
        &stop,
        // A worker's engines start with its first game (and again after a fault).
        |w| Ok((w, [None, None])),
        |(w, players), k| play_match_game(cfg, &order, *w, players, todo[k]),
        |_, (i, first_white, record)| {
            let color = if first_white {
                Color::White
            } else {
                Color::Black
            };
            let score = record.score_of(color);
            for (k, player) in cfg.players.iter().enumerate() {
                if player.has_book() && record.fault.is_none() && !record.moves.is_empty() {
                    let side = if k == 0 { color } else { !color };
                    standing.book_exit[k].0 += book_exit_ply(&record, side);
                    standing.book_exit[k].1 += 1;
                }
            }
            if standing.add(cfg, i, score) {
                stop.store(true, Ordering::Relaxed);
            }
            let text = record.pgn(&cfg.event, i as u64 + 1, &date, &[]);
            if let Some(f) = pgn.as_mut() {
                f.write_all(text.as_bytes())
                    .and_then(|_| f.flush())
                    .context("cannot write the PGN output")?;
            }
            if let (Some(b), Some((_, who))) = (book.as_mut(), &cfg.learn) {
                if (record.white == *who || record.black == *who)
                    && learn_game(b, &record, i, &date)?
                {
                    standing.learned += 1;
                    if let Some(after) = &cfg.after_learn {
                        let start = (Opening {
                            fen: record.start_fen.clone(),
                            moves: Vec::new(),
                        })
                        .start_position()
                        .unwrap_or_default();
                        after(b, &start, &record.moves)?;
                    }
                }
            }
            progress(i + 1, &record, &standing);
            Ok(())
        },
    )?;
    Ok(standing)
}

/// Game `i` of the match on worker `w`, whose engines are `players` (started
/// here if they are not yet, or were killed after a fault): whether the first
/// player had White, and the game.
fn play_match_game(
    cfg: &MatchConfig,
    order: &[usize],
    w: usize,
    players: &mut [Option<Box<dyn Player>>; 2],
    i: usize,
) -> Result<(usize, bool, GameRecord)> {
    let (o, alternate) = schedule(i, cfg.repeat, order.len());
    let first_white = cfg.noswap || alternate;
    let opening = &cfg.openings[order[o]];
    // Start (or restart) the engines; one that cannot start loses the game.
    let mut failed = None;
    for (k, slot) in players.iter_mut().enumerate() {
        if slot.is_none() {
            let seed = (w * 1_000_003 + i) as u64;
            match cfg.players[k].start(seed) {
                Ok(p) if cfg.node_jitter > 0.0 => {
                    *slot = Some(Box::new(NodeJitter::new(
                        p,
                        cfg.node_jitter,
                        seed ^ 0x9e37_79b9_7f4a_7c15,
                    )))
                }
                Ok(p) => *slot = Some(p),
                Err(f) => failed = Some((k, f)),
            }
        }
    }
    let record = if let Some((k, f)) = failed {
        start_failure(cfg, k, first_white, &f)
    } else {
        let [Some(a), Some(b)] = players else {
            bail!("game {}: a player did not start", i + 1);
        };
        let la = cfg.limits[0].as_ref().unwrap_or(&cfg.limit);
        let lb = cfg.limits[1].as_ref().unwrap_or(&cfg.limit);
        let (white, black, limits) = if first_white {
            (a, b, [la, lb])
        } else {
            (b, a, [lb, la])
        };
        play_game(
            white.as_mut(),
            black.as_mut(),
            opening,
            limits,
            &cfg.adjudication,
        )
    };
    if let Some(side) = record.fault {
        // The failed engine is killed and started afresh for the next game.
        let k = if (side == Color::White) == first_white {
            0
        } else {
            1
        };
        players[k] = None;
    }
    Ok((i, first_white, record))
}

/// The games of this match that an earlier run wrote to `path` (the same
/// command, stopped and started again, continues the match): `(game index,
/// first player's score)`. Each must be what this run would play there (the
/// players, their colours, the opening); other matches' games in the file
/// are left alone, and a game cut off at the end by a kill is removed.
fn already_played(path: &Path, cfg: &MatchConfig, order: &[usize]) -> Result<Vec<(usize, f64)>> {
    let mut bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    // Every game is written whole: its result, then a blank line. A last
    // game that does not end so was cut off.
    let last = bytes
        .windows(8)
        .rposition(|w| w == b"\n[Event ")
        .map_or(0, |i| i + 1);
    let tail = String::from_utf8_lossy(&bytes[last..]);
    let whole = tail.ends_with("\n\n")
        && ["1-0", "0-1", "1/2-1/2", "*"]
            .iter()
            .any(|r| tail.trim_end().ends_with(r));
    if !whole && !tail.trim().is_empty() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(last as u64))
            .with_context(|| format!("cannot remove a cut-off game from {}", path.display()))?;
        bytes.truncate(last);
    }
    let names = [cfg.players[0].name(), cfg.players[1].name()];
    let event = format!("Event={}", cfg.event);
    let mut done: Vec<(usize, f64)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for raw in GameStream::from_bytes(bytes) {
        let raw = raw.map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let ours = raw.identity.contains(&event)
            && ((raw.white == names[0] && raw.black == names[1])
                || (raw.white == names[1] && raw.black == names[0]));
        let round = raw
            .identity
            .iter()
            .find_map(|t| t.strip_prefix("Round=")?.parse::<usize>().ok());
        let (true, Some(round)) = (ours, round) else {
            continue;
        };
        if round == 0 || round > cfg.games {
            continue;
        }
        let i = round - 1;
        let mismatch = |what: String| {
            anyhow::anyhow!(
                "{}: game {} (round {round}) {what}: not this match's game \
                     (continue with the command that wrote the file, or give another --pgnout)",
                path.display(),
                raw.number
            )
        };
        let (o, alternate) = schedule(i, cfg.repeat, order.len());
        let first_white = cfg.noswap || alternate;
        if (raw.white == names[0]) != first_white {
            return Err(mismatch(format!("has {} as White", raw.white)));
        }
        let opening = &cfg.openings[order[o]];
        if raw.fen != opening.fen {
            return Err(mismatch("starts from another position".into()));
        }
        let mut pos = opening.start_position().map_err(anyhow::Error::msg)?;
        for (k, m) in opening.moves.iter().enumerate() {
            if raw.sans.get(k).and_then(|s| s.san.to_move(&pos).ok()) != Some(*m) {
                return Err(mismatch("does not begin with this round's opening".into()));
            }
            pos.play_unchecked(*m);
        }
        // As GameRecord::score_of counts a game.
        let score = match raw.result_tag.as_deref() {
            Some("1/2-1/2") => 0.5,
            Some(r) if r == if first_white { "1-0" } else { "0-1" } => 1.0,
            _ => 0.0,
        };
        if !seen.insert(i) {
            return Err(mismatch("is in the file twice".into()));
        }
        done.push((i, score));
    }
    Ok(done)
}

/// The end-of-match summary.
pub fn final_report(cfg: &MatchConfig, st: &Standing) -> String {
    let (a, b) = (cfg.players[0].name(), cfg.players[1].name());
    let mut s = format!(
        "{a} vs {b}: {} games, +{} ={} -{}, {}\n",
        st.played,
        st.wdl.wins,
        st.wdl.draws,
        st.wdl.losses,
        st.wdl.summary()
    );
    if st.resumed > 0 {
        s.push_str(&format!(
            "(of them {} read back from the PGN an earlier run wrote)\n",
            st.resumed
        ));
    }
    if cfg.repeat {
        s.push_str(&format!(
            "pairs (0, 0.5, 1, 1.5, 2 points): {:?}\n",
            st.pairs.0
        ));
        if st.pairs.pairs() > 0 {
            let e = super::resolution::Resolution::of(&st.pairs).elo;
            s.push_str(&format!(
                "Elo from the {} pairs (pentanomial): {:+.1} (95%: {:+.1} .. {:+.1})\n",
                st.pairs.pairs(),
                e.value,
                e.low,
                e.high
            ));
        }
    }
    if let (Some(sprt), Some(llr), Some(state)) = (&cfg.sprt, st.llr, st.sprt) {
        let (lo, hi) = sprt.bounds();
        s.push_str(&format!(
            "SPRT elo0={} elo1={}: LLR {llr:.2} ({lo:.2}, {hi:.2}): {}\n",
            sprt.elo0,
            sprt.elo1,
            match state {
                SprtState::AcceptH1 => "H1 accepted",
                SprtState::AcceptH0 => "H0 accepted",
                SprtState::Continue => "undecided",
            }
        ));
        if let Some(n) = st.sprt_decided_after.filter(|&n| n < st.played) {
            s.push_str(&format!(
                "(decided after {n} games; played on to {})\n",
                st.played
            ));
        }
    }
    if cfg.learn.is_some() {
        s.push_str(&format!("games learned into the book: {}\n", st.learned));
    }
    for (k, &(plies, games)) in st.book_exit.iter().enumerate() {
        if games > 0 {
            s.push_str(&format!(
                "{} leaves its book at ply {:.1} on average (its first searched move, {} games)\n",
                cfg.players[k].name(),
                plies as f64 / games as f64,
                games
            ));
        }
    }
    s
}

fn start_failure(cfg: &MatchConfig, k: usize, first_white: bool, f: &Fault) -> GameRecord {
    let white_is_k = (k == 0) == first_white;
    let (white, black) = if first_white {
        (cfg.players[0].name(), cfg.players[1].name())
    } else {
        (cfg.players[1].name(), cfg.players[0].name())
    };
    GameRecord {
        white: white.to_string(),
        black: black.to_string(),
        start_fen: None,
        moves: Vec::new(),
        evals: Vec::new(),
        result: if white_is_k { "0-1" } else { "1-0" },
        termination: format!("{} could not start: {f}", cfg.players[k].name()),
        time_control: String::new(),
        fault: None,
    }
}

/// Adds a finished game to the book (its own transaction, values re-evaluated).
/// Returns false when the game adds nothing (no moves or no result).
fn learn_game(book: &mut Book, record: &GameRecord, index: usize, date: &str) -> Result<bool> {
    if record.moves.is_empty() {
        return Ok(false);
    }
    let start: Chess = (Opening {
        fen: record.start_fen.clone(),
        moves: Vec::new(),
    })
    .start_position()
    .unwrap_or_default();
    // Round and a per-run stamp: a repeated game is a new game, counted again.
    let identity = vec![
        "learnbook play".into(),
        format!("{:?}", std::time::SystemTime::now()),
        date.into(),
        (index + 1).to_string(),
    ];
    let header = Header {
        white: &record.white,
        black: &record.black,
        identity: &identity,
        fen: record.start_fen.as_deref(),
        white_elo: None,
        black_elo: None,
    };
    let result = GameResult::parse(record.result)
        .with_context(|| format!("game {}: no result {:?}", index + 1, record.result))?;
    // The learner's games go in whole, not cut at the book's max ply: the
    // moves that decided them are usually later, and only a stored move can
    // be avoided next time.
    let game = match Game::from_moves(&header, start, &record.moves, result, u32::MAX) {
        Ok(g) => g,
        Err(e) => bail!("game {} cannot be learned: {}", index + 1, e.kind()),
    };
    Ok(book.add_game(&game, "learnbook play")?.is_some())
}

/// `YYYY.MM.DD` (UTC) for PGN.
pub(crate) fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    // Civil from days (Howard Hinnant's algorithm).
    let z = secs / 86_400 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    format!("{:04}.{:02}.{:02}", if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_pairs_openings_with_colours_swapped() {
        assert_eq!(schedule(0, true, 10), (0, true));
        assert_eq!(schedule(1, true, 10), (0, false));
        assert_eq!(schedule(2, true, 10), (1, true));
        assert_eq!(schedule(3, false, 10), (3, false));
        assert_eq!(schedule(21, true, 10), (0, false));
    }

    #[test]
    fn date_is_plausible() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
    }
}
