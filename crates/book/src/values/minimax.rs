//! Node values: the formula, full evaluation, and incremental re-evaluation.
//!
//! Values are from the side to move's point of view, in [-1, 1]
//! (1 = win, 0 = draw). The formula (also in docs/FORMULA.md):
//!
//! * `r(n) = 2 (A - E)`: the games through `n`, rated by who played them:
//!   `A` the points the side to move scored, `E` the points expected from
//!   the players' ratings (half a point a game where a rating is missing,
//!   so that without ratings `r = W - L`).
//! * `s(n) = (r(n) + S p(n)) / (N + S)` where `n` was analysed, `p(n)` its
//!   search score as a value ([`score_to_value`]); `r(n) / (N + K)` (`K`
//!   virtual draws) elsewhere.
//! * edge value `q(n -> c)`:
//!   * `-exact(c)` if `c` is checkmate (-1) or stalemate (0);
//!   * `-s(c)` if `c` is a leaf of the analysis (searched, its moves not):
//!     its search score refined by its games;
//!   * `-(N_c * v(c) + K * s(c)) / (N_c + K)` otherwise, if
//!     `depth(c) > depth(n)`: the child's minimax value, trusted in
//!     proportion to its evidence;
//!   * `-s(c)` otherwise (an edge back to an earlier ply: statistics only,
//!     which is what makes repetition cycles terminate).
//! * the score of a move is `q - Z / sqrt(N_c + 1) + B ln((P_c + 1) / (P + 1))`
//!   (a lower confidence bound plus a popularity prior: `P_c` the points
//!   the mover scored with the move, `P` all its points at `n`); `q` itself
//!   for checkmate and stalemate. Moves whose games were all lost by the
//!   side that played them are never scored.
//! * Analysed interior positions (searched, with their best move outside
//!   the book, Buro's deviation, of value `d(n)`): leaving the book is one
//!   more option, scored `d(n) + B ln(1 / (P + 1))`. Elsewhere leaving is
//!   worth the constant `D`, and only moves with `q >= D` are chosen.
//! * Engine moves (`grow`) lead to positions no game reached, searched
//!   ([`NodeInfo::engine_only`]): `s = p`, a move to one is an option
//!   scored as a deviation, and once `grow` expanded it its `v` counts as
//!   `S` games in its parent's `q`.
//! * The choice (`best`) is the option with the highest score (none if it
//!   is leaving the book). `v(n) = exact(n)` if terminal; `s(n)` without
//!   options; otherwise the top score less the top prior (`score - q`) over
//!   the options, at least `D` where not analysed (see [`choose`]).
//!
//! Because forward edges strictly increase depth, the value dependencies form
//! a DAG: evaluating nodes by decreasing depth is exact, and the incremental
//! pass processes dirty nodes in the same order, so both give bit-identical
//! results.

use std::collections::{BinaryHeap, HashSet};

use anyhow::{bail, Result};
use rayon::prelude::*;

use crate::keys::{Key, KeyMap, MoveCode};
use crate::pgn::game::Counts;

/// The value formula's parameters. Stored in the book's meta table so every
/// evaluation of one book uses the same numbers.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ValueParams {
    /// `K`: virtual games at the prior added to every node's statistics.
    pub prior_games: f64,
    /// `D`: value of leaving the book where it was not searched, the floor
    /// of every interior node that was not analysed.
    pub deviation: f64,
    /// `Z`: moves are ranked by `q - Z / sqrt(N + 1) + ...`.
    pub evidence_penalty: f64,
    /// `B`: weight of the popularity prior `ln((P_c + 1) / (P + 1))`.
    pub popularity: f64,
    /// `S`: games a search score counts as, where a position was analysed
    /// (its prior is then the search, which errs far less than a guess of
    /// a draw).
    pub search_games: f64,
    /// `M`: the centipawns a searched move outside the games (Buro's
    /// deviation, an engine move) must gain before the analyst's claim
    /// counts: its value is lowered by `M` cp before it is ranked.
    pub engine_margin: f64,
}

