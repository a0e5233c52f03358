//! `build`'s aggregate of many games, written at once: into an empty book
//! in key order ([`Book::bulk_load`]), or added to a book ([`Book::merge`]).

use std::collections::HashMap;

use anyhow::{anyhow, bail, Result};
use rayon::prelude::*;
use rusqlite::{params, Connection};
use shakmaty::Chess;

use super::book::Book;
use super::explore::{
    merge_top, mover_elo, rank_of, write_top_blob, TopEntry, TopList, HELD_BYTES,
};
use super::graph::{reevaluate_all, MOVE_UPSERT};
use super::pages::{encode_record, IndexWriter as PageIndexWriter, TableWriter, Value};
use super::schema::{hash_to_sql, moves_from_blob, moves_to_blob, source_id};
use super::tail_index::{prefix, IndexWriter};
use super::tails::{materialize_keys, value_chain};
use crate::book::ingest::{Counts, Game, GameTags};
use crate::book::keys::{polyglot_key, Key, KeyMap, MoveCode};
use crate::book::minimax::{Graph, NodeInfo, ValueParams};
use crate::book::spill::{GamesInOrder, PairSorter};

/// In-memory aggregate of many games, for `build`.
#[derive(Default)]
pub struct Aggregate {
    pub nodes: KeyMap<Key, NodeAgg>,
    /// The moves of a position other than its first ([`NodeAgg::first`]).
    pub edges: KeyMap<(Key, u16), EdgeAgg>,
    /// Games in input order, each once ([`Aggregate::game_index`] finds
    /// one by hash; a Vec moves no rows when it grows).
    pub games: Vec<GameRow>,
    pub game_index: KeyMap<u64, u32>,
    /// The names [`GameRow::source`] indexes.
    pub sources: Vec<String>,
    /// A new book keeps single-game tails as their game's moves
    /// ([`super::tails`]) rather than as rows.
    pub tails: bool,
    /// Heap bytes the games hold beside their rows (names, moves, keys),
    /// for [`Aggregate::approx_bytes`].
    game_heap: u64,
    /// Entries held in the nodes' top lists (less what was dropped), for
    /// [`Aggregate::approx_bytes`].
    top_entries: i64,
}

impl GameRow {
    /// The row of `game`, from input `source`, counted `copies` times.
    fn new(game: &Game, source: u32, copies: u32, keys: Option<Vec<Key>>) -> GameRow {
        let mut row = GameRow::without_names(game, source, copies, keys);
        row.white = game.white.clone();
        row.black = game.black.clone();
        row.tags = game.tags.clone();
        row
    }

    /// The row without the names and tags, which a caller that owns the
    /// game can move into it instead of copying them.
    fn without_names(game: &Game, source: u32, copies: u32, keys: Option<Vec<Key>>) -> GameRow {
        GameRow {
            copies,
            hash: game.hash,
            source,
            white: String::new(),
            black: String::new(),
            result: game.result.as_str(),
            plies: game.total_plies,
            start: game.start,
            moves: moves_to_blob(game.plies.iter().map(|p| p.mv.0)),
            expected: game.expected_milli(),
            white_elo: game.white_elo,
            black_elo: game.black_elo,
            tags: GameTags::default(),
            rest: moves_to_blob(game.rest.iter().copied()),
            keys,
        }
    }
}

/// Heap bytes of a game's tags.
fn tags_len(t: &GameTags) -> usize {
    [&t.event, &t.site, &t.date, &t.round, &t.fen]
        .iter()
        .map(|v| v.as_ref().map_or(0, |v| v.len() + 16))
        .sum()
}

#[derive(Clone, Debug, Default)]
pub struct NodeAgg {
    pub depth: u32,
    pub counts: Counts,
    /// White's expected points in thousandths (see [`NodeInfo::expected`]).
    pub expected: i64,
    pub exact: Option<f64>,
    /// The first move counted from here (most positions have one, in one
    /// game): kept with the position, so counting a game's move touches
    /// memory already in the cache instead of a second table.
    pub first: Option<(u16, EdgeAgg)>,
    /// The explorer's top games of the position ([`TopList`]).
    pub top: TopList,
}

#[derive(Clone, Copy, Debug)]
pub struct EdgeAgg {
    pub child: Key,
    pub castle: bool,
    pub counts: Counts,
    /// The mover's ratings summed, over the `rated` games that have one.
    pub rating_sum: u64,
    pub rated: u32,
}

impl EdgeAgg {
    fn new(child: Key, castle: bool) -> EdgeAgg {
        EdgeAgg {
            child,
            castle,
            counts: Counts::default(),
            rating_sum: 0,
            rated: 0,
        }
    }

    /// Counts one game with result counts `c` and the mover's rating.
    fn add(&mut self, c: Counts, mover_elo: Option<u32>) {
        self.counts.add(c);
        if let Some(r) = mover_elo {
            self.rating_sum += u64::from(r);
            self.rated += 1;
        }
    }
}

#[derive(Clone, Debug)]
pub struct GameRow {
    pub hash: u64,
    /// Index into [`Aggregate::sources`].
    pub source: u32,
    pub white: String,
    pub black: String,
    pub result: &'static str,
    pub plies: u32,
    pub start: Key,
    pub copies: u32,
    /// The stored moves ([`moves_to_blob`]).
    pub moves: Vec<u8>,
    /// White's expected points in thousandths (the ratings).
    pub expected: i64,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
    pub tags: GameTags,
    /// The moves after the stored ones ([`moves_to_blob`]; empty: none).
    pub rest: Vec<u8>,
    /// The keys of its stored positions, start first, while it may get a
    /// tail (a game from the standard start, counted once).
    pub keys: Option<Vec<Key>>,
}

impl Aggregate {
    pub fn add(&mut self, game: &Game, source: &str) {
        self.count_positions(game, |_, _| true);
        self.add_game_row(game, source);
    }

