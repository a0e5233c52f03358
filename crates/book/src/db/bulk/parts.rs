//! A new book too large to value in memory, written in parts: the counted
//! positions one key range at a time, then the games with their tails, then
//! the parent links from the moves sorted on disk, then the values depth by
//! depth from the deepest, each position read back from SQLite with its
//! children. Memory holds one key range's counts, the keys of the rows
//! (to find each game's tail), and the sorters' buffers; SQLite holds the
//! rest. The book is the one `build::load::bulk_load` writes, row for row.
//! Here are the SQL and the writer's state; `build::load` counts each key
//! range, finds the games' tails and hands the rows to [`PartsWriter`].
//!
//! Values by depth give the same result as the whole graph valued at
//! once: a position's value depends on its children's values only for a
//! child one ply deeper (`minimax::edge_value`), and the deeper layers are
//! written first.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use rayon::prelude::*;
use rusqlite::{params, Transaction};

use super::input::{EdgeAgg, GameTail, NodeAgg};
use super::write::{insert_chunked, insert_game_tails, insert_moves, insert_pairs, source_ids};
use crate::db::book::Book;
use crate::db::tail_index::IndexWriter;
use crate::db::top_games::write_top_blob;
use crate::keys::{Key, MoveCode};
use crate::pgn::game::Counts;
use crate::sort::PairSorter;
use crate::values::minimax::{node_value_with, NodeInfo, ValueParams};

/// The keys of the rows, 8 bytes each: a hash set of them would take twice
/// that, and more while it grows (they are most of what the budget does not
/// bound). Looked up once sorted, from an index of their top bits.
#[derive(Default)]
pub(crate) struct RowKeys {
    keys: Vec<u64>,
    /// Where the keys of each value of the top [`RowKeys::TOP`] bits start.
    starts: Vec<u32>,
}

impl RowKeys {
    const TOP: u32 = 20;

    /// Sorts the keys and indexes them, for [`RowKeys::contains`].
    fn index(&mut self) {
        self.keys.par_sort_unstable();
        self.keys.shrink_to_fit();
        let top = |k: u64| (k >> (64 - Self::TOP)) as usize;
        self.starts = vec![0; (1 << Self::TOP) + 1];
        for &k in &self.keys {
            self.starts[top(k) + 1] += 1;
        }
        for i in 1..self.starts.len() {
            self.starts[i] += self.starts[i - 1];
        }
    }

    pub(crate) fn contains(&self, key: &Key) -> bool {
        let t = (key.0 >> (64 - Self::TOP)) as usize;
        match (self.starts.get(t), self.starts.get(t + 1)) {
            (Some(&a), Some(&b)) => self.keys[a as usize..b as usize]
                .binary_search(&key.0)
                .is_ok(),
            _ => false,
        }
    }
}

/// The attached database of the tails' first positions.
const HEADS: &str = "bulk_heads";

/// A book being written in parts (see the module). [`Book::parts`] starts
/// it, [`PartsWriter::finish`] commits it.
pub struct PartsWriter<'a> {
    tx: Transaction<'a>,
    params: ValueParams,
    min_games: u32,
    /// The keys of the counted rows: a game's tail starts after the last
    /// of its positions in this set.
    rows: RowKeys,
    /// `(-depth, key)` of every row, for the values from the deepest.
    layers: PairSorter,
    /// `(child, parent)` of every move written, for the parent links.
    links: PairSorter,
    heads: usize,
}