impl Default for ValueParams {
    fn default() -> Self {
        ValueParams {
            prior_games: 20.0,
            deviation: -0.3,
            evidence_penalty: 0.2,
            popularity: 0.05,
            search_games: 100.0,
            engine_margin: 25.0,
        }
    }
}

impl ValueParams {
    pub fn validate(&self) -> Result<()> {
        if !(self.prior_games > 0.0 && self.prior_games.is_finite()) {
            bail!(
                "prior_games must be a positive number, got {}",
                self.prior_games
            );
        }
        if !(-1.0..=1.0).contains(&self.deviation) {
            bail!("deviation must be within [-1, 1], got {}", self.deviation);
        }
        if !(self.evidence_penalty >= 0.0 && self.evidence_penalty.is_finite()) {
            bail!(
                "evidence_penalty must be >= 0, got {}",
                self.evidence_penalty
            );
        }
        if !(self.popularity >= 0.0 && self.popularity.is_finite()) {
            bail!("popularity must be >= 0, got {}", self.popularity);
        }
        if !(self.search_games > 0.0 && self.search_games.is_finite()) {
            bail!(
                "search_games must be a positive number, got {}",
                self.search_games
            );
        }
        if !(0.0..=1000.0).contains(&self.engine_margin) {
            bail!(
                "engine_margin must be within [0, 1000] cp, got {}",
                self.engine_margin
            );
        }
        Ok(())
    }
}

/// A search score in centipawns (side to move) as a value in `[-1, 1]`:
/// `2 / (1 + exp(-0.00368208 cp)) - 1`, the logistic Lichess uses for
/// "winning chances" (100 cp = 0.18, 300 cp = 0.50). Mate scores (beyond
/// 20,000 cp) are a sure win or loss.
pub fn score_to_value(cp: i32) -> f64 {
    if cp.abs() >= 20_000 {
        return f64::from(cp.signum());
    }
    cp_to_value(f64::from(cp))
}

/// A move's score from the mover's side as its child's score (the other
/// side's): negated, a mate one ply nearer.
pub fn child_score(score: i32) -> i32 {
    if score.abs() >= 20_000 {
        -score - score.signum()
    } else {
        -score
    }
}

fn cp_to_value(cp: f64) -> f64 {
    2.0 / (1.0 + (-0.003_682_08 * cp).exp()) - 1.0
}

/// `value` less `cp` centipawns, through the same logistic (a sure win or
/// loss stays one).
fn value_less_cp(value: f64, cp: f64) -> f64 {
    if cp == 0.0 || value.abs() >= 1.0 {
        return value;
    }
    // The logistic's inverse: cp = ln((1 + v) / (1 - v)) / 0.00368208.
    let at = ((1.0 + value) / (1.0 - value)).ln() / 0.003_682_08;
    cp_to_value(at - cp)
}

/// What the formula needs to know about a node.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct NodeInfo {
    pub key: Key,
    /// Smallest ply at which a game reached it; `None` for imported positions
    /// not reachable from a known start (they carry no value).
    pub depth: Option<u32>,
    pub counts: Counts,
    /// White's expected points over the games through it, in thousandths
    /// (from the ratings; 500 a game without them).
    pub expected: i64,
    pub exact: Option<f64>,
    /// The search score of the position as a value, if analysed.
    pub search: Option<f64>,
    /// Analysed as an interior position: `Some(d)`, `d` the value of the
    /// best move outside the book (`None` inside: every legal move is a
    /// book move). `None`: not analysed as interior.
    pub deviation: Option<Option<f64>>,
    pub value: f64,
}

impl NodeInfo {
    /// A position with games and nothing else known (no analysis, no rating).
    pub fn from_counts(key: Key, depth: Option<u32>, counts: Counts) -> NodeInfo {
        NodeInfo {
            key,
            depth,
            counts,
            expected: 500 * i64::from(counts.total()),
            exact: None,
            search: None,
            deviation: None,
            value: 0.0,
        }
    }

    pub fn white_to_move(&self) -> Option<bool> {
        self.depth.map(|d| d % 2 == 0)
    }