    /// Counts the positions of `game` that `keep(index, key)` keeps (index
    /// 0 is the start) and the moves out of them; no game row (a build over
    /// its memory budget writes the games apart, see `book::spill`).
    pub fn count_positions(&mut self, game: &Game, keep: impl Fn(usize, Key) -> bool) {
        let c = game.result.counts();
        let expected = game.expected_milli();
        let rank = rank_of(game.white_elo, game.black_elo);
        let mut last_kept = false;
        // Each position and the move out of it together: one look-up.
        for (ply, key) in game.keys().enumerate() {
            last_kept = keep(ply, key);
            if !last_kept {
                continue;
            }
            let depth = game.start_ply + ply as u32;
            let n = self.nodes.entry(key).or_insert_with(|| NodeAgg {
                depth,
                ..NodeAgg::default()
            });
            n.depth = n.depth.min(depth);
            n.counts.add(c);
            n.expected += expected;
            let Some(p) = game.plies.get(ply) else {
                continue;
            };
            let new = || EdgeAgg::new(p.child, p.castle);
            let e = match &mut n.first {
                first @ None => &mut first.insert((p.mv.0, new())).1,
                Some((mv, e)) if *mv == p.mv.0 => e,
                _ => self.edges.entry((key, p.mv.0)).or_insert_with(new),
            };
            let before = e.counts.total();
            e.add(c, mover_elo(depth.into(), game.white_elo, game.black_elo));
            let entry = TopEntry {
                mv: p.mv,
                rank,
                game: game.hash,
            };
            let held = n.top.len() as i64;
            n.top.add(entry, before);
            self.top_entries += n.top.len() as i64 - held;
        }
        if let Some(e) = game.terminal {
            let last = game.plies.last().map_or(game.start, |p| p.child);
            if let Some(n) = self.nodes.get_mut(&last).filter(|_| last_kept) {
                n.exact = Some(e);
            }
        }
    }

    fn add_game_row(&mut self, game: &Game, source: &str) {
        if let Some(&i) = self.game_index.get(&game.hash) {
            let row = &mut self.games[i as usize];
            row.copies += 1;
            row.keys = None;
            return;
        }
        if self.sources.last().is_none_or(|s| s != source) {
            self.sources.push(source.to_string());
        }
        let standard = game.start_ply == 0 && game.start == polyglot_key(&Chess::default());
        let keep_keys = self.tails && standard;
        // Each allocation with the allocator's own 16 bytes.
        self.game_heap += (game.white.len() + game.black.len() + 2 * game.plies.len() + 48) as u64;
        if keep_keys {
            self.game_heap += (8 * (game.plies.len() + 1) + 16) as u64;
        }
        self.game_index.insert(game.hash, self.games.len() as u32);
        self.game_heap += (2 * game.rest.len() + tags_len(&game.tags)) as u64;
        let keys = keep_keys.then(|| game.keys().collect());
        self.games
            .push(GameRow::new(game, self.sources.len() as u32 - 1, 1, keys));
    }

    /// The memory the aggregate holds, in bytes, with the next game: its
    /// tables at their capacity (three times that for a table about to
    /// grow, which holds its old and its doubled buckets while it does) and
    /// the games' own allocations. What `build --memory` compares with its
    /// budget: a close estimate, not a measurement.
    pub fn approx_bytes(&self) -> u64 {
        fn table<K, V, S>(m: &std::collections::HashMap<K, V, S>) -> u64 {
            // One control byte an entry beside the entry itself; a game
            // adds at most a few hundred entries.
            let bytes = (m.capacity() * (std::mem::size_of::<(K, V)>() + 1)) as u64;
            if m.len() + 512 >= m.capacity() {
                3 * bytes
            } else {
                bytes
            }
        }
        table(&self.nodes)
            + table(&self.edges)
            + table(&self.game_index)
            + (self.games.capacity() * std::mem::size_of::<GameRow>()) as u64
            + self.game_heap
            + self.top_entries.max(0) as u64 * HELD_BYTES as u64 * 2
    }

    /// An empty aggregate; `tails`: a new book keeps single-game tails.
    pub fn new(tails: bool) -> Aggregate {
        Aggregate {
            tails,
            ..Aggregate::default()
        }
    }

    /// How many different moves were counted.
    pub fn move_count(&self) -> usize {
        self.nodes.values().filter(|n| n.first.is_some()).count() + self.edges.len()
    }

    /// The games in the order that gives their ids: by source name, then
    /// hash (the same for any split of the input into runs or shards).
    fn games_in_id_order(&mut self) -> Vec<GameRow> {
        let mut games = std::mem::take(&mut self.games);
        let sources = &self.sources;
        games.par_sort_unstable_by(|a, b| {
            (&sources[a.source as usize], a.hash).cmp(&(&sources[b.source as usize], b.hash))
        });
        games
    }
}

