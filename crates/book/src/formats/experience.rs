//! BrainLearn's experience file (`.exp`): export and import.
//!
//! The learning engines of the Stockfish family (BrainLearn, ShashChess and
//! their forks) keep what they learned in `experience.exp`: a sequence of
//! 24-byte little-endian entries with no header,
//!
//! | offset | type | field |
//! | --- | --- | --- |
//! | 0 | u64 | Stockfish key of the position ([`sf_keys::sf_key`]) |
//! | 8 | i32 | depth the search reached, plies |
//! | 12 | i32 | score of the move, Stockfish internal units, side to move |
//! | 16 | u16 | the move, Stockfish's encoding ([`sf_keys::SfMove`]) |
//! | 18 | u16 | padding (the engines write whatever was in memory) |
//! | 20 | i32 | performance (BrainLearn writes 100 when it has none) |
//!
//! A position has one entry a move. There is no count field: the format
//! has none, so export writes the performance BrainLearn gives an entry of
//! its own (100) and import ignores it.
//!
//! Scores: a book stores centipawns (100 = a pawn as the engines print
//! it, mate `+-(30000 - plies)`); the file stores Stockfish's internal
//! `Value`, where 100 printed centipawns are [`INTERNAL_PER_100_CP`]
//! internal units and mate in `n` plies is `+-(32000 - n)`. The conversion
//! is exact both ways for every book score (the internal grid is finer).
//!
//! The older "SugaR Experience version 2" files (a signature, then entries
//! of another layout) are recognised and refused with a clear error:
//! current BrainLearn and ShashChess read only the format above, and so
//! does `jja`, the independent reader the tests check against.

use std::{
    collections::{HashMap, HashSet},
    fmt,
    io::Write,
    path::Path,
};

use anyhow::{Context, Result};
use shakmaty::{fen::Fen, CastlingMode, Chess, EnPassantMode, Position};

use super::polyglot::ExportOptions;
use super::sf_keys::{sf_key, SfKey, SfMove};
use crate::db::import::EngineMove;
use crate::db::scan::StoredMove;
use crate::db::{Analysis, Book};
use crate::keys::{polyglot_key, Key, KeyMap, MoveCode};
use crate::values::minimax::child_score;
use learnbook_base::atomic_file;

/// Bytes of one entry.
pub const ENTRY_SIZE: usize = 24;

/// Stockfish internal units per 100 printed centipawns: Stockfish 16.1's
/// `NormalizeToPawnValue` (newer versions scale by material, about 330 to
/// 370 in the opening; the file keeps internal units whatever the engine).
pub const INTERNAL_PER_100_CP: i64 = 356;

/// Stockfish's `VALUE_MATE`: mate in `n` plies is `VALUE_MATE - n`.
pub const VALUE_MATE: i32 = 32_000;

/// Stockfish's `MAX_PLY`: no search reaches deeper, no mate is longer.
pub const MAX_PLY: i32 = 246;

/// The signature of the older SugaR/eman experience format.
const SUGAR_SIGNATURE: &[u8] = b"SugaR Experience version 2";

/// A book's mate scores: `+-(30000 - plies)`, at least 20000 in size.
const BOOK_MATE: i32 = 30_000;
const BOOK_MATE_BOUND: i32 = 20_000;

/// What the engine name of imported scores says.
pub const ENGINE_NAME: &str = "BrainLearn experience";
/// The budget column of imported scores (no budget of `analyze`'s kinds:
/// `analyze` searches such a position again at its own budget).
pub const BUDGET: &str = "experience";

/// One entry of an experience file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ExpEntry {
    pub key: SfKey,
    pub depth: i32,
    /// Stockfish internal units, from the side to move at `key`.
    pub score: i32,
    pub mv: SfMove,
    pub performance: i32,
}

impl ExpEntry {
    fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(&self.key.0.to_le_bytes())?;
        w.write_all(&self.depth.to_le_bytes())?;
        w.write_all(&self.score.to_le_bytes())?;
        w.write_all(&u32::from(self.mv.0).to_le_bytes())?;
        w.write_all(&self.performance.to_le_bytes())
    }
}

