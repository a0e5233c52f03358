//! The search: iterative deepening with aspiration windows around a
//! principal variation search, quiescence, and the usual pruning. One
//! thread; a search limited by nodes is deterministic (the node budget is
//! checked at every node, the clock is not consulted).

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use shakmaty::{Color, Move, MoveList, Position as _, Role};

use super::{
    eval::{evaluate, see_value},
    net::{Accumulators, Network},
    params::Weights,
    position::Position,
    tt::{from_to, pack, Bound, Tt},
};

mod see;
use see::gives_check;
pub use see::see;

pub const MAX_PLY: usize = 128;
pub const MATE: i32 = 30_000;
pub const INF: i32 = 31_000;
/// Scores beyond this are mates.
pub const MATE_BOUND: i32 = MATE - MAX_PLY as i32;

/// What the GUI asked for in `go`.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    pub depth: Option<i32>,
    pub nodes: Option<u64>,
    pub movetime: Option<u64>,
    pub wtime: Option<u64>,
    pub btime: Option<u64>,
    pub winc: Option<u64>,
    pub binc: Option<u64>,
    pub movestogo: Option<u64>,
    pub infinite: bool,
    pub ponder: bool,
    /// Root moves to consider (UCI `searchmoves`); empty: all.
    pub searchmoves: Vec<Move>,
}

/// One line of progress (a UCI `info`).
#[derive(Clone, Debug)]
pub struct Info {
    pub depth: i32,
    pub seldepth: i32,
    pub score: i32,
    pub nodes: u64,
    pub time: Duration,
    pub hashfull: u32,
    pub pv: Vec<Move>,
}

#[derive(Clone, Debug)]
pub struct SearchResult {
    pub best: Option<Move>,
    pub ponder: Option<Move>,
    pub score: i32,
    pub depth: i32,
    pub nodes: u64,
}

/// `score` in UCI terms: `cp N` or `mate N` (moves, negative when mated).
pub fn uci_score(score: i32) -> String {
    if score >= MATE_BOUND {
        format!("mate {}", (MATE - score + 1) / 2)
    } else if score <= -MATE_BOUND {
        format!("mate -{}", (MATE + score) / 2)
    } else {
        format!("cp {score}")
    }
}

/// The searcher's state kept between searches (table, move-ordering history).
pub struct Searcher {
    pub weights: Weights,
    tt: Tt,
    history: Box<[[[i32; 64]; 64]; 2]>,
    counter: Box<[[u16; 64]; 64]>,
    lmr: Box<[[i32; 64]; 64]>,
    /// The (`search_lmr_base_x100`, `search_lmr_divisor_x100`) `lmr` was built from.
    lmr_built: (i32, i32),
    /// Time to keep in reserve per move (UCI `Move Overhead`).
    pub move_overhead: Duration,
    /// The learned evaluation, used instead of the weights' when set (the
    /// weights' search parameters stay).
    net: Option<Arc<Network>>,
}

struct Stack {
    killers: [u16; 2],
    eval: i32,
    mv: u16,
}

/// One search in progress.
struct Search<'a> {
    s: &'a mut Searcher,
    /// The moves searched at the root (all legal ones unless `searchmoves`).
    root_moves: MoveList,
    stop: &'a AtomicBool,
    /// While set (pondering), the clock is not consulted.
    ponder: &'a AtomicBool,
    start: Instant,
    hard: Option<Duration>,
    node_limit: Option<u64>,
    nodes: u64,
    seldepth: i32,
    stopped: bool,
    /// Keys of the positions before the current node (game history first).
    keys: Vec<u64>,
    /// Index in `keys` of the last null move: repetitions do not cross it.
    null_barrier: Vec<usize>,
    stack: Vec<Stack>,
    pv: Vec<Vec<Move>>,
    /// The net's accumulators of the positions on the current line, by ply.
    accs: Option<(Arc<Network>, Accumulators)>,
}