impl Book {
    /// Writes aggregated games into an empty book in key order, with values.
    pub fn bulk_load(&mut self, agg: Aggregate) -> Result<()> {
        let mut agg = agg;
        let games = agg.games_in_id_order();
        let Aggregate {
            nodes,
            edges,
            sources,
            tails,
            ..
        } = agg;
        let params = self.settings.params;
        let (nodes, edges) = prune(nodes, edges, self.settings.min_games);
        // Game ids are their rank in this order (the table is empty).
        let tail_of = if tails && self.settings.min_games <= 1 {
            find_tails(&games, &nodes)
        } else {
            Vec::new()
        };
        let mut tail_ply: Vec<Option<u32>> = vec![None; games.len()];
        for &(i, t) in &tail_of {
            tail_ply[i] = Some(t as u32);
        }

        let tx = self.conn.transaction()?;
        // The rows and the graph are prepared on another core while the
        // games and tails are inserted, and valued there while the moves
        // are (values do not depend on the rows written first).
        let (g, (rows, tops), links) = std::thread::scope(|scope| -> Result<_> {
            let (games, tail_of) = (&games, &tail_of);
            let (send_listed, recv_listed) = std::sync::mpsc::channel();
            let (send, recv) = std::sync::mpsc::channel();
            let worker = scope.spawn(move || {
                let _ = send_listed.send(tail_entries(games, tail_of));
                let p = prepare_rows(nodes, edges, games, tail_of, &params, |m| {
                    let _ = send.send(m);
                });
                crate::peak_memory::trace("graph prepared");
                let mut g = Graph::new(p.node_list, p.edge_list);
                g.fixed = p.rows;
                g.evaluate(&params);
                crate::peak_memory::trace("graph valued");
                (g, p.rows, p.tops)
            });
            let source_ids = source_ids(&tx, &sources)?;
            let rows: Vec<(i64, &GameRow, Option<u32>, i64)> = games
                .iter()
                .zip(&tail_ply)
                .enumerate()
                .map(|(i, (g, t))| (i as i64 + 1, g, *t, source_ids[g.source as usize]))
                .collect();
            insert_game_rows(&tx, &rows)?;
            let Ok(listed) = recv_listed.recv() else {
                return Err(anyhow!("the thread preparing the rows panicked"));
            };
            let mut index = IndexWriter::new(&tx)?;
            index.push(&listed)?;
            index.finish()?;
            moves_then_graph(&tx, &recv, worker)
        })?;
        insert_position_rows(&tx, &g, rows, &tops, &links)?;
        crate::peak_memory::trace("positions written");
        tx.commit()?;
        drop_apart((g, tops, links));
        Ok(())
    }

    /// Writes into an empty book the games of a build too large to hold
    /// them all (see `book::spill`), the same book [`Book::bulk_load`]
    /// writes with every count. `agg` holds the exact counts of every
    /// position that two games may reach (every position of a game that
    /// cannot have a tail), and of the moves out of them, and no game rows;
    /// `games` are the games in id order (by source name, then hash), each
    /// with its source's index in `sources` and its copies; `tail_entries`
    /// sorts the tails index's entries within its own memory limit.
    ///
    /// Games are read and their tails valued on every core, a batch ahead
    /// of this thread's inserts; the graph is valued while the tails index
    /// is written.
    pub fn bulk_load_games(
        &mut self,
        agg: Aggregate,
        sources: &[String],
        games: GamesInOrder<'_>,
        mut tail_entries: PairSorter,
    ) -> Result<()> {
        let Aggregate {
            nodes,
            edges,
            tails,
            ..
        } = agg;
        let params = self.settings.params;
        let (mut nodes, edges) = prune(nodes, edges, self.settings.min_games);
        let tails = tails && self.settings.min_games <= 1;
        let tx = self.conn.transaction()?;
        let source_ids = source_ids(&tx, sources)?;
        tx.commit()?;
        // The games go straight into the table's pages, packed full as
        // ascending inserts pack them (SQLite has no transaction open until
        // the pages are written).
        let mut game_pages = TableWriter::new(&self.path, root_page(&self.conn, "games")?, 1.0)?;
        let mut games_apart = Vec::new();
        let mut hashes = Vec::new();
        let mut heads = Vec::new();
        let mut counted_tail_keys = Vec::new();
        let mut uncounted_rows = Vec::new();
        let nodes_ref = &nodes;
        let lookup = |k: &Key| nodes_ref.get(k);
        for_each_tail_batch(games, tails, lookup, &params, |batch, written| {
            write_game_pages(
                &mut game_pages,
                batch,
                written,
                &source_ids,
                &mut games_apart,
                &mut hashes,
            )?;
            for (i, t) in batch.iter().enumerate() {
                let id = written + i as i64 + 1;
                for &k in &t.keys {
                    tail_entries.push((prefix(k), id))?;
                }
                heads.extend(t.head);
                counted_tail_keys.extend_from_slice(&t.counted);
                uncounted_rows.extend_from_slice(&t.rows);
            }
            Ok(())
        })?;
        game_pages.finish()?;
        write_hash_index(
            &self.path,
            root_page(&self.conn, "sqlite_autoindex_games_1")?,
            hashes,
        )?;
        crate::peak_memory::trace("games and tails written");
        for k in counted_tail_keys {
            nodes.remove(&k);
        }
        let move_roots = (
            root_page(&self.conn, "moves")?,
            root_page(&self.conn, "parents")?,
        );
        let (conn, path) = (&mut self.conn, &self.path);
        // The rows are prepared and valued on another core while the tails
        // index and then the moves are written (moves need no values).
        let (g, (rows, tops), links) = std::thread::scope(|scope| -> Result<_> {
            let (send, recv) = std::sync::mpsc::channel();
            let worker = scope.spawn(move || {
                let p = prepare_graph(nodes, uncounted_rows, edges, heads, |m| {
                    let _ = send.send(m);
                });
                crate::peak_memory::trace("graph prepared");
                let mut g = Graph::new(p.node_list, p.edge_list);
                g.fixed = p.rows;
                g.evaluate(&params);
                crate::peak_memory::trace("graph valued");
                (g, p.rows, p.tops)
            });
            // A game too large for a page, and the tails index, by SQLite.
            let tx = conn.transaction()?;
            let apart: Vec<(i64, &GameRow, Option<u32>, i64)> = games_apart
                .iter()
                .map(|(id, g, t, s)| (*id, g, *t, *s))
                .collect();
            insert_game_rows(&tx, &apart)?;
            let mut index = IndexWriter::new(&tx)?;
            tail_entries.drain(|entries| index.push(entries))?;
            index.finish()?;
            tx.commit()?;
            crate::peak_memory::trace("tails index written");
            let Ok((edge_rows, links)) = recv.recv() else {
                return Err(anyhow!("the thread preparing the rows panicked"));
            };
            write_move_pages(path, move_roots, &edge_rows, &links)?;
            crate::peak_memory::trace("moves written");
            // The pages so far go to the disk while the values are made:
            // the sync that ends the build then waits for the rest only
            // (its errors are that sync's to report).
            scope.spawn(move || {
                let _ = std::fs::File::open(path).and_then(|f| f.sync_data());
            });
            let (g, rows, tops) = worker
                .join()
                .map_err(|_| anyhow!("the evaluation thread panicked"))?;
            Ok((g, (rows, tops), links))
        })?;
        let pages = TableWriter::new(
            &self.path,
            root_page(&self.conn, "positions")?,
            POSITIONS_FILL,
        )?;
        let rows = position_rows(&g, rows, &tops, &links);
        let apart = write_position_pages(pages, &rows)?;
        let tx = self.conn.transaction()?;
        insert_positions(&tx, &apart)?;
        crate::peak_memory::trace("positions written");
        tx.commit()?;
        drop(rows);
        drop_apart((g, tops, links));
        Ok(())
    }

