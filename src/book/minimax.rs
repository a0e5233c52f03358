//! Node values: the formula, full evaluation, and incremental re-evaluation.
//!
//! Values are from the side to move's point of view, in [-1, 1]
//! (1 = win, 0 = draw). The formula (also in the README):
//!
//! * `s(n) = (W - L) / (N + K)`: game statistics of node `n` for its side to
//!   move, with `K` virtual draws as the prior.
//! * edge value `q(n -> c)`:
//!   * `-exact(c)` if `c` is checkmate (-1) or stalemate (0);
//!   * `-(N_c * v(c) + K * s(c)) / (N_c + K)` if `depth(c) > depth(n)`:
//!     the child's minimax value, trusted in proportion to its evidence;
//!   * `-s(c)` otherwise (an edge back to an earlier ply: statistics only,
//!     which is what makes repetition cycles terminate).
//! * the score of a move is `q - Z / sqrt(N_c + 1)` (a lower confidence
//!   bound; `q` itself for checkmate and stalemate, which need no evidence);
//!   the ranked move of `n` is the move with games and the highest score,
//!   leaving out moves whose games were all lost by the side that played them;
//! * `v(n) = exact(n)` if terminal; `s(n)` if `n` has no book moves with
//!   games; otherwise `max(D, q(ranked move))`, where `D` is the value of
//!   leaving the book (Buro's "best deviation", here a constant);
//! * the book's choice at `n` (`best`) is the ranked move among the moves
//!   with `q >= D`. None: leave the book.
//!
//! Because forward edges strictly increase depth, the value dependencies form
//! a DAG: evaluating nodes by decreasing depth is exact, and the incremental
//! pass processes dirty nodes in the same order, so both give bit-identical
//! results.

use std::collections::{BinaryHeap, HashSet};

use anyhow::{bail, Result};

use super::ingest::Counts;
use super::keys::{KeyMap, MoveCode};

/// The value formula's parameters. Stored in the book's meta table so every
/// evaluation of one book uses the same numbers.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ValueParams {
    /// `K`: virtual draws added to every node's statistics.
    pub prior_games: f64,
    /// `D`: value of leaving the book, the floor of every interior node.
    pub deviation: f64,
    /// `Z`: the `best` choice ranks moves by `q - Z / sqrt(N + 1)`.
    pub evidence_penalty: f64,
}

impl Default for ValueParams {
    fn default() -> Self {
        ValueParams {
            prior_games: 20.0,
            deviation: -0.3,
            evidence_penalty: 0.2,
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
        Ok(())
    }
}

/// What the formula needs to know about a node.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct NodeInfo {
    pub key: u64,
    /// Smallest ply at which a game reached it; `None` for imported positions
    /// not reachable from a known start (they carry no value).
    pub depth: Option<u32>,
    pub counts: Counts,
    pub exact: Option<f64>,
    pub value: f64,
}

impl NodeInfo {
    pub fn white_to_move(&self) -> Option<bool> {
        self.depth.map(|d| d % 2 == 0)
    }

