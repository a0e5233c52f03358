//! Opening suites for engine testing, cut from a book (`learnbook suite`).
//!
//! A suite is a set of start positions for engine matches: the book's
//! human lines, ended at a ply range, kept where the exit qualifies (games,
//! the analysed score for White, a draw rate predicted from that score, the
//! side to move), each end position once, sampled with a seed and spread
//! over the openings on request. As Stefan Pohl's UHO suites are made from
//! databases and an engine, from one file.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use rand::{rngs::StdRng, seq::SliceRandom, SeedableRng};
use shakmaty::{
    fen::Fen, san::SanPlus, uci::UciMove, CastlingMode, Chess, Color, EnPassantMode, Move, Position,
};

use crate::db::book::Book;
use crate::keys::{polyglot_key, Key};
use crate::pgn::write::{MoveNumber, MovetextWriter};
use crate::view::openings;

/// A closed interval `lo..hi` (a single number is both ends).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval<T> {
    pub lo: T,
    pub hi: T,
}

impl<T: PartialOrd + Copy + std::str::FromStr> std::str::FromStr for Interval<T> {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let parse = |t: &str| {
            t.trim()
                .parse::<T>()
                .map_err(|_| format!("{t:?} is not a number (expected LO..HI or one number)"))
        };
        let (lo, hi) = match s.split_once("..") {
            Some((a, b)) => (parse(a)?, parse(b)?),
            None => {
                let v = parse(s)?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(format!(
                "{s}: an empty range (its low end is above its high end)"
            ));
        }
        Ok(Interval { lo, hi })
    }
}

impl<T: PartialOrd> Interval<T> {
    pub fn contains(&self, v: &T) -> bool {
        *v >= self.lo && *v <= self.hi
    }
}

/// Which side is to move at the exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SideToMove {
    Both,
    White,
    Black,
}

/// How `--stratify` groups the exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stratify {
    /// ECO families: the letter and first digit of the deepest named opening (B2 = B20-B29).
    Eco,
    /// The first two moves of the line.
    FirstMoves,
}

/// What a suite keeps.
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    /// Plies at which lines end (16 = after 8 moves).
    pub plies: Interval<u32>,
    /// Games through every position of the line, the exit included.
    pub min_games: u32,
    /// The analysed score at the exit, pawns for White.
    pub window: Option<Interval<f64>>,
    /// The draw rate the fitted model predicts from the analysed score.
    pub draw_rate: Option<Interval<f64>>,
    pub side: SideToMove,
    /// Exits kept (all that qualify if `None`), sampled with `seed`.
    pub count: Option<usize>,
    pub seed: u64,
    pub stratify: Option<Stratify>,
    /// Keep exits whose book value calls the side to move lost.
    pub keep_lost: bool,
}

/// A book value at or below this calls the side to move lost: the value of
/// a search score of -3 pawns (see FORMULA.md's logistic), or the games'
/// results as bad.
pub const LOST_VALUE: f64 = -0.5;

/// One end of a book line.
#[derive(Clone, Debug)]
pub struct Exit {
    /// The line from the start position.
    pub moves: Vec<Move>,
    pub pos: Chess,
    pub key: Key,
    pub games: u32,
    /// Results of the games through it: White wins, draws, Black wins.
    pub results: [u32; 3],
    /// Book value for the side to move, `[-1, 1]`.
    pub value: f64,
    /// Analysed score, centipawns for White.
    pub white_cp: Option<i32>,
    /// The deepest named opening on the line.
    pub opening: Option<&'static openings::Opening>,
}

