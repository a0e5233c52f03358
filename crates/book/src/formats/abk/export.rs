//! `export --format abk`: the selection laid out as a tree (see the module
//! doc of [`super`]) and written as it is laid out.
//!
//! The tree is not held in memory: entries go to the file as they are
//! appended, a position's pending replies wait in the breadth-first queue
//! as one item per sibling chain (not per move), and the `next_move` links
//! (known only when the replies are appended) and the header (known at the
//! end) are written over their placeholders once the entries are out. What
//! stays in memory is the selection, sorted, and a few bytes per position
//! of the tree.

use std::{
    collections::VecDeque,
    fs::File,
    io::{BufWriter, Seek, SeekFrom, Write},
    path::Path,
};

use anyhow::{bail, Context, Result};
use shakmaty::{Chess, Color, Move, Position};

use super::{
    move_squares, priority, promotion_byte, won_lost, Header, RawEntry, ENTRIES_START, ENTRY_LEN,
    NONE, ROOT,
};
use crate::db::Book;
use crate::formats::polyglot::{for_each_selected, ExportOptions, SelectedMove, WeightMode};
use crate::formats::suite::SideToMove;
use crate::keys::{polyglot_key, Key, KeySet, MoveCode};
use learnbook_base::atomic_file;
use learnbook_base::peak_memory;

/// The selection sorted by position, heaviest first (then by move, so that
/// the file does not depend on the book's row order; a position's moves
/// are distinct, so the order is total): a position's moves are one slice,
/// found by binary search.
struct Selection {
    moves: Vec<SelectedMove>,
}

impl Selection {
    fn new(mut moves: Vec<SelectedMove>) -> Selection {
        moves.sort_unstable_by(|a, b| {
            a.parent
                .cmp(&b.parent)
                .then(b.weight.cmp(&a.weight))
                .then(a.mv.cmp(&b.mv))
        });
        Selection { moves }
    }

    /// The moves of `key`, heaviest first.
    fn get(&self, key: Key) -> Option<&[SelectedMove]> {
        let lo = self.moves.partition_point(|m| m.parent < key);
        let hi = lo + self.moves[lo..].partition_point(|m| m.parent == key);
        (hi > lo).then(|| &self.moves[lo..hi])
    }

    /// The selected moves that are legal in `pos`, in the order written.
    fn legal(&self, pos: &Chess) -> Vec<(&SelectedMove, Move)> {
        self.get(polyglot_key(pos)).map_or_else(Vec::new, |moves| {
            moves
                .iter()
                .filter_map(|s| s.mv.to_move(pos).map(|m| (s, m)))
                .collect()
        })
    }
}

/// What the tree holds so far, and where its entries go.
struct Tree<W: Write + Seek> {
    out: W,
    /// Entries written.
    entries: usize,
    /// (entry, the index of its replies' first entry), in entry order: the
    /// `next_move` fields still to write.
    links: Vec<(u32, u32)>,
    /// Games, White's and Black's wins over the start position's moves.
    first_block: Option<(u64, u64, u64)>,
    /// The longest line, in plies.
    depth: u32,
    /// The distinct (position, move) pairs written.
    distinct: KeySet<(Key, MoveCode)>,
    /// Entries that copy a position's moves already written on another
    /// line (a transposition).
    copies: usize,
    /// Moves written without replies although their position has moves:
    /// a repetition of their own line, or a transposition past the copy
    /// budget (the replies are on another line).
    leaves: usize,
}

/// A position in the tree, for the repetition guard: the key and the
/// node it was reached from.
struct Node {
    key: Key,
    parent: Option<u32>,
}

/// Whether `key` is on the line to `node` (node included).
fn on_line(nodes: &[Node], mut node: Option<u32>, key: Key) -> bool {
    while let Some(i) = node {
        let n = &nodes[i as usize];
        if n.key == key {
            return true;
        }
        node = n.parent;
    }
    false
}

/// A sibling chain written whose moves' replies are still to lay out: the
/// position, its node, the index of its first entry and its ply.
struct Pending {
    pos: Chess,
    node: u32,
    first: u32,
    ply: u32,
}

