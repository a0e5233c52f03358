//! Polyglot `.bin` export and import.
//!
//! A Polyglot book is a sequence of 16-byte big-endian entries
//! `(key u64, move u16, weight u16, learn u32)` sorted by key. The book
//! stores keys and moves in exactly this encoding (see [`crate::book::keys`]), so
//! export is a copy plus a weight.

use std::{collections::VecDeque, fs, io::Write, path::Path};

use anyhow::{bail, Context, Result};
use shakmaty::{CastlingMode, Chess, Position};

use super::suite::SideToMove;
use crate::atomic_file;
use crate::book::db::import::ImportedMove;
use crate::book::db::scan::StoredMove;
use crate::book::db::Book;
use crate::book::keys::{polyglot_key, Key, KeyMap, MoveCode};
use crate::book::pgn::game::Counts;
use crate::book::spill::Sorter;
use crate::book::values::minimax::{self, option_weights, NodeInfo};

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry {
    pub key: Key,
    pub mv: u16,
    pub weight: u16,
    pub learn: u32,
}

/// Where export weights come from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WeightMode {
    /// `weighted`'s probability of the move, times 10,000 ([`option_weights`]);
    /// moves less likely than leaving the book are left out.
    Value,
    /// The number of games (occurrences) with the move, capped at 65535.
    Games,
    /// As `polyglot make-book`: 2 per win and 1 per draw of the side that
    /// moved, `*` as a draw.
    Polyglot,
    /// The weights of an imported Polyglot book.
    Imported,
}

impl std::str::FromStr for WeightMode {
    type Err = String;
    fn from_str(s: &str) -> Result<WeightMode, String> {
        match s.to_ascii_lowercase().as_str() {
            "value" => Ok(WeightMode::Value),
            "games" => Ok(WeightMode::Games),
            "polyglot" => Ok(WeightMode::Polyglot),
            "imported" => Ok(WeightMode::Imported),
            _ => Err(format!(
                "unknown weight mode {s:?} (expected value, games, polyglot or imported)"
            )),
        }
    }
}

#[derive(Clone, Debug)]
pub struct ExportOptions {
    pub weights: WeightMode,
    /// Keep moves played in at least this many games (occurrences).
    pub min_games: u32,
    /// Keep moves from positions at most this deep (ply from the start).
    pub max_ply: Option<u32>,
    /// Keep `grow`'s engine moves (no games; weighed by value only).
    pub engine_moves: bool,
    /// Keep only the moves of positions where this side is to move
    /// (`--side`). The side is the parity of the position's depth, so with
    /// `White` or `Black` a move whose position has no known depth (one
    /// imported off the tree from the start position) is left out.
    pub side: SideToMove,
}

impl ExportOptions {
    /// Whether `--side` keeps the moves of a position at `depth` plies from
    /// the start (even: White to move).
    pub fn keeps_side(&self, depth: Option<u32>) -> bool {
        match (self.side, depth) {
            (SideToMove::Both, _) => true,
            (SideToMove::White, Some(d)) => d % 2 == 0,
            (SideToMove::Black, Some(d)) => d % 2 == 1,
            (_, None) => false,
        }
    }
}

pub fn read_bin(path: &Path) -> Result<Vec<Entry>> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() % 16 != 0 {
        bail!(
            "{} is not a Polyglot book: size {} is not a multiple of 16",
            path.display(),
            bytes.len()
        );
    }
    let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
    Ok(bytes
        .chunks_exact(16)
        .map(|c| Entry {
            key: Key(be(&c[0..8])),
            mv: be(&c[8..10]) as u16,
            weight: be(&c[10..12]) as u16,
            learn: be(&c[12..16]) as u32,
        })
        .collect())
}

/// A Polyglot `.bin` book in memory, read as GUIs read one: the entries of a
/// position, a move at random in proportion to its weight.
pub struct PolyglotBook {
    entries: KeyMap<Key, Vec<(MoveCode, u16)>>,
}