/// A problem with an experience file, at a byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The file ends within an entry.
    Truncated { size: usize, offset: usize },
    /// A SugaR experience file (signature), not BrainLearn's format.
    SugarFormat,
    /// A depth outside `1..=MAX_PLY`.
    Depth { offset: usize, depth: i32 },
    /// A score beyond mate (or Stockfish's "none"/"infinite").
    Score { offset: usize, score: i32 },
    /// A move no position could have (from = to).
    Move { offset: usize, code: u32 },
    /// A move that is not legal in the position its key names.
    Illegal {
        offset: usize,
        code: SfMove,
        fen: String,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Truncated { size, offset } => write!(
                f,
                "truncated experience file: {size} bytes is not a whole number of {ENTRY_SIZE}-byte entries (the last entry starts at offset {offset} and is cut short)"
            ),
            ReadError::SugarFormat => write!(
                f,
                "this is a SugaR experience file (signature \"SugaR Experience version 2\"): only BrainLearn's format (no signature, 24-byte entries) is read"
            ),
            ReadError::Depth { offset, depth } => write!(
                f,
                "absurd depth {depth} in the entry at offset {offset} (expected 1..={MAX_PLY}): not a BrainLearn experience file?"
            ),
            ReadError::Score { offset, score } => write!(
                f,
                "absurd score {score} in the entry at offset {offset} (beyond mate, {VALUE_MATE}): not a BrainLearn experience file?"
            ),
            ReadError::Move { offset, code } => write!(
                f,
                "impossible move code {code:#06x} in the entry at offset {offset}: not a BrainLearn experience file?"
            ),
            ReadError::Illegal { offset, code, fen } => write!(
                f,
                "the move {} ({:#06x}) of the entry at offset {offset} is not legal in its position {fen}",
                code.text(),
                code.0
            ),
        }
    }
}

impl std::error::Error for ReadError {}

/// Reads the entries of an experience file, checking each: the whole file
/// is read before anything is used.
pub fn parse(bytes: &[u8]) -> Result<Vec<ExpEntry>, ReadError> {
    if bytes.starts_with(SUGAR_SIGNATURE) {
        return Err(ReadError::SugarFormat);
    }
    if !bytes.len().is_multiple_of(ENTRY_SIZE) {
        return Err(ReadError::Truncated {
            size: bytes.len(),
            offset: bytes.len() - bytes.len() % ENTRY_SIZE,
        });
    }
    let mut out = Vec::with_capacity(bytes.len() / ENTRY_SIZE);
    for (i, c) in bytes.chunks_exact(ENTRY_SIZE).enumerate() {
        let offset = i * ENTRY_SIZE;
        let mut b8 = [0u8; 8];
        b8.copy_from_slice(&c[0..8]);
        let i32_at = |at: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&c[at..at + 4]);
            i32::from_le_bytes(b)
        };
        let (depth, score, mv, performance) = (i32_at(8), i32_at(12), i32_at(16), i32_at(20));
        if !(1..=MAX_PLY).contains(&depth) {
            return Err(ReadError::Depth { offset, depth });
        }
        if score.abs() > VALUE_MATE {
            return Err(ReadError::Score { offset, score });
        }
        // The upper half is padding: whatever the engine's memory held.
        let code = SfMove((mv as u32 & 0xffff) as u16);
        if code.from_sq() == code.to_sq() {
            return Err(ReadError::Move {
                offset,
                code: mv as u32,
            });
        }
        out.push(ExpEntry {
            key: SfKey(u64::from_le_bytes(b8)),
            depth,
            score,
            mv: code,
            performance,
        });
    }
    Ok(out)
}

/// A book score (centipawns or `+-(30000 - plies)`) in Stockfish internal
/// units. Centipawns beyond +-8,850 (no search of an opening gives them)
/// saturate below Stockfish's tablebase range, `+-31,507`.
pub fn to_internal(score: i32) -> i32 {
    if score.abs() >= BOOK_MATE_BOUND {
        let plies = (BOOK_MATE - score.abs()).clamp(0, MAX_PLY);
        score.signum() * (VALUE_MATE - plies)
    } else {
        let v = (i64::from(score) * INTERNAL_PER_100_CP) as f64 / 100.0;
        // Below Stockfish's mate and tablebase range (32000 - 2 * MAX_PLY).
        (v.round() as i32).clamp(
            -(VALUE_MATE - 2 * MAX_PLY - 1),
            VALUE_MATE - 2 * MAX_PLY - 1,
        )
    }
}