impl Searcher {
    pub fn new(hash_mb: usize, weights: Weights) -> Searcher {
        let mut s = Searcher {
            weights,
            tt: Tt::new(hash_mb),
            history: Box::new([[[0; 64]; 64]; 2]),
            counter: Box::new([[0; 64]; 64]),
            lmr: Box::new([[0; 64]; 64]),
            lmr_built: (i32::MIN, i32::MIN),
            move_overhead: Duration::from_millis(30),
            net: None,
        };
        s.refresh_lmr();
        s
    }

    /// Replaces the weights (evaluation and search parameters).
    pub fn set_weights(&mut self, weights: Weights) {
        self.weights = weights;
        self.refresh_lmr();
    }

    /// Rebuilds the late-move-reduction table if its parameters changed
    /// (`weights` is public, so every search checks).
    fn refresh_lmr(&mut self) {
        let key = (
            self.weights.search_lmr_base_x100,
            self.weights.search_lmr_divisor_x100,
        );
        if key == self.lmr_built {
            return;
        }
        let base = f64::from(key.0) / 100.0;
        let divisor = f64::from(key.1.max(1)) / 100.0;
        for (d, row) in self.lmr.iter_mut().enumerate() {
            for (m, r) in row.iter_mut().enumerate() {
                *r = if d == 0 || m == 0 {
                    0
                } else {
                    (base + (d as f64).ln() * (m as f64).ln() / divisor) as i32
                };
            }
        }
        self.lmr_built = key;
    }

    pub fn resize(&mut self, hash_mb: usize) {
        self.tt = Tt::new(hash_mb);
    }

    /// Forget everything learnt from earlier searches (UCI `ucinewgame`).
    pub fn clear(&mut self) {
        self.tt.clear();
        self.history.iter_mut().flatten().for_each(|r| r.fill(0));
        self.counter.iter_mut().for_each(|r| r.fill(0));
    }

    /// Evaluates with `net` from now on (`None`: the weights' evaluation);
    /// the table is cleared, its evaluations being the other one's.
    pub fn set_net(&mut self, net: Option<Arc<Network>>) {
        self.net = net;
        self.tt.clear();
    }

    pub fn net(&self) -> Option<&Arc<Network>> {
        self.net.as_ref()
    }

    /// The static evaluation, side to move's view (the net's from scratch when set).
    pub fn evaluate(&self, pos: &Position) -> i32 {
        match &self.net {
            Some(net) => net.evaluate_position(&pos.chess),
            None => evaluate(&pos.chess, &self.weights),
        }
    }