impl Exit {
    fn group(&self, how: Stratify) -> String {
        match how {
            Stratify::Eco => self.opening.map_or_else(
                || "unnamed".to_string(),
                |o| o.eco.chars().take(2).collect(),
            ),
            Stratify::FirstMoves => self
                .moves
                .iter()
                .take(2)
                .map(|m| m.to_uci(CastlingMode::Standard).to_string())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// Every exit of the book within `plies`, each end position once (the
/// first line to reach it, most-played moves first), along moves and
/// positions with at least `min_games` games.
pub fn exits(book: &Book, plies: Interval<u32>, min_games: u32) -> Result<Vec<Exit>> {
    let mut out = Vec::new();
    let mut seen = Walked::default();
    let mut line = Vec::new();
    let mut keys = Vec::new();
    let start = Chess::default();
    walk(
        book, &start, 0, plies, min_games, &mut line, &mut keys, &mut seen, &mut out,
    )?;
    Ok(out)
}

/// What [`exits`] has walked: the earliest ply each position was walked on
/// from (a transposition reached earlier is walked again, its subtree
/// reaching further before the last ply), and the exits taken.
#[derive(Default)]
struct Walked {
    reached: std::collections::HashMap<Key, u32>,
    exits: HashSet<Key>,
}

#[allow(clippy::too_many_arguments)]
fn walk(
    book: &Book,
    pos: &Chess,
    ply: u32,
    plies: Interval<u32>,
    min_games: u32,
    line: &mut Vec<Move>,
    keys: &mut Vec<Key>,
    seen: &mut Walked,
    out: &mut Vec<Exit>,
) -> Result<()> {
    let key = polyglot_key(pos);
    // Walked on from here already, as early or earlier: nothing new below.
    if seen.reached.get(&key).is_some_and(|&p| p <= ply) {
        return Ok(());
    }
    seen.reached.insert(key, ply);
    let Some(node) = book.position(key)? else {
        return Ok(());
    };
    if node.counts.total() < min_games {
        return Ok(());
    }
    keys.push(key);
    if plies.contains(&ply) && seen.exits.insert(key) {
        let white_cp = book.analysis(key)?.map(|a| {
            if pos.turn() == Color::White {
                a.score
            } else {
                -a.score
            }
        });
        out.push(Exit {
            moves: line.clone(),
            pos: pos.clone(),
            key,
            games: node.counts.total(),
            results: [node.counts.white, node.counts.draws, node.counts.black],
            value: node.value,
            white_cp,
            opening: openings::last_named(keys),
        });
    }
    if ply < plies.hi {
        let mut moves = book.moves(key)?;
        moves.retain(|m| m.counts.total() >= min_games);
        // Most played first: a transposed exit keeps its main line.
        moves.sort_by(|a, b| {
            b.counts
                .total()
                .cmp(&a.counts.total())
                .then(a.mv.cmp(&b.mv))
        });
        for m in moves {
            let Some(mv) = m
                .uci
                .parse::<UciMove>()
                .ok()
                .and_then(|u| u.to_move(pos).ok())
            else {
                continue;
            };
            let mut next = pos.clone();
            next.play_unchecked(mv);
            line.push(mv);
            walk(
                book,
                &next,
                ply + 1,
                plies,
                min_games,
                line,
                keys,
                seen,
                out,
            )?;
            line.pop();
        }
    }
    keys.pop();
    Ok(())
}

/// Predicted draw rate from a score: the win and loss chances of a
/// logistic in the score (`1 / (1 + exp((a - cp) / b))` for the side ahead,
/// `(a + cp)` for the other, as Stockfish's WDL model), draws the rest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrawModel {
    pub a: f64,
    pub b: f64,
    /// Positions and games it was fitted on.
    pub positions: usize,
    pub games: u64,
}

impl DrawModel {
    /// (win, draw, loss) for White at `white_cp`.
    pub fn wdl(&self, white_cp: f64) -> (f64, f64, f64) {
        let w = 1.0 / (1.0 + ((self.a - white_cp) / self.b).exp());
        let l = 1.0 / (1.0 + ((self.a + white_cp) / self.b).exp());
        (w, (1.0 - w - l).max(0.0), l)
    }

    pub fn draw_rate(&self, white_cp: f64) -> f64 {
        self.wdl(white_cp).1
    }

    /// Fits `a` and `b` by maximum likelihood to `(white_cp, [white wins,
    /// draws, black wins])` samples: a coarse grid, then halving steps.
    pub fn fit(samples: &[(i32, [u32; 3])]) -> Option<DrawModel> {
        let games: u64 = samples
            .iter()
            .map(|(_, r)| u64::from(r[0] + r[1] + r[2]))
            .sum();
        if games == 0 {
            return None;
        }
        let log_lik = |a: f64, b: f64| {
            let m = DrawModel {
                a,
                b,
                positions: 0,
                games: 0,
            };
            samples
                .iter()
                .map(|&(cp, r)| {
                    let (w, d, l) = m.wdl(f64::from(cp.clamp(-2000, 2000)));
                    let p = [w, d, l];
                    (0..3)
                        .map(|i| f64::from(r[i]) * p[i].max(1e-9).ln())
                        .sum::<f64>()
                })
                .sum::<f64>()
        };
        let (mut a, mut b) = (100.0, 60.0);
        let mut best = log_lik(a, b);
        for ga in (0..=40).map(|i| 10.0 * f64::from(i)) {
            for gb in (1..=30).map(|i| 10.0 * f64::from(i)) {
                let ll = log_lik(ga, gb);
                if ll > best {
                    (a, b, best) = (ga, gb, ll);
                }
            }
        }
        let mut step = 5.0;
        while step > 0.01 {
            let mut moved = false;
            for (da, db) in [(step, 0.0), (-step, 0.0), (0.0, step), (0.0, -step)] {
                let (na, nb) = (a + da, (b + db).max(1.0));
                let ll = log_lik(na, nb);
                if ll > best {
                    (a, b, best) = (na, nb, ll);
                    moved = true;
                }
            }
            if !moved {
                step /= 2.0;
            }
        }
        Some(DrawModel {
            a,
            b,
            positions: samples.len(),
            games,
        })
    }
}

/// What `suite` found and kept, for its summary line.
#[derive(Clone, Debug, Default)]
pub struct SuiteSummary {
    pub considered: usize,
    pub analysed: usize,
    pub wrong_side: usize,
    pub lost: usize,
    pub unanalysed: usize,
    pub outside_window: usize,
    pub outside_draw_rate: usize,
    pub qualified: usize,
    pub kept: usize,
    pub model: Option<DrawModel>,
    /// Of the kept exits: White's score (pawns) min, median, max; games min, median, max.
    pub pawns: Option<[f64; 3]>,
    pub games: Option<[u32; 3]>,
    pub groups: Vec<(String, usize)>,
}

impl SuiteSummary {
    pub fn text(&self) -> String {
        let mut s = format!(
            "exits considered {}, analysed {}; left out: side to move {}, lost for the side to move {}, not analysed {}, outside the window {}, outside the draw rate {}; qualified {}, kept {}",
            self.considered,
            self.analysed,
            self.wrong_side,
            self.lost,
            self.unanalysed,
            self.outside_window,
            self.outside_draw_rate,
            self.qualified,
            self.kept
        );
        if let Some(p) = self.pawns {
            let _ = write!(
                s,
                "\nkept: White's score {:+.2} / {:+.2} / {:+.2} pawns (min / median / max)",
                p[0], p[1], p[2]
            );
        }
        if let Some(g) = self.games {
            let _ = write!(s, ", games {} / {} / {}", g[0], g[1], g[2]);
        }
        if let Some(m) = self.model {
            let _ = write!(
                s,
                "\ndraw model (fitted on {} analysed positions, {} games): a = {:.1} cp, b = {:.1} cp; draw rate at 0.00: {:.1}%, at +1.00: {:.1}%",
                m.positions,
                m.games,
                m.a,
                m.b,
                100.0 * m.draw_rate(0.0),
                100.0 * m.draw_rate(100.0)
            );
        }
        if !self.groups.is_empty() {
            let list: Vec<String> = self
                .groups
                .iter()
                .take(12)
                .map(|(g, n)| format!("{g} {n}"))
                .collect();
            let more = self.groups.len().saturating_sub(12);
            let _ = write!(s, "\ngroups: {}", list.join(", "));
            if more > 0 {
                let _ = write!(s, " and {more} more");
            }
        }
        s
    }
}

/// The exits `opts` keeps, in line order (sampled and stratified with the
/// seed), and the summary.
pub fn select(book: &Book, opts: &SuiteOptions) -> Result<(Vec<Exit>, SuiteSummary)> {
    if opts.plies.hi > book.settings.max_ply {
        bail!(
            "--plies {}..{} reaches beyond the book: it holds positions to ply {} (built with --max-ply {})",
            opts.plies.lo,
            opts.plies.hi,
            book.settings.max_ply,
            book.settings.max_ply
        );
    }
    let all = exits(book, opts.plies, opts.min_games)?;
    let mut sum = SuiteSummary {
        considered: all.len(),
        analysed: all.iter().filter(|e| e.white_cp.is_some()).count(),
        ..SuiteSummary::default()
    };
    if all.is_empty() {
        bail!(
            "the book has no line to ply {}..{} with at least {} games (--min-games)",
            opts.plies.lo,
            opts.plies.hi,
            opts.min_games
        );
    }
    let needs_score = opts.window.is_some() || opts.draw_rate.is_some();
    if needs_score && sum.analysed == 0 {
        bail!(
            "no exit is analysed ({} exits at ply {}..{}, --min-games {}): --window and --draw-rate need search scores there; run `learnbook analyze --book <BOOK> --min-games {}` first",
            all.len(),
            opts.plies.lo,
            opts.plies.hi,
            opts.min_games,
            opts.min_games
        );
    }
    if opts.draw_rate.is_some() {
        let Some(model) = DrawModel::fit(&fit_samples(book, opts.min_games)?) else {
            bail!("no analysed position with games to fit the draw model on");
        };
        // The model's draws are highest at an even score.
        let highest = model.draw_rate(0.0);
        if let Some(range) = opts.draw_rate.filter(|r| r.lo > highest) {
            bail!(
                "--draw-rate {}..{}: the book's games draw less at any score (the model fitted on {} analysed positions predicts at most {:.1}%, at 0.00)",
                range.lo,
                range.hi,
                model.positions,
                100.0 * highest
            );
        }
        sum.model = Some(model);
    }
    let mut kept = Vec::new();
    for e in all {
        let white = e.pos.turn() == Color::White;
        if (opts.side == SideToMove::White && !white) || (opts.side == SideToMove::Black && white) {
            sum.wrong_side += 1;
            continue;
        }
        if !opts.keep_lost && e.value <= LOST_VALUE {
            sum.lost += 1;
            continue;
        }
        if needs_score {
            let Some(cp) = e.white_cp else {
                sum.unanalysed += 1;
                continue;
            };
            let pawns = f64::from(cp) / 100.0;
            if opts.window.is_some_and(|w| !w.contains(&pawns)) {
                sum.outside_window += 1;
                continue;
            }
            if let (Some(range), Some(m)) = (opts.draw_rate, sum.model) {
                if !range.contains(&m.draw_rate(f64::from(cp))) {
                    sum.outside_draw_rate += 1;
                    continue;
                }
            }
        }
        kept.push(e);
    }
    sum.qualified = kept.len();
    if kept.is_empty() {
        bail!("no exit qualifies: {}", sum.text());
    }
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let kept = match (opts.count, opts.stratify) {
        (Some(n), _) if n >= kept.len() => kept,
        (Some(n), None) => {
            let mut idx: Vec<usize> = (0..kept.len()).collect();
            idx.shuffle(&mut rng);
            idx.truncate(n);
            idx.sort_unstable();
            idx.into_iter().map(|i| kept[i].clone()).collect()
        }
        (n, Some(how)) => stratified(kept, how, n, &mut rng),
        (None, None) => kept,
    };
    sum.kept = kept.len();
    describe_kept(&kept, opts, &mut sum);
    Ok((kept, sum))
}

/// `(White's score, results)` of every analysed position with at least
/// `min_games` games (one at least), for the draw model.
fn fit_samples(book: &Book, min_games: u32) -> Result<Vec<(i32, [u32; 3])>> {
    book.analysed_results(min_games.max(1))
}

/// Exits spread over groups in proportion to the games of each group
/// (largest remainders), sampled within a group with `rng`; `count`
/// `None`: as many as there are exits, so a group keeps at most its share.
fn stratified(kept: Vec<Exit>, how: Stratify, count: Option<usize>, rng: &mut StdRng) -> Vec<Exit> {
    let mut groups: BTreeMap<String, Vec<Exit>> = BTreeMap::new();
    for e in kept {
        groups.entry(e.group(how)).or_default().push(e);
    }
    let n: usize = count.unwrap_or_else(|| groups.values().map(Vec::len).sum());
    let games: Vec<u64> = groups
        .values()
        .map(|v| v.iter().map(|e| u64::from(e.games)).sum())
        .collect();
    let sizes: Vec<usize> = groups.values().map(Vec::len).collect();
    let quotas: Vec<(String, usize)> = groups
        .keys()
        .cloned()
        .zip(capped_quotas(&games, &sizes, n))
        .collect();
    let mut out = Vec::new();
    for (g, quota) in quotas {
        let Some(mut v) = groups.remove(&g) else {
            continue;
        };
        v.shuffle(rng);
        v.truncate(quota);
        out.extend(v);
    }
    out.sort_by_cached_key(line_text);
    out
}

/// `n` places shared in proportion to `weights`: the whole parts, then one
/// more to the largest remainders (ties to the first).
fn quotas(weights: &[u64], n: usize) -> Vec<usize> {
    let total: u64 = weights.iter().sum();
    let exact: Vec<f64> = weights
        .iter()
        .map(|&w| n as f64 * w as f64 / total.max(1) as f64)
        .collect();
    let mut out: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut left = n.saturating_sub(out.iter().sum());
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for i in order {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out
}

/// [`quotas`] with no group given more than it has (`caps`): what a small
/// group cannot fill goes to the others, again in proportion.
fn capped_quotas(weights: &[u64], caps: &[usize], n: usize) -> Vec<usize> {
    let mut out = vec![0; weights.len()];
    let mut left = n.min(caps.iter().sum());
    while left > 0 {
        let open: Vec<usize> = (0..out.len()).filter(|&i| out[i] < caps[i]).collect();
        let open_weights: Vec<u64> = open.iter().map(|&i| weights[i]).collect();
        for (j, add) in quotas(&open_weights, left).into_iter().enumerate() {
            let i = open[j];
            out[i] = (out[i] + add).min(caps[i]);
        }
        left = n.min(caps.iter().sum()) - out.iter().sum::<usize>();
    }
    out
}

fn line_text(e: &Exit) -> String {
    e.moves
        .iter()
        .map(|m| m.to_uci(CastlingMode::Standard).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn describe_kept(kept: &[Exit], opts: &SuiteOptions, sum: &mut SuiteSummary) {
    let mut pawns: Vec<f64> = kept
        .iter()
        .filter_map(|e| e.white_cp.map(|c| f64::from(c) / 100.0))
        .collect();
    pawns.sort_by(f64::total_cmp);
    if let (Some(&lo), Some(&hi)) = (pawns.first(), pawns.last()) {
        sum.pawns = Some([lo, pawns[pawns.len() / 2], hi]);
    }
    let mut games: Vec<u32> = kept.iter().map(|e| e.games).collect();
    games.sort_unstable();
    if let (Some(&lo), Some(&hi)) = (games.first(), games.last()) {
        sum.games = Some([lo, games[games.len() / 2], hi]);
    }
    let how = opts.stratify.unwrap_or(Stratify::Eco);
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    for e in kept {
        *groups.entry(e.group(how)).or_default() += 1;
    }
    let mut groups: Vec<(String, usize)> = groups.into_iter().collect();
    groups.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    sum.groups = groups;
}

/// The output format, from the file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuiteFormat {
    Epd,
    Pgn,
}

impl SuiteFormat {
    pub fn of(path: &Path) -> Result<SuiteFormat> {
        let name = path.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".epd") {
            Ok(SuiteFormat::Epd)
        } else if name.ends_with(".pgn") {
            Ok(SuiteFormat::Pgn)
        } else {
            bail!(
                "{}: the suite's file name must end in .epd or .pgn",
                path.display()
            )
        }
    }
}

/// The suite as text: a FEN per line (EPD), or each line as a game with the
/// seven tag roster and result `*` (PGN, as Pohl's files are).
pub fn render(exits: &[Exit], format: SuiteFormat, event: &str) -> String {
    let mut out = String::new();
    for (i, e) in exits.iter().enumerate() {
        match format {
            SuiteFormat::Epd => {
                let fen = Fen::from_position(&e.pos, EnPassantMode::Legal);
                let _ = writeln!(out, "{fen}");
            }
            SuiteFormat::Pgn => {
                let _ = writeln!(out, "[Event \"{event}\"]");
                let _ = writeln!(out, "[Site \"?\"]");
                let _ = writeln!(out, "[Date \"????.??.??\"]");
                let _ = writeln!(out, "[Round \"{}\"]", i + 1);
                let _ = writeln!(out, "[White \"?\"]");
                let _ = writeln!(out, "[Black \"?\"]");
                let _ = writeln!(out, "[Result \"*\"]");
                out.push('\n');
                let mut pos = Chess::default();
                let mut text = MovetextWriter::new(Vec::new());
                for &m in &e.moves {
                    let at = MoveNumber::of(&pos);
                    let san = SanPlus::from_move_and_play_unchecked(&mut pos, m);
                    // Writing to memory cannot fail.
                    let _ = text.mv(at, &san.to_string());
                }
                let _ = text.result("*");
                let _ = writeln!(out, "{}\n", text.into_string());
            }
        }
    }
    out
}

/// Writes the suite to `path` (whole or not at all).
pub fn write(path: &Path, exits: &[Exit], event: &str) -> Result<()> {
    let format = SuiteFormat::of(path)?;
    learnbook_base::atomic_file::write(path, render(exits, format, event).as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_parse_and_refuse_empty_ranges() {
        let w: Interval<f64> = "0.80..1.09".parse().unwrap();
        assert_eq!((w.lo, w.hi), (0.80, 1.09));
        let w: Interval<f64> = "-0.20..0.20".parse().unwrap();
        assert!(w.contains(&0.0) && !w.contains(&0.21));
        let p: Interval<u32> = "16".parse().unwrap();
        assert_eq!((p.lo, p.hi), (16, 16));
        let e = "1.09..0.80".parse::<Interval<f64>>().unwrap_err();
        assert!(e.contains("empty range"), "{e}");
        assert!("a..b".parse::<Interval<f64>>().is_err());
    }

    #[test]
    fn quotas_follow_the_weights() {
        assert_eq!(quotas(&[60, 30, 10], 10), vec![6, 3, 1]);
        // 4.2, 2.1, 0.7: the one place left goes to the largest remainder.
        assert_eq!(quotas(&[60, 30, 10], 7), vec![4, 2, 1]);
        assert_eq!(quotas(&[1, 1, 1], 2), vec![1, 1, 0]);
        assert_eq!(quotas(&[5], 3), vec![3]);
        assert_eq!(quotas(&[0, 0], 0), vec![0, 0]);
    }

    #[test]
    fn what_a_small_group_cannot_fill_goes_to_the_others() {
        // Shares 6, 3, 1 of 10, but the first group has 2 exits.
        assert_eq!(
            capped_quotas(&[60, 30, 10], &[2, 100, 100], 10),
            vec![2, 6, 2]
        );
        // Fewer exits than asked for: all of them.
        assert_eq!(capped_quotas(&[60, 30, 10], &[1, 2, 3], 10), vec![1, 2, 3]);
        // Groups without games still fill.
        assert_eq!(capped_quotas(&[0, 0], &[1, 5], 4), vec![1, 3]);
    }

    #[test]
    fn the_draw_model_fit_recovers_the_model_that_made_the_results() {
        let truth = DrawModel {
            a: 150.0,
            b: 70.0,
            positions: 0,
            games: 0,
        };
        // Expected results of 10,000 games at each score.
        let samples: Vec<(i32, [u32; 3])> = (-300..=300)
            .step_by(20)
            .map(|cp| {
                let (w, d, l) = truth.wdl(f64::from(cp));
                let n = 10_000.0;
                (cp, [(w * n) as u32, (d * n) as u32, (l * n) as u32])
            })
            .collect();
        let fit = DrawModel::fit(&samples).unwrap();
        assert!((fit.a - 150.0).abs() < 2.0, "{fit:?}");
        assert!((fit.b - 70.0).abs() < 2.0, "{fit:?}");
        assert!(fit.draw_rate(0.0) > fit.draw_rate(100.0));
        assert!(DrawModel::fit(&[]).is_none());
    }
}