/// Back from [`to_internal`]: mate within `MAX_PLY` plies is a book mate,
/// anything else centipawns (a tablebase win stays a large score).
pub fn from_internal(v: i32) -> i32 {
    if v.abs() >= VALUE_MATE - MAX_PLY {
        v.signum() * (BOOK_MATE - (VALUE_MATE - v.abs()))
    } else {
        let cp = (f64::from(v) * 100.0 / INTERNAL_PER_100_CP as f64).round() as i32;
        cp.clamp(-(BOOK_MATE_BOUND - 1), BOOK_MATE_BOUND - 1)
    }
}

/// A move's score (mover's side) from its child's search score: negated,
/// a mate one ply further. The inverse of [`child_score`].
pub fn move_score(child: i32) -> i32 {
    if child.abs() >= BOOK_MATE_BOUND {
        -child + child.signum()
    } else {
        -child
    }
}

/// Whether export keeps a book move: the selection of the Polyglot export
/// (min games, max ply, engine moves). The side filter is one more line
/// here.
fn selected(m: &StoredMove, opts: &ExportOptions) -> bool {
    if !opts.keeps_side(m.parent_depth) {
        return false;
    }
    if let (Some(max), Some(d)) = (opts.max_ply, m.parent_depth) {
        if d >= max {
            return false;
        }
    }
    let games = m.counts.total();
    if m.grown && games == 0 {
        return opts.engine_moves;
    }
    games >= opts.min_games
}

/// The book's moves by parent, and the depth of each parent.
struct Edges {
    by_parent: KeyMap<Key, Vec<StoredMove>>,
}

impl Edges {
    fn load(book: &Book) -> Result<Edges> {
        Edges::load_of(book, |_| true)
    }

    /// The moves `keep` keeps.
    fn load_of(book: &Book, keep: impl Fn(&StoredMove) -> bool) -> Result<Edges> {
        let mut by_parent: KeyMap<Key, Vec<StoredMove>> = KeyMap::default();
        book.for_each_move(|m| {
            if keep(&m) {
                by_parent.entry(m.parent).or_default().push(m);
            }
        })?;
        Ok(Edges { by_parent })
    }

    fn of(&self, key: Key) -> &[StoredMove] {
        self.by_parent.get(&key).map_or(&[], Vec::as_slice)
    }
}

/// What the export needs of a position's analysis: its score and depth,
/// and its searched deviation (move, score, depth).
#[derive(Clone, Copy, Debug)]
struct Searched {
    score: i32,
    depth: u32,
    deviation: Option<(MoveCode, i32, u32)>,
}

/// What an export wrote.
#[derive(Clone, Debug, Default)]
pub struct ExportSummary {
    pub entries: usize,
    /// Positions with at least one entry.
    pub positions: usize,
    /// Selected book moves without a search score (not written).
    pub unscored: usize,
}

/// One entry an export writes, with the book position and move it is of.
#[derive(Clone, Debug)]
pub struct ExportedEntry {
    pub entry: ExpEntry,
    pub parent: Key,
    pub mv: MoveCode,
    /// The book's score of the move, mover's side (centipawns or mate).
    pub book_score: i32,
}

