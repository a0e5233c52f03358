//! `build`'s rows written into a book: into an empty one in key order
//! ([`BulkTx`], whose inserts `build`'s room runs in its order, for a
//! build in memory and for one that journals its games), or added to a
//! book ([`Book::merge_rows`]). What is written is plain data
//! ([`super::input`]), which `build` prepares. Each row is a typed record
//! ([`crate::db::rows`]) bound to SQLite's inserts, many rows a
//! statement. (Writing a new book's tables as SQLite's pages instead was
//! measured and removed: docs/FASTPATHS.md.)

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;
use rusqlite::{params, Connection, Transaction};

use super::input::{EdgeAgg, GameRow, GameTail, NodeAgg, PositionRow};
use crate::db::book::Book;
use crate::db::codec::hash_to_sql;
use crate::db::graph::reevaluate_all;
use crate::db::node_rows::MOVE_UPSERT;
use crate::db::rows::{insert_head, GameRecord, MoveRecord, ParentRecord, PositionRecord, Record};
use crate::db::schema::source_id;
use crate::db::tail_index::IndexWriter;
use crate::db::tails::materialize_keys;
use crate::db::top_games::{merge_top, write_top_blob};
use crate::keys::{Key, MoveCode};
use crate::sort::PairSorter;

/// `(child, parent)` of every move, sorted.
type Links = Vec<(i64, i64)>;

impl Book {
    /// Starts a new book's bulk write, in one transaction.
    pub(crate) fn bulk_tx(&mut self) -> Result<BulkTx<'_>> {
        Ok(BulkTx {
            tx: self.conn.transaction()?,
        })
    }

    /// Adds aggregated games to a non-empty book, then re-evaluates fully:
    /// `games` in id order, their `sources`, the positions and moves in
    /// key order, and the `(child, parent)` of every move (sorted).
    pub(crate) fn merge_rows(
        &mut self,
        games: Vec<GameRow>,
        sources: Vec<String>,
        node_rows: Vec<(i64, NodeAgg)>,
        edge_rows: Vec<((i64, u16), EdgeAgg)>,
        links: Links,
    ) -> Result<()> {
        // A large transaction: keep its pages in memory rather than
        // spilling them to the WAL again and again.
        self.conn.pragma_update(None, "cache_size", -262_144i64)?;
        let tx = self.conn.transaction()?;
        // A tail the new games reach becomes rows first (the new games'
        // own positions are added as rows: tails are made by a new build).
        materialize_keys(
            &tx,
            &self.settings.params,
            node_rows.iter().map(|&(k, _)| Key::from_sql(k)),
        )?;
        {
            let mut stmt = tx.prepare(
                "INSERT INTO positions(key, depth, white, draws, black, exact, parent, expected) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT(key) DO UPDATE SET
                   depth = CASE WHEN depth IS NULL OR excluded.depth < depth THEN excluded.depth ELSE depth END,
                   white = white + excluded.white, draws = draws + excluded.draws, black = black + excluded.black,
                   expected = expected + excluded.expected,
                   exact = coalesce(excluded.exact, exact),
                   parent = coalesce(parent, excluded.parent)
                 RETURNING parent",
            )?;
            let mut link_stmt =
                tx.prepare("INSERT OR IGNORE INTO parents(child, parent) VALUES (?1, ?2)")?;
            let mut link = links.iter().peekable();
            for (key, n) in &node_rows {
                while link.next_if(|l| l.0 < *key).is_some() {}
                let mut new_parents = Vec::new();
                while let Some(&(_, p)) = link.next_if(|l| l.0 == *key) {
                    new_parents.push(p);
                }
                let first: Option<i64> = stmt.query_row(
                    params![
                        key,
                        n.depth,
                        n.counts.white,
                        n.counts.draws,
                        n.counts.black,
                        n.exact,
                        new_parents.first(),
                        n.expected
                    ],
                    |r| r.get(0),
                )?;
                // Reached from two or more positions: a transposition,
                // every parent recorded (as link_parent does one by one).
                if let Some(first) = first {
                    if new_parents.iter().any(|&p| p != first) {
                        link_stmt.execute(params![key, first])?;
                        for p in &new_parents {
                            link_stmt.execute(params![key, p])?;
                        }
                    }
                }
            }
            write_moves(
                &tx,
                edge_rows
                    .iter()
                    .map(|&((p, mv), ref e)| (Key::from_sql(p), mv, e)),
            )?;
            write_games(&tx, &games, &sources)?;
            // The moves' counts are final: the top lists can be joined.
            for (key, n) in &node_rows {
                if !n.top.is_empty() {
                    merge_top(&tx, Key::from_sql(*key), &n.top.entries())?;
                }
            }
        }
        // The full re-evaluation loads the whole book: free the rows first.
        drop((node_rows, edge_rows, links, games));
        reevaluate_all(&tx, &self.settings.params)?;
        tx.commit()?;
        self.conn.pragma_update(None, "cache_size", -16_384i64)?;
        Ok(())
    }
}