    /// Adds aggregated games to a non-empty book, then re-evaluates fully.
    pub fn merge(&mut self, agg: Aggregate) -> Result<()> {
        let mut agg = agg;
        let games = agg.games_in_id_order();
        let Aggregate {
            nodes,
            edges,
            sources,
            ..
        } = agg;
        // Rows in key order: the B-trees are walked once, not at random.
        let edge_rows = sorted_edges(nodes.iter(), edges);
        let mut node_rows: Vec<(i64, NodeAgg)> =
            nodes.into_iter().map(|(k, n)| (k.to_sql(), n)).collect();
        node_rows.par_sort_unstable_by_key(|&(k, _)| k);
        let links = parent_links(&edge_rows);
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

/// What the thread that prepares the rows sends before it values them:
/// the moves and the parent links.
type MoveRows = (Vec<((i64, u16), EdgeAgg)>, Links);
/// The rows' top lists, in key order.
type Tops = Vec<TopList>;
/// `(child, parent)` of every move, sorted (see [`parent_links`]).
type Links = Vec<(i64, i64)>;

/// Frees `value` on a thread of its own: a build's tables hold millions of
/// small allocations, and the book is complete before they are freed.
fn drop_apart<T: Send + 'static>(value: T) {
    std::thread::spawn(move || drop(value));
}

/// The moves written as soon as the thread preparing the rows sends them
/// (they need no values), then its valued graph and its number of rows.
fn moves_then_graph(
    tx: &Connection,
    recv: &std::sync::mpsc::Receiver<MoveRows>,
    worker: std::thread::ScopedJoinHandle<'_, (Graph, usize, Tops)>,
) -> Result<(Graph, (usize, Tops), Links)> {
    let Ok((edge_rows, links)) = recv.recv() else {
        return Err(anyhow!("the thread preparing the rows panicked"));
    };
    insert_move_rows(tx, &edge_rows, &links)?;
    crate::peak_memory::trace("moves written");
    let (g, rows, tops) = worker
        .join()
        .map_err(|_| anyhow!("the evaluation thread panicked"))?;
    Ok((g, (rows, tops), links))
}

/// The games table's columns, in its order ([`game_values`]).
const GAME_COLUMNS: &str = "id, hash, source, white, black, result, plies, start, copies, moves, expected, tail, white_elo, black_elo, date, event, site, round, fen, rest";

/// A game row as SQLite stores it: the id (the rowid: NULL in a record,
/// see [`pages`](super::pages)), the source's id as text (the column's
/// affinity), the moves after the stored ones NULL when there are none.
fn game_values<'a>(
    id: Option<i64>,
    g: &'a GameRow,
    tail: Option<u32>,
    source: &'a str,
) -> [Value<'a>; 20] {
    let text = |t: &'a Option<String>| t.as_deref().map_or(Value::Null, Value::Text);
    let int = |v: Option<u32>| Value::int(v.map(i64::from));
    [
        Value::int(id),
        Value::Int(hash_to_sql(g.hash)),
        Value::Text(source),
        Value::Text(&g.white),
        Value::Text(&g.black),
        Value::Text(g.result),
        Value::Int(g.plies.into()),
        Value::Int(g.start.to_sql()),
        Value::Int(g.copies.into()),
        Value::Blob(&g.moves),
        Value::Int(g.expected),
        int(tail),
        int(g.white_elo),
        int(g.black_elo),
        text(&g.tags.date),
        text(&g.tags.event),
        text(&g.tags.site),
        text(&g.tags.round),
        text(&g.tags.fen),
        if g.rest.is_empty() {
            Value::Null
        } else {
            Value::Blob(&g.rest)
        },
    ]
}

/// Binds `values` from parameter `i`.
fn bind_values(
    st: &mut rusqlite::Statement<'_>,
    i: usize,
    values: &[Value],
) -> rusqlite::Result<()> {
    for (at, v) in values.iter().enumerate() {
        match *v {
            Value::Null => st.raw_bind_parameter(i + at, rusqlite::types::Null)?,
            Value::Int(x) => st.raw_bind_parameter(i + at, x)?,
            Value::Real(x) => st.raw_bind_parameter(i + at, x)?,
            Value::Text(t) => st.raw_bind_parameter(i + at, t)?,
            Value::Blob(b) => st.raw_bind_parameter(i + at, b)?,
        }
    }
    Ok(())
}

/// Inserts game rows `(id, game, tail ply, source id)` into a fresh table.
fn insert_game_rows(tx: &Connection, rows: &[(i64, &GameRow, Option<u32>, i64)]) -> Result<()> {
    // Ascending: later games get later ids, so the pages are packed full.
    insert_chunked_in(
        tx,
        &format!("INSERT INTO games({GAME_COLUMNS})"),
        20,
        rows,
        true,
        |st, i, &(id, g, tail, source)| {
            bind_values(st, i, &game_values(Some(id), g, tail, &source.to_string()))
        },
    )
}

