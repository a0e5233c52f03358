//! The book's lines as PGN: one game with variations (the tree), or one
//! game a line (`--pgn-lines`), read by GUIs, databases, python-chess, Scid
//! and pgn-extract (docs/FORMATS.md, `## PGN`).
//!
//! **Which moves.** Exactly the moves the Polyglot export selects with the
//! same options ([`for_each_selected`]: weights, `--min-games`, engine moves,
//! and whatever selection it grows), in the order a GUI ranks them: weight
//! first (highest first), then move code, as [`super::polyglot::write_bin`]
//! sorts a position's entries. The first is the main line, the others its
//! variations.
//!
//! **The DAG as a tree.** Transpositions make the book a DAG, and unfolding
//! it into every path multiplies each position by the number of ways to
//! reach it: in a master book the paths to ply 12 outnumber its positions
//! many times. So each position is written once: a breadth-first pass over
//! the selected moves ([`Plan`]) gives every position reached within the ply
//! limit its smallest ply and the first move that reaches it there (its
//! `via` move); the position's moves are written after that move only.
//! Every other move into it ends its line with `{...; transposes to 1. d4
//! Nf6 2. c4}` (the via path). The file then holds each selected move of a
//! position reached before the ply limit exactly once: its size grows with
//! the selection, not with the number of paths, and it is the same set of
//! moves whatever the order of writing.
//!
//! **Lines.** A line is a path from the start whose last move leads to a
//! position that ends it: no selected move there, the ply limit, or a
//! position written elsewhere (a transposition, or a repetition back to an
//! earlier ply). Their number is `E - P`: `E` the selected moves of the
//! positions reached before the limit, `P` those positions other than the
//! start that have a selected move (each continues exactly one move into
//! it). [`Plan::lines`] computes it before writing; the writer counts the
//! lines it ends and fails if the two differ.
//!
//! **Depth.** `--max-ply` (default [`DEFAULT_MAX_PLY`] for PGN): moves are
//! written from positions at most `max_ply - 1` plies deep, so a line has
//! at most `max_ply` moves.
//!
//! **Memory** (issue 53: within `--memory`). The plan is not held in the
//! heap: it lives in a scratch database beside the book ([`PlanStore`],
//! removed when the export ends or fails, and a killed export's by the
//! next), under SQLite's page cache of a quarter of the budget. The
//! selection is sorted on disk (an eighth of the budget in memory) into a
//! row a position: its moves in the order written. The breadth-first pass
//! then goes level by level, reading a level's positions in their order of
//! discovery a chunk at a time ([`LEVEL_CHUNK`]), each replayed from its
//! path (its via moves from the start, stored with it); a child is added
//! unless it was reached before (by key), so its via move is the first
//! move that reaches it at its smallest ply, in the order of the
//! in-memory pass this replaced: levels in order of discovery, a
//! position's moves heaviest first, then by move code. Writing asks the
//! store, for each move written, where its position is written. The text
//! is streamed to the file, the recursion is at most `max_ply` deep, and
//! each position's counts and analysis are read from the book when it is
//! written ([`explore_moves`], the explorer's model). One path for
//! every book: on the master book it costs about the time of the plan in
//! memory (a fraction of the selection's).

use std::{io::Write, path::Path};

use anyhow::{bail, Result};
use shakmaty::{san::SanPlus, Chess, Position};

use super::polyglot::{for_each_selected, ExportOptions};
use crate::db::plan_store::PlanStore;
use crate::db::Book;
use crate::keys::{polyglot_key, Key, MoveCode};
use crate::memory::default_memory;
use crate::pgn::write::{MoveNumber, MovetextWriter};
use crate::view::explorer::explore_moves;
use crate::view::explorer::ExploredMove;
use crate::view::report::format_cp;
use learnbook_base::atomic_file;

/// `--max-ply` of a PGN export when none is given: 12 plies (six moves)
/// keep the master book's file to tens of megabytes (docs/FORMATS.md).
pub const DEFAULT_MAX_PLY: u32 = 12;

/// NAG thresholds: how much worse a variation's value is than the main
/// line's (the book's scale, -1..1, for the side that moves; 0.18 is about
/// 100 centipawns): `$6` (?!) from 0.07, `$2` (?) from 0.15, `$4` (??)
/// from 0.30. The main move gets `$1` (!) when every other move is at
/// least [`MISTAKE`] worse.
pub const DUBIOUS: f64 = 0.07;
pub const MISTAKE: f64 = 0.15;
pub const BLUNDER: f64 = 0.30;

/// One game with variations, or one game a line.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    #[default]
    Tree,
    Lines,
}

/// Positions whose paths the breadth-first pass reads from the store at
/// once.
const LEVEL_CHUNK: usize = 4096;

