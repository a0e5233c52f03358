//! Two books in play: one engine plays both, each side its own book until
//! the book has no move, then the engine at a node count with some jitter,
//! from the same starts with colours swapped. What the books are worth is
//! what the games say: Elo from the pairs (pentanomial), and beside it how
//! long each book played, where it left the game (the engine's evaluation
//! once both books have ended) and how many different positions it left.
//!
//! The report is read back from the games' PGN file, so a duel stopped and
//! started again reports all its games, not the last run's.

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
};

use anyhow::{anyhow, bail, Context, Result};
use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};
use serde::Serialize;
use shakmaty::{zobrist::Zobrist64, Chess, Color, EnPassantMode, Position};

use super::{
    game::{Adjudication, Eval, GameRecord, Limit, Opening},
    resolution::{Interval, Resolution},
    runner::{self, MatchConfig, PlayerSpec, Standing},
    stats::Pentanomial,
};
use crate::{
    book::{
        choose::Mode,
        pgn::input::{open_input, GameStream},
    },
    engine_io::protocol::EngineSpec,
};

/// Scores beyond this many centipawns (mates too) count as this much in
/// the mean evaluation: one mate must not outweigh a thousand games.
const EVAL_CLAMP: i32 = 1000;

/// Starts for the duel: the first `plies` (a range, drawn per game from
/// `seed`) of the games in `path`, distinct positions only, in an order
/// shuffled by `seed`, at most `count`.
pub fn starts_from_games(
    path: &Path,
    plies: (u32, u32),
    count: usize,
    seed: u64,
) -> Result<Vec<Opening>> {
    let (lo, hi) = plies;
    if lo == 0 || lo > hi {
        bail!("start plies {lo}-{hi}: give a range like 4-8");
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut starts = Vec::new();
    for raw in GameStream::new(open_input(path)?) {
        let raw = raw.map_err(|e| anyhow!("{}: {e}", path.display()))?;
        // Drawn for every game, read or not: the same file and seed give
        // the same starts.
        let want = rng.random_range(lo..=hi) as usize;
        if raw.unreadable.is_some() || raw.fen.is_some() || raw.sans.len() < want {
            continue;
        }
        let mut pos = Chess::default();
        let mut moves = Vec::with_capacity(want);
        for san in &raw.sans[..want] {
            let Ok(m) = san.san.to_move(&pos) else { break };
            pos.play_unchecked(m);
            moves.push(m);
        }
        if moves.len() == want && seen.insert(zobrist(&pos)) {
            starts.push(Opening { fen: None, moves });
        }
    }
    starts.shuffle(&mut rng);
    starts.truncate(count);
    if starts.is_empty() {
        bail!(
            "no game in {} has {lo} plies from the standard start",
            path.display()
        );
    }
    Ok(starts)
}

fn zobrist(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0
}

pub struct DuelConfig {
    pub engine: EngineSpec,
    /// The two books (Polyglot `.bin` or learnbook books), first and second player.
    pub books: [PathBuf; 2],
    pub mode: Mode,
    pub starts: Vec<Opening>,
    /// The engine's limit out of book: nodes (with `jitter`) or depth.
    pub limit: Limit,
    /// A node count varies by up to this fraction either way.
    pub jitter: f64,
    pub concurrency: usize,
    pub pgnout: PathBuf,
    pub adjudication: Adjudication,
    /// Instead of the first book: the engine itself searching the game's
    /// first `plies` at `nodes` (the ceiling a book is measured against).
    pub deep_start: Option<(usize, u64)>,
    /// The first book decides where it plays, the engine at these nodes
    /// what (the ceiling of any choice within the book's reach).
    pub deep_book: Option<u64>,
}

/// The players' names: the books' file names, told apart if equal.
pub fn player_names(books: &[PathBuf; 2]) -> [String; 2] {
    let stem = |p: &PathBuf| {
        p.file_stem()
            .map_or_else(|| "book".into(), |s| s.to_string_lossy().into_owned())
    };
    let (a, b) = (stem(&books[0]), stem(&books[1]));
    if a == b {
        [format!("{a}#1"), format!("{b}#2")]
    } else {
        [a, b]
    }
}

fn event(mode: Mode) -> String {
    format!(
        "learnbook duel ({})",
        match mode {
            Mode::Best => "best",
            Mode::Weighted => "weighted",
        }
    )
}

impl DuelConfig {
    pub fn match_config(&self) -> MatchConfig {
        let mut names = player_names(&self.books);
        if let Some((plies, nodes)) = self.deep_start {
            names[0] = format!("engine-{nodes}-nodes-to-ply-{plies}");
        }
        if let Some(nodes) = self.deep_book {
            names[0] = format!("engine-{nodes}-nodes-in-{}", names[0]);
        }
        let engine = |k: usize| EngineSpec {
            name: names[k].clone(),
            ..self.engine.clone()
        };
        let player = |k: usize| match self.deep_start {
            Some((plies, nodes)) if k == 0 => PlayerSpec::DeepStart {
                engine: engine(k),
                plies,
                nodes,
            },
            _ => PlayerSpec::Booked {
                engine: engine(k),
                book: self.books[k].clone(),
                book_mode: self.mode,
                deep_nodes: self.deep_book.filter(|_| k == 0),
            },
        };
        MatchConfig {
            players: [player(0), player(1)],
            limit: self.limit,
            limits: [None, None],
            node_jitter: self.jitter,
            games: self.starts.len() * 2,
            concurrency: self.concurrency,
            openings: self.starts.clone(),
            random_seed: None,
            repeat: true,
            noswap: false,
            pgn_out: Some(self.pgnout.clone()),
            sprt: None,
            sprt_play_on: false,
            adjudication: self.adjudication,
            learn: None,
            after_learn: None,
            event: event(self.mode),
        }
    }

    /// Plays the games not yet in the PGN file, then reads them all back.
    pub fn run(&self, progress: impl FnMut(usize, &GameRecord, &Standing)) -> Result<DuelReport> {
        let cfg = self.match_config();
        runner::run_match(&cfg, progress)?;
        report(&cfg)
    }
}

/// One book's side of the duel.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub name: String,
    /// Games of this side, and of them those where it played its book
    /// to the end of the game.
    pub games: u64,
    pub never_left: u64,
    /// The side's own book moves after the start, a game on average.
    pub book_plies: f64,
    /// The different positions in which the side's book ended (its engine's
    /// first move): the variety the book leaves to the engine.
    pub distinct_exits: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct DuelReport {
    pub event: String,
    pub games: u64,
    /// Pairs by points of the first book (0, 0.5, 1, 1.5, 2).
    pub pentanomial: [u32; 5],
    /// Wins, draws and losses of the first book.
    pub wdl: [u64; 3],
    /// The first book's Elo against the second, with its 95% interval from
    /// the pairs.
    pub elo: Option<Interval>,
    pub sides: [Side; 2],
    /// The engine's evaluation where both books had ended (the first move
    /// searched after both books' last moves), from the first book's side,
    /// in centipawns clamped to +-1000, mean over the games that got there.
    pub eval_after_books: Option<f64>,
    pub eval_games: u64,
}

/// One game read back: its round, White, the result for White, each
/// ply's engine evaluation (mover's view; `None` for a book or opening move).
struct PlayedGame {
    round: usize,
    white: String,
    white_score: f64,
    evals: Vec<Option<i32>>,
    moves: Vec<shakmaty::Move>,
}

fn read_games(cfg: &MatchConfig) -> Result<Vec<PlayedGame>> {
    let Some(path) = &cfg.pgn_out else {
        bail!("a duel reads its games back from its PGN file");
    };
    let names = [cfg.players[0].name(), cfg.players[1].name()];
    let event = format!("Event={}", cfg.event);
    let stream = GameStream::with_comments(
        open_input(path).with_context(|| format!("cannot read {}", path.display()))?,
    );
    let mut out = Vec::new();
    for raw in stream {
        let raw = raw.map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let ours = raw.identity.contains(&event)
            && names.contains(&raw.white.as_str())
            && names.contains(&raw.black.as_str())
            && raw.white != raw.black;
        let round = raw
            .identity
            .iter()
            .find_map(|t| t.strip_prefix("Round=")?.parse::<usize>().ok());
        let (true, Some(round)) = (ours, round) else {
            continue;
        };
        let white_score = match raw.result_tag.as_deref() {
            Some("1-0") => 1.0,
            Some("0-1") => 0.0,
            Some("1/2-1/2") => 0.5,
            _ => continue,
        };
        let mut pos = Chess::default();
        let mut moves = Vec::with_capacity(raw.sans.len());
        for san in &raw.sans {
            let Ok(m) = san.san.to_move(&pos) else { break };
            pos.play_unchecked(m);
            moves.push(m);
        }
        let mut evals = vec![None; moves.len()];
        for (before, text) in &raw.comments {
            // A comment after move k (k moves before it) is move k's.
            if let (Some(i), Some(e)) = (before.checked_sub(1), Eval::parse(text)) {
                if let Some(slot) = evals.get_mut(i) {
                    *slot = Some(e.score_cp);
                }
            }
        }
        out.push(PlayedGame {
            round,
            white: raw.white,
            white_score,
            evals,
            moves,
        });
    }
    Ok(out)
}

/// The duel's report from the games in its PGN file.
pub fn report(cfg: &MatchConfig) -> Result<DuelReport> {
    let names = [cfg.players[0].name(), cfg.players[1].name()];
    let mut games = read_games(cfg)?;
    games.retain(|g| g.round >= 1 && g.round <= cfg.games);
    // A round written twice (a file shared by two runs) counts once.
    let mut by_round: HashMap<usize, PlayedGame> = HashMap::new();
    for g in games {
        by_round.entry(g.round).or_insert(g);
    }
    let mut sides: [Side; 2] = names.map(|n| Side {
        name: n.to_string(),
        games: 0,
        never_left: 0,
        book_plies: 0.0,
        distinct_exits: 0,
    });
    let mut exits: [HashSet<u64>; 2] = [HashSet::new(), HashSet::new()];
    let mut book_plies = [0u64; 2];
    let (mut eval_sum, mut eval_games) = (0.0, 0u64);
    let mut wdl = [0u64; 3];
    let mut pairs = Pentanomial::default();
    let mut rounds: Vec<usize> = by_round.keys().copied().collect();
    rounds.sort_unstable();
    for &round in &rounds {
        let g = &by_round[&round];
        let first_white = g.white == names[0];
        let score = if first_white {
            g.white_score
        } else {
            1.0 - g.white_score
        };
        wdl[if score > 0.75 {
            0
        } else if score < 0.25 {
            2
        } else {
            1
        }] += 1;
        // Rounds 2k+1 and 2k+2 play one start with colours swapped.
        if round % 2 == 0 {
            if let Some(first) = by_round.get(&(round - 1)) {
                let first_score = if first.white == names[0] {
                    first.white_score
                } else {
                    1.0 - first.white_score
                };
                pairs.add_pair(first_score, score);
            }
        }
        let opening = cfg
            .openings
            .get(runner::opening_index(cfg, round - 1))
            .map_or(0, |o| o.moves.len());
        // The ply of each colour's first searched move, and the position there.
        let mut exit: [Option<usize>; 2] = [None, None];
        let mut pos = Chess::default();
        for (i, m) in g.moves.iter().enumerate() {
            let c = if pos.turn() == Color::White { 0 } else { 1 };
            if i >= opening && exit[c].is_none() {
                if g.evals[i].is_some() {
                    exit[c] = Some(i);
                    let k = if (c == 0) == first_white { 0 } else { 1 };
                    exits[k].insert(zobrist(&pos));
                } else {
                    let k = if (c == 0) == first_white { 0 } else { 1 };
                    book_plies[k] += 1;
                }
            }
            pos.play_unchecked(*m);
        }
        for (c, side_exit) in exit.iter().enumerate() {
            let k = if (c == 0) == first_white { 0 } else { 1 };
            sides[k].games += 1;
            if side_exit.is_none() {
                sides[k].never_left += 1;
            }
        }
        if let [Some(a), Some(b)] = exit {
            let at = a.max(b);
            if let Some(cp) = g.evals[at] {
                // The mover at ply `at` is White when `at` is even from the standard start.
                let white_view = if at % 2 == 0 { cp } else { -cp };
                let first_view = if first_white { white_view } else { -white_view };
                eval_sum += f64::from(first_view.clamp(-EVAL_CLAMP, EVAL_CLAMP));
                eval_games += 1;
            }
        }
    }
    for k in 0..2 {
        sides[k].book_plies = book_plies[k] as f64 / sides[k].games.max(1) as f64;
        sides[k].distinct_exits = exits[k].len();
    }
    Ok(DuelReport {
        event: cfg.event.clone(),
        games: rounds.len() as u64,
        pentanomial: pairs.0,
        wdl,
        elo: (pairs.pairs() > 0).then(|| Resolution::of(&pairs).elo),
        sides,
        eval_after_books: (eval_games > 0).then(|| eval_sum / eval_games as f64),
        eval_games,
    })
}

impl std::fmt::Display for DuelReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b] = &self.sides;
        writeln!(
            f,
            "{} vs {}, {}: {} games, +{} ={} -{}",
            a.name, b.name, self.event, self.games, self.wdl[0], self.wdl[1], self.wdl[2]
        )?;
        let p = self.pentanomial;
        writeln!(
            f,
            "pairs (0, 0.5, 1, 1.5, 2 points): [{}, {}, {}, {}, {}]",
            p[0], p[1], p[2], p[3], p[4]
        )?;
        match self.elo {
            Some(e) => writeln!(
                f,
                "Elo of {} (pentanomial): {:+.1} (95%: {:+.1} .. {:+.1})",
                a.name, e.value, e.low, e.high
            )?,
            None => writeln!(f, "Elo: no complete pair yet")?,
        }
        for s in &self.sides {
            writeln!(
                f,
                "{}: {:.1} book plies a game, {} distinct exits, {} of {} games never out of book",
                s.name, s.book_plies, s.distinct_exits, s.never_left, s.games
            )?;
        }
        match self.eval_after_books {
            Some(e) => writeln!(
                f,
                "engine's evaluation where both books had ended, from {}'s side: {:+.1} cp (mean of {} games, clamped to +-{EVAL_CLAMP})",
                a.name, e, self.eval_games
            ),
            None => writeln!(f, "no game went past both books"),
        }
    }
}