impl PolyglotBook {
    pub fn open(path: &Path) -> Result<PolyglotBook> {
        let mut entries: KeyMap<Key, Vec<(MoveCode, u16)>> = KeyMap::default();
        for e in read_bin(path)? {
            entries
                .entry(e.key)
                .or_default()
                .push((MoveCode(e.mv), e.weight));
        }
        Ok(PolyglotBook { entries })
    }

    /// The legal moves the book has for `pos` with their weights, highest
    /// weight first (entries that are not legal moves are ignored).
    pub fn moves(&self, pos: &Chess) -> Vec<(shakmaty::Move, u16)> {
        let mut out: Vec<(shakmaty::Move, u16)> = self
            .entries
            .get(&polyglot_key(pos))
            .map(|es| {
                es.iter()
                    .filter_map(|&(mv, w)| mv.to_move(pos).map(|m| (m, w)))
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|m| std::cmp::Reverse(m.1));
        out
    }

    /// The move with the highest weight (`None` if the position is not in
    /// the book or every weight is 0); the first in the file among equals.
    pub fn heaviest(&self, pos: &Chess) -> Option<shakmaty::Move> {
        self.moves(pos)
            .into_iter()
            .next()
            .filter(|m| m.1 > 0)
            .map(|m| m.0)
    }

    /// The move a GUI plays: at random, in proportion to the weights (`None`
    /// if the position is not in the book or every weight is 0).
    pub fn pick<R: rand::Rng>(&self, pos: &Chess, rng: &mut R) -> Option<shakmaty::Move> {
        let moves = self.moves(pos);
        let total: u32 = moves.iter().map(|m| u32::from(m.1)).sum();
        if total == 0 {
            return None;
        }
        let mut x = rng.random_range(0..total);
        for (m, w) in moves {
            if x < u32::from(w) {
                return Some(m);
            }
            x -= u32::from(w);
        }
        None
    }
}

/// Whether `path` names a Polyglot book (by its `.bin` extension) rather
/// than a learnbook SQLite book.
pub fn is_polyglot_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("bin"))
}

/// Writes entries sorted by key, then by weight (highest first), then move.
pub fn write_bin(path: &Path, entries: &mut [Entry]) -> Result<()> {
    entries.sort_by(|a, b| {
        a.key
            .cmp(&b.key)
            .then(b.weight.cmp(&a.weight))
            .then(a.mv.cmp(&b.mv))
    });
    atomic_file::write_with(path, |w| {
        for e in entries.iter() {
            w.write_all(&e.key.0.to_be_bytes())?;
            w.write_all(&e.mv.to_be_bytes())?;
            w.write_all(&e.weight.to_be_bytes())?;
            w.write_all(&e.learn.to_be_bytes())?;
        }
        Ok(())
    })
}

/// `weighted`'s probability of every book move, times 10,000 (at least 1
/// for a move it plays at all), from the whole book in memory.
fn value_weights(book: &Book) -> Result<KeyMap<(Key, u16), u16>> {
    let params = book.settings.params;
    let g = book.load_graph()?;
    let mut out = KeyMap::default();
    for (i, node) in g.nodes.iter().enumerate() {
        let kids = g
            .children(i)
            .iter()
            .map(|&(mv, c)| (mv, &g.nodes[c as usize]));
        node_weights(node, kids, &params, |mv, w| {
            out.insert((node.key, mv.0), w);
        });
    }
    Ok(out)
}

/// `weighted`'s probability of each move of `node` to one of `children`,
/// times 10,000 (at least 1 for a move it plays at all), handed to `f`.
fn node_weights<'a>(
    node: &NodeInfo,
    children: impl IntoIterator<Item = (MoveCode, &'a NodeInfo)>,
    params: &minimax::ValueParams,
    mut f: impl FnMut(MoveCode, u16),
) {
    let choices = minimax::choices(node, children, params);
    let options = option_weights(node, &choices, params);
    // A .bin cannot say "leave the book": a GUI plays one of the
    // position's entries whenever it has any. So a move less likely
    // than leaving (the analysis's own move scores better) is left
    // out, and where leaving is the choice the engine plays.
    let leave = options.iter().find(|o| o.0.is_none()).map_or(0.0, |o| o.1);
    for (mv, p) in options {
        if let Some(mv) = mv.filter(|_| p >= leave) {
            f(mv, (p * 10_000.0).round().max(1.0) as u16);
        }
    }
}

