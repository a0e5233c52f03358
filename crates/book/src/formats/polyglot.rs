//! Polyglot `.bin` export, and reading a `.bin` to play from it (`import`
//! is [`super::polyglot_import`]).
//!
//! A Polyglot book is a sequence of 16-byte big-endian entries
//! `(key u64, move u16, weight u16, learn u32)` sorted by key. The book
//! stores keys and moves in exactly this encoding (see [`crate::keys`]), so
//! export is a copy plus a weight.

use std::{fs, io::Write, path::Path};

use anyhow::{bail, Context, Result};
use shakmaty::Chess;

use super::suite::SideToMove;
use crate::db::scan::StoredMove;
use crate::db::Book;
use crate::keys::{polyglot_key, Key, KeyMap, MoveCode};
use crate::pgn::game::Counts;
use crate::sort::Sorter;
use crate::values::minimax::{self, option_weights, NodeInfo};
use learnbook_base::atomic_file;

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
