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
//!
//! A book whose graph exceeds half of its memory budget
//! ([`Book::graph_exceeds_budget`]) is checked within it: a position at a
//! time with its children (each value and choice recomputed from its
//! children's stored values, which holds exactly when a full re-evaluation
//! gives the stored values: a value depends on a child's value only one
//! ply deeper), what every position needs of the others sorted on disk by
//! its key, and the explorer's data one key range at a time (the games
//! replayed once, each passage through a row written to its range's file).

use std::collections::{HashMap, HashSet};

use anyhow::Result;

use shakmaty::{fen::Fen, CastlingMode, Chess, Position};

use super::build::filter::KeyFilter;
use super::db::stream::tail_listing;
use super::db::top_games::{mover_elo, rank_of, TopEntry, TopList};
use super::db::{Book, MoveRating};
use super::keys::{polyglot_key, Key, KeyMap, KeySet, MoveCode};
use super::pgn::{game::Counts, validate::next_key};
use super::sort::{Buckets, SortRecord, Sorter};
use super::values::minimax::node_value_with;

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

    /// The text `check` prints: the counts, the problems (the first 20, then
    /// how many more), whether the book is consistent.
    pub fn report(&self) -> String {
        let mut out = format!("positions: {}, moves: {}\n", self.positions, self.moves);
        for p in &self.problems {
            out.push_str(&format!("problem: {p}\n"));
        }
        if self.more_problems > 0 {
            out.push_str(&format!("... and {} more problems\n", self.more_problems));
        }
        out.push_str(if self.ok() {
            "book is consistent\n"
        } else {
            "book is NOT consistent\n"
        });
        out
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
    if let Some(memory) = book.memory_budget() {
        if book.graph_exceeds_budget()? {
            check_within(book, memory, &mut report)?;
            return Ok(report);
        }
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
    let mut replayed = Replayed::default();
    let cut = replay_games(book, |p| {
        if rows.contains(&p.key) {
            replayed.add(&p);
        }
        Ok(())
    })?;
    report_cut(cut, report);
    book.for_each_move_rating(|parent, m| replayed.check_rating(parent, m, report))?;
    replayed.check_tops(&stored, report);
    Ok(())
}

/// [`check_explorer`] within `memory`: the games replayed once, each
/// passage through a position that `rows` may hold written to the file of
/// its key range; then a range at a time (`ranges` of equal width), its
/// rows against the passages of its file, with the problems reported as
/// [`check_explorer`] would report them on the range alone.
fn check_explorer_within(
    book: &Book,
    report: &mut CheckReport,
    rows: KeyFilter,
    ranges: u64,
    temp: (&std::path::Path, &str),
) -> Result<()> {
    let width = u64::MAX / ranges;
    let range_of = |key: Key| (key.0 / width).min(ranges - 1);
    // Consecutive ranges share a file past EXPLORER_FILES (each range then
    // reads its file's passages of the others too).
    let per_file = ranges.div_ceil(EXPLORER_FILES);
    let mut passages: Buckets<Passage> = Buckets::new(
        ranges.div_ceil(per_file) as usize,
        temp.0,
        &format!("{}.check-explorer", temp.1),
    )?;
    let cut = replay_games(book, |p| {
        if rows.contains(p.key) {
            passages.push((range_of(p.key) / per_file) as usize, &p)?;
        }
        Ok(())
    })?;
    drop(rows);
    for i in 0..ranges {
        let lo = i * width;
        let hi = if i + 1 == ranges {
            u64::MAX
        } else {
            lo + width - 1
        };
        let mut stored: KeyMap<Key, TopList> = KeyMap::default();
        let mut damaged = Vec::new();
        book.for_each_top_in(Key(lo), Key(hi), |key, list| match list {
            Some(l) => {
                stored.insert(key, l);
            }
            None => damaged.push(key),
        })?;
        for key in damaged {
            report.problem(format!("{key}: its top games are not readable"));
        }
        let mut replayed = Replayed::default();
        let file = (i / per_file) as usize;
        // (`stored` holds this range's rows only.)
        passages.read(file, |p| {
            if stored.contains_key(&p.key) {
                replayed.add(&p);
            }
            Ok(())
        })?;
        if (i + 1) % per_file == 0 || i + 1 == ranges {
            passages.remove(file);
        }
        if i == 0 {
            report_cut(cut, report);
        }
        book.for_each_move_rating_in(Key(lo), Key(hi), |parent, m| {
            replayed.check_rating(parent, m, report)
        })?;
        replayed.check_tops(&stored, report);
    }
    Ok(())
}

/// A game's passage through a position: what the explorer's data of the
/// position holds of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Passage {
    key: Key,
    mv: MoveCode,
    /// The mover's rating.
    elo: Option<u32>,
    rank: u16,
    game: u64,
    copies: u32,
}