impl Book {
    /// Starts writing this empty book in parts; temporary data goes to
    /// `heads` (a file of its own) and to sorted runs in `temp_dir` named
    /// from `prefix`, each sorter holding at most `sort_bytes` in memory.
    pub fn parts(
        &mut self,
        heads: &Path,
        temp_dir: &Path,
        prefix: &str,
        sort_bytes: u64,
    ) -> Result<PartsWriter<'_>> {
        let name = heads
            .to_str()
            .ok_or_else(|| anyhow!("{}: the path is not UTF-8", heads.display()))?;
        self.conn
            .execute(&format!("ATTACH DATABASE ?1 AS {HEADS}"), [name])
            .with_context(|| format!("cannot create {}", heads.display()))?;
        // Reads through SQLite's page cache, not a map of the file: the
        // pages of a map count as the process's memory, up to the map's
        // size (1 GB), and the budget is about that memory.
        self.conn.pragma_update(None, "mmap_size", 0i64)?;
        self.conn.execute_batch(&format!(
            "PRAGMA {HEADS}.mmap_size = 0; PRAGMA {HEADS}.cache_size = -4096;
             PRAGMA {HEADS}.journal_mode = OFF; PRAGMA {HEADS}.synchronous = OFF;
             CREATE TABLE {HEADS}.heads(key INTEGER PRIMARY KEY, depth INTEGER NOT NULL,
               white INTEGER NOT NULL, draws INTEGER NOT NULL, black INTEGER NOT NULL,
               exact REAL, value REAL NOT NULL, expected INTEGER NOT NULL);"
        ))?;
        let params = self.settings.params;
        let min_games = self.settings.min_games;
        let tx = self.conn.transaction()?;
        Ok(PartsWriter {
            tx,
            params,
            min_games,
            rows: RowKeys::default(),
            layers: PairSorter::new(sort_bytes, temp_dir, &format!("{prefix}layers")),
            links: PairSorter::new(sort_bytes, temp_dir, &format!("{prefix}links")),
            heads: 0,
        })
    }

    /// Detaches what [`Book::parts`] attached (after the writer is done
    /// or failed).
    pub fn end_parts(&self) -> Result<()> {
        self.conn
            .execute_batch(&format!("DETACH DATABASE {HEADS}"))?;
        self.conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
        Ok(())
    }
}