/// A move an export writes: the selection every format shares (`--weights`,
/// `--min-games`, `--max-ply`, `--side`, engine moves), with what the
/// formats other than Polyglot also need.
#[derive(Copy, Clone, Debug)]
pub struct SelectedMove {
    /// The position the move is played from.
    pub parent: Key,
    pub mv: MoveCode,
    /// The weight `--weights` gives it (never 0: weightless moves are not
    /// selected).
    pub weight: u16,
    /// The games with the move (White's wins, draws, Black's wins).
    pub counts: Counts,
    /// Plies from the start position to `parent`, where known.
    pub parent_depth: Option<u32>,
}

/// The moves an export writes, with their weights, in no particular order.
pub fn select_moves(book: &Book, opts: &ExportOptions) -> Result<Vec<SelectedMove>> {
    let mut out = Vec::new();
    for_each_selected(book, opts, |m| {
        out.push(m);
        Ok(())
    })?;
    Ok(out)
}

/// Calls `f` on each move an export writes, with its weight, in the order
/// of [`Book::for_each_move`]. Past half of the book's memory budget
/// ([`Book::graph_exceeds_budget`]) the value weights are computed a
/// position at a time instead of from the graph in memory: the same moves
/// and weights.
pub fn for_each_selected(
    book: &Book,
    opts: &ExportOptions,
    mut f: impl FnMut(SelectedMove) -> Result<()>,
) -> Result<()> {
    if !book.graph_exceeds_budget()? {
        let value_weights = match opts.weights {
            WeightMode::Value => value_weights(book)?,
            _ => KeyMap::default(),
        };
        let mut failed = None;
        book.for_each_move(|m| {
            if failed.is_some() {
                return;
            }
            let vw = value_weights.get(&(m.parent, m.mv.0)).copied();
            if let Some(s) = selection(&m, opts, vw) {
                if let Err(e) = f(s) {
                    failed = Some(e);
                }
            }
        })?;
        return failed.map_or(Ok(()), Err);
    }
    let params = book.settings.params;
    let mut weights: Vec<(MoveCode, u16)> = Vec::new();
    book.for_each_position(|p| {
        weights.clear();
        if let (WeightMode::Value, Some(node)) = (opts.weights, p.node) {
            let kids = p.children.iter().map(|(mv, c)| (*mv, c));
            node_weights(node, kids, &params, |mv, w| weights.push((mv, w)));
        }
        for m in p.moves {
            // The last weight of a move, as the graph's map keeps it.
            let vw = weights.iter().rev().find(|w| w.0 == m.mv).map(|w| w.1);
            if let Some(s) = selection(m, opts, vw) {
                f(s)?;
            }
        }
        Ok(())
    })
}

/// `m` as an export writes it (`None`: left out), `value_weight` its
/// weight by value where it has one.
fn selection(
    m: &StoredMove,
    opts: &ExportOptions,
    value_weight: Option<u16>,
) -> Option<SelectedMove> {
    let (w, d, b) = (m.counts.white, m.counts.draws, m.counts.black);
    let depth = m.parent_depth;
    let games = w + d + b;
    if let (Some(max), Some(dp)) = (opts.max_ply, depth) {
        if dp >= max {
            return None;
        }
    }
    if !opts.keeps_side(depth) {
        return None;
    }
    let weight: u32 = match opts.weights {
        WeightMode::Imported => m.weight.unwrap_or(0),
        WeightMode::Games => games.min(65535),
        WeightMode::Polyglot => {
            let wins = match depth {
                Some(dp) if dp % 2 == 1 => b,
                _ => w,
            };
            (2 * wins + d).min(65535)
        }
        WeightMode::Value => value_weight.unwrap_or(0).into(),
    };
    let enough = match opts.weights {
        WeightMode::Imported => true,
        // An engine move has no games: only its value speaks for it.
        WeightMode::Value if m.grown && games == 0 => opts.engine_moves,
        _ => games >= opts.min_games,
    };
    (enough && weight > 0).then_some(SelectedMove {
        parent: m.parent,
        mv: m.mv,
        weight: weight.min(65535) as u16,
        counts: m.counts,
        parent_depth: depth,
    })
}