impl SortRecord for Passage {
    const SIZE: usize = 29;
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.0.to_le_bytes());
        out.extend_from_slice(&self.mv.0.to_le_bytes());
        out.push(u8::from(self.elo.is_some()));
        out.extend_from_slice(&self.elo.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.rank.to_le_bytes());
        out.extend_from_slice(&self.game.to_le_bytes());
        out.extend_from_slice(&self.copies.to_le_bytes());
    }
    fn read(b: &[u8]) -> Self {
        let u64_at = |i: usize| u64::from_le_bytes(le_bytes(b, i));
        let u32_at = |i: usize| u32::from_le_bytes(le_bytes(b, i));
        let u16_at = |i: usize| u16::from_le_bytes(le_bytes(b, i));
        Passage {
            key: Key(u64_at(0)),
            mv: MoveCode(u16_at(8)),
            elo: (b[10] != 0).then(|| u32_at(11)),
            rank: u16_at(15),
            game: u64_at(17),
            copies: u32_at(25),
        }
    }
}

/// Replays every game, calling `f` on each passage through a position (in
/// the games' order, each game's in its order); returns how many games
/// have fewer moves stored than they have.
fn replay_games(book: &Book, mut f: impl FnMut(Passage) -> Result<()>) -> Result<u64> {
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
            let ply = i as u64 + u64::from(black_first);
            f(Passage {
                key,
                mv: *code,
                elo: mover_elo(ply, g.white_elo, g.black_elo),
                rank,
                game: g.hash,
                copies: g.copies,
            })?;
            key = next_key(&mut pos, key, mv);
        }
        Ok(())
    })?;
    Ok(cut)
}

fn report_cut(cut: u64, report: &mut CheckReport) {
    if cut > 0 {
        report.problem(format!(
            "{cut} games have fewer moves stored than they have (the explorer gives their PGN cut)"
        ));
    }
}

/// The explorer's data as the games replayed give it, of some rows.
#[derive(Default)]
struct Replayed {
    tops: KeyMap<Key, TopList>,
    /// Per move: games, rating sum, rated games.
    edges: KeyMap<(Key, u16), (u32, u64, u32)>,
}

impl Replayed {
    fn add(&mut self, p: &Passage) {
        for _ in 0..p.copies {
            let e = self.edges.entry((p.key, p.mv.0)).or_default();
            e.0 += 1;
            if let Some(r) = p.elo {
                e.1 += u64::from(r);
                e.2 += 1;
            }
            let entry = TopEntry {
                mv: p.mv,
                rank: p.rank,
                game: p.game,
            };
            self.tops.entry(p.key).or_default().add(entry, e.0 - 1);
        }
    }

    fn check_rating(&self, parent: Key, m: MoveRating, report: &mut CheckReport) {
        let (_, sum, rated) = self
            .edges
            .get(&(parent, m.mv.0))
            .copied()
            .unwrap_or_default();
        if (m.rating_sum, m.rated) != (sum, rated) {
            report.problem(format!(
                "{parent} {}: rating sum {} over {} games, the games give {sum} over {rated}",
                m.mv.uci(false),
                m.rating_sum,
                m.rated
            ));
        }
    }

    fn check_tops(&self, stored: &KeyMap<Key, TopList>, report: &mut CheckReport) {
        for (key, list) in stored {
            let fresh = self.tops.get(key).map(TopList::trimmed).unwrap_or_default();
            if *list != fresh {
                report.problem(format!(
                    "{key}: top games {:?}, the games give {:?}",
                    list.marked(),
                    fresh.marked()
                ));
            }
        }
    }
}

/// At most this many files of passages at once (each open while the games
/// are replayed).
const EXPLORER_FILES: u64 = 256;

/// The `N` bytes at `b[i..]` of a record this module wrote itself (so
/// long enough), for `from_le_bytes`.
fn le_bytes<const N: usize>(b: &[u8], i: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[i..i + N]);
    a
}

/// What a row of the explorer's check holds (its stored and replayed top
/// lists, its moves' rating sums), about: the key ranges are sized by it.
const EXPLORER_BYTES_PER_ROW: u64 = 1_000;

