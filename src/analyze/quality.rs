//! `bench book-quality`: an independent engine (the judge) scores the move
//! each book plays at the most-played positions, and the book's values
//! against its evaluations.
//!
//! For every position the judge searches the position (its best move and
//! score) and then each move a book would play, alone (`searchmoves`), with
//! the same node budget and a cleared hash for every search. A move's loss
//! is `max(0, best - move)` in centipawns (0 for the judge's own move). A
//! judge that ignores `searchmoves` (Ethereal 12) scores each move, its own
//! too, by a search of the position after it instead.
//! Engines can be players too (`--engine-player`): their own move at each
//! position, the floor for a book they would grow or analyse. Where the
//! book was analysed with its moves, the analyst's move outside the book
//! and its best game move are players too; beside each other, by the
//! advantage the analyst claims for leaving, they show the margin an
//! engine move needs over game moves before the judge agrees it is better.

use std::{
    collections::{BinaryHeap, HashMap, HashSet},
    fmt::Write as _,
    path::PathBuf,
    sync::Mutex,
    time::Duration,
};

use anyhow::{anyhow, Context, Result};
use shakmaty::{CastlingMode, Chess, Move, Position};

use crate::{
    book::{
        choose::choice_of,
        formats::polyglot::PolyglotBook,
        keys::{polyglot_key, Key},
        values::minimax::{option_weights, Choice},
        Book,
    },
    engine_io::protocol::{EngineSpec, UciEngine},
    workers,
};

/// `bench book-quality`'s settings (the binary's `BookQualityArgs` fills them).
#[derive(Clone, Debug)]
pub struct Options {
    /// The learnbook book.
    pub book: PathBuf,
    /// A Polyglot book to compare, as NAME=FILE.bin (repeatable).
    pub compare: Vec<String>,
    /// An engine whose own choice is judged beside the books', as NAME=SPEC
    /// (repeatable; SPEC as `analyze --engine` takes it: builtin or
    /// "cmd=glaurung"): what a book grown or analysed by it could reach.
    pub engine_player: Vec<(String, super::AnalystSpec)>,
    /// Nodes per search of the --engine-player engines (the default of
    /// `analyze` and `grow`).
    pub engine_nodes: u64,
    /// The judge, a UCI engine as the match runner takes it: "cmd=stockfish,option.Threads=1".
    pub judge: super::AnalystSpec,
    /// Nodes per judge search.
    pub nodes: u64,
    /// Plies per judge search instead of nodes (for engines whose `go
    /// nodes` is unreliable).
    pub judge_depth: Option<u32>,
    /// Positions to judge.
    pub positions: usize,
    /// Skip this many of the most-played positions first (a band of thinner ones).
    pub skip: usize,
    /// Instead of the most played: --positions drawn at random (--seed) from every
    /// position the book's games reach with this many games, 3..20 (where games run out).
    pub games: Option<crate::book::formats::suite::Interval<u32>>,
    /// The draw of --games.
    pub seed: u64,
    /// Positions at most this many plies from the start.
    pub max_ply: u32,
    /// Judge engines running at once.
    pub threads: usize,
    /// Moves of a weighted pick below this probability are not judged.
    pub min_probability: f64,
    /// Write every position's verdict to this CSV file.
    pub csv: Option<PathBuf>,
}

impl Options {
    /// The judge's engine spec; the search core is refused (the judge never
    /// helps produce what it judges).
    fn judge(&self) -> Result<EngineSpec> {
        // Started as any analysing engine is, so a judge that cannot start
        // is said at once.
        match super::EngineChoice::open(Some(&self.judge))? {
            super::EngineChoice::Uci { spec, .. } => Ok(spec),
            super::EngineChoice::Builtin { .. } => Err(anyhow!(
                "--judge must be an external UCI engine (the judge never helps produce what it judges)"
            )),
        }
    }

    /// The `--engine-player` engines as (name, engine).
    fn engine_players(&self) -> Result<Vec<(String, super::EngineChoice)>> {
        self.engine_player
            .iter()
            .map(|(n, spec)| Ok((n.clone(), super::EngineChoice::open(Some(spec))?)))
            .collect()
    }

    /// The `--compare` books as (name, path).
    fn compared(&self) -> Result<Vec<(String, PathBuf)>> {
        self.compare
            .iter()
            .map(|c| match c.split_once('=') {
                Some((n, p)) if !n.is_empty() => Ok((n.to_string(), PathBuf::from(p))),
                _ => Err(anyhow!("--compare {c:?}: expected NAME=FILE.bin")),
            })
            .collect()
    }
}