    /// The points (2 a win, 1 a draw, as Polyglot's weights) that the side to
    /// move at a position of depth parity `white` scored in the games through
    /// this one.
    pub fn points_for(&self, white: bool) -> u32 {
        let c = self.counts;
        2 * if white { c.white } else { c.black } + c.draws
    }

    /// [`Self::points_for`] its own side to move (0 at unknown depth).
    pub fn points(&self) -> u32 {
        self.white_to_move().map_or(0, |w| self.points_for(w))
    }

    /// `s(n)`.
    pub fn stats_value(&self, p: &ValueParams) -> f64 {
        let white = match self.white_to_move() {
            Some(w) => w,
            None => return 0.0,
        };
        let c = self.counts;
        // 2 (A - E) for White, in thousandths: exact integer arithmetic.
        let r_white = 2 * (1000 * i64::from(c.white) + 500 * i64::from(c.draws) - self.expected);
        let r = if white { r_white } else { -r_white } as f64 / 1000.0;
        let n = f64::from(c.total());
        match self.search {
            Some(prior) => (r + p.search_games * prior) / (n + p.search_games),
            None => r / (n + p.prior_games),
        }
    }

    /// Searched, but its moves were not: a leaf of the analysis.
    fn analysed_leaf(&self) -> bool {
        self.search.is_some() && self.deviation.is_none()
    }

    /// A position no game reached, in the book through an engine move
    /// (`learnbook grow`): its search score is all its evidence.
    pub fn engine_only(&self) -> bool {
        self.counts.total() == 0 && self.search.is_some() && self.depth.is_some()
    }

    /// The games `v(n)` counts as where a parent weighs it: `N`, or `S` for
    /// a position without games that `grow` expanded (its value is the
    /// minimax of searched moves, as good as a search score).
    fn value_weight(&self, p: &ValueParams) -> f64 {
        if self.engine_only() && self.deviation.is_some() {
            p.search_games
        } else {
            f64::from(self.counts.total())
        }
    }
}

/// `q(parent -> child)`, from the parent's side to move; `None` when the
/// edge carries no value (unknown depth).
pub fn edge_value(parent_depth: Option<u32>, child: &NodeInfo, p: &ValueParams) -> Option<f64> {
    let pd = parent_depth?;
    let cd = child.depth?;
    if let Some(e) = child.exact {
        return Some(-e);
    }
    let s = child.stats_value(p);
    if cd > pd && !child.analysed_leaf() {
        let n = child.value_weight(p);
        Some(0.0 - (n * child.value + p.prior_games * s) / (n + p.prior_games))
    } else {
        Some(0.0 - s)
    }
}

/// Whether every game through `child` was lost by the side to move at
/// `parent` (a move into checkmate of the opponent is never lost).
pub fn all_lost(parent: &NodeInfo, child: &NodeInfo) -> bool {
    let c = child.counts;
    let (won, lost) = match parent.white_to_move() {
        Some(true) => (c.white, c.black),
        Some(false) => (c.black, c.white),
        None => return false,
    };
    child.exact.is_none() && won == 0 && c.draws == 0 && lost > 0
}

/// A child as the `best` choice sees it.
#[derive(Copy, Clone, Debug)]
pub struct Choice {
    pub mv: MoveCode,
    pub q: f64,
    pub games: u32,
    /// Points the side playing the move scored in its games (2 a win, 1 a
    /// draw): its share of the position's points is its popularity.
    pub points: u32,
    /// Checkmate or stalemate: `q` is exact and needs no evidence.
    pub exact: bool,
    /// Every game through the move was lost by the side that played it.
    pub all_lost: bool,
    /// An engine move to a position no game reached ([`NodeInfo::engine_only`]):
    /// ranked as the searched deviation is.
    pub engine: bool,
}