/// One fact about a position, sorted by the position's key: the position
/// itself (`NODE`), a parent link into it (`LINK`) or a move into it
/// (`MOVE`), in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Fact {
    key: i64,
    kind: u8,
    parent: i64,
    counts: (u32, u32, u32),
    /// NODE: [`IN_TAIL`], [`NO_EVIDENCE`]; MOVE: 1 for an engine move.
    flags: u8,
}

const NODE: u8 = 0;
const LINK: u8 = 1;
const MOVE: u8 = 2;
/// A position of a single-game tail (not a row).
const IN_TAIL: u8 = 1;
/// A position without games and without a search score.
const NO_EVIDENCE: u8 = 2;

impl SortRecord for Fact {
    const SIZE: usize = 30;
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.to_le_bytes());
        out.push(self.kind);
        out.extend_from_slice(&self.parent.to_le_bytes());
        for c in [self.counts.0, self.counts.1, self.counts.2] {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.push(self.flags);
    }
    fn read(b: &[u8]) -> Self {
        let i64_at = |i: usize| i64::from_le_bytes(le_bytes(b, i));
        let u32_at = |i: usize| u32::from_le_bytes(le_bytes(b, i));
        Fact {
            key: i64_at(0),
            kind: b[8],
            parent: i64_at(9),
            counts: (u32_at(17), u32_at(21), u32_at(25)),
            flags: b[29],
        }
    }
}

fn counts_of(c: (u32, u32, u32)) -> Counts {
    Counts {
        white: c.0,
        draws: c.1,
        black: c.2,
    }
}

fn within(a: Counts, b: Counts) -> bool {
    a.white <= b.white && a.draws <= b.draws && a.black <= b.black
}

/// The facts of one position, gathered from the sorted facts.
#[derive(Default)]
struct Gathered {
    key: i64,
    nodes: Vec<((u32, u32, u32), u8)>,
    links: Vec<i64>,
    incoming: Counts,
    grown_into: bool,
}