/// A new book's bulk write, one transaction ([`Book::bulk_tx`]): the
/// inserts `build`'s room runs, in its order, with the rows it prepared.
pub(crate) struct BulkTx<'a> {
    tx: Transaction<'a>,
}

impl BulkTx<'_> {
    /// The `sources` id of each name (added where new).
    pub(crate) fn source_ids(&self, names: &[String]) -> Result<Vec<i64>> {
        source_ids(&self.tx, names)
    }

    /// Inserts game rows `(id, game, tail ply, source id)` into a fresh table.
    pub(crate) fn insert_game_rows(
        &self,
        rows: &[(i64, &GameRow, Option<u32>, i64)],
    ) -> Result<()> {
        insert_game_rows(&self.tx, rows)
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

    /// Writes the tails index: `(prefix, game id)` of every tail position,
    /// sorted.
    pub(crate) fn write_tail_index(&self, listed: &[(i64, i64)]) -> Result<()> {
        let mut index = IndexWriter::new(&self.tx)?;
        index.push(listed)?;
        index.finish()?;
        Ok(())
    }

    /// Writes the tails index from its entries sorted within a memory limit.
    pub(crate) fn write_sorted_tail_index(&self, tail_entries: PairSorter) -> Result<()> {
        let mut index = IndexWriter::new(&self.tx)?;
        tail_entries.drain(|entries| index.push(entries))?;
        index.finish()?;
        Ok(())
    }

    /// Inserts the moves and the `parents` of every position with two or more.
    pub(crate) fn insert_move_rows(
        &self,
        edge_rows: &[((i64, u16), EdgeAgg)],
        links: &[(i64, i64)],
    ) -> Result<()> {
        insert_move_rows(&self.tx, edge_rows, links)
    }

    /// Inserts position rows into a fresh table.
    pub(crate) fn insert_positions(&self, rows: &[PositionRow]) -> Result<()> {
        insert_positions(&self.tx, rows)
    }

    pub(crate) fn commit(self) -> Result<()> {
        self.tx.commit()?;
        Ok(())
    }
}

/// Writes a book's pages so far to the disk (its errors are those of the
/// sync that ends the build to report).
pub(crate) fn sync_data(path: &Path) {
    let _ = std::fs::File::open(path).and_then(|f| f.sync_data());
}

/// A game's row: its id, the source's id as text (the column's affinity),
/// the moves after the stored ones NULL when there are none.
fn game_record<'a>(id: i64, g: &'a GameRow, tail: Option<u32>, source: &'a str) -> GameRecord<'a> {
    GameRecord {
        id,
        hash: hash_to_sql(g.hash),
        source,
        white: &g.white,
        black: &g.black,
        result: g.result,
        plies: g.plies.into(),
        start: g.start.to_sql(),
        copies: g.copies.into(),
        moves: &g.moves,
        expected: g.expected,
        tail: tail.map(i64::from),
        white_elo: g.white_elo.map(i64::from),
        black_elo: g.black_elo.map(i64::from),
        date: g.tags.date.as_deref(),
        event: g.tags.event.as_deref(),
        site: g.tags.site.as_deref(),
        round: g.tags.round.as_deref(),
        fen: g.tags.fen.as_deref(),
        rest: (!g.rest.is_empty()).then_some(&g.rest[..]),
    }
}

/// Inserts game rows `(id, game, tail ply, source id)` into a fresh table.
fn insert_game_rows(tx: &Connection, rows: &[(i64, &GameRow, Option<u32>, i64)]) -> Result<()> {
    // Ascending: later games get later ids, so the pages are packed full.
    insert_chunked_in(
        tx,
        &insert_head::<GameRecord>(),
        GameRecord::COLUMNS.len(),
        rows,
        true,
        |st, i, &(id, g, tail, source)| game_record(id, g, tail, &source.to_string()).bind(st, i),
    )
}

