//! Which positions of a book to analyse: every position with at least
//! `min_games` games (interior: the position and its best move outside the
//! book are searched) and every book move's child of those with fewer games
//! (the analysis's leaves: the position is searched). Found by walking the
//! book from the start position, so each target comes with its board, and
//! taken in the order in which its answer can change what is played (see
//! [`Target::priority`]), so that a run stopped early spent its time where
//! it matters.

use std::collections::{HashMap, HashSet, VecDeque};

use anyhow::Result;
use shakmaty::{Chess, Position};

use super::Budget;
use crate::book::{
    choose::choice_of,
    db::Analysis,
    keys::{Key, KeyMap, KeySet, MoveCode},
    values::minimax::option_weights,
    Book,
};

/// A position to search.
#[derive(Clone, Debug)]
pub struct Target {
    pub key: Key,
    pub pos: Chess,
    /// Search its best move outside the book too.
    pub interior: bool,
    /// The book moves with games: the deviation search leaves them out.
    pub book_moves: Vec<MoveCode>,
    /// How much its answer can change what is played: `(reach + share) *
    /// (0.2 + closeness)`, `reach` the probability that two players of the
    /// book's `weighted` choices reach it from the start, `share` the
    /// games through it over the start's, `closeness` in `[0, 1]` how near
    /// its options are to each other (interior) or its move is to its
    /// parent's choice (leaf), as the fourth root of the ratio of their
    /// `weighted` probabilities.
    pub priority: f64,
    /// A leaf: the interior position whose book move leads here, and the move.
    pub via: Option<(Key, MoveCode)>,
    /// An interior target's leaf children, scored by its own MultiPV
    /// search ([`group_leaves`]).
    pub leaves: Vec<Target>,
}

impl Target {
    /// The legal moves that are not book moves (what the deviation search
    /// searches).
    pub fn outside_moves(&self) -> Vec<shakmaty::Move> {
        self.pos
            .legal_moves()
            .into_iter()
            .filter(|m| !self.book_moves.contains(&MoveCode::from_move(m)))
            .collect()
    }
}

/// For MultiPV analysis: each leaf whose parent (the interior position that
/// added it) is a target too goes into the parent's `leaves`, to be scored
/// by the parent's search rather than searched alone; only where `owns`
/// holds for both, so that a shard (which owns the keys it searches) never
/// scores a position another shard keeps the history of.
pub fn group_leaves(todo: Vec<Target>, owns: impl Fn(Key) -> bool) -> Vec<Target> {
    let parents: HashSet<Key> = todo
        .iter()
        .filter(|t| t.interior && owns(t.key))
        .map(|t| t.key)
        .collect();
    let mut grouped: HashMap<Key, Vec<Target>> = HashMap::new();
    let mut out = Vec::with_capacity(todo.len());
    for t in todo {
        match t.via {
            Some((parent, _)) if !t.interior && owns(t.key) && parents.contains(&parent) => {
                grouped.entry(parent).or_default().push(t);
            }
            _ => out.push(t),
        }
    }
    for t in &mut out {
        if let Some(leaves) = grouped.remove(&t.key) {
            t.leaves = leaves;
        }
    }
    out
}

/// The positions still to analyse, and how many are already analysed with
/// this engine and budget.
#[derive(Debug, Default)]
pub struct Targets {
    pub todo: Vec<Target>,
    pub done: usize,
}

/// A book move with games and its child.
struct Child {
    mv: MoveCode,
    pos: Chess,
    key: Key,
    games: u32,
    /// The child is checkmate or stalemate.
    exact: bool,
    /// The probability `weighted` plays the move.
    p: f64,
}