/// The tree to write: every position the selected moves reach within the
/// ply limit, where it is written, and the number of lines. Held by a
/// [`PlanStore`] beside the book (see the module's documentation).
pub struct Plan {
    max_ply: u32,
    root: Key,
    store: PlanStore,
    lines: usize,
}

impl Plan {
    /// The breadth-first pass over the moves [`for_each_selected`] selects
    /// for `opts` (its `max_ply`, or [`DEFAULT_MAX_PLY`]).
    pub fn new(book: &Book, opts: &ExportOptions) -> Result<Plan> {
        let max_ply = opts.max_ply.unwrap_or(DEFAULT_MAX_PLY);
        let opts = ExportOptions {
            max_ply: Some(max_ply),
            ..opts.clone()
        };
        let memory = book.memory_budget().unwrap_or_else(default_memory);
        let mut store = PlanStore::create(&book.path, memory / 4)?;
        // The one place the selection is made: whatever `for_each_selected`
        // honours (the side to export, when it has one) the tree follows.
        let mut sorter = store.selection_sorter(memory / 8);
        for_each_selected(book, &opts, |m| sorter.push(m.parent, m.mv, m.weight))?;
        store.store_selection(sorter)?;
        let start = Chess::default();
        let root = polyglot_key(&start);
        store.add_start(root)?;
        let (mut edges, mut continued) = (0usize, 0usize);
        // The positions of the current level: orders of discovery.
        let mut level = 0..store.reached_count();
        let mut path = Vec::new();
        for _ in 0..max_ply {
            let mut at = level.start;
            while at < level.end {
                let chunk = store.paths(at, level.end, LEVEL_CHUNK)?;
                let Some(last) = chunk.last() else {
                    bail!("the plan lost the positions from order {at}");
                };
                at = last.0 + 1;
                for (_, moves_to) in chunk {
                    let pos = replay(&moves_to)?;
                    let key = polyglot_key(&pos);
                    // Each position is on one level only: its moves are read once.
                    let mut moves = store.selected(key)?;
                    moves.retain(|m| m.0.to_move(&pos).is_some());
                    for &(mv, _) in &moves {
                        let Some(m) = mv.to_move(&pos) else { continue };
                        let mut child = pos.clone();
                        child.play_unchecked(m);
                        edges += 1;
                        path.clear();
                        path.extend_from_slice(&moves_to);
                        path.push(mv);
                        store.reach(polyglot_key(&child), (key, mv), &path)?;
                    }
                    if !moves.is_empty() {
                        store.set_has_moves(key)?;
                        if key != root {
                            continued += 1;
                        }
                    }
                }
            }
            level = level.end..store.reached_count();
        }
        store.finish()?;
        Ok(Plan {
            max_ply,
            root,
            store,
            lines: edges.saturating_sub(continued),
        })
    }

    /// The number of lines (see the module's documentation).
    pub fn lines(&self) -> usize {
        self.lines
    }

    pub fn max_ply(&self) -> u32 {
        self.max_ply
    }

    /// The moves of `key` to write, heaviest first (none: it is not
    /// written, or not reached).
    fn moves(&self, key: Key) -> Result<Vec<(MoveCode, u16)>> {
        match self.store.reached(key)? {
            Some(r) if r.has_moves => self.store.selected(key),
            _ => Ok(Vec::new()),
        }
    }

    /// Whether the move `mv` of `parent` is where `child`'s moves are
    /// written, and if not, the moves to `child` after which they are,
    /// as SAN with move numbers (`1. d4 Nf6 2. c4`), if they are written
    /// at all.
    fn follows(&self, parent: Key, mv: MoveCode, child: Key) -> Result<(bool, Option<String>)> {
        let Some(node) = self.store.reached(child)? else {
            return Ok((false, None));
        };
        if !node.has_moves {
            return Ok((false, None));
        }
        if node.via == Some((parent, mv)) {
            return Ok((true, None));
        }
        let Some(path) = self.store.path_of(node.order)? else {
            return Ok((false, None));
        };
        if path.len() > self.max_ply as usize {
            return Ok((false, None));
        }
        let mut pos = Chess::default();
        let mut words = MovetextWriter::one_line(Vec::new());
        for mv in path {
            let Some(m) = mv.to_move(&pos) else {
                return Ok((false, None));
            };
            let at = MoveNumber::of(&pos);
            let san = SanPlus::from_move_and_play_unchecked(&mut pos, m);
            // Writing to memory cannot fail.
            let _ = words.mv(at, &san.to_string());
        }
        Ok((false, Some(words.into_string())))
    }
}

/// The position after `moves` from the start (each legal: they are the
/// plan's own via moves).
fn replay(moves: &[MoveCode]) -> Result<Chess> {
    let mut pos = Chess::default();
    for mv in moves {
        let Some(m) = mv.to_move(&pos) else {
            bail!("the plan's path {moves:?} has an illegal move");
        };
        pos.play_unchecked(m);
    }
    Ok(pos)
}