impl Choice {
    /// `q - Z / sqrt(N_c + 1) + B ln((P_c + 1) / (P + 1))`, `P` the points
    /// of the parent's side to move through it: the score moves are ranked by.
    /// An engine move without games is scored as a deviation
    /// ([`deviation_score`]): its evidence is a search, not games.
    pub fn score(&self, parent_points: u32, p: &ValueParams) -> f64 {
        if self.exact {
            self.q
        } else if self.engine {
            deviation_score(self.q, parent_points, p)
        } else {
            let n = f64::from(self.games) + 1.0;
            let share =
                ((f64::from(self.points) + 1.0) / (f64::from(parent_points) + 1.0)).min(1.0);
            self.q - p.evidence_penalty / n.sqrt() + p.popularity * share.ln()
        }
    }

    /// [`Choice::score`] if the move is an option at all (the number the
    /// `best` choice ranks it by, shown beside its value), else `None`.
    pub fn ranking_score(&self, parent_points: u32, p: &ValueParams) -> Option<f64> {
        self.rankable().then(|| self.score(parent_points, p))
    }

    /// An option at all: a move with games not all lost, or an engine move.
    fn rankable(&self) -> bool {
        (self.games > 0 || self.engine) && !self.all_lost
    }
}

/// The score of leaving the book through a searched deviation worth `d` at
/// a position whose side to move scored `parent_points`:
/// `(d less M cp) + B ln(1 / (P + 1))`, the engine margin and the
/// popularity prior of a move no game chose.
pub fn deviation_score(d: f64, parent_points: u32, p: &ValueParams) -> f64 {
    value_less_cp(d, p.engine_margin) - p.popularity * (f64::from(parent_points) + 1.0).ln()
}

/// The move with games, not lost in all of them, and the highest
/// [`Choice::score`]; ties go to the lower move code so the result does not
/// depend on row order. A move that lost every game it was played in is
/// never ranked, however few games: against a deterministic opponent it would
/// lose the same way again (what makes a learning book never repeat a loss).
fn ranked<'a>(
    choices: impl IntoIterator<Item = &'a Choice>,
    parent_points: u32,
    p: &ValueParams,
) -> Option<(f64, &'a Choice)> {
    let mut best: Option<(f64, &Choice)> = None;
    for c in choices.into_iter().filter(|c| c.rankable()) {
        let score = c.score(parent_points, p);
        let better = match best {
            None => true,
            Some((s, b)) => score > s || (score == s && c.mv < b.mv),
        };
        if better {
            best = Some((score, c));
        }
    }
    best
}

/// The value and the choice of a position from its book moves' [`Choice`]s.
/// `deviation`: the searched value of the best move outside the book, for an
/// analysed interior position (`Some(None)`: analysed, no such move); `None`
/// for a position that was not analysed, where leaving the book is worth the
/// constant `D`. `None` as value: no option at all (a leaf).
///
/// The value is the top score less the largest prior (`score - q`) among
/// the options: the `q` of the best-evidenced option when it is also the
/// top-scored one, less when a move with less evidence is chosen. It is
/// monotone in every option's `q`, and a rare lucky move does not lift it
/// by its luck alone (the plain maximum of the `q`s is biased upwards by
/// whichever rare move was luckiest).
pub fn choose(
    choices: &[Choice],
    parent_points: u32,
    deviation: Option<Option<f64>>,
    p: &ValueParams,
) -> (Option<f64>, Option<MoveCode>) {
    let top = ranked(choices, parent_points, p);
    let mut prior = choices
        .iter()
        .filter(|c| c.rankable())
        .map(|c| c.score(parent_points, p) - c.q)
        .fold(f64::NEG_INFINITY, f64::max);
    match deviation {
        Some(dev) => {
            let leave = dev.map(|d| (deviation_score(d, parent_points, p), d));
            if let Some((ls, d)) = leave {
                prior = prior.max(ls - d);
            }
            match (top, leave) {
                (Some((s, c)), Some((ls, _))) if s >= ls => (Some(s - prior), Some(c.mv)),
                (_, Some((ls, _))) => (Some(ls - prior), None),
                (Some((s, c)), None) => (Some(s - prior), Some(c.mv)),
                (None, None) => (None, None),
            }
        }
        None => {
            let best = ranked(
                choices.iter().filter(|c| c.q >= p.deviation),
                parent_points,
                p,
            )
            .map(|(_, c)| c.mv);
            (top.map(|(s, _)| (s - prior).max(p.deviation)), best)
        }
    }
}

