//! `check`: is the book consistent?
//!
//! * every move's child is a stored position, linked back to the parent
//!   (`positions.parent` or the `parents` table);
//! * per position and result, the games entering it through moves never
//!   exceed its own count, and neither do the games leaving it;
//! * summed over positions, the games that start at a position (its count
//!   minus what enters it) equal the games table, per result;
//! * every value and `best` choice equals a full re-evaluation, bit for bit;
//! * single-game tails: no tail position is also a row, and every tail
//!   position is listed under its game;
//! * the explorer's data: every move's rating sums and every row's top
//!   games equal what the games replayed give, and every game's moves are
//!   the whole game.

use std::collections::{HashMap, HashSet};

use anyhow::Result;

use shakmaty::{fen::Fen, CastlingMode, Chess, Position};

use super::db::top_games::{mover_elo, rank_of, TopEntry, TopList};
use super::db::Book;
use super::ingest::{next_key, Counts};
use super::keys::{polyglot_key, Key, KeyMap, KeySet};

#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub positions: usize,
    pub moves: usize,
    pub problems: Vec<String>,
    /// Problems beyond the first 20 are only counted.
    pub more_problems: usize,
}

impl CheckReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
    fn problem(&mut self, p: String) {
        if self.problems.len() < 20 {
            self.problems.push(p);
        } else {
            self.more_problems += 1;
        }
    }
}

pub fn check(book: &Book) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let integrity = book.integrity_check()?;
    if integrity != "ok" {
        report.problem(format!("SQLite integrity_check: {integrity}"));
    }
    for p in book.tail_problems()? {
        report.problem(p);
    }
    let graph = book.load_graph()?;
    report.positions = graph.nodes.len();
    // Parent links, as the incremental pass finds them.
    let linked = book.parent_links()?;
    let mut incoming: HashMap<Key, Counts> = HashMap::new();
    let mut outgoing: HashMap<Key, Counts> = HashMap::new();
    // Positions an engine move leads to.
    let mut grown_into: HashSet<Key> = HashSet::new();
    book.for_each_move(|m| {
        report.moves += 1;
        let (parent, c) = (m.parent, m.counts);
        if !graph.index.contains_key(&parent) {
            report.problem(format!("move from unknown position {parent}"));
            return;
        }
        outgoing.entry(parent).or_default().add(c);
        if let Some(child) = m.child {
            if !graph.index.contains_key(&child) {
                report.problem(format!("move {parent} -> unknown position {child}"));
                return;
            }
            if !linked.contains(&(child, parent)) {
                report.problem(format!("move {parent} -> {child} has no parent link"));
            }
            if m.grown {
                grown_into.insert(child);
            }
            incoming.entry(child).or_default().add(c);
        }
    })?;
    let mut starts = Counts::default();
    for n in &graph.nodes {
        let inc = incoming.get(&n.key).copied().unwrap_or_default();
        let out = outgoing.get(&n.key).copied().unwrap_or_default();
        let within =
            |a: Counts, b: Counts| a.white <= b.white && a.draws <= b.draws && a.black <= b.black;
        if !within(inc, n.counts) {
            report.problem(format!(
                "{}: games entering {inc:?} exceed its count {:?}",
                n.key, n.counts
            ));
            continue;
        }
        if !within(out, n.counts) {
            report.problem(format!(
                "{}: games leaving {out:?} exceed its count {:?}",
                n.key, n.counts
            ));
        }
        // (A position without games is also an imported one's.)
        if n.counts.total() == 0 && grown_into.contains(&n.key) && n.search.is_none() {
            report.problem(format!(
                "{}: an engine move's position without games and without a search score",
                n.key
            ));
        }
        starts.white += n.counts.white - inc.white;
        starts.draws += n.counts.draws - inc.draws;
        starts.black += n.counts.black - inc.black;
    }
    let t = book.totals()?;
    let expected = Counts {
        white: t.white_wins as u32,
        draws: (t.draws + t.unknown) as u32,
        black: t.black_wins as u32,
    };
    // A book built with --min-games dropped rows, and counts imported from
    // an ABK book have no games behind them: games then start (and end)
    // anywhere, and only the other checks hold.
    if starts != expected && book.settings.min_games <= 1 && !book.has_imported_counts()? {
        report.problem(format!(
            "games starting in the tree {starts:?} differ from the games table {expected:?}"
        ));
    }
    if !book.explorer_partial()? {
        check_explorer(book, &mut report)?;
    }
    let mut fresh = graph.clone();
    fresh.evaluate(&book.settings.params);
    for (i, (stored, new)) in graph.nodes.iter().zip(&fresh.nodes).enumerate() {
        if stored.value.to_bits() != new.value.to_bits() {
            report.problem(format!(
                "{}: stored value {} but full re-evaluation gives {}",
                stored.key, stored.value, new.value
            ));
        }
        if graph.best[i] != fresh.best[i] {
            report.problem(format!(
                "{}: stored choice {:?} but full re-evaluation gives {:?}",
                stored.key, graph.best[i], fresh.best[i]
            ));
        }
    }
    Ok(report)
}