/// The entries an export writes: every selected book move reachable from
/// the start position with a search score, which is its child's search
/// score negated, or the parent's searched deviation where the deviation
/// became a book move. Depth is the search's.
pub fn export_entries(
    book: &Book,
    opts: &ExportOptions,
) -> Result<(Vec<ExportedEntry>, ExportSummary)> {
    let mut analysis: KeyMap<Key, Searched> = KeyMap::default();
    book.for_each_analysis(|a| {
        let deviation = match (a.dev_move, a.deviation) {
            (Some(mv), Some(d)) => Some((mv, d, a.dev_depth.unwrap_or(a.depth))),
            _ => None,
        };
        analysis.insert(
            a.key,
            Searched {
                score: a.score,
                depth: a.depth,
                deviation,
            },
        );
    })?;
    learnbook_base::peak_memory::trace("export exp: analysis read");
    // The score of a book move: its child's search score, or the parent's
    // searched deviation where that became a book move.
    let deviation_of = |m: &StoredMove| -> Option<(i32, u32)> {
        analysis
            .get(&m.parent)
            .and_then(|p| p.deviation)
            .and_then(|(mv, d, depth)| (mv == m.mv).then_some((d, depth)))
    };
    let score_of = |m: &StoredMove, child: Key| -> Option<(i32, u32)> {
        match analysis.get(&child) {
            Some(a) => Some((move_score(a.score), a.depth)),
            None => deviation_of(m),
        }
    };
    let mut summary = ExportSummary::default();
    // Only the positions on a path to a scored move need walking (the
    // search covers a book's busy top, the games go much further): the
    // parents of scored moves and their ancestors, found by looking up
    // each one's parents (a pass keeping every link would hold the book's
    // whole tree). A second pass keeps the moves of the positions wanted.
    let mut todo = Vec::new();
    book.for_each_move(|m| {
        let scored = match m.child {
            Some(child) => score_of(&m, child).is_some(),
            None => deviation_of(&m).is_some(),
        };
        if scored {
            todo.push(m.parent);
        } else if selected(&m, opts) {
            summary.unscored += 1;
        }
    })?;
    learnbook_base::peak_memory::trace("export exp: scored moves found");
    let mut wanted: HashSet<Key> = HashSet::new();
    while let Some(k) = todo.pop() {
        if wanted.insert(k) {
            todo.extend(book.parents_of(k)?);
        }
    }
    learnbook_base::peak_memory::trace("export exp: positions on their paths");
    // Of their moves, those written and those leading on (a move without a
    // known child may lead to a wanted position: kept).
    let edges = Edges::load_of(book, |m| {
        wanted.contains(&m.parent)
            && match m.child {
                Some(child) => {
                    wanted.contains(&child) || (selected(m, opts) && score_of(m, child).is_some())
                }
                None => true,
            }
    })?;
    learnbook_base::peak_memory::trace("export exp: their moves");
    let mut out = Vec::new();
    let start = Chess::default();
    let mut seen: HashSet<Key> = HashSet::from([polyglot_key(&start)]);
    let mut stack = vec![(start, 0u32)];
    while let Some((pos, ply)) = stack.pop() {
        let key = polyglot_key(&pos);
        let moves = edges.of(key);
        if moves.is_empty() {
            continue;
        }
        let sfk = sf_key(&pos);
        let mut wrote = false;
        for m in moves {
            let Some(mv) = m.mv.to_move(&pos) else {
                continue;
            };
            let child = m.child.unwrap_or_else(|| {
                let mut next = pos.clone();
                next.play_unchecked(mv);
                polyglot_key(&next)
            });
            if wanted.contains(&child)
                && opts.max_ply.is_none_or(|max| ply + 1 < max)
                && seen.insert(child)
            {
                let mut next = pos.clone();
                next.play_unchecked(mv);
                stack.push((next, ply + 1));
            }
            if !selected(m, opts) {
                continue;
            }
            let (Some((score, depth)), Some(code)) = (score_of(m, child), SfMove::from_move(&mv))
            else {
                continue;
            };
            out.push(ExportedEntry {
                entry: ExpEntry {
                    key: sfk,
                    depth: (depth as i32).clamp(1, MAX_PLY),
                    score: to_internal(score),
                    mv: code,
                    performance: 100,
                },
                parent: key,
                mv: m.mv,
                book_score: score,
            });
            wrote = true;
        }
        summary.positions += usize::from(wrote);
    }
    summary.entries = out.len();
    Ok((out, summary))
}