/// `best`: the book's choice among `choices` at a position whose side to
/// move scored `parent_points` (see [`choose`]).
pub fn best_choice(
    choices: &[Choice],
    parent_points: u32,
    deviation: Option<Option<f64>>,
    p: &ValueParams,
) -> Option<MoveCode> {
    choose(choices, parent_points, deviation, p).1
}

/// The [`Choice`] of every move of `node` to a child with a value.
pub fn choices<'a>(
    node: &NodeInfo,
    children: impl IntoIterator<Item = (MoveCode, &'a NodeInfo)>,
    p: &ValueParams,
) -> Vec<Choice> {
    children
        .into_iter()
        .filter_map(|(mv, child)| choice(node, mv, child, p))
        .collect()
}

/// The choice of `mv` to `child` at `node` (`None`: the move has no value).
fn choice(node: &NodeInfo, mv: MoveCode, child: &NodeInfo, p: &ValueParams) -> Option<Choice> {
    edge_value(node.depth, child, p).map(|q| Choice {
        mv,
        q,
        games: child.counts.total(),
        points: node.white_to_move().map_or(0, |w| child.points_for(w)),
        exact: child.exact.is_some(),
        all_lost: all_lost(node, child),
        engine: child.engine_only(),
    })
}

/// The probability the `weighted` mode (see `select`) gives each option of
/// `parent`: `Some(move)` for a book move, `None` for leaving the book.
/// Empty when the book has no valued move here (an imported position).
/// (Here rather than in `select`: the Polyglot export weighs moves by it.)
pub fn option_weights(
    parent: &NodeInfo,
    choices: &[Choice],
    p: &ValueParams,
) -> Vec<(Option<MoveCode>, f64)> {
    let points = parent.points();
    let analysed = parent.deviation.is_some();
    let mut scored: Vec<(Option<MoveCode>, f64)> = choices
        .iter()
        .filter(|c| c.rankable() && (analysed || c.q >= p.deviation))
        .map(|c| (Some(c.mv), c.score(points, p)))
        .collect();
    if scored.is_empty() {
        return Vec::new();
    }
    if let Some(Some(d)) = parent.deviation {
        scored.push((None, deviation_score(d, points, p)));
    }
    let top = scored.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
    let t = (p.popularity / 2.0).max(0.02);
    let mut w: Vec<(Option<MoveCode>, f64)> = scored
        .into_iter()
        .map(|(m, s)| (m, ((s - top) / t).exp()))
        .filter(|&(_, w)| w >= 1e-3)
        .collect();
    let total: f64 = w.iter().map(|x| x.1).sum();
    for x in &mut w {
        x.1 /= total;
    }
    w
}

/// `v(n)` and the `best` move from the node and its children `(move, child)`.
pub fn node_value<'a>(
    node: &NodeInfo,
    children: impl IntoIterator<Item = (MoveCode, &'a NodeInfo)>,
    p: &ValueParams,
) -> (f64, Option<MoveCode>) {
    node_value_with(node, children, p, &mut Vec::new())
}

/// [`node_value`], its choices made in `buf` (for a loop over many nodes:
/// one allocation, not one a node).
pub fn node_value_with<'a>(
    node: &NodeInfo,
    children: impl IntoIterator<Item = (MoveCode, &'a NodeInfo)>,
    p: &ValueParams,
    buf: &mut Vec<Choice>,
) -> (f64, Option<MoveCode>) {
    buf.clear();
    buf.extend(
        children
            .into_iter()
            .filter_map(|(mv, child)| choice(node, mv, child, p)),
    );
    let choices = &buf[..];
    let (v, best) = if node.depth.is_none() {
        (0.0, None)
    } else if let Some(e) = node.exact {
        (e, None)
    } else {
        match choose(choices, node.points(), node.deviation, p) {
            (Some(v), best) => (v, best),
            (None, _) => (node.stats_value(p), None),
        }
    };
    // SQLite stores -0.0 as 0.0; normalize so stored and computed agree bitwise.
    (v + 0.0, best)
}