/// The book moves of `pos` that have games, with their children, and the
/// largest and second largest probability `weighted` gives an option here
/// (leaving the book included).
fn book_children(book: &Book, pos: &Chess, key: Key) -> Result<(Vec<Child>, f64, f64)> {
    let moves = book.moves(key)?;
    let probabilities = match book.position(key)? {
        Some(parent) => {
            let choices: Vec<_> = moves.iter().filter_map(choice_of).collect();
            option_weights(&parent, &choices, &book.settings.params)
        }
        None => Vec::new(),
    };
    let (mut first, mut second) = (0.0f64, 0.0f64);
    for &(_, p) in &probabilities {
        if p > first {
            second = first;
            first = p;
        } else if p > second {
            second = p;
        }
    }
    let mut out = Vec::new();
    for m in moves {
        if m.q.is_none() || m.child_games == 0 || m.counts.total() == 0 {
            continue;
        }
        let (Some(child), Some(mv)) = (m.child, m.mv.to_move(pos)) else {
            continue;
        };
        let mut next = pos.clone();
        next.play_unchecked(mv);
        let p = probabilities
            .iter()
            .find(|(o, _)| *o == Some(m.mv))
            .map_or(0.0, |o| o.1);
        out.push(Child {
            mv: m.mv,
            pos: next,
            key: child,
            games: m.child_games,
            exact: m.child_exact,
            p,
        });
    }
    Ok((out, first, second))
}

/// `closeness` of [`Target::priority`] from a ratio of probabilities.
fn closeness(p: f64, top: f64) -> f64 {
    if top > 0.0 {
        (p / top).clamp(0.0, 1.0).powf(0.25)
    } else {
        0.0
    }
}

fn priority(reach: f64, share: f64, closeness: f64) -> f64 {
    (reach + share) * (0.2 + closeness)
}

/// Collects targets, each position once.
struct Walk<'a> {
    book: &'a Book,
    min_games: u32,
    engine: &'a str,
    budget: &'a str,
    /// Positions already a target or queued.
    seen: SeenKeys,
    /// The probability that `weighted` play reaches a position.
    reach: HashMap<Key, f64>,
    /// `reach` kept only for the positions queued to expand (breadth
    /// first: what reaches a position after its expansion is never read).
    reach_queued_only: bool,
    /// Games through the start position (at least 1).
    root_games: f64,
    /// Results not in the book that answer a target too.
    known: Option<&'a KeyMap<Key, Analysis>>,
    /// Children deeper than this are no targets.
    max_ply: Option<u32>,
    /// The ply of the position being expanded.
    ply: u32,
    out: Targets,
}

/// The keys a walk has met, in little memory: those of the breadth-first
/// levels before the one being found in one sorted vector (8 bytes a key),
/// the level being found in a hash set. A hash set of every key would take
/// about twice as much, three times while it grows: most of the planning's
/// memory on a 10 M-game book.
#[derive(Default)]
struct SeenKeys {
    /// Sorted; disjoint from `current`.
    earlier: Vec<Key>,
    current: KeySet<Key>,
}

impl SeenKeys {
    /// Whether `key` is new (and now met).
    fn insert(&mut self, key: Key) -> bool {
        self.earlier.binary_search(&key).is_err() && self.current.insert(key)
    }

    /// Moves the keys met since the last call into `earlier`: merged from
    /// the back in place, so no more than the new keys is held twice.
    fn close_level(&mut self) {
        let mut level: Vec<Key> = std::mem::take(&mut self.current).into_iter().collect();
        level.sort_unstable();
        let mut old = self.earlier.len();
        self.earlier.reserve_exact(level.len());
        self.earlier.resize(old + level.len(), Key(0));
        let mut out = self.earlier.len();
        while let Some(&last) = level.last() {
            out -= 1;
            if old > 0 && self.earlier[old - 1] > last {
                old -= 1;
                self.earlier[out] = self.earlier[old];
            } else {
                self.earlier[out] = last;
                level.pop();
            }
        }
    }
}

/// Whether a stored analysis answers what `engine` at `budget` would: by
/// the same engine at a budget at least as large of the same kind (a deeper
/// budget upgrades a shallower one; nothing is searched twice at one
/// budget), and for an interior position made with the same book moves.
pub fn answered(stored: &Analysis, t: &Target, engine: &str, budget: &str) -> bool {
    let deep_enough = stored.budget == budget
        || matches!(
            (Budget::parse(&stored.budget), Budget::parse(budget)),
            (Some(have), Some(want)) if have.covers(&want)
        );
    stored.engine == engine
        && deep_enough
        && (!t.interior || (stored.interior && stored.book_moves as usize == t.book_moves.len()))
}