/// A position to judge.
#[derive(Clone, Debug)]
struct Spot {
    pos: Chess,
    games: u32,
    ply: u32,
    /// The book's value (side to move).
    value: f64,
    /// `(W - L) / N` for the side to move.
    raw: f64,
    /// Per player: the moves it would play, with probabilities (empty: no move).
    picks: Vec<Vec<(Move, f64)>>,
    /// Where the analysis searched the position with its moves: the score
    /// its best move outside the book claims over its best game move (cp).
    claimed: Option<i32>,
}

/// The judge's verdict on a position.
#[derive(Clone, Debug)]
struct Verdict {
    score: i32,
    best: Option<Move>,
    loss: HashMap<String, i32>,
}

/// The book's positions up to `max_ply`, most games first (best-first walk
/// over book moves with games).
fn most_played(book: &Book, max_ply: u32, count: usize) -> Result<Vec<(Chess, u32, u32)>> {
    let root = Chess::default();
    let key = polyglot_key(&root);
    let Some(node) = book.position(key)? else {
        return Ok(Vec::new());
    };
    let mut heap = BinaryHeap::new();
    let mut seen = HashSet::new();
    let mut boards: HashMap<Key, (Chess, u32)> = HashMap::new();
    heap.push((node.counts.total(), std::cmp::Reverse(key)));
    boards.insert(key, (root, 0));
    seen.insert(key);
    let mut out = Vec::new();
    while let Some((games, std::cmp::Reverse(key))) = heap.pop() {
        let Some((pos, ply)) = boards.remove(&key) else {
            continue;
        };
        if !pos.legal_moves().is_empty() {
            out.push((pos.clone(), games, ply));
        }
        if out.len() >= count {
            break;
        }
        if ply >= max_ply {
            continue;
        }
        for m in book.moves(key)? {
            let (Some(child), Some(mv)) = (m.child, m.mv.to_move(&pos)) else {
                continue;
            };
            if m.child_games == 0 || !seen.insert(child) {
                continue;
            }
            let mut next = pos.clone();
            next.play_unchecked(mv);
            boards.insert(child, (next, ply + 1));
            heap.push((m.child_games, std::cmp::Reverse(child)));
        }
    }
    Ok(out)
}

/// The players' names, in column order.
fn players(
    compare: &[(String, PathBuf)],
    engines: &[(String, super::EngineChoice)],
) -> Vec<String> {
    let mut p = vec![
        "learnbook best".to_string(),
        "learnbook weighted".to_string(),
    ];
    for (name, _) in compare {
        p.push(format!("{name} top"));
        p.push(format!("{name} weighted"));
    }
    p.push(ANALYST_LEAVE.to_string());
    p.push(ANALYST_GAME_MOVE.to_string());
    for (name, _) in engines {
        p.push(format!("{name} engine"));
    }
    p
}

const ANALYST_LEAVE: &str = "analyst's move outside";
const ANALYST_GAME_MOVE: &str = "analyst's best game move";

/// The analyst's picks where it searched `key` with its moves: its best
/// move outside the book and its best game move (by the game moves'
/// positions' scores), and the score the first claims over the second.
fn analyst_picks(
    book: &Book,
    key: Key,
    pos: &Chess,
) -> Result<(Option<Move>, Option<Move>, Option<i32>)> {
    let Some(a) = book.analysis(key)?.filter(|a| a.interior) else {
        return Ok((None, None, None));
    };
    let leave = a.dev_move.and_then(|m| m.to_move(pos)).zip(a.deviation);
    let mut best_game: Option<(Move, i32)> = None;
    for m in book.moves(key)? {
        let (Some(child), Some(mv)) = (m.child, m.mv.to_move(pos)) else {
            continue;
        };
        if m.counts.total() == 0 {
            continue;
        }
        if let Some(c) = book.analysis(child)? {
            if best_game.as_ref().is_none_or(|b| -c.score > b.1) {
                best_game = Some((mv, -c.score));
            }
        }
    }
    let claimed = match (&leave, &best_game) {
        (Some((_, d)), Some((_, g))) => Some(d - g),
        _ => None,
    };
    Ok((leave.map(|l| l.0), best_game.map(|g| g.0), claimed))
}