/// Inserts the games of `batch` with their tails, with the ids after
/// `written`.
pub(in crate::db) fn insert_game_tails(
    tx: &Connection,
    batch: &[GameTail],
    written: i64,
    source_ids: &[i64],
) -> Result<()> {
    let rows: Vec<(i64, &GameRow, Option<u32>, i64)> = batch
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let id = written + i as i64 + 1;
            (id, &t.row, t.tail, source_ids[t.row.source as usize])
        })
        .collect();
    insert_game_rows(tx, &rows)
}

/// Inserts sorted rows of two integers (`head` names the table and its two
/// columns) in ascending order, their pages packed full.
pub(in crate::db) fn insert_pairs(tx: &Connection, head: &str, rows: &[(i64, i64)]) -> Result<()> {
    insert_chunked_in(tx, head, 2, rows, true, |st, i, &(a, b)| {
        st.raw_bind_parameter(i, a)?;
        st.raw_bind_parameter(i + 1, b)
    })
}

/// The `parents` rows: the links of every position reached from two or
/// more (`links` sorted by child).
fn listed_parents(links: &[(i64, i64)]) -> impl Iterator<Item = ParentRecord> + '_ {
    links
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|g| g.len() > 1)
        .flatten()
        .map(|&(child, parent)| ParentRecord { child, parent })
}

/// Inserts the moves and the `parents` of every position with two or more.
fn insert_move_rows(
    tx: &Connection,
    edge_rows: &[((i64, u16), EdgeAgg)],
    links: &[(i64, i64)],
) -> Result<()> {
    insert_moves(tx, edge_rows)?;
    insert_parents(tx, links)
}

/// Inserts the `parents` rows of `links`.
fn insert_parents(tx: &Connection, links: &[(i64, i64)]) -> Result<()> {
    let listed: Vec<ParentRecord> = listed_parents(links).collect();
    insert_chunked_in(
        tx,
        &insert_head::<ParentRecord>(),
        ParentRecord::COLUMNS.len(),
        &listed,
        true,
        |st, i, r| r.bind(st, i),
    )
}

/// Inserts counted moves `((parent, move code), counts)` into a table
/// that has none of them.
pub(in crate::db) fn insert_moves(
    tx: &Connection,
    edge_rows: &[((i64, u16), EdgeAgg)],
) -> Result<()> {
    insert_chunked(
        tx,
        &insert_head::<MoveRecord>(),
        MoveRecord::COLUMNS.len(),
        edge_rows,
        |st, i, &((parent, mv), ref e)| {
            let uci = MoveCode(mv).uci(e.castle);
            move_record(parent, mv, &uci, e).bind(st, i)
        },
    )
}

/// A counted move's row: no weight (a learnbook book's weights are its
/// values), not grown.
fn move_record<'a>(parent: i64, mv: u16, uci: &'a str, e: &EdgeAgg) -> MoveRecord<'a> {
    MoveRecord {
        parent,
        mv: mv.into(),
        uci,
        child: e.child.to_sql(),
        white: e.counts.white.into(),
        draws: e.counts.draws.into(),
        black: e.counts.black.into(),
        weight: None,
        rating_sum: e.rating_sum as i64,
        rated: e.rated.into(),
        grown: 0,
    }
}

/// A position's row: the valued node, its best move, its first parent, its
/// top list (`top`, encoded).
fn position_record<'a>(row: &PositionRow, top: &'a [u8]) -> PositionRecord<'a> {
    let n = row.node;
    PositionRecord {
        key: n.key.to_sql(),
        depth: n.depth.map(i64::from),
        white: n.counts.white.into(),
        draws: n.counts.draws.into(),
        black: n.counts.black.into(),
        exact: n.exact,
        value: n.value,
        best: row.best.map(i64::from),
        parent: row.parent,
        expected: n.expected,
        top: (!top.is_empty()).then_some(top),
    }
}

/// Inserts position rows into a fresh table.
fn insert_positions(tx: &Connection, rows: &[PositionRow]) -> Result<()> {
    // SQLite copies a bound blob: one buffer serves every row.
    let blob = std::cell::RefCell::new(Vec::new());
    insert_chunked(
        tx,
        &insert_head::<PositionRecord>(),
        PositionRecord::COLUMNS.len(),
        rows,
        |st, i, row| {
            let mut blob = blob.borrow_mut();
            write_top_blob(row.top, &mut blob);
            position_record(row, &blob).bind(st, i)
        },
    )
}