/// The entries an export would write.
pub fn export_entries(book: &Book, opts: &ExportOptions) -> Result<Vec<Entry>> {
    Ok(select_moves(book, opts)?
        .into_iter()
        .map(|m| Entry {
            key: m.parent,
            mv: m.mv.0,
            weight: m.weight,
            learn: 0,
        })
        .collect())
}

/// `export --polyglot`: returns the number of entries written. Past half
/// of the book's memory budget the entries are sorted on disk beside the
/// book (an eighth of the budget in memory) instead of in memory: the same
/// file.
pub fn export(book: &Book, path: &Path, opts: &ExportOptions) -> Result<usize> {
    let memory = match book.memory_budget() {
        Some(m) if book.graph_exceeds_budget()? => m,
        _ => {
            let mut entries = export_entries(book, opts)?;
            write_bin(path, &mut entries)?;
            return Ok(entries.len());
        }
    };
    let dir = match book.path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = book
        .path
        .file_name()
        .map_or_else(|| "book".into(), |n| n.to_string_lossy().into_owned());
    // Sorted as write_bin sorts: key, then the highest weight, then move
    // (the key's order kept in i64 by flipping its top bit).
    let mut sorter: Sorter<(i64, i64)> =
        Sorter::new(memory / 8, &dir, &format!("{name}.export-sort"));
    for_each_selected(book, opts, |m| {
        let key = (m.parent.0 ^ (1 << 63)) as i64;
        let rest = (i64::from(u16::MAX - m.weight) << 16) | i64::from(m.mv.0);
        sorter.push((key, rest))
    })?;
    let mut n = 0;
    atomic_file::write_with(path, |w| {
        sorter
            .drain(|batch| {
                for &(key, rest) in batch {
                    let key = key as u64 ^ (1 << 63);
                    let weight = u16::MAX - (rest >> 16) as u16;
                    let mv = rest as u16;
                    w.write_all(&key.to_be_bytes())?;
                    w.write_all(&mv.to_be_bytes())?;
                    w.write_all(&weight.to_be_bytes())?;
                    w.write_all(&0u32.to_be_bytes())?;
                }
                n += batch.len();
                Ok(())
            })
            .map_err(|e| std::io::Error::other(format!("{e:#}")))
    })?;
    Ok(n)
}

/// What `import` did.
#[derive(Clone, Debug, Default)]
pub struct ImportSummary {
    pub entries: usize,
    /// Entries whose position was reached from the start position through
    /// book moves: their child positions are known.
    pub reached: usize,
    /// Entries whose move is not legal in the position reached for its key.
    pub illegal: usize,
}

/// `import --polyglot`: every entry becomes a move with its weight. Positions
/// reachable from the start position through book moves get their depth and
/// child keys; the rest are kept with unknown children (export still writes
/// them, minimax ignores them).
///
/// Memory (issue 53): the entries in parallel arrays, about 30 bytes an
/// entry (key, move, weight, child key, UCI, depth), plus 16 bytes a
/// position and the breadth-first queue; no map, no string per entry.
pub fn import(book: &mut Book, path: &Path) -> Result<ImportSummary> {
    let entries = ImportEntries::read(path)?;
    crate::peak_memory::trace("import: entries read");
    let mut walk = walk_from_start(&entries);
    crate::peak_memory::trace("import: breadth-first pass");
    let positions = walk.positions(&entries);
    let summary = ImportSummary {
        entries: entries.len(),
        reached: walk.uci.iter().filter(|u| u[0] != 0).count(),
        illegal: walk.illegal,
    };
    let Walk { child, uci, .. } = walk;
    crate::peak_memory::trace("import: positions listed");
    // In file order: the first move into a position links its parent. The
    // moves own the entries: they go once the moves are added.
    let moves = (0..entries.len()).map(move |i| {
        let mv = entries.moves[i];
        let (child, uci) = match uci_of(&uci[i]) {
            Some(u) => (Some(child[i]), u),
            None => (None, MoveCode(mv).to_string()),
        };
        ImportedMove {
            parent: entries.keys[i],
            mv: MoveCode(mv),
            uci,
            child,
            weight: entries.weights[i],
        }
    });
    book.add_imported(positions, moves)?;
    crate::peak_memory::trace("import: moves added");
    Ok(summary)
}