impl Walk<'_> {
    fn new<'a>(book: &'a Book, min_games: u32, engine: &'a str, budget: &'a str) -> Walk<'a> {
        Walk {
            book,
            min_games,
            engine,
            budget,
            seen: SeenKeys::default(),
            reach: HashMap::new(),
            reach_queued_only: false,
            root_games: 1.0,
            known: None,
            max_ply: None,
            ply: 0,
            out: Targets::default(),
        }
    }

    /// Adds `t` unless it is already [`answered`]. A leaf analysed before
    /// as an interior position is searched as one again: a deeper search
    /// of the position alone would drop its deviation.
    fn add(&mut self, mut t: Target) -> Result<()> {
        let stored = match self.known.and_then(|k| k.get(&t.key)) {
            Some(a) => Some(a.clone()),
            None => self.book.analysis(t.key)?,
        };
        if !t.interior && stored.as_ref().is_some_and(|a| a.interior) {
            let (kids, _, _) = book_children(self.book, &t.pos, t.key)?;
            t.interior = true;
            t.book_moves = kids.iter().map(|k| k.mv).collect();
        }
        let done = stored
            .as_ref()
            .is_some_and(|a| answered(a, &t, self.engine, self.budget));
        if done {
            self.out.done += 1;
        } else {
            self.out.todo.push(t);
        }
        Ok(())
    }

    /// Adds `pos` as an interior target and its children with fewer than
    /// `min_games` games as leaves; returns its other children not seen yet.
    fn expand(&mut self, pos: Chess, key: Key, games: u32) -> Result<Vec<(Chess, Key, u32)>> {
        let (kids, first, second) = book_children(self.book, &pos, key)?;
        let book_moves = kids.iter().map(|k| k.mv).collect();
        let reach = if self.reach_queued_only {
            self.reach.remove(&key)
        } else {
            self.reach.get(&key).copied()
        }
        .unwrap_or(0.0);
        // Past `max_ply` a child with many games is searched as a leaf.
        let expand_children = self.max_ply.is_none_or(|m| self.ply < m);
        let mut busy = Vec::new();
        for c in kids {
            if !self.reach_queued_only {
                *self.reach.entry(c.key).or_insert(0.0) += reach * c.p;
            } else if let Some(r) = self.reach.get_mut(&c.key) {
                *r += reach * c.p;
            }
            if c.exact || !self.seen.insert(c.key) {
                continue;
            }
            if c.games >= self.min_games && expand_children {
                if self.reach_queued_only {
                    // Its first share: every later one finds it queued.
                    self.reach.insert(c.key, 0.0 + reach * c.p);
                }
                busy.push((c.pos, c.key, c.games));
            } else {
                let share = f64::from(c.games) / self.root_games;
                self.add(Target {
                    key: c.key,
                    pos: c.pos,
                    interior: false,
                    book_moves: Vec::new(),
                    priority: priority(reach * c.p, share, closeness(c.p, first)),
                    via: Some((key, c.mv)),
                    leaves: Vec::new(),
                })?;
            }
        }
        self.add(Target {
            key,
            pos,
            interior: true,
            book_moves,
            priority: priority(
                reach,
                f64::from(games) / self.root_games,
                closeness(second, first),
            ),
            via: None,
            leaves: Vec::new(),
        })?;
        Ok(busy)
    }
}

/// Walks the book breadth first from the start position, then orders the
/// targets by [`Target::priority`], highest first.
pub fn find(book: &Book, min_games: u32, engine: &str, budget: &str) -> Result<Targets> {
    find_within(book, min_games, None, engine, budget, &KeyMap::default())
}

/// [`find`], to at most `max_ply` plies from the start, a target also
/// answered by a row of `known` (results not yet in the book: a shard's
/// journal).
pub fn find_within(
    book: &Book,
    min_games: u32,
    max_ply: Option<u32>,
    engine: &str,
    budget: &str,
    known: &KeyMap<Key, Analysis>,
) -> Result<Targets> {
    let mut todo = Vec::new();
    let done = walk_from_start(book, min_games, max_ply, engine, budget, known, |found| {
        todo.append(found);
        Ok(())
    })?;
    // Stable: equal priorities stay breadth first.
    todo.sort_by(|a, b| b.priority.total_cmp(&a.priority));
    Ok(Targets { todo, done })
}