/// The whole book in memory, for full evaluation and `check`.
#[derive(Clone)]
pub struct Graph {
    pub nodes: Vec<NodeInfo>,
    pub best: Vec<Option<MoveCode>>,
    pub index: KeyMap<Key, u32>,
    /// Children of node `i`: `edges[offsets[i]..offsets[i + 1]]`.
    pub offsets: Vec<u32>,
    pub edges: Vec<(MoveCode, u32)>,
    /// Nodes from this index on keep their values in [`Graph::evaluate`]
    /// (the first positions of single-game tails, valued from their games).
    pub fixed: usize,
}

impl Graph {
    /// Builds the graph from nodes and `(parent, move, child)` edges; edges
    /// whose ends are unknown are ignored.
    pub fn new(nodes: Vec<NodeInfo>, edge_list: Vec<(Key, MoveCode, Key)>) -> Graph {
        let index: KeyMap<Key, u32> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.key, i as u32))
            .collect();
        let mut offsets = vec![0u32; nodes.len() + 1];
        let mut edges = Vec::with_capacity(edge_list.len());
        let mut resolved: Vec<(u32, MoveCode, u32)> = edge_list
            .into_par_iter()
            .filter_map(|(p, mv, c)| Some((*index.get(&p)?, mv, *index.get(&c)?)))
            .collect();
        resolved.par_sort_unstable_by_key(|&(p, mv, _)| (p, mv));
        for &(p, _, _) in &resolved {
            offsets[p as usize + 1] += 1;
        }
        for i in 0..nodes.len() {
            offsets[i + 1] += offsets[i];
        }
        edges.extend(resolved.into_iter().map(|(_, mv, c)| (mv, c)));
        let best = vec![None; nodes.len()];
        Graph {
            fixed: nodes.len(),
            nodes,
            best,
            index,
            offsets,
            edges,
        }
    }

    pub fn children(&self, i: usize) -> &[(MoveCode, u32)] {
        &self.edges[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Full evaluation: every node (before [`Graph::fixed`]), by decreasing depth.
    /// A level's nodes are valued on every core: no move joins two positions
    /// of one depth (a child's side to move, so its depth's parity, is the
    /// other), so within a level no value reads another, and any order gives
    /// the values one pass in order gives.
    pub fn evaluate(&mut self, p: &ValueParams) {
        let depth_of = |n: &NodeInfo| n.depth.map_or(-1, i64::from);
        let mut order: Vec<u32> = (0..self.fixed as u32).collect();
        // Unknown depth sorts last; its value does not depend on children.
        order.par_sort_unstable_by_key(|&i| std::cmp::Reverse(depth_of(&self.nodes[i as usize])));
        let mut levels = Vec::new();
        for level in order.chunk_by(|&a, &b| {
            depth_of(&self.nodes[a as usize]) == depth_of(&self.nodes[b as usize])
        }) {
            levels.push(level.len());
        }
        let mut values = Vec::new();
        let mut rest = &order[..];
        for len in levels {
            let (level, after) = rest.split_at(len);
            rest = after;
            let graph = &*self;
            level
                .par_iter()
                .with_min_len(1024)
                .map_init(Vec::new, |buf, &i| {
                    let i = i as usize;
                    let kids = graph
                        .children(i)
                        .iter()
                        .map(|&(mv, c)| (mv, &graph.nodes[c as usize]));
                    node_value_with(&graph.nodes[i], kids, p, buf)
                })
                .collect_into_vec(&mut values);
            for (&i, &(v, best)) in level.iter().zip(&values) {
                self.nodes[i as usize].value = v;
                self.best[i as usize] = best;
            }
        }
    }
}

/// Storage as the incremental pass needs it.
pub trait Tree {
    /// A node and its stored `best` move.
    fn node(&mut self, key: Key) -> Result<Option<(NodeInfo, Option<MoveCode>)>>;
    /// `(move, child)` for every book move of `key` with a known child.
    fn children(&mut self, key: Key) -> Result<Vec<(MoveCode, NodeInfo)>>;
    /// Key and depth of every position with a book move into `key`.
    fn parents(&mut self, key: Key) -> Result<Vec<(Key, Option<u32>)>>;
    fn set_value(&mut self, key: Key, value: f64, best: Option<MoveCode>) -> Result<()>;
}

/// A node whose `best` move changed during re-evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct ChoiceChange {
    pub key: Key,
    pub depth: u32,
    pub before: Option<MoveCode>,
    pub after: Option<MoveCode>,
}