impl PartsWriter<'_> {
    /// SQLite's page caches, `bytes` in all (a quarter of it the heads'):
    /// the pages of a book too big for them are read again through system
    /// calls, most of the time of the values when the cache is small.
    pub fn set_cache(&self, bytes: u64) -> Result<()> {
        let kib = |b: u64| -((b >> 10).max(1024) as i64);
        self.tx.execute_batch(&format!(
            "PRAGMA main.cache_size = {}; PRAGMA {HEADS}.cache_size = {};",
            kib(bytes - bytes / 4),
            kib(bytes / 4)
        ))?;
        Ok(())
    }

    /// The book's `--min-games`.
    pub(crate) fn min_games(&self) -> u32 {
        self.min_games
    }

    /// The book's value parameters.
    pub(crate) fn params(&self) -> ValueParams {
        self.params
    }

    /// Keeps the keys of counted rows: a game's tail starts after the last
    /// of its positions among them.
    pub(crate) fn keep_row_keys(&mut self, keys: impl Iterator<Item = u64>) {
        self.rows.keys.extend(keys);
    }

    /// The keys of the rows kept so far, sorted and indexed for look-ups
    /// (after every key range).
    pub(crate) fn take_row_keys(&mut self) -> RowKeys {
        let mut rows = std::mem::take(&mut self.rows);
        rows.index();
        rows
    }

    /// The `sources` id of each name (added where new).
    pub(crate) fn source_ids(&self, sources: &[String]) -> Result<Vec<i64>> {
        source_ids(&self.tx, sources)
    }

    /// Inserts the games of `batch` with their tails, with the ids after
    /// `written`.
    pub(crate) fn insert_game_tails(
        &self,
        batch: &[GameTail],
        written: i64,
        source_ids: &[i64],
    ) -> Result<()> {
        insert_game_tails(&self.tx, batch, written, source_ids)
    }

    /// Writes the tails index from its entries, sorted within a memory limit.
    pub(crate) fn write_tail_index(&self, tail_entries: PairSorter) -> Result<()> {
        let mut index = IndexWriter::new(&self.tx)?;
        tail_entries.drain(|entries| index.push(entries))?;
        index.finish()?;
        Ok(())
    }

    /// Inserts position rows (their value, choice and parent come at the
    /// end) and moves, both in key order.
    pub(crate) fn add_rows(
        &mut self,
        rows: &[(Key, &NodeAgg)],
        moves: &[((i64, u16), EdgeAgg)],
    ) -> Result<()> {
        let blob = std::cell::RefCell::new(Vec::new());
        insert_chunked(
            &self.tx,
            "INSERT INTO positions(key, depth, white, draws, black, exact, expected, top)",
            8,
            rows,
            |st, i, (k, n)| {
                st.raw_bind_parameter(i, *k)?;
                st.raw_bind_parameter(i + 1, n.depth)?;
                st.raw_bind_parameter(i + 2, n.counts.white)?;
                st.raw_bind_parameter(i + 3, n.counts.draws)?;
                st.raw_bind_parameter(i + 4, n.counts.black)?;
                st.raw_bind_parameter(i + 5, n.exact)?;
                st.raw_bind_parameter(i + 6, n.expected)?;
                let mut blob = blob.borrow_mut();
                write_top_blob(&n.top, &mut blob);
                st.raw_bind_parameter(i + 7, (!blob.is_empty()).then_some(&*blob))
            },
        )?;
        insert_moves(&self.tx, moves)?;
        for (k, n) in rows {
            self.layers.push((-i64::from(n.depth), k.to_sql()))?;
        }
        for &((parent, _), ref e) in moves {
            self.links.push((e.child.to_sql(), parent))?;
        }
        Ok(())
    }

    /// Adds a tail's first position (for the values).
    pub(crate) fn add_head(&mut self, h: &NodeInfo) -> Result<()> {
        self.tx
            .prepare_cached(&format!(
                "INSERT INTO {HEADS}.heads(key, depth, white, draws, black, exact, value, expected)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            ))?
            .execute(params![
                h.key,
                h.depth,
                h.counts.white,
                h.counts.draws,
                h.counts.black,
                h.exact,
                h.value,
                h.expected
            ])?;
        self.heads += 1;
        Ok(())
    }

    /// The parent links, then the values from the deepest positions up; the
    /// book is committed.
    pub fn finish(self) -> Result<()> {
        let PartsWriter {
            tx,
            params,
            layers,
            links,
            ..
        } = self;
        write_links(&tx, links)?;
        write_values(&tx, layers, &params)?;
        tx.commit()?;
        Ok(())
    }
}

/// Each row's `parent` (its smallest parent key) and, for a position with
/// two or more, all of them in `parents`, from the `(child, parent)` pairs
/// of every move.
fn write_links(tx: &Transaction<'_>, links: PairSorter) -> Result<()> {
    let mut set = tx.prepare("UPDATE positions SET parent = ?2 WHERE key = ?1")?;
    let mut several: Vec<(i64, i64)> = Vec::new();
    let mut carry: Vec<(i64, i64)> = Vec::new();
    let mut flush = |group: &[(i64, i64)], several: &mut Vec<(i64, i64)>| -> Result<()> {
        set.execute(params![group[0].0, group[0].1])?;
        if group.len() > 1 {
            several.extend_from_slice(group);
        }
        Ok(())
    };
    links.drain(|pairs| {
        // A child's pairs may run over the end of a batch: the last group
        // waits for the next batch.
        carry.extend_from_slice(pairs);
        let last = carry.last().map(|p| p.0);
        let cut = carry
            .iter()
            .position(|p| Some(p.0) == last)
            .unwrap_or(carry.len());
        for group in carry[..cut].chunk_by(|a, b| a.0 == b.0) {
            flush(group, &mut several)?;
        }
        carry.drain(..cut);
        if several.len() >= 1 << 16 {
            insert_pairs(tx, "INSERT INTO parents(child, parent)", &several)?;
            several.clear();
        }
        Ok(())
    })?;
    for group in carry.chunk_by(|a, b| a.0 == b.0) {
        flush(group, &mut several)?;
    }
    insert_pairs(tx, "INSERT INTO parents(child, parent)", &several)?;
    Ok(())
}

/// Every row's value and choice, depth by depth from the deepest
/// (`layers`: `(-depth, key)` of every row).
fn write_values(tx: &Transaction<'_>, layers: PairSorter, params: &ValueParams) -> Result<()> {
    let mut node = tx.prepare(
        "SELECT depth, white, draws, black, exact, expected FROM positions WHERE key = ?1",
    )?;
    let mut children = tx.prepare(&format!(
        "SELECT m.move, m.child, c.depth, c.white, c.draws, c.black, c.exact, c.value, c.expected,
           h.depth, h.white, h.draws, h.black, h.exact, h.value, h.expected
         FROM moves m LEFT JOIN positions c ON c.key = m.child LEFT JOIN {HEADS}.heads h ON h.key = m.child
         WHERE m.parent = ?1 AND m.child IS NOT NULL ORDER BY m.move"
    ))?;
    let mut set = tx.prepare("UPDATE positions SET value = ?2, best = ?3 WHERE key = ?1")?;
    let mut kids: Vec<(MoveCode, NodeInfo)> = Vec::new();
    let mut buf = Vec::new();
    layers.drain(|pairs| {
        for &(_, key) in pairs {
            let key = Key::from_sql(key);
            let n = node.query_row([key], |r| {
                Ok(NodeInfo {
                    expected: r.get(5)?,
                    exact: r.get(4)?,
                    ..NodeInfo::from_counts(
                        key,
                        r.get::<_, Option<u32>>(0)?,
                        Counts {
                            white: r.get(1)?,
                            draws: r.get(2)?,
                            black: r.get(3)?,
                        },
                    )
                })
            })?;
            kids.clear();
            let mut rows = children.query([key])?;
            while let Some(r) = rows.next()? {
                let mv = MoveCode(r.get(0)?);
                let child: Key = r.get(1)?;
                // The child's columns: its row (from 2), or a tail's first
                // position (from 9), or neither (not valued: left out).
                let at = if r.get::<_, Option<u32>>(2)?.is_some() {
                    2
                } else if r.get::<_, Option<u32>>(9)?.is_some() {
                    9
                } else {
                    continue;
                };
                kids.push((
                    mv,
                    NodeInfo {
                        expected: r.get(at + 6)?,
                        exact: r.get(at + 4)?,
                        value: r.get(at + 5)?,
                        ..NodeInfo::from_counts(
                            child,
                            r.get::<_, Option<u32>>(at)?,
                            Counts {
                                white: r.get(at + 1)?,
                                draws: r.get(at + 2)?,
                                black: r.get(at + 3)?,
                            },
                        )
                    },
                ));
            }
            let (v, best) =
                node_value_with(&n, kids.iter().map(|(m, c)| (*m, c)), params, &mut buf);
            set.execute(params![key, v, best.map(|m| m.0)])?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_keys_find_every_key_added_and_no_other() {
        let key = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x0F0F;
        let mut rows = RowKeys::default();
        // In two parts, as the key ranges add them; the ends of the key
        // space included.
        rows.keys.extend((0..50_000).map(|i| key(2 * i)));
        rows.keys.extend([0, u64::MAX]);
        rows.keys.extend((50_000..100_000).map(|i| key(2 * i)));
        rows.index();
        for i in 0..100_000 {
            assert!(rows.contains(&Key(key(2 * i))), "key {i} lost");
            assert!(!rows.contains(&Key(key(2 * i + 1))), "key {i} made up");
        }
        assert!(rows.contains(&Key(0)) && rows.contains(&Key(u64::MAX)));
        assert!(!RowKeys::default().contains(&Key(7)));
    }
}