/// Each engine player's own move at every spot, a search from a cleared
/// hash as the judge's, appended to the spots' picks.
fn add_engine_picks(
    spots: &mut [Spot],
    engines: &[(String, super::EngineChoice)],
    nodes: u64,
) -> Result<()> {
    for (name, choice) in engines {
        let mut engine = choice.start(super::Budget::Nodes(nodes))?;
        for spot in spots.iter_mut() {
            let r = engine
                .search(&spot.pos, &[], true)
                .with_context(|| format!("--engine-player {name}"))?;
            spot.picks
                .push(r.best.map(|m| vec![(m, 1.0)]).unwrap_or_default());
        }
    }
    Ok(())
}

/// `count` positions drawn with `seed` from every position within
/// `max_ply` that the book's games reach with a number of games in `band`
/// (a walk over moves with games: engine moves do not change the set).
fn in_band(
    book: &Book,
    max_ply: u32,
    band: crate::book::formats::suite::Interval<u32>,
    count: usize,
    seed: u64,
) -> Result<Vec<(Chess, u32, u32)>> {
    use rand::{seq::SliceRandom, SeedableRng};
    let root = Chess::default();
    let mut seen = HashSet::from([polyglot_key(&root)]);
    let mut level = vec![(root, 0u32)];
    let mut found = Vec::new();
    for ply in 0..=max_ply {
        let mut next = Vec::new();
        for (pos, games) in level {
            let key = polyglot_key(&pos);
            if ply > 0 && band.contains(&games) && !pos.legal_moves().is_empty() {
                found.push((pos.clone(), games, ply));
            }
            if ply == max_ply {
                continue;
            }
            for m in book.moves(key)? {
                let (Some(child), Some(mv)) = (m.child, m.mv.to_move(&pos)) else {
                    continue;
                };
                // Moves games played: the set is the same before and after
                // `grow` (whose moves may lead into positions games reach).
                if m.counts.total() == 0 || !seen.insert(child) {
                    continue;
                }
                let mut after = pos.clone();
                after.play_unchecked(mv);
                next.push((after, m.child_games));
            }
        }
        level = next;
    }
    // In key order first: the draw does not depend on the walk's order.
    found.sort_by_key(|(pos, _, _)| polyglot_key(pos).0);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    found.shuffle(&mut rng);
    found.truncate(count);
    Ok(found)
}

fn spots(opts: &Options, book: &Book, polyglots: &[PolyglotBook]) -> Result<Vec<Spot>> {
    let params = book.settings.params;
    let found = match opts.games {
        Some(band) => in_band(book, opts.max_ply, band, opts.positions, opts.seed)?,
        None => most_played(book, opts.max_ply, opts.skip + opts.positions)?
            .into_iter()
            .skip(opts.skip)
            .collect(),
    };
    let mut out = Vec::new();
    for (pos, games, ply) in found {
        let key = polyglot_key(&pos);
        let node = book
            .position(key)?
            .ok_or_else(|| anyhow!("position {key} vanished"))?;
        let c = node.counts;
        let (w, l) = if ply % 2 == 0 {
            (c.white, c.black)
        } else {
            (c.black, c.white)
        };
        let moves = book.moves(key)?;
        let best: Vec<(Move, f64)> = book
            .stored_best(key)?
            .and_then(|m| m.to_move(&pos))
            .map(|m| vec![(m, 1.0)])
            .unwrap_or_default();
        let choices: Vec<Choice> = moves.iter().filter_map(choice_of).collect();
        let weighted: Vec<(Move, f64)> = option_weights(&node, &choices, &params)
            .into_iter()
            .filter_map(|(m, p)| Some((m?.to_move(&pos)?, p)))
            .collect();
        let mut picks = vec![best, weighted];
        for pg in polyglots {
            let entries = pg.moves(&pos);
            let total: f64 = entries.iter().map(|e| f64::from(e.1)).sum();
            picks.push(
                entries
                    .first()
                    .map(|e| vec![(e.0, 1.0)])
                    .unwrap_or_default(),
            );
            picks.push(if total > 0.0 {
                entries
                    .iter()
                    .map(|e| (e.0, f64::from(e.1) / total))
                    .collect()
            } else {
                Vec::new()
            });
        }
        let (leave, game_move, claimed) = analyst_picks(book, key, &pos)?;
        for m in [leave, game_move] {
            picks.push(m.map(|m| vec![(m, 1.0)]).unwrap_or_default());
        }
        out.push(Spot {
            pos,
            games,
            ply,
            value: node.value,
            raw: (f64::from(w) - f64::from(l)) / f64::from(c.total().max(1)),
            picks,
            claimed,
        });
    }
    Ok(out)
}