    /// `s(n)`.
    pub fn stats_value(&self, p: &ValueParams) -> f64 {
        let (w, l) = match self.white_to_move() {
            Some(true) => (self.counts.white, self.counts.black),
            Some(false) => (self.counts.black, self.counts.white),
            None => return 0.0,
        };
        (f64::from(w) - f64::from(l)) / (f64::from(self.counts.total()) + p.prior_games)
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
    if cd > pd {
        let n = f64::from(child.counts.total());
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
    /// Checkmate or stalemate: `q` is exact and needs no evidence.
    pub exact: bool,
    /// Every game through the move was lost by the side that played it.
    pub all_lost: bool,
}

impl Choice {
    /// `q - Z / sqrt(N + 1)`: the lower-confidence score `best` ranks by.
    pub fn score(&self, p: &ValueParams) -> f64 {
        if self.exact {
            self.q
        } else {
            self.q - p.evidence_penalty / (f64::from(self.games) + 1.0).sqrt()
        }
    }
}

/// The move with games, not lost in all of them, and the highest
/// [`Choice::score`]; ties go to the lower move code so the result does not
/// depend on row order. A move that lost every game it was played in is
/// never ranked, however few games: against a deterministic opponent it would
/// lose the same way again (what makes a learning book never repeat a loss).
fn ranked<'a>(
    choices: impl IntoIterator<Item = &'a Choice>,
    p: &ValueParams,
) -> Option<&'a Choice> {
    let mut best: Option<(f64, &Choice)> = None;
    for c in choices.into_iter().filter(|c| c.games > 0 && !c.all_lost) {
        let score = c.score(p);
        let better = match best {
            None => true,
            Some((s, b)) => score > s || (score == s && c.mv < b.mv),
        };
        if better {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `best`: the ranked move among those whose `q` beats leaving the book.
pub fn best_choice(choices: &[Choice], p: &ValueParams) -> Option<MoveCode> {
    ranked(choices.iter().filter(|c| c.q >= p.deviation), p).map(|c| c.mv)
}

/// `v(n)` and the `best` move from the node and its children `(move, child)`.
pub fn node_value<'a>(
    node: &NodeInfo,
    children: impl IntoIterator<Item = (MoveCode, &'a NodeInfo)>,
    p: &ValueParams,
) -> (f64, Option<MoveCode>) {
    let mut choices = Vec::new();
    for (mv, child) in children {
        if let Some(q) = edge_value(node.depth, child, p) {
            choices.push(Choice {
                mv,
                q,
                games: child.counts.total(),
                exact: child.exact.is_some(),
                all_lost: all_lost(node, child),
            });
        }
    }
    let best = best_choice(&choices, p);
    // A node is worth what the book plays there: the move with the best
    // evidence-penalised score, valued at its `q`. (The plain maximum of the
    // `q`s is biased upwards by whichever rare move was luckiest.)
    let max = ranked(&choices, p).map(|c| c.q);
    let (v, best) = if node.depth.is_none() {
        (0.0, None)
    } else if let Some(e) = node.exact {
        (e, None)
    } else {
        match max {
            Some(m) => (m.max(p.deviation), best),
            None => (node.stats_value(p), None),
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
    pub index: KeyMap<u64, u32>,
    /// Children of node `i`: `edges[offsets[i]..offsets[i + 1]]`.
    pub offsets: Vec<u32>,
    pub edges: Vec<(MoveCode, u32)>,
}

impl Graph {
    /// Builds the graph from nodes and `(parent, move, child)` edges; edges
    /// whose ends are unknown are ignored.
    pub fn new(nodes: Vec<NodeInfo>, mut edge_list: Vec<(u64, MoveCode, u64)>) -> Graph {
        let index: KeyMap<u64, u32> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.key, i as u32))
            .collect();
        edge_list.sort_unstable();
        let mut offsets = vec![0u32; nodes.len() + 1];
        let mut edges = Vec::with_capacity(edge_list.len());
        let mut resolved: Vec<(u32, MoveCode, u32)> = edge_list
            .into_iter()
            .filter_map(|(p, mv, c)| Some((*index.get(&p)?, mv, *index.get(&c)?)))
            .collect();
        resolved.sort_unstable_by_key(|&(p, mv, _)| (p, mv));
        for &(p, _, _) in &resolved {
            offsets[p as usize + 1] += 1;
        }
        for i in 0..nodes.len() {
            offsets[i + 1] += offsets[i];
        }
        edges.extend(resolved.into_iter().map(|(_, mv, c)| (mv, c)));
        let best = vec![None; nodes.len()];
        Graph {
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

    /// Full evaluation: every node, by decreasing depth.
    pub fn evaluate(&mut self, p: &ValueParams) {
        let mut order: Vec<u32> = (0..self.nodes.len() as u32).collect();
        // Unknown depth sorts last; its value does not depend on children.
        order.sort_unstable_by_key(|&i| {
            std::cmp::Reverse(self.nodes[i as usize].depth.map_or(-1, i64::from))
        });
        for i in order {
            let i = i as usize;
            let (v, best) = {
                let node = &self.nodes[i];
                let kids = self
                    .children(i)
                    .iter()
                    .map(|&(mv, c)| (mv, &self.nodes[c as usize]));
                node_value(node, kids, p)
            };
            self.nodes[i].value = v;
            self.best[i] = best;
        }
    }
}

/// Storage as the incremental pass needs it.
pub trait Tree {
    /// A node and its stored `best` move.
    fn node(&mut self, key: u64) -> Result<Option<(NodeInfo, Option<MoveCode>)>>;
    /// `(move, child)` for every book move of `key` with a known child.
    fn children(&mut self, key: u64) -> Result<Vec<(MoveCode, NodeInfo)>>;
    /// Key and depth of every position with a book move into `key`.
    fn parents(&mut self, key: u64) -> Result<Vec<(u64, Option<u32>)>>;
    fn set_value(&mut self, key: u64, value: f64, best: Option<MoveCode>) -> Result<()>;
}

/// A node whose `best` move changed during re-evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct ChoiceChange {
    pub key: u64,
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
    dirty: impl IntoIterator<Item = (u64, Option<u32>)>,
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

    fn node(key: u64, depth: u32, w: u32, d: u32, b: u32) -> NodeInfo {
        NodeInfo {
            key,
            depth: Some(depth),
            counts: Counts {
                white: w,
                draws: d,
                black: b,
            },
            exact: None,
            value: 0.0,
        }
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
            (1, MoveCode(1), 2),
            (2, MoveCode(2), 3),
            (3, MoveCode(3), 1),
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
    fn lucky_single_game_loses_to_solid_line() {
        let p = ValueParams::default();
        let solid = Choice {
            mv: MoveCode(10),
            q: 0.19,
            games: 100,
            exact: false,
            all_lost: false,
        };
        let lucky = Choice {
            mv: MoveCode(20),
            q: 0.2,
            games: 1,
            exact: false,
            all_lost: false,
        };
        assert_eq!(best_choice(&[lucky, solid], &p), Some(MoveCode(10)));
    }

    #[test]
    fn no_book_move_when_all_lose() {
        let p = ValueParams::default();
        let bad = Choice {
            mv: MoveCode(10),
            q: -0.6,
            games: 50,
            exact: false,
            all_lost: false,
        };
        assert_eq!(best_choice(&[bad], &p), None);
    }
}