/// A `.bin`'s entries as `import` reads them: in file order (the order their
/// moves are added), and found by key through their order by key.
struct ImportEntries {
    keys: Vec<Key>,
    moves: Vec<u16>,
    weights: Vec<u16>,
    /// The entries' indices by key (file order within a key); empty when
    /// the file is sorted by key, as Polyglot books are.
    by_key: Vec<u32>,
}

impl ImportEntries {
    /// Reads `path` as [`read_bin`] does (the same errors), a buffer at a
    /// time rather than the whole file at once.
    fn read(path: &Path) -> Result<ImportEntries> {
        use std::io::Read;
        let cannot = || format!("cannot read {}", path.display());
        let file = fs::File::open(path).with_context(cannot)?;
        let size = file.metadata().with_context(cannot)?.len();
        if size % 16 != 0 {
            bail!(
                "{} is not a Polyglot book: size {} is not a multiple of 16",
                path.display(),
                size
            );
        }
        let n = usize::try_from(size / 16)?;
        if u32::try_from(n).is_err() {
            bail!("{} has more entries than import takes", path.display());
        }
        let (mut keys, mut moves, mut weights) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
        let mut e = [0u8; 16];
        for _ in 0..n {
            reader.read_exact(&mut e).with_context(cannot)?;
            let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
            keys.push(Key(be(&e[0..8])));
            moves.push(be(&e[8..10]) as u16);
            weights.push(be(&e[10..12]) as u16);
        }
        Ok(ImportEntries::new(keys, moves, weights))
    }