impl<W: Write + Seek> Tree<W> {
    /// Writes the sibling chain of `pos`'s `legal` moves (the caller has
    /// checked there is one); returns the file index of its first entry.
    fn append_block(
        &mut self,
        legal: &[(&SelectedMove, Move)],
        side: SideToMove,
        pos: &Chess,
    ) -> Result<u32> {
        let key = polyglot_key(pos);
        let heaviest = legal.iter().map(|(s, _)| s.weight).max().unwrap_or(0);
        let plays = match side {
            SideToMove::Both => true,
            SideToMove::White => pos.turn() == Color::White,
            SideToMove::Black => pos.turn() == Color::Black,
        };
        let first = self.entries;
        if first + legal.len() > (NONE - ROOT) as usize {
            bail!("the ABK tree has more entries than 32-bit indexes address");
        }
        let mut sums = (0u64, 0u64, 0u64);
        for (i, (s, m)) in legal.iter().enumerate() {
            let (from, to, promo) = move_squares(m);
            let (won, lost) = won_lost(pos.turn(), s.counts);
            let index = first + i;
            let entry = RawEntry {
                from: u8::from(from),
                to: u8::from(to),
                promotion: promotion_byte(promo),
                priority: if plays {
                    priority(s.weight, heaviest)
                } else {
                    0
                },
                games: s.counts.total(),
                won,
                lost,
                flags: 0,
                next_move: NONE,
                next_sibling: if i + 1 < legal.len() {
                    file_index(index + 1)
                } else {
                    NONE
                },
            };
            sums.0 += u64::from(entry.games);
            sums.1 += u64::from(entry.won);
            sums.2 += u64::from(entry.lost);
            self.out.write_all(&entry.encode())?;
            self.distinct.insert((key, s.mv));
        }
        self.entries += legal.len();
        self.first_block.get_or_insert(sums);
        Ok(file_index(first))
    }

    /// Writes the `next_move` links over their placeholders.
    fn write_links(&mut self) -> Result<()> {
        for &(entry, first) in &self.links {
            let at = ENTRIES_START + entry as usize * ENTRY_LEN + 20;
            self.out.seek(SeekFrom::Start(at as u64))?;
            self.out.write_all(&first.to_le_bytes())?;
        }
        Ok(())
    }
}

/// The file index of the `i`-th entry after the header (in range: checked
/// by [`Tree::append_block`]).
fn file_index(i: usize) -> u32 {
    ROOT + i as u32
}

/// The selected moves of the positions reached from the start position
/// through selected moves, and those positions.
fn reachable_moves(selection: &Selection) -> (usize, KeySet<Key>) {
    let start = Chess::default();
    let mut seen: KeySet<Key> = KeySet::default();
    seen.insert(polyglot_key(&start));
    let mut queue = VecDeque::from([start]);
    let mut count = 0;
    while let Some(pos) = queue.pop_front() {
        for (_, m) in selection.legal(&pos) {
            count += 1;
            let mut next = pos.clone();
            next.play_unchecked(m);
            if seen.insert(polyglot_key(&next)) {
                queue.push_back(next);
            }
        }
    }
    (count, seen)
}

/// Lays the selection out as a tree from the start position, breadth
/// first, each position's moves one contiguous sibling chain (see the
/// module doc of [`super`] for transpositions and repetitions), writing the
/// entries to `tree` as they come. With `side` White or Black, the other
/// side's moves are written with priority 0.
fn lay_out<W: Write + Seek>(
    tree: &mut Tree<W>,
    selection: &Selection,
    side: SideToMove,
) -> Result<()> {
    let (reachable, _) = reachable_moves(selection);
    // The budget counts the moves the tree can reach, so that the same
    // reachable selection always gives the same file.
    let budget = super::COPY_FACTOR * reachable;
    let start = Chess::default();
    let start_key = polyglot_key(&start);
    if selection.get(start_key).is_none() {
        return Ok(());
    }
    let legal = selection.legal(&start);
    let first = tree.append_block(&legal, side, &start)?;
    drop(legal);
    let mut written: KeySet<Key> = KeySet::default();
    written.insert(start_key);
    let mut nodes = vec![Node {
        key: start_key,
        parent: None,
    }];
    // The chains whose moves' replies are still to lay out, in the order
    // their entries were written: their moves are the breadth-first queue.
    let mut queue = VecDeque::from([Pending {
        pos: start,
        node: 0,
        first: first - ROOT,
        ply: 0,
    }]);
    while let Some(block) = queue.pop_front() {
        let ply = block.ply + 1;
        for (i, (_, m)) in selection.legal(&block.pos).into_iter().enumerate() {
            let entry = block.first + i as u32;
            tree.depth = tree.depth.max(ply);
            let mut pos = block.pos.clone();
            pos.play_unchecked(m);
            let key = polyglot_key(&pos);
            let Some(moves) = selection.get(key) else {
                continue;
            };
            if written.contains(&key) {
                if on_line(&nodes, Some(block.node), key) || tree.entries >= budget {
                    tree.leaves += 1;
                    continue;
                }
                tree.copies += moves.len();
            }
            written.insert(key);
            let node = u32::try_from(nodes.len())?;
            nodes.push(Node {
                key,
                parent: Some(block.node),
            });
            let first = tree.append_block(&selection.legal(&pos), side, &pos)?;
            tree.links.push((entry, first));
            queue.push_back(Pending {
                pos,
                node,
                first: first - ROOT,
                ply,
            });
        }
    }
    Ok(())
}