/// The explorer's data against the games replayed: each move row's rating
/// sums, each row's top list (a [`TopList`] of every game through it, which
/// does not depend on their order), and each game's moves whole.
fn check_explorer(book: &Book, report: &mut CheckReport) -> Result<()> {
    let mut stored: KeyMap<Key, TopList> = KeyMap::default();
    let mut damaged = Vec::new();
    book.for_each_top(|key, list| match list {
        Some(l) => {
            stored.insert(key, l);
        }
        None => damaged.push(key),
    })?;
    for key in damaged {
        report.problem(format!("{key}: its top games are not readable"));
    }
    let rows: KeySet<Key> = stored.keys().copied().collect();
    let mut tops: KeyMap<Key, TopList> = KeyMap::default();
    let mut edges: KeyMap<(Key, u16), (u32, u64, u32)> = KeyMap::default();
    let mut cut = 0u64;
    book.for_each_game_moves(|g| {
        if !g.whole {
            cut += 1;
        }
        let Some(moves) = g.moves else {
            return Ok(());
        };
        let mut pos = match &g.fen {
            None => Chess::default(),
            Some(f) => match f
                .parse::<Fen>()
                .ok()
                .and_then(|f| f.into_position::<Chess>(CastlingMode::Standard).ok())
            {
                Some(p) => p,
                None => return Ok(()),
            },
        };
        let black_first = pos.turn().is_black();
        let rank = rank_of(g.white_elo, g.black_elo);
        let mut key = polyglot_key(&pos);
        for (i, code) in moves.iter().enumerate() {
            let Some(mv) = code.to_move(&pos) else {
                break;
            };
            if rows.contains(&key) {
                let ply = i as u64 + u64::from(black_first);
                let elo = mover_elo(ply, g.white_elo, g.black_elo);
                for _ in 0..g.copies {
                    let e = edges.entry((key, code.0)).or_default();
                    e.0 += 1;
                    if let Some(r) = elo {
                        e.1 += u64::from(r);
                        e.2 += 1;
                    }
                    let entry = TopEntry {
                        mv: *code,
                        rank,
                        game: g.hash,
                    };
                    tops.entry(key).or_default().add(entry, e.0 - 1);
                }
            }
            key = next_key(&mut pos, key, mv);
        }
        Ok(())
    })?;
    if cut > 0 {
        report.problem(format!(
            "{cut} games have fewer moves stored than they have (the explorer gives their PGN cut)"
        ));
    }
    book.for_each_move_rating(|parent, m| {
        let (_, sum, rated) = edges.get(&(parent, m.mv.0)).copied().unwrap_or_default();
        if (m.rating_sum, m.rated) != (sum, rated) {
            report.problem(format!(
                "{parent} {}: rating sum {} over {} games, the games give {sum} over {rated}",
                m.mv.uci(false),
                m.rating_sum,
                m.rated
            ));
        }
    })?;
    for (key, list) in &stored {
        let fresh = tops.get(key).map(TopList::trimmed).unwrap_or_default();
        if *list != fresh {
            report.problem(format!(
                "{key}: top games {:?}, the games give {:?}",
                list.marked(),
                fresh.marked()
            ));
        }
    }
    Ok(())
}