    /// Searches `root`; `history` holds the keys of the game's earlier
    /// positions (for repetitions). `info` is called after every iteration.
    pub fn search(
        &mut self,
        root: &Position,
        history: &[u64],
        limits: &Limits,
        stop: &AtomicBool,
        ponder: &AtomicBool,
        info: &mut dyn FnMut(&Info),
    ) -> SearchResult {
        let start = Instant::now();
        self.refresh_lmr();
        self.tt.new_search();
        let (soft, hard) = deadlines(limits, root.turn(), self.move_overhead);
        let max_depth = limits
            .depth
            .unwrap_or(MAX_PLY as i32 - 1)
            .clamp(1, MAX_PLY as i32 - 1);
        let mut search = Search {
            s: self,
            root_moves: MoveList::new(),
            stop,
            ponder,
            start,
            hard,
            node_limit: limits.nodes,
            nodes: 0,
            seldepth: 0,
            stopped: false,
            keys: history.to_vec(),
            null_barrier: vec![0],
            stack: (0..MAX_PLY + 4)
                .map(|_| Stack {
                    killers: [0; 2],
                    eval: 0,
                    mv: 0,
                })
                .collect(),
            pv: vec![Vec::new(); MAX_PLY + 1],
            accs: None,
        };
        if let Some(net) = &search.s.net {
            let mut accs = Accumulators::new(net, MAX_PLY + 4);
            accs.refresh(net, 0, &root.chess);
            search.accs = Some((Arc::clone(net), accs));
        }
        let mut root_moves = root.legal_moves();
        if !limits.searchmoves.is_empty() {
            root_moves.retain(|m| limits.searchmoves.contains(m));
        }
        search.root_moves = root_moves.clone();
        let mut result = SearchResult {
            best: root_moves.first().copied(),
            ponder: None,
            score: 0,
            depth: 0,
            nodes: 0,
        };
        if root_moves.is_empty() {
            return result;
        }
        let mut score = 0;
        for depth in 1..=max_depth {
            search.seldepth = 0;
            let mut delta = search.s.weights.search_aspiration_window;
            let (mut alpha, mut beta) = if depth >= search.s.weights.search_aspiration_depth {
                ((score - delta).max(-INF), (score + delta).min(INF))
            } else {
                (-INF, INF)
            };
            loop {
                let s = search.negamax(root, alpha, beta, depth, 0, false);
                if search.stopped {
                    break;
                }
                if s <= alpha {
                    beta = (alpha + beta) / 2;
                    alpha = (s - delta).max(-INF);
                } else if s >= beta {
                    beta = (s + delta).min(INF);
                } else {
                    score = s;
                    break;
                }
                delta += delta / 2;
            }
            // A stopped iteration still counts if it improved the root move.
            let pv = search.pv[0].clone();
            if search.stopped && (depth == 1 || pv.first().copied() == result.best) {
                if depth == 1 && !pv.is_empty() {
                    result.best = pv.first().copied();
                }
                break;
            }
            if let Some(&best) = pv.first() {
                result.best = Some(best);
                result.ponder = pv.get(1).copied();
            }
            if search.stopped {
                break;
            }
            result.score = score;
            result.depth = depth;
            info(&Info {
                depth,
                seldepth: search.seldepth,
                score,
                nodes: search.nodes,
                time: start.elapsed(),
                hashfull: search.s.tt.hashfull(),
                pv,
            });
            let pondering = search.ponder.load(Ordering::Relaxed);
            if let Some(soft) = soft {
                if !pondering && start.elapsed() >= soft.mul_f64(0.55) {
                    break;
                }
            }
            if score.abs() >= MATE_BOUND
                && depth > 8
                && limits.depth.is_none()
                && !limits.infinite
                && !pondering
            {
                // A forced mate found with margin: more depth will not change the move.
                if (MATE - score.abs()) < depth - 4 {
                    break;
                }
            }
        }
        result.nodes = search.nodes;
        result
    }
}

/// (soft, hard) time budgets: stop iterating after the soft one, abort at the hard one.
fn deadlines(
    limits: &Limits,
    turn: Color,
    overhead: Duration,
) -> (Option<Duration>, Option<Duration>) {
    if limits.infinite {
        return (None, None);
    }
    if let Some(mt) = limits.movetime {
        let t = Duration::from_millis(mt)
            .saturating_sub(overhead)
            .max(Duration::from_millis(1));
        return (None, Some(t));
    }
    let (time, inc) = match turn {
        Color::White => (limits.wtime, limits.winc.unwrap_or(0)),
        Color::Black => (limits.btime, limits.binc.unwrap_or(0)),
    };
    let Some(time) = time else {
        return (None, None);
    };
    let usable = time.saturating_sub(overhead.as_millis() as u64).max(1);
    let mtg = limits.movestogo.unwrap_or(30).clamp(1, 50);
    let soft = (usable / mtg + inc * 3 / 4).min(usable / 2).max(1);
    let hard = (soft * 4).min(usable * 3 / 4).max(1);
    (
        Some(Duration::from_millis(soft)),
        Some(Duration::from_millis(hard)),
    )
}

#[inline]
fn to_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        score + ply as i32
    } else if score <= -MATE_BOUND {
        score - ply as i32
    } else {
        score
    }
}

#[inline]
fn from_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        score - ply as i32
    } else if score <= -MATE_BOUND {
        score + ply as i32
    } else {
        score
    }
}

/// Does a stored score with this bound settle the window?
#[inline]
fn cuts(bound: Bound, score: i32, alpha: i32, beta: i32) -> bool {
    match bound {
        Bound::Exact => true,
        Bound::Lower => score >= beta,
        Bound::Upper => score <= alpha,
    }
}