/// Walks the book breadth first from the start position, handing `found`
/// the targets not yet answered of each position expanded (its leaves in
/// the order of its moves, then itself), in the order found; returns how
/// many targets were answered already. Holds the keys seen and the reach
/// of the positions queued, not the targets.
pub(super) fn walk_from_start(
    book: &Book,
    min_games: u32,
    max_ply: Option<u32>,
    engine: &str,
    budget: &str,
    known: &KeyMap<Key, Analysis>,
    mut found: impl FnMut(&mut Vec<Target>) -> Result<()>,
) -> Result<usize> {
    let mut walk = Walk::new(book, min_games, engine, budget);
    walk.known = Some(known);
    walk.max_ply = max_ply;
    walk.reach_queued_only = true;
    let root = Chess::default();
    let root_key = crate::book::keys::polyglot_key(&root);
    let Some(node) = book.position(root_key)? else {
        return Ok(0);
    };
    let root_games = node.counts.total();
    walk.root_games = f64::from(root_games.max(1));
    walk.reach.insert(root_key, 1.0);
    let mut queue = VecDeque::new();
    if root_games >= min_games.max(1) {
        queue.push_back((root, root_key, root_games, 0));
        walk.seen.insert(root_key);
    }
    while let Some((pos, key, games, ply)) = queue.pop_front() {
        if ply != walk.ply {
            // Every key met so far is of this level or an earlier one.
            walk.seen.close_level();
        }
        walk.ply = ply;
        queue.extend(
            walk.expand(pos, key, games)?
                .into_iter()
                .map(|(p, k, g)| (p, k, g, ply + 1)),
        );
        found(&mut walk.out.todo)?;
        walk.out.todo.clear();
    }
    Ok(walk.out.done)
}

/// The targets along one game's positions (`positions`: the boards of the
/// game, start first): what a learned game adds or changes.
pub fn on_path(
    book: &Book,
    positions: &[Chess],
    min_games: u32,
    engine: &str,
    budget: &str,
) -> Result<Targets> {
    let mut walk = Walk::new(book, min_games, engine, budget);
    let mut expanded = HashSet::new();
    for pos in positions {
        let key = crate::book::keys::polyglot_key(pos);
        let Some(node) = book.position(key)? else {
            continue;
        };
        if node.counts.total() < min_games.max(1) || node.exact.is_some() || !expanded.insert(key) {
            continue;
        }
        walk.expand(pos.clone(), key, node.counts.total())?;
    }
    Ok(walk.out)
}

/// `positions` as leaf targets (the position searched, not its moves),
/// each once: the exits of an opening suite, say.
pub fn leaves(
    book: &Book,
    positions: &[(Key, Chess)],
    engine: &str,
    budget: &str,
) -> Result<Targets> {
    let mut walk = Walk::new(book, u32::MAX, engine, budget);
    for (key, pos) in positions {
        if walk.seen.insert(*key) {
            walk.add(Target {
                key: *key,
                pos: pos.clone(),
                interior: false,
                book_moves: Vec::new(),
                priority: 0.0,
                via: None,
                leaves: Vec::new(),
            })?;
        }
    }
    Ok(walk.out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn seen_keys_answer_as_a_hash_set_across_levels() {
        let mut rng = StdRng::seed_from_u64(7);
        let (mut seen, mut all) = (SeenKeys::default(), HashSet::new());
        for level in 0..12 {
            // Keys from a small range, so that many repeat within and across levels.
            for _ in 0..rng.random_range(0..400) {
                let key = Key(rng.random_range(0..2_000));
                assert_eq!(seen.insert(key), all.insert(key), "level {level} {key:?}");
            }
            seen.close_level();
            assert!(seen.current.is_empty());
            assert!(seen.earlier.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(seen.earlier.len(), all.len());
        }
    }
}
