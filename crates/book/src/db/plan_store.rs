//! The PGN export's plan on disk ([`crate::formats::pgn_tree`]): a
//! temporary SQLite database beside the book, so that the plan of a large
//! book lives in a file and SQLite's bounded page cache, not in the heap.
//!
//! Three tables, each a B-tree on an integer (no second index):
//!
//! * `selected(key, moves)`: a position's selected moves in the order they
//!   are written (the heaviest first, then by move code), four bytes a
//!   move (code and weight, little-endian). The selection is sorted on
//!   disk first ([`SelectionSorter`]), so the rows go in in key order;
//! * `reached(key, ord, via, via_move, has_moves)`: each position the plan
//!   reaches, with its order of discovery, the move that first reaches it
//!   and whether its moves are written there;
//! * `path(ord, moves)`: by order of discovery, the moves from the start
//!   to each position (its via moves), to replay a level's positions in
//!   order and to name where a transposition's moves are written.
//!
//! The file is `BOOK.pgn-plan-PID` (the sorted runs `BOOK.pgn-plan-PID.sortN`),
//! written without a journal or syncs, and removed when the store is
//! dropped (the export ended or failed). A killed export's files are
//! removed by the next one of the same book; the files of an export still
//! running are not: its connection holds SQLite's lock on its database for
//! as long as it is open (`locking_mode = EXCLUSIVE`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::codec::{moves_from_blob, moves_to_blob};
use super::files::in_use;
use crate::keys::{Key, MoveCode};
use crate::sort::Sorter;
use learnbook_base::atomic_file::{directory_of, Pending};

/// A position the plan reaches, as [`PlanStore::reached`] reads it back.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Reached {
    /// The move that first reaches it at its smallest ply (`None`: the start).
    pub via: Option<(Key, MoveCode)>,
    /// Whether its moves are written after its via move.
    pub has_moves: bool,
    /// Its place in the order of discovery (the start is 0).
    pub order: u64,
}

/// The plan's scratch database (see the module).
pub struct PlanStore {
    conn: Connection,
    /// Removes the file when dropped: declared after `conn`, so that the
    /// connection is closed first.
    file: Pending,
    /// Positions reached so far (the next order of discovery).
    count: u64,
}

/// The selection sorted by position, heaviest first, then by move: runs
/// beside the store's database when it outgrows its memory.
pub struct SelectionSorter {
    sorter: Sorter<(i64, i64)>,
}

impl SelectionSorter {
    pub fn push(&mut self, key: Key, mv: MoveCode, weight: u16) -> Result<()> {
        // (The key as SQLite orders it: the rows then go in in order.)
        let rest = (i64::from(u16::MAX - weight) << 16) | i64::from(mv.0);
        self.sorter.push((key.to_sql(), rest))
    }
}

impl PlanStore {
    /// A new store beside `book`, with at most `cache_bytes` of SQLite's
    /// page cache (at least 1 MB). Removes a killed export's files first.
    pub fn create(book: &Path, cache_bytes: u64) -> Result<PlanStore> {
        let dir = directory_of(book);
        let name = book
            .file_name()
            .ok_or_else(|| anyhow::anyhow!("{}: not a file name", book.display()))?
            .to_string_lossy();
        let prefix = format!("{name}.pgn-plan-");
        remove_leftovers(dir, &prefix)?;
        let path = dir.join(format!("{prefix}{}", std::process::id()));
        let file = Pending::temporary(&path);
        let conn = Connection::open(&path)
            .with_context(|| format!("cannot create the temporary file {}", path.display()))?;
        let cache_kib = (cache_bytes >> 10).max(1024);
        // The lock is taken by the first write and held until the
        // connection closes: another export sees the file in use.
        conn.execute_batch(&format!(
            "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = OFF;
             PRAGMA synchronous = OFF; PRAGMA mmap_size = 0; PRAGMA cache_size = -{cache_kib};
             CREATE TABLE selected(key INTEGER PRIMARY KEY, moves BLOB NOT NULL);
             CREATE TABLE reached(key INTEGER PRIMARY KEY, ord INTEGER NOT NULL,
               via INTEGER, via_move INTEGER, has_moves INTEGER NOT NULL);
             CREATE TABLE path(ord INTEGER PRIMARY KEY, moves BLOB NOT NULL);
             BEGIN;"
        ))
        .with_context(|| format!("cannot write the temporary file {}", path.display()))?;
        Ok(PlanStore {
            conn,
            file,
            count: 0,
        })
    }