/// The judge's `go` arguments: `depth D` or `nodes N`.
fn judge_limit(opts: &Options) -> String {
    match opts.judge_depth {
        Some(d) => format!("depth {d}"),
        None => format!("nodes {}", opts.nodes),
    }
}

/// How the judge scores a move other than its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scoring {
    /// A search of the position limited to the move (`searchmoves`).
    SearchMoves,
    /// A search of the position after the move, negated (for an engine
    /// that ignores `searchmoves`); the judge's own move scored alike.
    After,
}

/// The judge's score of `m` at `pos`: its search of the position after it,
/// negated (checkmate and stalemate exact).
fn score_after(
    engine: &mut UciEngine,
    pos: &Chess,
    m: &Move,
    go: &str,
    allowed: Duration,
) -> Result<i32> {
    let mut next = pos.clone();
    next.play_unchecked(*m);
    if next.is_checkmate() {
        return Ok(30_000);
    }
    if next.is_stalemate() {
        return Ok(0);
    }
    let r = engine
        .analyse(&next, go, &[], allowed, true)
        .map_err(|e| anyhow!("judge: {e}"))?;
    Ok(-r.score)
}

fn judge(engine: &mut UciEngine, spot: &Spot, opts: &Options, scoring: Scoring) -> Result<Verdict> {
    let go = judge_limit(opts);
    let allowed = Duration::from_secs(300);
    let whole = engine
        .analyse(&spot.pos, &go, &[], allowed, true)
        .map_err(|e| anyhow!("judge: {e}"))?;
    let best_after = match (scoring, &whole.best) {
        (Scoring::After, Some(b)) => Some(score_after(engine, &spot.pos, b, &go, allowed)?),
        _ => None,
    };
    let mut loss = HashMap::new();
    for pick in &spot.picks {
        for (m, p) in pick {
            if *p < opts.min_probability
                || loss.contains_key(&m.to_uci(CastlingMode::Standard).to_string())
            {
                continue;
            }
            let l = if Some(m) == whole.best.as_ref() {
                0
            } else if let Some(best) = best_after {
                (best - score_after(engine, &spot.pos, m, &go, allowed)?).max(0)
            } else {
                let r = engine
                    .analyse(&spot.pos, &go, std::slice::from_ref(m), allowed, true)
                    .map_err(|e| anyhow!("judge: {e}"))?;
                (whole.score - r.score).max(0)
            };
            loss.insert(m.to_uci(CastlingMode::Standard).to_string(), l);
        }
    }
    Ok(Verdict {
        score: whole.score,
        best: whole.best,
        loss,
    })
}

/// Ranks with ties averaged, for Spearman's correlation.
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && x[idx[j + 1]] == x[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            r[idx[k]] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation of two samples.
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// Losses of one player: mean, median, p90 and the share of picks losing
/// >= 50 cp (for a weighted player: expected over its probabilities).
struct LossStats {
    judged: usize,
    no_move: usize,
    mean: f64,
    median: f64,
    p90: f64,
    blunders: f64,
}

fn loss_stats(spots: &[Spot], verdicts: &[Verdict], player: usize, min_p: f64) -> LossStats {
    let mut losses = Vec::new();
    let mut blunders = 0.0;
    let mut no_move = 0;
    for (s, v) in spots.iter().zip(verdicts) {
        let pick = &s.picks[player];
        let judged: Vec<(f64, i32)> = pick
            .iter()
            .filter(|(_, p)| *p >= min_p)
            .filter_map(|(m, p)| {
                v.loss
                    .get(&m.to_uci(CastlingMode::Standard).to_string())
                    .map(|&l| (*p, l))
            })
            .collect();
        let mass: f64 = judged.iter().map(|x| x.0).sum();
        if judged.is_empty() || mass <= 0.0 {
            no_move += 1;
            continue;
        }
        losses.push(judged.iter().map(|(p, l)| p * f64::from(*l)).sum::<f64>() / mass);
        blunders += judged
            .iter()
            .filter(|x| x.1 >= 50)
            .map(|x| x.0)
            .sum::<f64>()
            / mass;
    }
    let n = losses.len();
    let mut sorted = losses.clone();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if n == 0 {
            0.0
        } else {
            sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1]
        }
    };
    LossStats {
        judged: n,
        no_move,
        mean: if n == 0 {
            0.0
        } else {
            losses.iter().sum::<f64>() / n as f64
        },
        median: at(0.5),
        p90: at(0.9),
        blunders: if n == 0 { 0.0 } else { blunders / n as f64 },
    }
}