/// `export --format exp`: writes the file (atomically: a temporary file
/// renamed over `path`).
pub fn export(book: &Book, path: &Path, opts: &ExportOptions) -> Result<ExportSummary> {
    let (mut entries, summary) = export_entries(book, opts)?;
    // Key order, then the best move first: a stable file for stable input.
    entries.sort_by_key(|e| (e.entry.key, std::cmp::Reverse(e.entry.score), e.entry.mv));
    atomic_file::write_with(path, |w| {
        for e in &entries {
            e.entry.write(w)?;
        }
        Ok(())
    })?;
    Ok(summary)
}

/// Writes entries as an experience file (tests and tools).
pub fn write_entries(path: &Path, entries: &[ExpEntry]) -> Result<()> {
    atomic_file::write_with(path, |w| {
        for e in entries {
            e.write(w)?;
        }
        Ok(())
    })
}

/// What an import did.
#[derive(Clone, Debug, Default)]
pub struct ImportSummary {
    pub entries: usize,
    /// Entries that repeat a `(position, move)` of the file (the deepest
    /// counts; BrainLearn's own rule).
    pub duplicates: usize,
    /// Entries whose key is no position reached from the start position
    /// through the book's and the file's moves (not stored).
    pub unmatched: usize,
    /// Entries of book moves, and of moves added as engine moves.
    pub book_moves: usize,
    pub engine_moves: usize,
    /// Positions whose search score was stored or replaced.
    pub stored: usize,
    /// Positions whose stored score is at least as deep (kept).
    pub kept: usize,
}

/// Reads `path` into entries, the error naming the file.
pub fn read(path: &Path) -> Result<Vec<ExpEntry>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&bytes).with_context(|| format!("{} is not a valid experience file", path.display()))
}