/// `export --format pgn`: writes the book's lines to `path` (atomically) and
/// returns their number.
pub fn export(book: &Book, path: &Path, opts: &ExportOptions, layout: Layout) -> Result<usize> {
    let plan = Plan::new(book, opts)?;
    let site = book
        .path
        .file_name()
        .map_or_else(|| "?".to_string(), |n| n.to_string_lossy().into_owned());
    let weights = format!("{:?}", opts.weights).to_lowercase();
    let about = format!(
        "learnbook {site}: weights {}, min-games {}, max-ply {}{}; {} lines. After each move: its games (+White wins =draws -Black wins), the book's value for the side that moved (-1..1), the analysis after it (engine, depth, score in pawns for the side that moved)",
        weights,
        opts.min_games,
        plan.max_ply,
        if opts.engine_moves {
            ""
        } else {
            ", no engine moves"
        },
        plan.lines
    );
    let mut error = None;
    atomic_file::write_with(path, |w| {
        let mut writer = Writer {
            book,
            plan: &plan,
            out: MovetextWriter::new(w),
            ended: 0,
            site: site.clone(),
        };
        let done = match layout {
            Layout::Tree => writer.tree_game(&about),
            Layout::Lines => writer.lines_games(),
        };
        done.and_then(|()| {
            if writer.ended != plan.lines {
                bail!(
                    "wrote {} lines where the plan has {}",
                    writer.ended,
                    plan.lines
                );
            }
            Ok(())
        })
        .map_err(|e| {
            let io = std::io::Error::other(format!("{e:#}"));
            error = Some(e);
            io
        })
    })
    .map_err(|e| error.take().unwrap_or(e))?;
    Ok(plan.lines)
}

/// A selected move as written.
struct Step {
    /// Whether the child's moves are written after this move.
    continues: bool,
    san: String,
    nag: Option<u8>,
    comment: String,
    child: Chess,
    child_key: Key,
}

struct Writer<'a, W: Write> {
    book: &'a Book,
    plan: &'a Plan,
    out: MovetextWriter<W>,
    /// Lines ended so far.
    ended: usize,
    site: String,
}

impl<W: Write> Writer<'_, W> {
    /// The seven tag roster.
    fn tags(&mut self, round: &str) -> Result<()> {
        let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        self.out.raw(&format!(
            "[Event \"learnbook\"]\n[Site \"{}\"]\n[Date \"????.??.??\"]\n[Round \"{round}\"]\n[White \"?\"]\n[Black \"?\"]\n[Result \"*\"]\n\n",
            esc(&self.site)
        ))?;
        Ok(())
    }

    fn tree_game(&mut self, about: &str) -> Result<()> {
        self.tags("-")?;
        self.out.comment(about)?;
        let start = Chess::default();
        self.tree(&start, self.plan.root, 0)?;
        self.out.result("*")?;
        self.out.raw("\n")?;
        Ok(())
    }

    /// The moves of `pos` (at `ply`): the main move, its alternatives as
    /// variations, then the main line's continuation.
    fn tree(&mut self, pos: &Chess, key: Key, ply: u32) -> Result<()> {
        let steps = self.steps(pos, key)?;
        let Some((main, alternatives)) = steps.split_first() else {
            return Ok(());
        };
        self.step(main, ply)?;
        for alt in alternatives {
            self.out.open_variation();
            self.step(alt, ply)?;
            self.follow(alt, ply)?;
            self.out.close_variation()?;
        }
        self.follow(main, ply)
    }

    /// After `step`: its position's moves if they are written here, else
    /// the end of a line.
    fn follow(&mut self, step: &Step, ply: u32) -> Result<()> {
        if step.continues {
            self.tree(&step.child, step.child_key, ply + 1)
        } else {
            self.ended += 1;
            Ok(())
        }
    }

    /// A move with its number where one is due, its NAG and comment.
    fn step(&mut self, step: &Step, ply: u32) -> Result<()> {
        self.out.mv(MoveNumber::at_ply(ply), &step.san)?;
        if let Some(nag) = step.nag {
            self.out.nag(nag)?;
        }
        if !step.comment.is_empty() {
            self.out.comment(&step.comment)?;
        }
        Ok(())
    }

    /// One game a line, in the tree's order (main line first).
    fn lines_games(&mut self) -> Result<()> {
        let start = Chess::default();
        self.lines(&start, self.plan.root, &mut Vec::new())
    }

    /// `path`: the moves from the start to `pos`, SAN and NAG.
    fn lines(&mut self, pos: &Chess, key: Key, path: &mut Vec<(String, Option<u8>)>) -> Result<()> {
        for step in self.steps(pos, key)? {
            path.push((step.san.clone(), step.nag));
            if step.continues {
                self.lines(&step.child, step.child_key, path)?;
            } else {
                self.ended += 1;
                self.tags(&self.ended.to_string())?;
                for (at, (san, nag)) in (0..).zip(path.iter()) {
                    self.out.mv(MoveNumber::at_ply(at), san)?;
                    if let Some(nag) = nag {
                        self.out.nag(*nag)?;
                    }
                }
                if !step.comment.is_empty() {
                    self.out.comment(&step.comment)?;
                }
                self.out.result("*")?;
                self.out.raw("\n")?;
            }
            path.pop();
        }
        Ok(())
    }

    /// The selected moves of `pos` as written: SAN, NAG, and the comment
    /// from the explorer's view of the position.
    fn steps(&self, pos: &Chess, key: Key) -> Result<Vec<Step>> {
        let moves = self.plan.moves(key)?;
        if moves.is_empty() {
            return Ok(Vec::new());
        }
        let explored = explore_moves(self.book, pos)?;
        let mut steps = Vec::with_capacity(moves.len());
        let mut values = Vec::with_capacity(moves.len());
        for &(mv, weight) in &moves {
            let Some(m) = mv.to_move(pos) else { continue };
            let mut child = pos.clone();
            let san = SanPlus::from_move_and_play_unchecked(&mut child, m).to_string();
            let child_key = polyglot_key(&child);
            let info = explored.moves.iter().find(|e| e.child == Some(child_key));
            values.push(info.and_then(|e| e.value));
            let mut comment = comment(info, weight);
            let (continues, there) = self.plan.follows(key, mv, child_key)?;
            if let Some(there) = there {
                comment.push_str(&format!("; transposes to {there}"));
            }
            steps.push(Step {
                continues,
                san,
                nag: None,
                comment,
                child,
                child_key,
            });
        }
        let nags = nags(&values);
        for (s, nag) in steps.iter_mut().zip(nags) {
            s.nag = nag;
        }
        Ok(steps)
    }
}