    /// Where the store's database is.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// A sorter for [`PlanStore::store_selection`] holding at most `bytes`
    /// in memory.
    pub fn selection_sorter(&self, bytes: u64) -> SelectionSorter {
        let path = self.file.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        SelectionSorter {
            sorter: Sorter::new(bytes, directory_of(path), &format!("{name}.sort")),
        }
    }

    /// Writes the selection `sorted` holds, a row a position.
    pub fn store_selection(&mut self, sorted: SelectionSorter) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare("INSERT INTO selected(key, moves) VALUES (?1, ?2)")?;
        let mut key = None;
        let mut moves: Vec<u8> = Vec::new();
        sorted.sorter.drain(|batch| {
            for &(k, rest) in batch {
                if key != Some(k) {
                    if let Some(done) = key {
                        stmt.execute(params![done, moves])?;
                    }
                    key = Some(k);
                    moves.clear();
                }
                moves.extend_from_slice(&(rest as u16).to_le_bytes());
                moves.extend_from_slice(&(u16::MAX - (rest >> 16) as u16).to_le_bytes());
            }
            Ok(())
        })?;
        if let Some(done) = key {
            stmt.execute(params![done, moves])?;
        }
        Ok(())
    }

    /// The selected moves of `key` with their weights, in the order they
    /// are written (none if it has no selected move).
    pub fn selected(&self, key: Key) -> Result<Vec<(MoveCode, u16)>> {
        let blob: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT moves FROM selected WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?;
        let Some(blob) = blob else {
            return Ok(Vec::new());
        };
        if blob.len() % 4 != 0 {
            bail!("the plan's selected moves of {key} are damaged");
        }
        let u16_at = |b: &[u8]| u16::from_le_bytes([b[0], b[1]]);
        Ok(blob
            .chunks_exact(4)
            .map(|c| (MoveCode(u16_at(&c[..2])), u16_at(&c[2..])))
            .collect())
    }

    /// Adds the start position (order 0).
    pub fn add_start(&mut self, key: Key) -> Result<()> {
        self.add(key, None, &[])?;
        Ok(())
    }

    /// Adds the position `key`, reached by `via` after the moves `path`
    /// from the start, unless it was reached before: whether it is new.
    pub fn reach(&mut self, key: Key, via: (Key, MoveCode), path: &[MoveCode]) -> Result<bool> {
        self.add(key, Some(via), path)
    }

    fn add(&mut self, key: Key, via: Option<(Key, MoveCode)>, path: &[MoveCode]) -> Result<bool> {
        let ord = self.count as i64;
        let added = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO reached(key, ord, via, via_move, has_moves)
                 VALUES (?1, ?2, ?3, ?4, 0)",
            )?
            .execute(params![key, ord, via.map(|v| v.0), via.map(|v| v.1 .0)])?;
        if added == 0 {
            return Ok(false);
        }
        self.conn
            .prepare_cached("INSERT INTO path(ord, moves) VALUES (?1, ?2)")?
            .execute(params![ord, moves_to_blob(path.iter().map(|m| m.0))])?;
        self.count += 1;
        Ok(true)
    }

    /// Records that the moves of `key` are written after its via move.
    pub fn set_has_moves(&mut self, key: Key) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE reached SET has_moves = 1 WHERE key = ?1")?
            .execute([key])?;
        Ok(())
    }

    /// The number of positions reached so far: the next one's order.
    pub fn reached_count(&self) -> u64 {
        self.count
    }

    /// The paths of the positions of order `from..to`, at most `limit`, in
    /// order.
    pub fn paths(&self, from: u64, to: u64, limit: usize) -> Result<Vec<(u64, Vec<MoveCode>)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT ord, moves FROM path WHERE ord >= ?1 AND ord < ?2 ORDER BY ord LIMIT ?3",
        )?;
        let mut rows = stmt.query(params![from as i64, to as i64, limit as i64])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let ord: i64 = r.get(0)?;
            out.push((ord as u64, decode_path(r.get_ref(1)?.as_blob()?)?));
        }
        Ok(out)
    }

    /// The path of the position of order `order`.
    pub fn path_of(&self, order: u64) -> Result<Option<Vec<MoveCode>>> {
        let blob: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT moves FROM path WHERE ord = ?1")?
            .query_row([order as i64], |r| r.get(0))
            .optional()?;
        blob.map(|b| decode_path(&b)).transpose()
    }

    /// Ends the building of the plan (its writes committed); what is left
    /// is reads.
    pub fn finish(&mut self) -> Result<()> {
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }

    /// The position `key`, if the plan reaches it.
    pub fn reached(&self, key: Key) -> Result<Option<Reached>> {
        Ok(self
            .conn
            .prepare_cached("SELECT ord, via, via_move, has_moves FROM reached WHERE key = ?1")?
            .query_row([key], |r| {
                let via: Option<Key> = r.get(1)?;
                let via_move: Option<u16> = r.get(2)?;
                Ok(Reached {
                    order: r.get::<_, i64>(0)? as u64,
                    via: via.zip(via_move.map(MoveCode)),
                    has_moves: r.get::<_, i64>(3)? != 0,
                })
            })
            .optional()?)
    }
}