/// `import --format exp`: every entry whose position is reached from the
/// start position (through the book's moves and the file's own) becomes
/// the search score of the position its move leads to (engine
/// [`ENGINE_NAME`], the depth stored), replacing a shallower stored score;
/// a move the book lacks is added as an engine move. The whole file is
/// checked first (a move illegal in its position is an error) and stored
/// in one transaction with a full re-evaluation, so the book's choices
/// follow the scores.
pub fn import(book: &mut Book, path: &Path) -> Result<ImportSummary> {
    let entries = read(path)?;
    let mut summary = ImportSummary {
        entries: entries.len(),
        ..Default::default()
    };
    // Duplicates: the deepest, then the highest score, as BrainLearn.
    let mut best: HashMap<(SfKey, SfMove), usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        match best.entry((e.key, e.mv)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                summary.duplicates += 1;
                let b = &entries[*o.get()];
                if (e.depth, e.score) > (b.depth, b.score) {
                    o.insert(i);
                }
            }
        }
    }
    let mut by_key: HashMap<SfKey, Vec<usize>> = HashMap::new();
    for &i in best.values() {
        by_key.entry(entries[i].key).or_default().push(i);
    }
    for list in by_key.values_mut() {
        list.sort_unstable();
    }
    let edges = Edges::load(book)?;

    // The walk: book moves and the file's moves from the start position.
    let mut matched: HashSet<SfKey> = HashSet::new();
    let mut new_positions: Vec<(Key, u32)> = Vec::new();
    let mut engine_moves: Vec<EngineMove> = Vec::new();
    // Child key -> (score of the child, depth), deepest kept.
    let mut scores: KeyMap<Key, (i32, u32)> = KeyMap::default();
    let start = Chess::default();
    let mut seen: HashSet<Key> = HashSet::from([polyglot_key(&start)]);
    let mut stack = vec![(start, 0u32)];
    while let Some((pos, ply)) = stack.pop() {
        let key = polyglot_key(&pos);
        let book_moves = edges.of(key);
        let mut book_codes: HashSet<MoveCode> = HashSet::new();
        for m in book_moves {
            book_codes.insert(m.mv);
            if let Some(mv) = m.mv.to_move(&pos) {
                let mut next = pos.clone();
                next.play_unchecked(mv);
                if seen.insert(polyglot_key(&next)) {
                    stack.push((next, ply + 1));
                }
            }
        }
        let sfk = sf_key(&pos);
        let Some(list) = by_key.get(&sfk) else {
            continue;
        };
        matched.insert(sfk);
        for &i in list {
            let e = &entries[i];
            let Some(mv) = e.mv.to_move(&pos) else {
                return Err(ReadError::Illegal {
                    offset: i * ENTRY_SIZE,
                    code: e.mv,
                    fen: Fen::from_position(&pos, EnPassantMode::Legal).to_string(),
                })
                .with_context(|| format!("{} is not a valid experience file", path.display()));
            };
            let code = MoveCode::from_move(&mv);
            let mut next = pos.clone();
            next.play_unchecked(mv);
            let child = polyglot_key(&next);
            if book_codes.contains(&code) {
                summary.book_moves += 1;
            } else {
                summary.engine_moves += 1;
                engine_moves.push(EngineMove {
                    parent: key,
                    mv: code,
                    uci: mv.to_uci(CastlingMode::Standard).to_string(),
                    child,
                });
                new_positions.push((child, ply + 1));
                book_codes.insert(code);
                if seen.insert(child) {
                    stack.push((next, ply + 1));
                }
            }
            let cand = (child_score(from_internal(e.score)), e.depth as u32);
            let slot = scores.entry(child).or_insert(cand);
            if (cand.1, -cand.0) > (slot.1, -slot.0) {
                *slot = cand;
            }
        }
    }
    summary.unmatched = best
        .values()
        .filter(|&&i| !matched.contains(&entries[i].key))
        .count();

    let mut rows = Vec::new();
    let mut keys: Vec<Key> = scores.keys().copied().collect();
    keys.sort_unstable();
    for key in keys {
        let (score, depth) = scores[&key];
        let row = match book.analysis(key)? {
            Some(old) if old.depth >= depth => {
                summary.kept += 1;
                continue;
            }
            // A deeper score replaces the old one; a deviation already
            // searched stays.
            Some(old) => Analysis {
                score,
                depth,
                engine: ENGINE_NAME.to_string(),
                budget: BUDGET.to_string(),
                ..old
            },
            None => Analysis {
                key,
                score,
                depth,
                interior: false,
                deviation: None,
                dev_move: None,
                dev_depth: None,
                book_moves: 0,
                engine: ENGINE_NAME.to_string(),
                budget: BUDGET.to_string(),
                grown: None,
            },
        };
        rows.push(row);
    }
    summary.stored = rows.len();
    book.add_experience(&new_positions, &engine_moves, &rows)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_convert_exactly_both_ways() {
        // Centipawns up to Stockfish's tablebase range (31,507 internal).
        for s in (-8_850..=8_850)
            .step_by(7)
            .chain([0, 1, -1, 29_999, -29_999, 29_990, -29_755])
        {
            assert_eq!(from_internal(to_internal(s)), s, "{s}");
        }
        assert_eq!(to_internal(100), 356);
        assert_eq!(to_internal(29_999), 31_999);
        assert_eq!(from_internal(-31_990), -29_990);
        // Larger centipawns saturate there.
        assert_eq!(to_internal(19_999), 31_507);
    }

    #[test]
    fn move_score_inverts_child_score() {
        for s in [0, 35, -400, 29_990, -29_990, 29_999, -29_998] {
            assert_eq!(child_score(move_score(s)), s, "{s}");
            assert_eq!(move_score(child_score(s)), s, "{s}");
        }
    }

    #[test]
    fn bad_files_are_named_problems() {
        assert_eq!(parse(&[]), Ok(vec![]));
        assert!(matches!(
            parse(&[0; 25]),
            Err(ReadError::Truncated { offset: 24, .. })
        ));
        let mut sugar = SUGAR_SIGNATURE.to_vec();
        sugar.resize(48, 0);
        assert_eq!(parse(&sugar), Err(ReadError::SugarFormat));
        let e = ExpEntry {
            key: SfKey(1),
            depth: 300,
            score: 0,
            mv: SfMove(0x31c),
            performance: 100,
        };
        let mut bytes = Vec::new();
        e.write(&mut bytes).expect("write");
        assert!(matches!(
            parse(&bytes),
            Err(ReadError::Depth { depth: 300, .. })
        ));
    }
}