    /// The entries in file order, indexed by key if they are not sorted
    /// (at most `u32::MAX` of them).
    fn new(keys: Vec<Key>, moves: Vec<u16>, weights: Vec<u16>) -> ImportEntries {
        let mut by_key = Vec::new();
        if !keys.is_sorted() {
            by_key = (0..keys.len() as u32).collect();
            by_key.sort_by_key(|&i| keys[i as usize]);
        }
        ImportEntries {
            keys,
            moves,
            weights,
            by_key,
        }
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    /// The entry at `slot` of the order by key.
    fn at(&self, slot: usize) -> usize {
        if self.by_key.is_empty() {
            slot
        } else {
            self.by_key[slot] as usize
        }
    }

    fn key_at(&self, slot: usize) -> Key {
        self.keys[self.at(slot)]
    }

    /// The slots (in the order by key) of `key`'s entries.
    fn slots_of(&self, key: Key) -> std::ops::Range<usize> {
        let below = |k: Key| {
            if self.by_key.is_empty() {
                self.keys.partition_point(|&x| x < k)
            } else {
                self.by_key.partition_point(|&i| self.keys[i as usize] < k)
            }
        };
        let first = below(key);
        let mut end = first;
        while end < self.len() && self.key_at(end) == key {
            end += 1;
        }
        first..end
    }
}

/// What the breadth-first pass from the start position found, by entry (in
/// file order) unless said otherwise.
struct Walk {
    /// The position the move leads to (where `uci` says it was reached).
    child: Vec<Key>,
    /// The move in UCI, zero-padded; all zeros where the entry's position
    /// was not reached or the move is illegal there.
    uci: Vec<[u8; 5]>,
    /// By slot of the order by key, at the first slot of a key: the
    /// position's depth ([`UNREACHED`] if none).
    depth: Vec<u32>,
    /// Positions without entries that moves lead to, with the depth each
    /// move reached them at.
    leaves: Vec<(Key, u32)>,
    start: Key,
    illegal: usize,
}

const UNREACHED: u32 = u32::MAX;

/// Breadth-first from the start position: a position's depth is the
/// smallest ply it is reached at, its entries are played in the first
/// position reached with its key.
fn walk_from_start(entries: &ImportEntries) -> Walk {
    let n = entries.len();
    let start = Chess::default();
    let mut walk = Walk {
        child: vec![Key(0); n],
        uci: vec![[0; 5]; n],
        depth: vec![UNREACHED; n],
        leaves: Vec::new(),
        start: polyglot_key(&start),
        illegal: 0,
    };
    let start_slots = entries.slots_of(walk.start);
    if start_slots.is_empty() {
        return walk;
    }
    walk.depth[start_slots.start] = 0;
    let mut queue = VecDeque::from([(start, 0u32)]);
    while let Some((pos, d)) = queue.pop_front() {
        for slot in entries.slots_of(polyglot_key(&pos)) {
            let i = entries.at(slot);
            let Some(m) = MoveCode(entries.moves[i]).to_move(&pos) else {
                walk.illegal += 1;
                continue;
            };
            let uci = m.to_uci(CastlingMode::Standard).to_string();
            let mut next = pos.clone();
            next.play_unchecked(m);
            let ck = polyglot_key(&next);
            walk.child[i] = ck;
            walk.uci[i] = uci_bytes(&uci);
            let child_slots = entries.slots_of(ck);
            if child_slots.is_empty() {
                walk.leaves.push((ck, d + 1));
            } else if walk.depth[child_slots.start] == UNREACHED {
                walk.depth[child_slots.start] = d + 1;
                queue.push_back((next, d + 1));
            }
        }
    }
    walk
}

impl Walk {
    /// Every position of the import, by key: the entries' keys and the
    /// positions their moves lead to, with the depth where reached.
    fn positions(&mut self, entries: &ImportEntries) -> Vec<(Key, Option<u32>)> {
        // The first move to reach a leaf reached it at its smallest depth.
        let mut leaves = std::mem::take(&mut self.leaves);
        leaves.sort_unstable();
        leaves.dedup_by_key(|&mut (k, _)| k);
        let mut positions = Vec::new();
        let mut leaf = leaves.into_iter().peekable();
        let mut slot = 0;
        while slot < entries.len() {
            let key = entries.key_at(slot);
            while let Some(&(k, d)) = leaf.peek() {
                if k > key {
                    break;
                }
                positions.push((k, Some(if k == self.start { 0 } else { d })));
                leaf.next();
            }
            let d = self.depth[slot];
            positions.push((key, (d != UNREACHED).then_some(d)));
            while slot < entries.len() && entries.key_at(slot) == key {
                slot += 1;
            }
        }
        for (k, d) in leaf {
            positions.push((k, Some(if k == self.start { 0 } else { d })));
        }
        self.depth = Vec::new();
        positions
    }
}

fn uci_bytes(uci: &str) -> [u8; 5] {
    let mut b = [0; 5];
    for (to, from) in b.iter_mut().zip(uci.bytes()) {
        *to = from;
    }
    b
}

/// The UCI of a reached entry's move; `None` if it was not reached.
fn uci_of(b: &[u8; 5]) -> Option<String> {
    let len = b.iter().position(|&x| x == 0).unwrap_or(5);
    (len > 0).then(|| String::from_utf8_lossy(&b[..len]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::uci::UciMove;

    /// The position after `line` (UCI moves from the start).
    fn after(line: &[&str]) -> Chess {
        let mut pos = Chess::default();
        for u in line {
            let m = u
                .parse::<UciMove>()
                .expect("uci")
                .to_move(&pos)
                .expect("legal");
            pos.play_unchecked(m);
        }
        pos
    }

    fn code(pos: &Chess, uci: &str) -> u16 {
        let m = uci
            .parse::<UciMove>()
            .expect("uci")
            .to_move(pos)
            .expect("legal");
        MoveCode::from_move(&m).0
    }

    /// Issue 53: the compact breadth-first pass gives each position its
    /// smallest depth (a transposition reached a longer way too), a move back to the start leaves it at depth 0, moves
    /// into positions without entries give those their smallest depth, an
    /// illegal move and an unreached position are kept without a child;
    /// the same whether the file is sorted by key or not.
    #[test]
    fn the_walk_gives_smallest_depths_sorted_or_not() {
        let lines: &[(&[&str], &str)] = &[
            (&[], "e2e3"),
            (&[], "e2e4"),
            (&[], "g1f3"),
            (&["e2e3"], "e7e6"),
            (&["e2e3", "e7e6"], "e3e4"),
            (&["e2e3", "e7e6", "e3e4"], "e6e5"),
            (&["e2e4"], "e7e5"),
            (&["e2e4", "e7e5"], "g1f3"),
            (&["g1f3"], "g8f6"),
            (&["g1f3", "g8f6"], "f3g1"),
            (&["g1f3", "g8f6", "f3g1"], "f6g8"),
        ];
        let mut entries: Vec<(Key, u16)> = lines
            .iter()
            .map(|(line, uci)| {
                let pos = after(line);
                (polyglot_key(&pos), code(&pos, uci))
            })
            .collect();
        // a1a8 at the start (from a1 = 0, to a8 = 56: illegal), and a
        // position never reached.
        let start = polyglot_key(&Chess::default());
        entries.push((start, 56));
        entries.push((Key(12345), 1));
        let depth_of = |line: &[&str]| (polyglot_key(&after(line)), Some(line.len() as u32));
        let mut expected = vec![
            depth_of(&[]),
            depth_of(&["e2e3"]),
            depth_of(&["e2e4"]),
            depth_of(&["g1f3"]),
            depth_of(&["e2e3", "e7e6"]),
            depth_of(&["e2e3", "e7e6", "e3e4"]),
            depth_of(&["e2e4", "e7e5"]),
            depth_of(&["e2e4", "e7e5", "g1f3"]),
            depth_of(&["g1f3", "g8f6"]),
            depth_of(&["g1f3", "g8f6", "f3g1"]),
            (Key(12345), None),
        ];
        expected.sort_unstable();
        let mut sorted = entries.clone();
        sorted.sort_unstable();
        let mut results = Vec::new();
        for file in [entries.clone(), sorted, entries.into_iter().rev().collect()] {
            let e = ImportEntries::new(
                file.iter().map(|&(k, _)| k).collect(),
                file.iter().map(|&(_, m)| m).collect(),
                vec![1; file.len()],
            );
            let mut walk = walk_from_start(&e);
            assert_eq!(walk.illegal, 1);
            assert_eq!(walk.positions(&e), expected);
            // (key, move, the child and UCI where the walk reached it)
            type Reached = (Key, u16, Option<(Key, String)>);
            let mut by_entry: Vec<Reached> = (0..e.len())
                .map(|i| {
                    let reached = uci_of(&walk.uci[i]).map(|u| (walk.child[i], u));
                    (e.keys[i], e.moves[i], reached)
                })
                .collect();
            by_entry.sort();
            results.push(by_entry);
        }
        let back = &results[0]
            .iter()
            .find(|(k, _, _)| *k == polyglot_key(&after(&["g1f3", "g8f6", "f3g1"])))
            .expect("entry");
        assert_eq!(back.2, Some((start, "f6g8".to_string())));
        assert_eq!(
            results.iter().filter(|r| r[..] == results[0][..]).count(),
            3
        );
        let unreached = results[0].iter().filter(|(_, _, r)| r.is_none()).count();
        assert_eq!(unreached, 2, "the illegal and the unreached entry");
    }
}