/// A move's comment: `12 games, +5 =4 -3, value +0.18, Stockfish 16 d22
/// +0.31` (the counts White's way, the value and the score for the side
/// that moved), or the export weight of a move without games.
fn comment(info: Option<&ExploredMove>, weight: u16) -> String {
    let Some(e) = info else {
        return format!("weight {weight}");
    };
    let c = e.counts;
    let mut s = format!(
        "{} game{}, +{} ={} -{}",
        c.total(),
        if c.total() == 1 { "" } else { "s" },
        c.white,
        c.draws,
        c.black
    );
    if let Some(v) = e.value {
        // (+ 0.0: no "-0.00" for a value that rounds to 0.)
        let v = (v * 100.0).round() / 100.0 + 0.0;
        s.push_str(&format!(", value {v:+.2}"));
    }
    if let Some(a) = &e.analysis {
        let engine = a.engine.split_whitespace().collect::<Vec<_>>().join(" ");
        s.push_str(&format!(", {engine} d{} {}", a.depth, format_cp(a.cp)));
    }
    s
}

/// The NAG of each move from how much its value falls short of the first
/// (main) move's: see [`DUBIOUS`], [`MISTAKE`], [`BLUNDER`].
fn nags(values: &[Option<f64>]) -> Vec<Option<u8>> {
    let Some(Some(main)) = values.first().copied() else {
        return vec![None; values.len()];
    };
    let mut out: Vec<Option<u8>> = values
        .iter()
        .map(|v| {
            let drop = main - (*v)?;
            if drop >= BLUNDER {
                Some(4)
            } else if drop >= MISTAKE {
                Some(2)
            } else if drop >= DUBIOUS {
                Some(6)
            } else {
                None
            }
        })
        .collect();
    let forced = values.len() > 1
        && values[1..]
            .iter()
            .all(|v| v.is_some_and(|v| main - v >= MISTAKE));
    if let Some(first) = out.first_mut() {
        *first = forced.then_some(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nags_follow_the_drop_from_the_main_move() {
        assert_eq!(
            nags(&[Some(0.1), Some(0.05), Some(0.0), Some(-0.1), Some(-0.3)]),
            vec![None, None, Some(6), Some(2), Some(4)]
        );
        assert_eq!(
            nags(&[Some(0.1), Some(-0.1), Some(-0.3)]),
            vec![Some(1), Some(2), Some(4)]
        );
        assert_eq!(nags(&[Some(0.1)]), vec![None]);
        assert_eq!(nags(&[None, Some(-0.5)]), vec![None, None]);
        assert_eq!(nags(&[Some(0.0), None]), vec![None, None]);
    }
}