/// Inserts the games of `batch` with their tails, with the ids after
/// `written`.
pub(super) fn insert_game_tails(
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

/// The games of `batch` (ids after `written`) into the games table's
/// pages; a row too large for a page is kept in `apart`, for SQLite.
fn write_game_pages(
    pages: &mut TableWriter,
    batch: &[GameTail],
    written: i64,
    source_ids: &[i64],
    apart: &mut Vec<(i64, GameRow, Option<u32>, i64)>,
    hashes: &mut Vec<(i64, i64)>,
) -> Result<()> {
    let mut record = Vec::new();
    for (i, t) in batch.iter().enumerate() {
        let id = written + i as i64 + 1;
        let source = source_ids[t.row.source as usize];
        record.clear();
        encode_record(
            &game_values(None, &t.row, t.tail, &source.to_string()),
            &mut record,
        );
        if pages.push(id, &record)? {
            hashes.push((hash_to_sql(t.row.hash), id));
        } else {
            apart.push((id, t.row.clone(), t.tail, source));
        }
    }
    Ok(())
}

/// Inserts sorted rows of two integers (`head` names the table and its two
/// columns) in ascending order, their pages packed full.
pub(super) fn insert_pairs(tx: &Connection, head: &str, rows: &[(i64, i64)]) -> Result<()> {
    insert_chunked_in(tx, head, 2, rows, true, |st, i, &(a, b)| {
        st.raw_bind_parameter(i, a)?;
        st.raw_bind_parameter(i + 1, b)
    })
}

/// Inserts the moves and the `parents` of every position with two or more.
fn insert_move_rows(
    tx: &Connection,
    edge_rows: &[((i64, u16), EdgeAgg)],
    links: &[(i64, i64)],
) -> Result<()> {
    insert_moves(tx, edge_rows)?;
    let listed: Vec<(i64, i64)> = links
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|g| g.len() > 1)
        .flatten()
        .copied()
        .collect();
    insert_pairs(tx, "INSERT INTO parents(child, parent)", &listed)
}

/// Inserts counted moves `((parent, move code), counts)` into a table
/// that has none of them.
pub(super) fn insert_moves(tx: &Connection, edge_rows: &[((i64, u16), EdgeAgg)]) -> Result<()> {
    insert_chunked(
        tx,
        &format!("INSERT INTO moves({MOVE_COLUMNS})"),
        11,
        edge_rows,
        |st, i, &((parent, mv), ref e)| {
            let uci = MoveCode(mv).uci(e.castle);
            bind_values(st, i, &move_values(parent, mv, &uci, e))
        },
    )
}

/// The moves table's columns, in its order ([`move_values`]).
const MOVE_COLUMNS: &str =
    "parent, move, uci, child, white, draws, black, weight, rating_sum, rated, grown";

/// A counted move's row: no weight (a learnbook book's weights are its
/// values), not grown.
fn move_values<'a>(parent: i64, mv: u16, uci: &'a str, e: &EdgeAgg) -> [Value<'a>; 11] {
    [
        Value::Int(parent),
        Value::Int(mv.into()),
        Value::Text(uci),
        Value::Int(e.child.to_sql()),
        Value::Int(e.counts.white.into()),
        Value::Int(e.counts.draws.into()),
        Value::Int(e.counts.black.into()),
        Value::Null,
        Value::Int(e.rating_sum as i64),
        Value::Int(e.rated.into()),
        Value::Int(0),
    ]
}

/// Leaves of the moves and parents tables (index B-trees) filled to this
/// share: about what SQLite's own inserts leave (88%), room for moves
/// learned later.
const MOVES_FILL: f64 = 0.90;

/// The moves and the `parents` of every position with two or more, as
/// pages of their tables (SQLite has no transaction open).
fn write_move_pages(
    path: &std::path::Path,
    roots: (u32, u32),
    edge_rows: &[((i64, u16), EdgeAgg)],
    links: &[(i64, i64)],
) -> Result<()> {
    let mut moves = PageIndexWriter::new(path, roots.0, MOVES_FILL)?;
    let mut record = Vec::new();
    for &((parent, mv), ref e) in edge_rows {
        let uci = MoveCode(mv).uci(e.castle);
        record.clear();
        encode_record(&move_values(parent, mv, &uci, e), &mut record);
        if !moves.push(&record)? {
            bail!("internal error: a move's row does not fit in a page");
        }
    }
    moves.finish()?;
    let mut parents = PageIndexWriter::new(path, roots.1, MOVES_FILL)?;
    for &(child, parent) in links
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|g| g.len() > 1)
        .flatten()
    {
        record.clear();
        encode_record(&[Value::Int(child), Value::Int(parent)], &mut record);
        if !parents.push(&record)? {
            bail!("internal error: a parent link does not fit in a page");
        }
    }
    parents.finish()
}

/// The games' hash index (`UNIQUE` on `games.hash`) as pages: `(hash,
/// id)` of each game written as pages, leaves filled as the moves' (a
/// learned game adds its hash anywhere in it).
fn write_hash_index(path: &std::path::Path, root: u32, mut hashes: Vec<(i64, i64)>) -> Result<()> {
    hashes.par_sort_unstable();
    if hashes.windows(2).any(|w| w[0].0 == w[1].0) {
        bail!("internal error: two game rows with one hash");
    }
    let mut index = PageIndexWriter::new(path, root, MOVES_FILL)?;
    let mut record = Vec::new();
    for (hash, id) in hashes {
        record.clear();
        encode_record(&[Value::Int(hash), Value::Int(id)], &mut record);
        if !index.push(&record)? {
            bail!("internal error: a game's hash does not fit in a page");
        }
    }
    index.finish()
}

/// A position row: the node, its best move, its first parent, its top list.
type PositionRow<'a> = (&'a NodeInfo, Option<u16>, Option<i64>, &'a TopList);