fn decode_path(blob: &[u8]) -> Result<Vec<MoveCode>> {
    moves_from_blob(blob)
        .map(|m| m.into_iter().map(MoveCode).collect())
        .ok_or_else(|| anyhow::anyhow!("a damaged path in the plan"))
}

/// Removes the files of `dir` named `prefix` + a process id (a store's
/// database), or that + `.sort` and a number (its sorted runs), unless
/// that database is in use: a killed export's, not a running one's.
fn remove_leftovers(dir: &Path, prefix: &str) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let db: PathBuf = match rest.find('.') {
            Some(i) => dir.join(&name[..prefix.len() + i]),
            None => e.path(),
        };
        if !in_use(&db)? {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_selection_comes_back_sorted_a_position_at_a_time_and_the_file_goes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let book = dir.path().join("b.sqlite");
        // A killed export's database and run: removed.
        for leftover in ["b.sqlite.pgn-plan-1", "b.sqlite.pgn-plan-1.sort3"] {
            std::fs::write(dir.path().join(leftover), b"x").expect("write");
        }
        let mut store = PlanStore::create(&book, 0).expect("create");
        assert_eq!(
            names(dir.path()),
            vec![format!("b.sqlite.pgn-plan-{}", std::process::id())]
        );
        // A tiny sorter: runs on disk.
        let mut sorter = store.selection_sorter(0);
        let mut want: Vec<(Key, MoveCode, u16)> = Vec::new();
        for i in 0..5000u64 {
            let key = Key((i % 700).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let (mv, weight) = (MoveCode((i % 97) as u16), (i % 13) as u16 + 1);
            sorter.push(key, mv, weight).expect("push");
            want.push((key, mv, weight));
        }
        store.store_selection(sorter).expect("store");
        want.sort_by(|a, b| a.0.cmp(&b.0).then(b.2.cmp(&a.2)).then(a.1.cmp(&b.1)));
        want.dedup();
        let mut got = Vec::new();
        for i in 0..700u64 {
            let key = Key(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            got.extend(
                store
                    .selected(key)
                    .expect("selected")
                    .into_iter()
                    .map(|(m, w)| (key, m, w)),
            );
        }
        got.sort_by_key(|a| a.0);
        assert_eq!(got, want);
        assert!(store.selected(Key(12345)).expect("selected").is_empty());

        let (a, b, c) = (Key(1), Key(2), Key(3));
        store.add_start(a).expect("start");
        assert!(store
            .reach(b, (a, MoveCode(7)), &[MoveCode(7)])
            .expect("reach"));
        assert!(!store
            .reach(b, (a, MoveCode(8)), &[MoveCode(8)])
            .expect("reach"));
        assert!(store
            .reach(c, (b, MoveCode(9)), &[MoveCode(7), MoveCode(9)])
            .expect("reach"));
        store.set_has_moves(b).expect("set");
        store.finish().expect("finish");
        assert_eq!(store.reached_count(), 3);
        assert_eq!(
            store.reached(b).expect("reached"),
            Some(Reached {
                via: Some((a, MoveCode(7))),
                has_moves: true,
                order: 1
            })
        );
        assert_eq!(store.reached(Key(4)).expect("reached"), None);
        let paths = store.paths(1, 3, 10).expect("paths");
        assert_eq!(
            paths,
            vec![(1, vec![MoveCode(7)]), (2, vec![MoveCode(7), MoveCode(9)])]
        );
        assert_eq!(store.paths(0, 3, 1).expect("paths"), vec![(0, vec![])]);
        assert_eq!(
            store.path_of(2).expect("path"),
            Some(vec![MoveCode(7), MoveCode(9)])
        );
        drop(store);
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    }
}