/// What one incremental pass did.
#[derive(Clone, Debug, Default)]
pub struct Reevaluation {
    pub recomputed: usize,
    pub changed_values: usize,
    pub choices: Vec<ChoiceChange>,
}

/// Re-evaluates `dirty` (`(key, depth)` of the nodes whose own inputs
/// changed: the new game's path and every parent of it) and then, through parents, every node whose value
/// depends on a changed value, stopping where values no longer change.
pub fn reevaluate_from<T: Tree>(
    tree: &mut T,
    dirty: impl IntoIterator<Item = (Key, Option<u32>)>,
    p: &ValueParams,
) -> Result<Reevaluation> {
    let mut heap = BinaryHeap::new();
    let mut queued = HashSet::new();
    for (key, depth) in dirty {
        // Positions of unknown depth carry no value and need no pass.
        if let Some(d) = depth {
            if queued.insert(key) {
                heap.push((d, key));
            }
        }
    }
    let mut out = Reevaluation::default();
    while let Some((depth, key)) = heap.pop() {
        let Some((node, old_best)) = tree.node(key)? else {
            continue;
        };
        let kids = tree.children(key)?;
        let (v, best) = node_value(&node, kids.iter().map(|(mv, c)| (*mv, c)), p);
        out.recomputed += 1;
        if old_best != best {
            out.choices.push(ChoiceChange {
                key,
                depth,
                before: old_best,
                after: best,
            });
        }
        let value_changed = v.to_bits() != node.value.to_bits();
        if value_changed || old_best != best {
            tree.set_value(key, v, best)?;
        }
        if value_changed {
            out.changed_values += 1;
            for (parent, pd) in tree.parents(key)? {
                // Only forward edges carry v(child); back edges use s only.
                if let Some(pd) = pd.filter(|&pd| pd < depth) {
                    if queued.insert(parent) {
                        heap.push((pd, parent));
                    }
                }
            }
        }
    }
    out.choices.sort_by_key(|c| (c.depth, c.key));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgn::game::expected_milli;

    fn node(key: u64, depth: u32, w: u32, d: u32, b: u32) -> NodeInfo {
        NodeInfo::from_counts(
            Key(key),
            Some(depth),
            Counts {
                white: w,
                draws: d,
                black: b,
            },
        )
    }

    #[test]
    fn cycle_terminates_and_leaf_uses_stats() {
        // 1 -> 2 -> 3 -> 1 (a repetition): the back edge uses statistics.
        let nodes = vec![
            node(1, 0, 2, 0, 0),
            node(2, 1, 2, 0, 0),
            node(3, 2, 2, 0, 0),
        ];
        let edges = vec![
            (Key(1), MoveCode(1), Key(2)),
            (Key(2), MoveCode(2), Key(3)),
            (Key(3), MoveCode(3), Key(1)),
        ];
        let mut g = Graph::new(nodes, edges);
        let p = ValueParams::default();
        g.evaluate(&p);
        let s1 = g.nodes[0].stats_value(&p);
        assert!((s1 - 2.0 / (2.0 + p.prior_games)).abs() < 1e-12);
        // Node 3 (white to move? depth 2 -> white) has only a back edge to 1.
        assert_eq!(g.nodes[2].value, (-s1).max(p.deviation));
    }

    #[test]
    fn a_result_counts_against_what_the_ratings_expected() {
        let p = ValueParams::default();
        // Ten White wins; White is at depth 0 (to move).
        let mut n = node(1, 0, 10, 0, 0);
        let unrated = n.stats_value(&p);
        assert!((unrated - 10.0 / 30.0).abs() < 1e-12);
        // The same wins by a player rated 400 above: expected 0.909 a game.
        n.expected = 10 * expected_milli(Some(2600), Some(2200));
        assert_eq!(expected_milli(Some(2600), Some(2200)), 909);
        let rated = n.stats_value(&p);
        assert!(
            (rated - 2.0 * (10.0 - 9.09) / 30.0).abs() < 1e-12,
            "{rated}"
        );
        // For Black to move (depth 1) the same games count the other way.
        let mut b = node(2, 1, 10, 0, 0);
        b.expected = n.expected;
        assert!((b.stats_value(&p) + rated).abs() < 1e-12);
        // A search score becomes the prior, worth S games.
        n.search = Some(score_to_value(100));
        let with_search = n.stats_value(&p);
        let expect = (2.0 * 0.91 + p.search_games * score_to_value(100)) / (10.0 + p.search_games);
        assert!((with_search - expect).abs() < 1e-12);
        assert!((score_to_value(100) - 0.1820).abs() < 1e-3);
        assert_eq!(score_to_value(29_990), 1.0);
    }

    #[test]
    fn lucky_single_game_loses_to_solid_line() {
        let p = ValueParams::default();
        let solid = Choice {
            mv: MoveCode(10),
            q: 0.19,
            games: 100,
            points: 100,
            exact: false,
            all_lost: false,
            engine: false,
        };
        let lucky = Choice {
            mv: MoveCode(20),
            q: 0.2,
            games: 1,
            points: 2,
            exact: false,
            all_lost: false,
            engine: false,
        };
        assert_eq!(
            best_choice(&[lucky, solid], 200, None, &p),
            Some(MoveCode(10))
        );
    }

    #[test]
    fn an_engine_move_needs_the_margin_over_the_game_moves() {
        // A thin position: 5 of the side's points, one game move of value 0.
        let game = Choice {
            mv: MoveCode(10),
            q: 0.0,
            games: 5,
            points: 5,
            exact: false,
            all_lost: false,
            engine: false,
        };
        let engine = |cp: i32| Choice {
            mv: MoveCode(20),
            q: score_to_value(cp),
            games: 0,
            points: 0,
            exact: false,
            all_lost: false,
            engine: true,
        };
        let none = ValueParams {
            engine_margin: 0.0,
            ..ValueParams::default()
        };
        let margin = ValueParams {
            engine_margin: 25.0,
            ..none
        };
        // Claimed 15 cp better: chosen without a margin, not with 25 cp.
        assert_eq!(
            best_choice(&[game, engine(15)], 10, None, &none),
            Some(MoveCode(20))
        );
        assert_eq!(
            best_choice(&[game, engine(15)], 10, None, &margin),
            Some(MoveCode(10))
        );
        // Claimed 40 cp better: chosen with the margin too.
        assert_eq!(
            best_choice(&[game, engine(40)], 10, None, &margin),
            Some(MoveCode(20))
        );
        // Leaving the book (a searched deviation) pays the same margin.
        let leave = |d: i32, p| choose(&[game], 10, Some(Some(score_to_value(d))), p).1;
        assert_eq!(leave(15, &none), None);
        assert_eq!(leave(15, &margin), Some(MoveCode(10)));
        assert_eq!(leave(40, &margin), None);
        // The margin is taken in centipawns; a mate stays a mate.
        assert!((value_less_cp(score_to_value(40), 25.0) - score_to_value(15)).abs() < 1e-12);
        assert_eq!(value_less_cp(1.0, 25.0), 1.0);
        assert!(ValueParams {
            engine_margin: -1.0,
            ..none
        }
        .validate()
        .is_err());
    }

    #[test]
    fn no_book_move_when_all_lose() {
        let p = ValueParams::default();
        let bad = Choice {
            mv: MoveCode(10),
            q: -0.6,
            games: 50,
            points: 20,
            exact: false,
            all_lost: false,
            engine: false,
        };
        assert_eq!(best_choice(&[bad], 60, None, &p), None);
    }
}