/// The first `rows` nodes of the valued graph as rows, in key order.
fn position_rows<'a>(
    g: &'a Graph,
    rows: usize,
    tops: &'a [TopList],
    links: &[(i64, i64)],
) -> Vec<PositionRow<'a>> {
    // Both lists are sorted by key: the first link of a child is its smallest parent.
    let mut link = links.iter().peekable();
    g.nodes
        .iter()
        .zip(&g.best)
        .zip(tops)
        .take(rows)
        .map(|((n, best), top)| {
            let key = n.key.to_sql();
            while link.next_if(|l| l.0 < key).is_some() {}
            (
                n,
                best.map(|m| m.0),
                link.peek().filter(|l| l.0 == key).map(|l| l.1),
                top,
            )
        })
        .collect()
}

/// The positions table's columns, in its order ([`position_values`]).
const POSITION_COLUMNS: &str =
    "key, depth, white, draws, black, exact, value, best, parent, expected, top";

/// A position row as SQLite stores it (`key` the rowid: NULL in a record).
fn position_values<'a>(key: Option<i64>, row: &PositionRow, top: &'a [u8]) -> [Value<'a>; 11] {
    let &(n, best, parent, _) = row;
    [
        Value::int(key),
        Value::int(n.depth.map(i64::from)),
        Value::Int(n.counts.white.into()),
        Value::Int(n.counts.draws.into()),
        Value::Int(n.counts.black.into()),
        n.exact.map_or(Value::Null, Value::Real),
        Value::Real(n.value),
        Value::int(best.map(i64::from)),
        Value::int(parent),
        Value::Int(n.expected),
        if top.is_empty() {
            Value::Null
        } else {
            Value::Blob(top)
        },
    ]
}

/// Inserts position rows into a fresh table.
fn insert_positions(tx: &Connection, rows: &[PositionRow]) -> Result<()> {
    // SQLite copies a bound blob: one buffer serves every row.
    let blob = std::cell::RefCell::new(Vec::new());
    insert_chunked(
        tx,
        &format!("INSERT INTO positions({POSITION_COLUMNS})"),
        11,
        rows,
        |st, i, row| {
            let mut blob = blob.borrow_mut();
            write_top_blob(row.3, &mut blob);
            bind_values(
                st,
                i,
                &position_values(Some(row.0.key.to_sql()), row, &blob),
            )
        },
    )
}

/// Inserts the first `rows` nodes of the valued graph as positions.
fn insert_position_rows(
    tx: &Connection,
    g: &Graph,
    rows: usize,
    tops: &[TopList],
    links: &[(i64, i64)],
) -> Result<()> {
    insert_positions(tx, &position_rows(g, rows, tops, links))
}

/// Leaves of the positions table filled to this share: the room SQLite
/// leaves when it inserts rows in descending order (see
/// [`insert_chunked_in`]), so that rows learned later mostly fit without
/// splitting a page.
const POSITIONS_FILL: f64 = 0.90;

/// The rows into the positions table's pages; returns those too large
/// for a page, for SQLite.
fn write_position_pages<'a>(
    mut pages: TableWriter,
    rows: &[PositionRow<'a>],
) -> Result<Vec<PositionRow<'a>>> {
    // The records of a stretch of rows are made on every core, then added
    // in order (one core: the pages are written in order).
    const PART: usize = 4096;
    let mut apart = Vec::new();
    for stretch in rows.chunks(PART * 16) {
        let records: Vec<(Vec<u8>, Vec<usize>)> = stretch
            .par_chunks(PART)
            .map(|part| {
                let (mut bytes, mut ends, mut blob) = (Vec::new(), Vec::new(), Vec::new());
                for row in part {
                    write_top_blob(row.3, &mut blob);
                    encode_record(&position_values(None, row, &blob), &mut bytes);
                    ends.push(bytes.len());
                }
                (bytes, ends)
            })
            .collect();
        for (part, (bytes, ends)) in stretch.chunks(PART).zip(&records) {
            let mut start = 0;
            for (row, &end) in part.iter().zip(ends) {
                if !pages.push(row.0.key.to_sql(), &bytes[start..end])? {
                    apart.push(*row);
                }
                start = end;
            }
        }
    }
    pages.finish()?;
    Ok(apart)
}

/// A game as [`Book::bulk_load_games`] writes it: its row, its tail (the
/// first ply, the value of the first position, the keys), the tail
/// positions the aggregate counted (to take out of the rows), and the
/// positions before the tail it did not count (to add to them).
pub(super) struct GameTail {
    pub row: GameRow,
    pub tail: Option<u32>,
    pub head: Option<NodeInfo>,
    pub keys: Vec<Key>,
    pub counted: Vec<Key>,
    pub rows: Vec<(Key, NodeAgg)>,
}

/// Finds the tail of `game` as `find_tails` does (a position the aggregate
/// did not count, `counted` gives `None`, is one this game alone reaches)
/// and values it.
/// The games in id order made into [`GameTail`]s on every core (`lookup`:
/// the counted rows), handed to `write` a batch at a time with the number
/// of games before it, while the next batch is made.
pub(super) fn for_each_tail_batch<'a>(
    games: GamesInOrder<'_>,
    tails: bool,
    lookup: impl Fn(&Key) -> Option<&'a NodeAgg> + Sync,
    params: &ValueParams,
    mut write: impl FnMut(&[GameTail], i64) -> Result<()>,
) -> Result<()> {
    const BATCH: usize = 4096;
    let count = games.count;
    std::thread::scope(|scope| -> Result<()> {
        let (send, batches) = std::sync::mpsc::sync_channel::<Result<Vec<GameTail>>>(2);
        // A batch is freed on a thread of its own: freeing what the
        // reading threads allocated waits on their allocator's locks,
        // half this thread's time when it freed them itself.
        let (send_used, used) = std::sync::mpsc::channel::<Vec<GameTail>>();
        scope.spawn(move || used.into_iter().for_each(drop));
        let lookup = &lookup;
        scope.spawn(move || {
            let read = games.for_each_batch(BATCH, |batch| {
                let batch = batch
                    .into_par_iter()
                    .map(|(g, source, copies)| game_tail(g, source, copies, tails, lookup, params))
                    .collect();
                send.send(Ok(batch))
                    .map_err(|_| anyhow!("the writer stopped"))
            });
            if let Err(e) = read {
                let _ = send.send(Err(e));
            }
        });
        let mut written = 0i64;
        for batch in batches {
            let batch = batch?;
            write(&batch, written)?;
            written += batch.len() as i64;
            let _ = send_used.send(batch);
        }
        if written as u64 != count {
            bail!("{written} of {count} games were read");
        }
        Ok(())
    })
}