/// Inserts `rows` into a fresh table many at a time (one statement step per
/// chunk of rows instead of per row): `bind` binds one row's `cols` values
/// starting at parameter index `i`.
pub(in crate::db) fn insert_chunked<T>(
    tx: &Connection,
    head: &str,
    cols: usize,
    rows: &[T],
    bind: impl Fn(&mut rusqlite::Statement<'_>, usize, &T) -> rusqlite::Result<()>,
) -> Result<()> {
    insert_chunked_in(tx, head, cols, rows, false, bind)
}

/// [`insert_chunked`], `ascending` in the rows' own order (pages packed
/// full) rather than each chunk reversed.
fn insert_chunked_in<T>(
    tx: &Connection,
    head: &str,
    cols: usize,
    rows: &[T],
    ascending: bool,
    bind: impl Fn(&mut rusqlite::Statement<'_>, usize, &T) -> rusqlite::Result<()>,
) -> Result<()> {
    const CHUNK: usize = 64;
    let placeholders = |n: usize| {
        let row = format!("({})", vec!["?"; cols].join(","));
        format!("{head} VALUES {}", vec![row; n].join(","))
    };
    let mut full = tx.prepare(&placeholders(CHUNK))?;
    let mut chunks = rows.chunks_exact(CHUNK);
    for chunk in &mut chunks {
        // Each statement's rows in descending key order: SQLite then leaves
        // ~11% of every position page free (in ascending order it packs them
        // full), so rows learned later mostly fit without splitting a page
        // (learn: 1.09 -> 0.89 ms a game). Same speed, 6% larger file.
        for (r, row) in chunk.iter().enumerate() {
            let r = if ascending { r } else { CHUNK - 1 - r };
            bind(&mut full, r * cols + 1, row)?;
        }
        full.raw_execute()?;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut st = tx.prepare(&placeholders(rest.len()))?;
        for (r, row) in rest.iter().enumerate() {
            bind(&mut st, r * cols + 1, row)?;
        }
        st.raw_execute()?;
    }
    Ok(())
}

/// Adds counted moves (`parent`, move code, aggregate) to a book that
/// already has their positions and parent links.
fn write_moves<'a>(
    tx: &Connection,
    edges: impl Iterator<Item = (Key, u16, &'a EdgeAgg)>,
) -> Result<()> {
    let mut stmt = tx.prepare(MOVE_UPSERT)?;
    for (parent, mv, e) in edges {
        let c = e.counts;
        stmt.execute(params![
            parent,
            mv,
            MoveCode(mv).uci(e.castle),
            e.child,
            c.white,
            c.draws,
            c.black,
            e.rating_sum as i64,
            e.rated
        ])?;
    }
    Ok(())
}

/// The `sources` id of each name (added where new).
pub(in crate::db) fn source_ids(tx: &Connection, names: &[String]) -> Result<Vec<i64>> {
    let mut ids: HashMap<&str, i64> = HashMap::new();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let id = match ids.get(name.as_str()) {
            Some(&id) => id,
            None => source_id(tx, name)?,
        };
        ids.insert(name, id);
        out.push(id);
    }
    Ok(out)
}

/// Adds game rows (in id order); repeated games add to `copies`.
fn write_games(tx: &Connection, games: &[GameRow], sources: &[String]) -> Result<()> {
    let mut stmt = tx.prepare(
        "INSERT INTO games(hash, source, white, black, result, plies, start, copies, moves, expected, white_elo, black_elo, date, event, site, round, fen, rest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
         ON CONFLICT(hash) DO UPDATE SET copies = copies + excluded.copies",
    )?;
    let ids = source_ids(tx, sources)?;
    for g in games {
        stmt.execute(params![
            hash_to_sql(g.hash),
            ids[g.source as usize],
            g.white,
            g.black,
            g.result,
            g.plies,
            g.start,
            g.copies,
            g.moves,
            g.expected,
            g.white_elo,
            g.black_elo,
            g.tags.date,
            g.tags.event,
            g.tags.site,
            g.tags.round,
            g.tags.fen,
            (!g.rest.is_empty()).then_some(&g.rest)
        ])?;
    }
    Ok(())
}