#[inline]
fn is_quiet(m: &Move) -> bool {
    !m.is_capture() && !m.is_promotion()
}

const TT_MOVE: i32 = 1 << 30;
const GOOD_CAPTURE: i32 = 1 << 28;
const KILLER: i32 = 1 << 27;
const COUNTER: i32 = (1 << 27) - 1000;
const BAD_CAPTURE: i32 = -(1 << 28);
const HISTORY_MAX: i32 = 16_384;

impl Search<'_> {
    /// The static evaluation of `pos`, the position at `ply` of the line.
    #[inline]
    fn evaluate(&self, pos: &Position, ply: usize) -> i32 {
        match &self.accs {
            Some((net, accs)) => {
                let v = accs.evaluate(net, ply, pos.turn());
                // The tests search with this check: every incremental
                // evaluation along the search equals one from scratch.
                #[cfg(test)]
                assert_eq!(v, net.evaluate_position(&pos.chess), "ply {ply}");
                v
            }
            None => evaluate(&pos.chess, &self.s.weights),
        }
    }

    /// `m` played on `pos` at `ply`: the accumulators of `ply + 1`.
    #[inline]
    fn played(&mut self, pos: &Position, m: Move, ply: usize) {
        if let Some((net, accs)) = &mut self.accs {
            accs.play(net, ply, &pos.chess, m);
        }
    }

    #[inline]
    fn check_limits(&mut self) {
        if let Some(limit) = self.node_limit {
            if self.nodes >= limit {
                self.stopped = true;
            }
        }
        if self.nodes & 1023 == 0 {
            if self.stop.load(Ordering::Relaxed) {
                self.stopped = true;
            }
            if let Some(hard) = self.hard {
                if !self.ponder.load(Ordering::Relaxed) && self.start.elapsed() >= hard {
                    self.stopped = true;
                }
            }
        }
    }

    fn is_repetition(&self, key: u64, halfmoves: u32) -> bool {
        let n = self.keys.len();
        let barrier = self.null_barrier.last().copied().unwrap_or(0);
        let limit = (halfmoves as usize).min(n - barrier.min(n));
        let mut i = 2;
        while i <= limit {
            if self.keys[n - i] == key {
                return true;
            }
            i += 2;
        }
        false
    }

    fn order(
        &self,
        pos: &Position,
        moves: &MoveList,
        tt_move: u16,
        ply: usize,
    ) -> Vec<(Move, i32)> {
        let us = pos.turn() as usize;
        let killers = self.stack[ply].killers;
        let counter = if ply > 0 {
            let (f, t) = from_to(self.stack[ply - 1].mv);
            self.s.counter[f][t]
        } else {
            0
        };
        moves
            .iter()
            .map(|&m| {
                let code = pack(m);
                let score = if code == tt_move {
                    TT_MOVE
                } else if !is_quiet(&m) {
                    let victim = match m {
                        Move::EnPassant { .. } => see_value(Role::Pawn),
                        _ => m.capture().map_or(0, see_value),
                    } + m.promotion().map_or(0, see_value);
                    let mvv_lva = victim * 16 - see_value(m.role()) / 100;
                    if m.promotion().is_some_and(|p| p != Role::Queen) {
                        BAD_CAPTURE + mvv_lva
                    } else if see(pos, m) >= 0 {
                        GOOD_CAPTURE + mvv_lva
                    } else {
                        BAD_CAPTURE + mvv_lva
                    }
                } else if code == killers[0] {
                    KILLER
                } else if code == killers[1] {
                    KILLER - 1
                } else if code == counter {
                    COUNTER
                } else {
                    let (f, t) = from_to(code);
                    self.s.history[us][f][t]
                };
                (m, score)
            })
            .collect()
    }

    fn update_history(&mut self, us: Color, code: u16, bonus: i32) {
        let (f, t) = from_to(code);
        let h = &mut self.s.history[us as usize][f][t];
        *h += bonus - *h * bonus.abs() / HISTORY_MAX;
    }

    fn negamax(
        &mut self,
        pos: &Position,
        mut alpha: i32,
        beta: i32,
        depth: i32,
        ply: usize,
        cut_null: bool,
    ) -> i32 {
        let pv_node = beta - alpha > 1;
        self.pv[ply].clear();
        if depth <= 0 {
            return self.qsearch(pos, alpha, beta, ply, 0);
        }
        self.nodes += 1;
        self.check_limits();
        if self.stopped {
            return 0;
        }
        self.seldepth = self.seldepth.max(ply as i32);
        let root = ply == 0;
        if !root {
            if pos.chess.halfmoves() >= 100
                || pos.chess.is_insufficient_material()
                || self.is_repetition(pos.key, pos.chess.halfmoves())
            {
                return 0;
            }
            if ply >= MAX_PLY - 1 {
                return self.evaluate(pos, ply);
            }
            // Mate distance pruning.
            let a = alpha.max(-MATE + ply as i32);
            let b = beta.min(MATE - ply as i32 - 1);
            if a >= b {
                return a;
            }
        }

        let hit = self.s.tt.probe(pos.key);
        let tt_move = hit.map_or(0, |h| h.mv);
        if let Some(h) = hit {
            let score = from_tt(h.score, ply);
            if !pv_node && !root && h.depth >= depth && cuts(h.bound, score, alpha, beta) {
                return score;
            }
        }

        let in_check = pos.is_check();
        let eval = if in_check {
            -INF
        } else if let Some(h) = hit {
            h.eval
        } else {
            self.evaluate(pos, ply)
        };
        self.stack[ply].eval = eval;
        self.stack[ply + 1].killers = [0; 2];
        let improving = !in_check && ply >= 2 && eval > self.stack[ply - 2].eval;

        let w = &self.s.weights;
        let (rfp_depth, rfp_margin, rfp_improving) = (
            w.search_rfp_depth,
            w.search_rfp_margin,
            w.search_rfp_improving,
        );
        let (nmp_depth, nmp_base, nmp_divisor) = (
            w.search_nmp_depth,
            w.search_nmp_base,
            w.search_nmp_divisor.max(1),
        );
        let (nmp_eval_divisor, nmp_eval_max) =
            (w.search_nmp_eval_divisor.max(1), w.search_nmp_eval_max);
        let iir_depth = w.search_iir_depth;
        let (lmp_depth, lmp_base, lmp_per_depth_sq) = (
            w.search_lmp_depth,
            w.search_lmp_base,
            w.search_lmp_per_depth_sq_x100,
        );
        let (futility_depth, futility_base, futility_per_depth) = (
            w.search_futility_depth,
            w.search_futility_base,
            w.search_futility_per_depth,
        );
        let (see_depth, see_capture) = (w.search_see_depth, w.search_see_capture);
        let (lmr_depth, lmr_moves, lmr_history_divisor) = (
            w.search_lmr_depth.max(2),
            w.search_lmr_moves.max(1) as usize,
            w.search_lmr_history_divisor.max(1),
        );
        if !pv_node && !in_check {
            // Reverse futility: far above beta at low depth.
            let margin = rfp_margin * depth - if improving { rfp_improving } else { 0 };
            if depth <= rfp_depth && eval - margin >= beta && eval.abs() < MATE_BOUND {
                return eval;
            }
            // Null move, not in pawn endings (zugzwang).
            let us = pos.turn();
            let board = pos.chess.board();
            let pieces = (board.by_color(us) & !board.pawns() & !board.kings()).any();
            if depth >= nmp_depth && !cut_null && eval >= beta && pieces {
                let r = nmp_base
                    + depth / nmp_divisor
                    + ((eval - beta) / nmp_eval_divisor).min(nmp_eval_max);
                if let Some(null) = pos.play_null() {
                    if let Some((_, accs)) = &mut self.accs {
                        accs.pass(ply);
                    }
                    self.keys.push(pos.key);
                    self.null_barrier.push(self.keys.len());
                    self.stack[ply].mv = 0;
                    let score =
                        -self.negamax(&null, -beta, -beta + 1, depth - 1 - r, ply + 1, true);
                    self.null_barrier.pop();
                    self.keys.pop();
                    if self.stopped {
                        return 0;
                    }
                    if score >= beta {
                        return if score >= MATE_BOUND { beta } else { score };
                    }
                }
            }
        }

        let moves = if root {
            self.root_moves.clone()
        } else {
            pos.legal_moves()
        };
        if moves.is_empty() {
            return if in_check { -MATE + ply as i32 } else { 0 };
        }
        // Without a table move, search a little shallower (internal iterative reduction).
        let depth = if tt_move == 0 && depth >= iir_depth {
            depth - 1
        } else {
            depth
        };
        let mut scored = self.order(pos, &moves, tt_move, ply);
        let us = pos.turn();
        let mut best = -INF;
        let mut best_move = 0u16;
        let mut searched = 0usize;
        let mut quiets_tried: Vec<u16> = Vec::new();
        let original_alpha = alpha;
        self.keys.push(pos.key);

        for i in 0..scored.len() {
            // Selection sort: the next best-scored move.
            let mut j = i;
            for k in i + 1..scored.len() {
                if scored[k].1 > scored[j].1 {
                    j = k;
                }
            }
            scored.swap(i, j);
            let (m, order_score) = scored[i];
            let code = pack(m);
            let quiet = is_quiet(&m);
            let check = gives_check(pos, m);

            if !root && best > -MATE_BOUND && !in_check {
                if quiet && !check {
                    // Late move pruning and futility pruning of quiet moves.
                    let lmp = (lmp_base + lmp_per_depth_sq * depth * depth / 100).max(0) as usize
                        / if improving { 1 } else { 2 };
                    if depth <= lmp_depth && searched >= lmp {
                        continue;
                    }
                    if depth <= futility_depth
                        && eval + futility_base + futility_per_depth * depth <= alpha
                    {
                        continue;
                    }
                }
                if !quiet
                    && depth <= see_depth
                    && order_score < GOOD_CAPTURE
                    && see(pos, m) < -see_capture * depth
                {
                    continue;
                }
            }

            let child = pos.play(m);
            self.played(pos, m, ply);
            self.stack[ply].mv = code;
            let extension = i32::from(check && ply < 2 * MAX_PLY / 3);
            let new_depth = depth - 1 + extension;
            let mut score;
            if searched == 0 {
                score = -self.negamax(&child, -beta, -alpha, new_depth, ply + 1, false);
            } else {
                let mut r = 0;
                if depth >= lmr_depth
                    && quiet
                    && !in_check
                    && !check
                    && searched >= lmr_moves + usize::from(pv_node)
                {
                    r = self.s.lmr[depth.min(63) as usize][searched.min(63)];
                    if !pv_node {
                        r += 1;
                    }
                    if order_score >= COUNTER {
                        r -= 1;
                    }
                    if improving {
                        r -= 1;
                    }
                    r -= order_score.clamp(-HISTORY_MAX, HISTORY_MAX) / lmr_history_divisor;
                    r = r.clamp(0, new_depth - 1);
                }
                score = -self.negamax(&child, -alpha - 1, -alpha, new_depth - r, ply + 1, false);
                // A stopped search returns 0, which is no reason to search again
                // (and a node budget is kept exactly).
                if score > alpha && r > 0 && !self.stopped {
                    score = -self.negamax(&child, -alpha - 1, -alpha, new_depth, ply + 1, false);
                }
                if score > alpha && score < beta && !self.stopped {
                    score = -self.negamax(&child, -beta, -alpha, new_depth, ply + 1, false);
                }
            }
            searched += 1;
            if self.stopped {
                self.keys.pop();
                return 0;
            }
            if score > best {
                best = score;
                if score > alpha {
                    best_move = code;
                    alpha = score;
                    let (head, tail) = self.pv.split_at_mut(ply + 1);
                    head[ply].clear();
                    head[ply].push(m);
                    head[ply].extend_from_slice(&tail[0]);
                    if alpha >= beta {
                        if quiet {
                            let bonus = (depth * depth).min(400) * 32;
                            self.update_history(us, code, bonus);
                            for &q in &quiets_tried {
                                self.update_history(us, q, -bonus);
                            }
                            let k = &mut self.stack[ply].killers;
                            if k[0] != code {
                                k[1] = k[0];
                                k[0] = code;
                            }
                            if ply > 0 {
                                let (f, t) = from_to(self.stack[ply - 1].mv);
                                self.s.counter[f][t] = code;
                            }
                        }
                        break;
                    }
                }
            }
            if quiet {
                quiets_tried.push(code);
            }
        }
        self.keys.pop();
        if searched == 0 {
            // Everything was pruned: the position is at least as bad as alpha.
            return alpha;
        }
        let bound = if best >= beta {
            Bound::Lower
        } else if alpha > original_alpha {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.s
            .tt
            .store(pos.key, best_move, to_tt(best, ply), eval, depth, bound);
        best
    }

    fn qsearch(&mut self, pos: &Position, mut alpha: i32, beta: i32, ply: usize, qply: u32) -> i32 {
        self.nodes += 1;
        self.check_limits();
        if self.stopped {
            return 0;
        }
        self.pv[ply].clear();
        self.seldepth = self.seldepth.max(ply as i32);
        if ply >= MAX_PLY - 1 {
            return self.evaluate(pos, ply);
        }
        if pos.chess.is_insufficient_material() {
            return 0;
        }
        let hit = self.s.tt.probe(pos.key);
        if let Some(h) = hit {
            let score = from_tt(h.score, ply);
            if beta - alpha == 1 && cuts(h.bound, score, alpha, beta) {
                return score;
            }
        }
        let in_check = pos.is_check();
        let eval = if in_check {
            -INF
        } else {
            let e = hit.map_or_else(|| self.evaluate(pos, ply), |h| h.eval);
            if e >= beta {
                return e;
            }
            alpha = alpha.max(e);
            e
        };
        let moves = pos.legal_moves();
        if moves.is_empty() {
            return if in_check { -MATE + ply as i32 } else { 0 };
        }
        let mut candidates: Vec<(Move, i32)> = Vec::with_capacity(16);
        for &m in &moves {
            if in_check {
                let s = if m.is_capture() {
                    m.capture().map_or(100, see_value) * 16
                } else {
                    0
                };
                candidates.push((m, s));
                continue;
            }
            if m.is_promotion() && m.promotion() != Some(Role::Queen) {
                continue;
            }
            if !is_quiet(&m) {
                let victim = match m {
                    Move::EnPassant { .. } => see_value(Role::Pawn),
                    _ => m.capture().map_or(0, see_value),
                };
                // Delta pruning: even winning the piece cannot reach alpha.
                if m.promotion().is_none() && eval + victim + self.s.weights.search_qs_delta < alpha
                {
                    continue;
                }
                if see(pos, m) < -self.s.weights.search_qs_see {
                    continue;
                }
                candidates.push((m, victim * 16 - see_value(m.role()) / 100 + 1000));
            } else if qply == 0 && gives_check(pos, m) && see(pos, m) >= 0 {
                candidates.push((m, 0));
            }
        }
        candidates.sort_unstable_by_key(|c| std::cmp::Reverse(c.1));
        let mut best = eval;
        let mut best_move = 0;
        self.keys.push(pos.key);
        for (m, _) in candidates {
            let child = pos.play(m);
            self.played(pos, m, ply);
            let score = -self.qsearch(&child, -beta, -alpha, ply + 1, qply + 1);
            if self.stopped {
                self.keys.pop();
                return 0;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    best_move = pack(m);
                    if alpha >= beta {
                        break;
                    }
                }
            }
        }
        self.keys.pop();
        if best >= beta {
            let stored_eval = if in_check { 0 } else { eval };
            self.s.tt.store(
                pos.key,
                best_move,
                to_tt(best, ply),
                stored_eval,
                0,
                Bound::Lower,
            );
        }
        best
    }
}

#[cfg(test)]
mod tests;