pub(super) fn game_tail<'a>(
    mut game: Game,
    source: u32,
    copies: u32,
    tails: bool,
    counted: impl Fn(&Key) -> Option<&'a NodeAgg>,
    params: &ValueParams,
) -> GameTail {
    let expected = game.expected_milli();
    let mut out = GameTail {
        row: GameRow::without_names(&game, source, copies, None),
        tail: None,
        head: None,
        keys: Vec::new(),
        counted: Vec::new(),
        rows: Vec::new(),
    };
    let standard = game.start_ply == 0 && game.start == polyglot_key(&Chess::default());
    if tails && copies == 1 && standard {
        let keys: Vec<Key> = game.keys().collect();
        // Each position looked up once (the table is far larger than the cache).
        let counted: Vec<Option<&NodeAgg>> = keys.iter().map(counted).collect();
        let single = |n: &Option<&NodeAgg>| n.is_none_or(|n| n.counts.total() == 1);
        let t = counted.iter().rposition(|n| !single(n)).unwrap_or(0) + 1;
        let last = keys.len() - 1;
        // A position only this game reaches, as the aggregate would count it.
        let alone = |i: usize| NodeAgg {
            depth: i as u32,
            counts: game.result.counts(),
            expected,
            exact: if i == last { game.terminal } else { None },
            first: None,
            top: TopList::default(),
        };
        let rank = rank_of(game.white_elo, game.black_elo);
        // Before the tail: rows. The aggregate counted the positions the
        // filter called shared (and the moves out of them); a position
        // only this game reaches, it did not.
        for (i, &k) in keys[..t].iter().enumerate() {
            if counted[i].is_none() {
                let mut n = alone(i);
                if let Some(p) = game.plies.get(i) {
                    let mut e = EdgeAgg::new(p.child, p.castle);
                    let elo = mover_elo(i as u64, game.white_elo, game.black_elo);
                    e.add(game.result.counts(), elo);
                    n.first = Some((p.mv.0, e));
                    n.top = TopList::single(TopEntry {
                        mv: p.mv,
                        rank,
                        game: game.hash,
                    });
                }
                out.rows.push((k, n));
            }
        }
        if t < keys.len() {
            let mut chain: Vec<NodeInfo> = (t..keys.len())
                .map(|i| match counted[i] {
                    Some(n) => {
                        out.counted.push(keys[i]);
                        node_info(keys[i], n)
                    }
                    None => node_info(keys[i], &alone(i)),
                })
                .collect();
            value_chain(&mut chain, game.plies[t..].iter().map(|p| p.mv), params);
            out.head = Some(chain[0]);
            out.keys = keys[t..].to_vec();
            out.tail = Some(t as u32);
        }
    }
    // The names and tags moved, not copied: a build makes a row of every game.
    out.row.white = std::mem::take(&mut game.white);
    out.row.black = std::mem::take(&mut game.black);
    out.row.tags = std::mem::take(&mut game.tags);
    out
}

/// `--min-games`: drops the positions and moves fewer than `min_games` games
/// reach (a move to a dropped position has fewer games than it, so goes too).
pub(super) fn prune(
    mut nodes: KeyMap<Key, NodeAgg>,
    mut edges: KeyMap<(Key, u16), EdgeAgg>,
    min_games: u32,
) -> (KeyMap<Key, NodeAgg>, KeyMap<(Key, u16), EdgeAgg>) {
    if min_games > 1 {
        nodes.retain(|_, n| n.counts.total() >= min_games);
        for n in nodes.values_mut() {
            if n.first.is_some_and(|(_, e)| e.counts.total() < min_games) {
                n.first = None;
            }
        }
        edges.retain(|_, e| e.counts.total() >= min_games);
    }
    (nodes, edges)
}

/// Aggregated moves as rows (the first of each position in `nodes`, and
/// the others), in the table's order (keys as SQLite stores them, signed).
fn sorted_edges<'a>(
    nodes: impl Iterator<Item = (&'a Key, &'a NodeAgg)>,
    others: KeyMap<(Key, u16), EdgeAgg>,
) -> Vec<((i64, u16), EdgeAgg)> {
    let mut rows: Vec<((i64, u16), EdgeAgg)> = nodes
        .filter_map(|(k, n)| n.first.map(|(mv, e)| ((k.to_sql(), mv), e)))
        .chain(others.into_iter().map(|((p, mv), e)| ((p.to_sql(), mv), e)))
        .collect();
    rows.par_sort_unstable_by_key(|&(k, _)| k);
    rows
}

/// `(child, parent)` of every move, sorted and without repeats, so grouped
/// by child.
fn parent_links(edge_rows: &[((i64, u16), EdgeAgg)]) -> Vec<(i64, i64)> {
    let mut links: Vec<(i64, i64)> = edge_rows
        .iter()
        .map(|&((p, _), ref e)| (e.child.to_sql(), p))
        .collect();
    links.par_sort_unstable();
    links.dedup();
    links
}