/// [`check`] within `memory`: see the module's comment.
fn check_within(book: &Book, memory: u64, report: &mut CheckReport) -> Result<()> {
    let dir = match book.path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = book
        .path
        .file_name()
        .map_or_else(|| "book".into(), |n| n.to_string_lossy().into_owned());
    let mut facts: Sorter<Fact> = Sorter::new(memory / 8, &dir, &format!("{name}.check-facts"));
    // (prefix, 2 x game + 1 where a tail position needs the listing, + 0
    // where the index lists it).
    let mut listings: Sorter<(i64, i64)> =
        Sorter::new(memory / 16, &dir, &format!("{name}.check-tails"));
    book.for_each_tail_listing(|p, g| listings.push((p, 2 * g)))?;
    book.for_each_row_link(|child, parent| {
        facts.push(Fact {
            key: child.to_sql(),
            kind: LINK,
            parent: parent.to_sql(),
            counts: (0, 0, 0),
            flags: 0,
        })
    })?;
    let params = book.settings.params;
    let mut buf = Vec::new();
    let mut rows = 0u64;
    let explorer = !book.explorer_partial()?;
    // The rows' keys, for the explorer's check to tell which passages of
    // the games it needs (a false "yes" costs a record).
    let row_keys = explorer.then(|| KeyFilter::new(memory / 8));
    book.for_each_position(|p| {
        let Some(n) = p.node else {
            for m in p.moves {
                report.moves += 1;
                report.problem(format!("move from unknown position {}", m.parent));
            }
            return Ok(());
        };
        report.positions += 1;
        let mut flags = 0;
        if n.counts.total() == 0 && n.search.is_none() {
            flags |= NO_EVIDENCE;
        }
        match p.tail {
            Some((game, parent)) => {
                flags |= IN_TAIL;
                facts.push(Fact {
                    key: n.key.to_sql(),
                    kind: LINK,
                    parent: parent.to_sql(),
                    counts: (0, 0, 0),
                    flags: 0,
                })?;
                listings.push((tail_listing(n.key), 2 * game + 1))?;
            }
            None => {
                rows += 1;
                if let Some(f) = &row_keys {
                    f.insert(n.key);
                }
            }
        }
        facts.push(Fact {
            key: n.key.to_sql(),
            kind: NODE,
            parent: 0,
            counts: (n.counts.white, n.counts.draws, n.counts.black),
            flags,
        })?;
        let mut out = Counts::default();
        for m in p.moves {
            report.moves += 1;
            out.add(m.counts);
            let Some(child) = m.child else {
                continue;
            };
            if !p.children.iter().any(|c| c.0 == m.mv) {
                report.problem(format!("move {} -> unknown position {child}", m.parent));
                continue;
            }
            facts.push(Fact {
                key: child.to_sql(),
                kind: MOVE,
                parent: m.parent.to_sql(),
                counts: (m.counts.white, m.counts.draws, m.counts.black),
                flags: u8::from(m.grown),
            })?;
        }
        if !within(out, n.counts) {
            report.problem(format!(
                "{}: games leaving {out:?} exceed its count {:?}",
                n.key, n.counts
            ));
        }
        let kids = p.children.iter().map(|(mv, c)| (*mv, c));
        let (value, best) = node_value_with(n, kids, &params, &mut buf);
        if value.to_bits() != n.value.to_bits() {
            report.problem(format!(
                "{}: stored value {} but full re-evaluation gives {value}",
                n.key, n.value
            ));
        }
        if best != p.best {
            report.problem(format!(
                "{}: stored choice {:?} but full re-evaluation gives {best:?}",
                n.key, p.best
            ));
        }
        Ok(())
    })?;
    // Each position against what enters it.
    let mut starts = Counts::default();
    let mut finish = |g: &Gathered, report: &mut CheckReport| {
        let key = Key::from_sql(g.key);
        let in_tail = g.nodes.iter().filter(|n| n.1 & IN_TAIL != 0).count();
        if in_tail > 0 && in_tail < g.nodes.len() {
            report.problem(format!("position {key} is a row and in a tail"));
        }
        for &(c, flags) in &g.nodes {
            let c = counts_of(c);
            let inc = g.incoming;
            if !within(inc, c) {
                report.problem(format!(
                    "{key}: games entering {inc:?} exceed its count {c:?}"
                ));
                continue;
            }
            if flags & NO_EVIDENCE != 0 && g.grown_into {
                report.problem(format!(
                    "{key}: an engine move's position without games and without a search score"
                ));
            }
            starts.white += c.white - inc.white;
            starts.draws += c.draws - inc.draws;
            starts.black += c.black - inc.black;
        }
    };
    let mut g = Gathered::default();
    let mut any = false;
    facts.drain(|batch| {
        for f in batch {
            if !any || f.key != g.key {
                if any {
                    finish(&g, report);
                }
                g = Gathered {
                    key: f.key,
                    ..Gathered::default()
                };
                any = true;
            }
            match f.kind {
                NODE => g.nodes.push((f.counts, f.flags)),
                LINK => g.links.push(f.parent),
                _ => {
                    if !g.links.contains(&f.parent) {
                        report.problem(format!(
                            "move {} -> {} has no parent link",
                            Key::from_sql(f.parent),
                            Key::from_sql(f.key)
                        ));
                    }
                    g.incoming.add(counts_of(f.counts));
                    g.grown_into |= f.flags != 0;
                }
            }
        }
        Ok(())
    })?;
    if any {
        finish(&g, report);
    }
    // The tails index against the tail positions.
    let mut extra = 0u64;
    let mut prev: Option<(i64, i64, bool, bool)> = None;
    let mut settle = |e: (i64, i64, bool, bool), report: &mut CheckReport| match e {
        (p, game, false, true) => report.problem(format!(
            "a position of game {game}'s tail (key prefix {p}) is not in the tails index"
        )),
        (_, _, true, false) => extra += 1,
        _ => {}
    };
    listings.drain(|batch| {
        for &(p, code) in batch {
            let (game, needed) = (code >> 1, code & 1 == 1);
            let e = match prev {
                Some(e) if e.0 == p && e.1 == game => e,
                Some(e) => {
                    settle(e, report);
                    (p, game, false, false)
                }
                None => (p, game, false, false),
            };
            prev = Some((p, game, e.2 || !needed, e.3 || needed));
        }
        Ok(())
    })?;
    if let Some(e) = prev {
        settle(e, report);
    }
    if extra > 0 {
        report.problem(format!(
            "{extra} entries of the tails index list no tail position"
        ));
    }
    let t = book.totals()?;
    let expected = Counts {
        white: t.white_wins as u32,
        draws: (t.draws + t.unknown) as u32,
        black: t.black_wins as u32,
    };
    if starts != expected && book.settings.min_games <= 1 && !book.has_imported_counts()? {
        report.problem(format!(
            "games starting in the tree {starts:?} differ from the games table {expected:?}"
        ));
    }
    if let Some(row_keys) = row_keys {
        // Key ranges whose rows' explorer data fit a quarter of the budget.
        let ranges = (rows * EXPLORER_BYTES_PER_ROW)
            .div_ceil((memory / 4).max(1))
            .max(1);
        check_explorer_within(book, report, row_keys, ranges, (&dir, &name))?;
    }
    Ok(())
}