/// Runs the judge and returns the report.
pub fn run(opts: &Options) -> Result<String> {
    let judge_spec = opts.judge()?;
    let compare = opts.compared()?;
    let book = Book::open(&opts.book)?;
    let polyglots = compare
        .iter()
        .map(|(_, p)| PolyglotBook::open(p))
        .collect::<Result<Vec<_>>>()?;
    let engines = opts.engine_players()?;
    let mut spots = spots(opts, &book, &polyglots)?;
    if spots.is_empty() {
        return Err(anyhow!("{} has no positions to judge", opts.book.display()));
    }
    add_engine_picks(&mut spots, &engines, opts.engine_nodes)?;
    let used: Mutex<Option<Scoring>> = Mutex::new(None);
    // Each worker starts its own judge; the first failure stops them all.
    let start_judge = |_| {
        let mut engine =
            UciEngine::start(&judge_spec).map_err(|e| anyhow!("cannot start the judge: {e}"))?;
        let scoring = match engine.honours_searchmoves() {
            Ok(true) => Scoring::SearchMoves,
            Ok(false) => Scoring::After,
            Err(e) => return Err(anyhow!("judge: {e}")),
        };
        if let Ok(mut s) = used.lock() {
            *s = Some(scoring);
        }
        Ok((engine, scoring))
    };
    let verdicts: Vec<Verdict> = workers::map(
        spots.len(),
        opts.threads,
        start_judge,
        |(engine, scoring), i| judge(engine, &spots[i], opts, *scoring),
    )?;
    let names = players(&compare, &engines);
    let mut out = String::new();
    let most = spots.iter().map(|s| s.games).max().unwrap_or(0);
    let least = spots.iter().map(|s| s.games).min().unwrap_or(0);
    let which = match opts.games {
        Some(band) => format!(
            "drawn with seed {} from those with {}..{} games",
            opts.seed, band.lo, band.hi
        ),
        None => format!(
            "ranks {}-{} by games",
            opts.skip + 1,
            opts.skip + spots.len()
        ),
    };
    writeln!(
        out,
        "book-quality: {} positions ({which}, ply <= {}, {}..{} games), judge {} at {}",
        spots.len(),
        opts.max_ply,
        least,
        most,
        judge_spec.name,
        judge_limit(opts)
    )?;
    if used.into_inner().ok().flatten() == Some(Scoring::After) {
        writeln!(
            out,
            "  (the judge ignores searchmoves: every move scored by a search of the position after it)"
        )?;
    }
    writeln!(
        out,
        "  {:<26} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "player", "moves", "mean cp", "median", "p90", ">=50cp", "no move"
    )?;
    for (i, name) in names.iter().enumerate() {
        let s = loss_stats(&spots, &verdicts, i, opts.min_probability);
        writeln!(
            out,
            "  {:<26} {:>6} {:>8.1} {:>8.1} {:>8.1} {:>7.1}% {:>8}",
            name,
            s.judged,
            s.mean,
            s.median,
            s.p90,
            100.0 * s.blunders,
            s.no_move
        )?;
    }
    // The floor an engine sets for a book it grows: at each position the
    // better of the book's move and the engine's, as if an arbiter knew the
    // judge's verdicts.
    let first_engine = names.len() - engines.len();
    for (i, (name, _)) in engines.iter().enumerate() {
        let both: Vec<i32> = spots
            .iter()
            .zip(&verdicts)
            .filter_map(|(s, v)| {
                let loss = |pick: &[(Move, f64)]| {
                    let m = pick.first()?.0.to_uci(CastlingMode::Standard).to_string();
                    v.loss.get(&m).copied()
                };
                Some(loss(&s.picks[0])?.min(loss(&s.picks[first_engine + i])?))
            })
            .collect();
        if !both.is_empty() {
            writeln!(
                out,
                "  the better of learnbook best and {name} engine at each position (an arbiter knowing the judge): {:.1} cp on {}",
                f64::from(both.iter().sum::<i32>()) / both.len() as f64,
                both.len()
            )?;
        }
    }
    margin_table(&mut out, &spots, &verdicts, names.len() - engines.len() - 2)?;
    let judge_scores: Vec<f64> = verdicts.iter().map(|v| f64::from(v.score)).collect();
    let values: Vec<f64> = spots.iter().map(|s| s.value).collect();
    let raw: Vec<f64> = spots.iter().map(|s| s.raw).collect();
    writeln!(
        out,
        "  Spearman with the judge's evaluation (side to move): book values {:.3}, raw score (W-L)/N {:.3}",
        spearman(&values, &judge_scores),
        spearman(&raw, &judge_scores)
    )?;
    if let Some(path) = &opts.csv {
        let mut csv = String::from("fen,ply,games,value,raw,judge_cp,judge_best");
        for n in &names {
            write!(csv, ",{} move,{} loss", n, n)?;
        }
        csv.push('\n');
        for (s, v) in spots.iter().zip(&verdicts) {
            let fen = shakmaty::fen::Fen::from_position(&s.pos, shakmaty::EnPassantMode::Legal);
            write!(
                csv,
                "{fen},{},{},{:.4},{:.4},{},{}",
                s.ply,
                s.games,
                s.value,
                s.raw,
                v.score,
                v.best.as_ref().map_or(String::new(), |m| m
                    .to_uci(CastlingMode::Standard)
                    .to_string())
            )?;
            for pick in &s.picks {
                let top = pick.iter().max_by(|a, b| a.1.total_cmp(&b.1));
                match top {
                    Some((m, _)) => write!(
                        csv,
                        ",{},{}",
                        m.to_uci(CastlingMode::Standard),
                        v.loss
                            .get(&m.to_uci(CastlingMode::Standard).to_string())
                            .map_or(String::new(), |l| l.to_string())
                    )?,
                    None => csv.push_str(",,"),
                }
            }
            csv.push('\n');
        }
        std::fs::write(path, csv).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(out)
}

/// The judge's verdict on the analyst's move outside the book against its
/// best game move, by the advantage the analyst claims for the first
/// (`leave` is the column of the analyst's move outside; the game move's
/// follows): where the judge's gain turns positive is the margin an engine
/// move needs over game moves.
fn margin_table(
    out: &mut String,
    spots: &[Spot],
    verdicts: &[Verdict],
    leave: usize,
) -> Result<()> {
    const BANDS: [(i32, i32, &str); 5] = [
        (i32::MIN, 0, "<= 0"),
        (1, 10, "1..10"),
        (11, 25, "11..25"),
        (26, 50, "26..50"),
        (51, i32::MAX, "> 50"),
    ];
    let mut rows: Vec<(usize, i64, i64)> = vec![(0, 0, 0); BANDS.len()];
    for (s, v) in spots.iter().zip(verdicts) {
        let loss = |pick: &[(Move, f64)]| {
            let m = pick.first()?.0.to_uci(CastlingMode::Standard).to_string();
            v.loss.get(&m).copied()
        };
        let (Some(claimed), Some(out_loss), Some(game_loss)) =
            (s.claimed, loss(&s.picks[leave]), loss(&s.picks[leave + 1]))
        else {
            continue;
        };
        let Some(b) = BANDS
            .iter()
            .position(|(lo, hi, _)| (*lo..=*hi).contains(&claimed))
        else {
            continue;
        };
        rows[b].0 += 1;
        rows[b].1 += i64::from(out_loss);
        rows[b].2 += i64::from(game_loss);
    }
    if rows.iter().all(|r| r.0 == 0) {
        return Ok(());
    }
    writeln!(
        out,
        "  the analyst's move outside the book against its best game move, by the advantage it claims for leaving:"
    )?;
    writeln!(
        out,
        "  {:<12} {:>9} {:>14} {:>14} {:>12}",
        "claimed cp", "positions", "outside loss", "game loss", "judge gain"
    )?;
    for ((_, _, name), (n, out_loss, game_loss)) in BANDS.iter().zip(rows) {
        if n == 0 {
            continue;
        }
        let mean = |x: i64| x as f64 / n as f64;
        writeln!(
            out,
            "  {:<12} {:>9} {:>14.1} {:>14.1} {:>+12.1}",
            name,
            n,
            mean(out_loss),
            mean(game_loss),
            mean(game_loss) - mean(out_loss)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_of_monotone_and_reversed_samples() {
        let a = [1.0, 2.0, 3.0, 4.0];
        assert!((spearman(&a, &[10.0, 20.0, 25.0, 90.0]) - 1.0).abs() < 1e-12);
        assert!((spearman(&a, &[4.0, 3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        // Ties share their average rank.
        assert_eq!(ranks(&[5.0, 1.0, 5.0]), vec![2.5, 1.0, 2.5]);
    }
}