/// Inserts `rows` into a fresh table many at a time (one statement step per
/// chunk of rows instead of per row): `bind` binds one row's `cols` values
/// starting at parameter index `i`.
pub(super) fn insert_chunked<T>(
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

/// The entries of the tails index: `(prefix, game id)` of every tail position, in
/// order, without repeats (ids are ranks in `games`).
fn tail_entries(games: &[GameRow], tail_of: &[(usize, usize)]) -> Vec<(i64, i64)> {
    let mut listed: Vec<(i64, i64)> = Vec::new();
    for &(i, t) in tail_of {
        if let Some(keys) = &games[i].keys {
            listed.extend(keys[t..].iter().map(|&k| (prefix(k), i as i64 + 1)));
        }
    }
    listed.par_sort_unstable();
    listed.dedup();
    listed
}

/// What [`Book::bulk_load`] values, tails left out (the moves to write go
/// ahead, as [`MoveRows`]).
struct Prepared {
    edge_list: Vec<(Key, MoveCode, Key)>,
    /// The rows in key order, then the first position of each tail.
    node_list: Vec<NodeInfo>,
    rows: usize,
    tops: Tops,
}

/// Values each tail from its last position back and leaves its positions
/// and moves out: only its first position enters the graph, with its value
/// fixed (as `reevaluate_all` does), so the graph holds the rows and no
/// more.
fn prepare_rows(
    mut nodes: KeyMap<Key, NodeAgg>,
    edges: KeyMap<(Key, u16), EdgeAgg>,
    games: &[GameRow],
    tail_of: &[(usize, usize)],
    params: &ValueParams,
    moves_ready: impl FnOnce(MoveRows),
) -> Prepared {
    let heads: Vec<NodeInfo> = tail_of
        .par_iter()
        .filter_map(|&(i, t)| {
            let g = &games[i];
            let keys = g.keys.as_ref()?;
            let moves = moves_from_blob(&g.moves)?;
            let mut chain: Vec<NodeInfo> = keys[t..]
                .iter()
                .map(|&k| node_info(k, &nodes[&k]))
                .collect();
            value_chain(&mut chain, moves[t..].iter().map(|&m| MoveCode(m)), params);
            Some(chain[0])
        })
        .collect();
    for &(i, t) in tail_of {
        if let Some(keys) = &games[i].keys {
            for k in &keys[t..] {
                nodes.remove(k);
            }
        }
    }
    prepare_graph(nodes, Vec::new(), edges, heads, moves_ready)
}

/// The rows of `nodes` and `more` (positions `nodes` does not hold) and
/// `edges` (tails already taken out) and the tails' first positions `heads`,
/// as [`Book::bulk_load`] writes and values them. (`more` is not added to
/// `nodes`: the table would grow, copying all it holds.)
/// The moves go to `moves_ready` as soon as they are sorted, so that they
/// are written while the rest is prepared.
fn prepare_graph(
    nodes: KeyMap<Key, NodeAgg>,
    more: Vec<(Key, NodeAgg)>,
    mut edges: KeyMap<(Key, u16), EdgeAgg>,
    heads: Vec<NodeInfo>,
    moves_ready: impl FnOnce(MoveRows),
) -> Prepared {
    // The moves within tails are not rows (the move into a tail is).
    edges.retain(|(p, _), _| nodes.contains_key(p));
    let edge_rows = sorted_edges(nodes.iter().chain(more.iter().map(|(k, n)| (k, n))), edges);
    let edge_list: Vec<(Key, MoveCode, Key)> = edge_rows
        .iter()
        .map(|&((p, mv), ref e)| (Key::from_sql(p), MoveCode(mv), e.child))
        .collect();
    let links = parent_links(&edge_rows);
    crate::peak_memory::trace("moves sorted");
    moves_ready((edge_rows, links));
    // The lists are moved, not encoded here: this thread values the graph
    // next, and the writer encodes each list as it binds it.
    let (unsorted, mut unsorted_tops): (Vec<NodeInfo>, Tops) = nodes
        .into_iter()
        .chain(more)
        .map(|(key, n)| (node_info(key, &n), n.top))
        .unzip();
    // Keys sorted with their places, then the rows taken in that order:
    // sorting the rows themselves moves ten times the bytes.
    let mut order: Vec<(i64, u32)> = unsorted
        .iter()
        .enumerate()
        .map(|(i, n)| (n.key.to_sql(), i as u32))
        .collect();
    order.par_sort_unstable();
    let mut node_list: Vec<NodeInfo> = order
        .par_iter()
        .map(|&(_, i)| unsorted[i as usize])
        .collect();
    let tops: Tops = order
        .iter()
        .map(|&(_, i)| std::mem::take(&mut unsorted_tops[i as usize]))
        .collect();
    drop_apart((unsorted, unsorted_tops, order));
    let rows = node_list.len();
    node_list.extend(heads);
    Prepared {
        edge_list,
        node_list,
        rows,
        tops,
    }
}

/// A node of the graph from its aggregate.
fn node_info(key: Key, n: &NodeAgg) -> NodeInfo {
    NodeInfo {
        expected: n.expected,
        exact: n.exact,
        ..NodeInfo::from_counts(key, Some(n.depth), n.counts)
    }
}

/// For each game that gets a tail: its index in `games` and the ply where
/// the tail starts. A tail is the longest suffix of a game's positions that
/// no other game reaches (one occurrence, so one move each, leading to the
/// next), never its start.
fn find_tails(games: &[GameRow], nodes: &KeyMap<Key, NodeAgg>) -> Vec<(usize, usize)> {
    games
        .par_iter()
        .enumerate()
        .filter(|(_, g)| g.copies == 1)
        .filter_map(|(i, g)| {
            let keys = g.keys.as_ref()?;
            let single = |k: &Key| nodes.get(k).is_some_and(|n| n.counts.total() == 1);
            let shared = keys.iter().rposition(|k| !single(k)).unwrap_or(0);
            (shared + 1 < keys.len()).then_some((i, shared + 1))
        })
        .collect()
}

/// The root page of a table or index, for the page writers.
fn root_page(conn: &Connection, name: &str) -> Result<u32> {
    Ok(conn.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
        [name],
        |r| r.get(0),
    )?)
}

/// The `sources` id of each name (added where new).
pub(super) fn source_ids(tx: &Connection, names: &[String]) -> Result<Vec<i64>> {
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