/// The header of an export.
fn export_header<W: Write + Seek>(tree: &Tree<W>, opts: &ExportOptions) -> Header {
    let weights = match opts.weights {
        WeightMode::Value => "value",
        WeightMode::Games => "games",
        WeightMode::Polyglot => "polyglot",
        WeightMode::Imported => "imported",
    };
    // Win percentages over the start position's moves (the first block).
    let (games, white, black) = tree.first_block.unwrap_or_default();
    let percent = |n: u64| (100 * n).checked_div(games).unwrap_or(0) as u32;
    Header {
        comment: format!(
            "learnbook export: weights {weights}, min games {}{}",
            opts.min_games,
            opts.max_ply
                .map_or_else(String::new, |p| format!(", max ply {p}"))
        ),
        author: "learnbook".to_string(),
        book_depth: tree.depth,
        book_moves: tree.entries as u32,
        min_games: opts.min_games,
        min_wins: 0,
        win_percent_white: percent(white),
        win_percent_black: percent(black),
        probability_priority: 10,
        probability_games: 0,
        probability_win_percent: 0,
        use_book_half_move: opts.max_ply.unwrap_or(tree.depth),
    }
}

/// What `export --format abk` wrote.
#[derive(Clone, Debug)]
pub struct ExportSummary {
    /// Entries written (moves, a position's moves once per path to it).
    pub entries: usize,
    /// Distinct (position, move) pairs among them.
    pub moves: usize,
    /// Selected moves of positions the tree does not reach.
    pub unreached: usize,
    /// Entries that copy the moves of a transposed position.
    pub copies: usize,
    /// Moves written without replies although their position has some (a
    /// repetition, or a transposition past the copy budget).
    pub leaves: usize,
    /// The longest line, in plies.
    pub depth: u32,
}

