//! Many games between two players: openings, colours, worker threads that
//! own their engines, PGN output, statistics, SPRT, and the learning loop
//! (each finished game of one player goes into its book at once).

use std::{
    fs::OpenOptions,
    io::Write,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        mpsc,
    },
};

use anyhow::{bail, Context, Result};
use rand::{rngs::StdRng, seq::SliceRandom, SeedableRng};
use shakmaty::{Chess, Color, Move, Position};

use super::{
    builtin::Builtin,
    game::{play_game, Adjudication, GameRecord, Limit, Opening},
    protocol::{self, EngineSpec, Fault, Player},
    stats::{Pentanomial, Sprt, SprtState, Wdl},
};
use crate::{
    book::{
        ingest::{open_input, Game, GameResult, GameStream, Header, RawGame},
        select::Mode,
        Book,
    },
    engine::{epd::Epd, params::Weights},
};

/// One side of the match.
#[derive(Clone, Debug)]
pub enum PlayerSpec {
    External(EngineSpec),
    /// The search core in-process.
    Builtin {
        name: String,
        weights: Option<PathBuf>,
        book: Option<PathBuf>,
        book_mode: Mode,
    },
}

impl PlayerSpec {
    pub fn name(&self) -> &str {
        match self {
            PlayerSpec::External(e) => &e.name,
            PlayerSpec::Builtin { name, .. } => name,
        }
    }

    fn start(&self, seed: u64) -> Result<Box<dyn Player>, Fault> {
        match self {
            PlayerSpec::External(e) => protocol::start(e),
            PlayerSpec::Builtin {
                name,
                weights,
                book,
                book_mode,
            } => {
                let w = match weights {
                    Some(p) => Weights::load(p).map_err(|e| Fault::Crash(format!("{e:#}")))?,
                    None => Weights::default(),
                };
                Builtin::new(name, w, book.as_deref(), *book_mode, seed)
                    .map(|b| Box::new(b) as Box<dyn Player>)
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
    pub learned: usize,
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
        let mut stream = GameStream::new(open_input(path)?);
        loop {
            let batch = stream.next_batch(1024);
            if batch.is_empty() {
                break;
            }
            for raw in batch {
                if let Some(why) = &raw.unreadable {
                    bail!("{}: game {}: {why}", path.display(), raw.number);
                }
                if let Some(o) = opening_of(&raw) {
                    out.push(o);
                }
            }
        }
        if let Some(e) = stream.error {
            bail!("{}: {e}", path.display());
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

/// Plays the match; `progress` is called after every game with its round and record.
pub fn run_match(
    cfg: &MatchConfig,
    mut progress: impl FnMut(usize, &GameRecord, &Standing),
) -> Result<Standing> {
    if cfg.openings.is_empty() {
        bail!("no openings");
    }
    let mut order: Vec<usize> = (0..cfg.openings.len()).collect();
    if let Some(seed) = cfg.random_seed {
        order.shuffle(&mut StdRng::seed_from_u64(seed));
    }
    let mut book = match &cfg.learn {
        Some((path, _)) => Some(Book::open(path)?),
        None => None,
    };
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
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, bool, GameRecord)>();
    let mut standing = Standing::default();
    let mut pending_pairs: std::collections::HashMap<usize, f64> = std::collections::HashMap::new();
    std::thread::scope(|scope| -> Result<()> {
        for w in 0..cfg.concurrency.max(1) {
            let tx = tx.clone();
            let (next, stop, order) = (&next, &stop, &order);
            scope.spawn(move || {
                let mut players: [Option<Box<dyn Player>>; 2] = [None, None];
                loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= cfg.games {
                        break;
                    }
                    let (o, alternate) = schedule(i, cfg.repeat, order.len());
                    let first_white = cfg.noswap || alternate;
                    let opening = &cfg.openings[order[o]];
                    // Start (or restart) the engines; one that cannot start loses the game.
                    let mut failed = None;
                    for (k, slot) in players.iter_mut().enumerate() {
                        if slot.is_none() {
                            match cfg.players[k].start((w * 1_000_003 + i) as u64) {
                                Ok(p) => *slot = Some(p),
                                Err(f) => failed = Some((k, f)),
                            }
                        }
                    }
                    let record = if let Some((k, f)) = failed {
                        start_failure(cfg, k, first_white, &f)
                    } else {
                        let [a, b] = &mut players;
                        let (Some(a), Some(b)) = (a.as_mut(), b.as_mut()) else {
                            break;
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
                    if tx.send((i, first_white, record)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, first_white, record) in rx {
            let color = if first_white {
                Color::White
            } else {
                Color::Black
            };
            let score = record.score_of(color);
            standing.played += 1;
            standing.wdl.add(score);
            if cfg.repeat {
                if let Some(other) = pending_pairs.remove(&(i / 2)) {
                    standing.pairs.add_pair(other, score);
                } else {
                    pending_pairs.insert(i / 2, score);
                }
            }
            let decided = standing.sprt.is_some_and(|st| st != SprtState::Continue);
            if let (Some(sprt), false) = (&cfg.sprt, decided) {
                // Games still running when the test decides are recorded but do not reopen it.
                let llr = if cfg.repeat && standing.pairs.pairs() > 0 {
                    sprt.llr_pentanomial(&standing.pairs)
                } else {
                    sprt.llr_trinomial(&standing.wdl)
                };
                standing.llr = Some(llr);
                let state = sprt.state(llr);
                standing.sprt = Some(state);
                if state != SprtState::Continue {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            let text = record.pgn(&cfg.event, i as u64 + 1, &date);
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
        }
        Ok(())
    })?;
    Ok(standing)
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
    if cfg.repeat {
        s.push_str(&format!(
            "pairs (0, 0.5, 1, 1.5, 2 points): {:?}\n",
            st.pairs.0
        ));
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
    }
    if cfg.learn.is_some() {
        s.push_str(&format!("games learned into the book: {}\n", st.learned));
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