/// `export --format abk`: the selection as a tree (see the module doc of
/// [`super`]), written atomically (all or nothing).
pub fn export(book: &Book, path: &Path, opts: &ExportOptions) -> Result<ExportSummary> {
    // The tree needs both sides' moves; `--side` sets priorities instead.
    let both = ExportOptions {
        side: SideToMove::Both,
        ..opts.clone()
    };
    let mut selected = Vec::new();
    for_each_selected(book, &both, |m| {
        selected.push(m);
        Ok(())
    })?;
    let total = selected.len();
    peak_memory::trace("abk: moves selected");
    let mut selection = Selection::new(selected);
    // Only the moves of positions the tree reaches can be written: the
    // rest need no room while the tree is laid out.
    let (_, reached) = reachable_moves(&selection);
    selection.moves.retain(|m| reached.contains(&m.parent));
    selection.moves.shrink_to_fit();
    drop(reached);
    peak_memory::release_free();
    peak_memory::trace("abk: reachable moves kept");
    let pending = atomic_file::Pending::new(path, ".tmp");
    let file = File::create(pending.path())
        .with_context(|| format!("cannot create {}", pending.path().display()))?;
    let mut tree = Tree {
        out: BufWriter::new(file),
        entries: 0,
        links: Vec::new(),
        first_block: None,
        depth: 0,
        distinct: KeySet::default(),
        copies: 0,
        leaves: 0,
    };
    // The header area first as zeros: the header is known at the end.
    tree.out.write_all(&[0u8; ENTRIES_START])?;
    lay_out(&mut tree, &selection, opts.side)
        .with_context(|| format!("cannot write {}", pending.path().display()))?;
    peak_memory::trace("abk: entries written");
    tree.write_links()
        .with_context(|| format!("cannot write {}", pending.path().display()))?;
    let header = export_header(&tree, opts);
    tree.out.seek(SeekFrom::Start(0))?;
    tree.out.write_all(&header.encode())?;
    tree.out.flush()?;
    tree.out
        .get_ref()
        .sync_all()
        .with_context(|| format!("cannot write {}", pending.path().display()))?;
    let summary = ExportSummary {
        entries: tree.entries,
        moves: tree.distinct.len(),
        unreached: total - tree.distinct.len(),
        copies: tree.copies,
        leaves: tree.leaves,
        depth: tree.depth,
    };
    drop(tree);
    pending.commit()?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use shakmaty::{san::San, CastlingMode};

    use super::*;
    use crate::pgn::game::Counts;

    /// The selected moves of the lines given in SAN, each move weighing
    /// its line's number plus one (so that heavier lines come later).
    fn selection_of(lines: &[&str]) -> Vec<SelectedMove> {
        let mut out: Vec<SelectedMove> = Vec::new();
        for (n, line) in lines.iter().enumerate() {
            let mut pos = Chess::default();
            for san in line.split_whitespace() {
                let m = san
                    .parse::<San>()
                    .expect("san")
                    .to_move(&pos)
                    .expect("legal");
                let (parent, mv) = (polyglot_key(&pos), MoveCode::from_move(&m));
                if !out.iter().any(|s| s.parent == parent && s.mv == mv) {
                    out.push(SelectedMove {
                        parent,
                        mv,
                        weight: n as u16 + 1,
                        counts: Counts {
                            white: 2,
                            draws: 1,
                            black: 1,
                        },
                        parent_depth: None,
                    });
                }
                pos.play_unchecked(m);
            }
        }
        out
    }

    /// The tree laid out and written to memory, the links written over
    /// their placeholders, read back by [`super::super::read`].
    #[test]
    fn links_written_at_the_end_lead_every_entry_to_its_replies() {
        // 1.e4 e5 2.Nf3 and 1.Nf3 e5 2.e4 transpose: the second line's
        // position gets a copy of the first's replies, which are written
        // long after the entries that link to them.
        let lines = [
            "e4 e5 Nf3 Nc6 Bb5 a6",
            "Nf3 e5 e4 Nc6 Bc4",
            "d4 d5 c4 e6 Nc3 Nf6",
            "Nf3 Nf6 Ng1 Ng8 Nf3",
        ];
        let selection = Selection::new(selection_of(&lines));
        let mut tree = Tree {
            out: Cursor::new(Vec::new()),
            entries: 0,
            links: Vec::new(),
            first_block: None,
            depth: 0,
            distinct: KeySet::default(),
            copies: 0,
            leaves: 0,
        };
        let header = Header::default().encode();
        tree.out.write_all(&header).expect("write");
        tree.out
            .write_all(&vec![0u8; ENTRIES_START - header.len()])
            .expect("write");
        lay_out(&mut tree, &selection, SideToMove::Both).expect("lay out");
        tree.write_links().expect("links");
        assert!(tree.copies > 0, "no transposition copied");
        assert!(tree.leaves > 0, "the repetition was not cut");
        let bytes = tree.out.into_inner();
        assert_eq!(bytes.len(), ENTRIES_START + tree.entries * ENTRY_LEN);
        let read = super::super::read(&bytes).expect("read back");
        assert_eq!(read.entries, tree.entries, "every entry reached once");
        assert_eq!(read.unreached, 0);
        let mut written: Vec<(Key, MoveCode)> = tree.distinct.into_iter().collect();
        let mut back: Vec<(Key, MoveCode)> = read.moves.iter().map(|m| (m.parent, m.mv)).collect();
        written.sort_unstable();
        back.sort_unstable();
        assert_eq!(written, back);
        // Every line is readable to its end: each move's reply chain was
        // linked to the right position (a wrong link reads an illegal move
        // or another position's moves).
        for line in lines {
            let mut pos = Chess::default();
            for san in line.split_whitespace() {
                let m = san
                    .parse::<San>()
                    .expect("san")
                    .to_move(&pos)
                    .expect("legal");
                let uci = m.to_uci(CastlingMode::Standard).to_string();
                assert!(
                    read.moves
                        .iter()
                        .any(|r| r.parent == polyglot_key(&pos) && r.uci == uci),
                    "{line}: {san} not read back"
                );
                pos.play_unchecked(m);
            }
        }
    }
}
