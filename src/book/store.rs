//! The SQLite book: schema, batched writes, queries.
//!
//! One file is one book. Schema (also in the README):
//!
//! ```sql
//! meta(key TEXT PRIMARY KEY, value TEXT)
//! positions(key INTEGER PRIMARY KEY, depth INTEGER, white, draws, black INTEGER,
//!           exact REAL, value REAL, best INTEGER, parent INTEGER)
//! parents(child INTEGER, parent INTEGER, PRIMARY KEY(child, parent)) WITHOUT ROWID
//! moves(parent INTEGER, move INTEGER, uci TEXT, child INTEGER,
//!       white, draws, black INTEGER, weight INTEGER, PRIMARY KEY(parent, move)) WITHOUT ROWID
//! games(id INTEGER PRIMARY KEY, hash INTEGER UNIQUE, source TEXT, white TEXT, black TEXT,
//!       result TEXT, plies INTEGER, start INTEGER, copies INTEGER)
//! ```
//!
//! Parent links replace an index on `moves(child)` (which cost a third of
//! the build): `positions.parent` is the first position seen to lead to it,
//! and a position reached from two or more positions (a transposition) has
//! all of them in `parents`. The incremental pass finds parents there.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use rayon::slice::ParallelSliceMut;
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::ingest::{Counts, Game};
use super::keys::{from_sql, to_sql, KeyMap, KeySet, MoveCode};
use super::learn::NodeCache;
use super::minimax::{self, Graph, NodeInfo, ValueParams};

pub const SCHEMA_VERSION: u32 = 3;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS positions(
    key INTEGER PRIMARY KEY,
    depth INTEGER,
    white INTEGER NOT NULL DEFAULT 0,
    draws INTEGER NOT NULL DEFAULT 0,
    black INTEGER NOT NULL DEFAULT 0,
    exact REAL,
    value REAL NOT NULL DEFAULT 0,
    best INTEGER,
    parent INTEGER,
    expected INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS parents(
    child INTEGER NOT NULL,
    parent INTEGER NOT NULL,
    PRIMARY KEY(child, parent)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS moves(
    parent INTEGER NOT NULL,
    move INTEGER NOT NULL,
    uci TEXT NOT NULL,
    child INTEGER,
    white INTEGER NOT NULL DEFAULT 0,
    draws INTEGER NOT NULL DEFAULT 0,
    black INTEGER NOT NULL DEFAULT 0,
    weight INTEGER,
    PRIMARY KEY(parent, move)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS analysis(
    key INTEGER PRIMARY KEY,
    score INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    interior INTEGER NOT NULL,
    deviation INTEGER,
    dev_move INTEGER,
    dev_depth INTEGER,
    book_moves INTEGER NOT NULL,
    engine TEXT NOT NULL,
    budget TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS games(
    id INTEGER PRIMARY KEY,
    hash INTEGER NOT NULL UNIQUE,
    source TEXT,
    white TEXT,
    black TEXT,
    result TEXT NOT NULL,
    plies INTEGER NOT NULL,
    start INTEGER NOT NULL,
    copies INTEGER NOT NULL DEFAULT 1
);
";

/// Adds one move's counts (a new move, or more games for a known one).
pub(crate) const MOVE_UPSERT: &str = "INSERT INTO moves(parent, move, uci, child, white, draws, black) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
     ON CONFLICT(parent, move) DO UPDATE SET
       child = excluded.child,
       white = white + excluded.white, draws = draws + excluded.draws, black = black + excluded.black";

/// Settings fixed when a book is created.
#[derive(Copy, Clone, Debug)]
pub struct BookSettings {
    pub max_ply: u32,
    pub params: ValueParams,
}

impl Default for BookSettings {
    fn default() -> Self {
        BookSettings {
            max_ply: 40,
            params: ValueParams::default(),
        }
    }
}

/// An open book.
pub struct Book {
    pub conn: Connection,
    pub path: PathBuf,
    pub settings: BookSettings,
    /// What `add_game`'s incremental pass has read, kept between games.
    pub(crate) cache: NodeCache,
}

/// A book move as `show` and the move choice see it.
#[derive(Clone, Debug)]
pub struct BookMove {
    pub mv: MoveCode,
    pub uci: String,
    pub child: Option<u64>,
    /// Counts of the move itself (occurrences), White's point of view.
    pub counts: Counts,
    /// Weight read from an imported Polyglot book.
    pub weight: Option<u32>,
    /// `q`: the move's value for the side to move (None: no value).
    pub q: Option<f64>,
    /// Games through the child position (the evidence behind `q`).
    pub child_games: u32,
    /// Points the side to move at the parent scored in them (2 a win, 1 a draw).
    pub child_points: u32,
    /// The child is checkmate or stalemate.
    pub child_exact: bool,
    /// Every game through the child was lost by the side playing this move.
    pub all_lost: bool,
}

/// One stored position.
pub type Position = NodeInfo;

fn open_conn(path: &Path) -> Result<Connection> {
    let conn =
        Connection::open(path).with_context(|| format!("cannot open book {}", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    // The bundled SQLite has STAT4, which re-prepares a statement whenever a
    // bound key changes; the query planner stability guarantee stops that.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .with_context(|| {
            format!(
                "{} is not a learnbook book (or cannot be opened for writing)",
                path.display()
            )
        })?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Checkpoints (and their fsync) every ~32 MB of WAL instead of 4 MB.
    conn.pragma_update(None, "wal_autocheckpoint", 8192)?;
    conn.pragma_update(None, "cache_size", -16_384i64)?;
    conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
    Ok(conn)
}

fn read_meta(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| {
            r.get::<_, String>(0)
        })
        .optional()?)
}

fn write_meta(conn: &Connection, settings: &BookSettings) -> Result<()> {
    let rows = [
        ("schema_version", SCHEMA_VERSION.to_string()),
        ("max_ply", settings.max_ply.to_string()),
        ("prior_games", settings.params.prior_games.to_string()),
        ("deviation", settings.params.deviation.to_string()),
        (
            "evidence_penalty",
            settings.params.evidence_penalty.to_string(),
        ),
        ("popularity", settings.params.popularity.to_string()),
        ("search_games", settings.params.search_games.to_string()),
    ];
    for (k, v) in rows {
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
            params![k, v],
        )?;
    }
    Ok(())
}

/// The value formula's parameters from the meta table.
fn read_params(conn: &Connection) -> Result<ValueParams> {
    let num = |k: &str| -> Result<f64> {
        read_meta(conn, k)?
            .ok_or_else(|| anyhow!("meta {k} missing"))?
            .parse::<f64>()
            .with_context(|| format!("meta {k}"))
    };
    let params = ValueParams {
        prior_games: num("prior_games")?,
        deviation: num("deviation")?,
        evidence_penalty: num("evidence_penalty")?,
        popularity: num("popularity")?,
        search_games: num("search_games")?,
    };
    params.validate()?;
    Ok(params)
}

/// Schema 2 -> 3: ratings (`positions.expected`, half a point a game, as
/// if unrated) and the `analysis` table (created with the schema).
fn migrate_v2(conn: &Connection) -> Result<()> {
    let tx = conn.unchecked_transaction()?;
    let has_expected: bool = tx.query_row(
        "SELECT count(*) FROM pragma_table_info('positions') WHERE name = 'expected'",
        [],
        |r| r.get(0),
    )?;
    if !has_expected {
        tx.execute_batch(
            "ALTER TABLE positions ADD COLUMN expected INTEGER NOT NULL DEFAULT 0;
             UPDATE positions SET expected = 500 * (white + draws + black);",
        )?;
    }
    tx.execute_batch(SCHEMA)?;
    let defaults = ValueParams::default();
    for (k, v) in [
        ("popularity", defaults.popularity),
        ("search_games", defaults.search_games),
    ] {
        tx.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES (?1, ?2)",
            params![k, v.to_string()],
        )?;
    }
    tx.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
        [SCHEMA_VERSION.to_string()],
    )?;
    // Values now follow the new formula.
    let params = read_params(&tx)?;
    reevaluate_all(&tx, &params)?;
    tx.commit()?;
    Ok(())
}

/// A node from [`NODE_WIDTH`] columns from `at`, as [`NODE_COLS`] selects
/// them: key, depth, white, draws, black, exact, value, expected, and the
/// analysis's score, interior and deviation.
pub(crate) fn node_from_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<NodeInfo> {
    let score: Option<i32> = r.get(at + 8)?;
    let interior: Option<bool> = r.get(at + 9)?;
    let deviation: Option<i32> = r.get(at + 10)?;
    Ok(NodeInfo {
        key: from_sql(r.get(at)?),
        depth: r.get::<_, Option<i64>>(at + 1)?.map(|d| d as u32),
        counts: Counts {
            white: r.get(at + 2)?,
            draws: r.get(at + 3)?,
            black: r.get(at + 4)?,
        },
        exact: r.get(at + 5)?,
        value: r.get(at + 6)?,
        expected: r.get(at + 7)?,
        search: score.map(minimax::score_to_value),
        deviation: match interior {
            Some(true) => Some(deviation.map(minimax::score_to_value)),
            _ => None,
        },
    })
}

/// The columns of a node, from `positions p LEFT JOIN analysis a`.
pub(crate) const NODE_COLS: &str =
    "p.key, p.depth, p.white, p.draws, p.black, p.exact, p.value, p.expected, a.score, a.interior, a.deviation";
/// How many columns [`NODE_COLS`] has.
pub(crate) const NODE_WIDTH: usize = 11;

impl Book {
    /// Opens an existing book, or creates an empty one with `settings`.
    /// An existing book keeps its own settings.
    pub fn open_or_create(path: &Path, settings: BookSettings) -> Result<Book> {
        settings.params.validate()?;
        let conn = open_conn(path)?;
        conn.execute_batch(SCHEMA)
            .with_context(|| format!("{} is not a learnbook book", path.display()))?;
        let settings = match read_meta(&conn, "schema_version")? {
            None => {
                write_meta(&conn, &settings)?;
                settings
            }
            Some(_) => Self::read_settings(&conn, path)?,
        };
        Ok(Book {
            conn,
            path: path.to_path_buf(),
            settings,
            cache: NodeCache::default(),
        })
    }

    /// Opens an existing book; fails if there is none.
    pub fn open(path: &Path) -> Result<Book> {
        if !path.exists() {
            bail!(
                "no book at {} (create one with `learnbook build`)",
                path.display()
            );
        }
        let conn = open_conn(path)?;
        let settings = Self::read_settings(&conn, path)?;
        Ok(Book {
            conn,
            path: path.to_path_buf(),
            settings,
            cache: NodeCache::default(),
        })
    }

    fn read_settings(conn: &Connection, path: &Path) -> Result<BookSettings> {
        let version: u32 = read_meta(conn, "schema_version")
            .ok()
            .flatten()
            .ok_or_else(|| {
                anyhow!(
                    "{} is not a learnbook book (no schema_version)",
                    path.display()
                )
            })?
            .parse()
            .context("bad schema_version")?;
        if version == 2 {
            migrate_v2(conn).with_context(|| format!("cannot upgrade {}", path.display()))?;
        } else if version != SCHEMA_VERSION {
            bail!(
                "{} has schema version {version}, this learnbook reads {SCHEMA_VERSION}",
                path.display()
            );
        }
        let max_ply: u32 = read_meta(conn, "max_ply")?
            .ok_or_else(|| anyhow!("meta max_ply missing"))?
            .parse()
            .context("meta max_ply")?;
        let settings = BookSettings {
            max_ply,
            params: read_params(conn)?,
        };
        settings.params.validate()?;
        Ok(settings)
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self
            .conn
            .query_row("SELECT NOT EXISTS(SELECT 1 FROM positions)", [], |r| {
                r.get(0)
            })?)
    }

    pub fn game_hashes(&self) -> Result<KeySet<u64>> {
        let mut stmt = self.conn.prepare("SELECT hash FROM games")?;
        let rows = stmt.query_map([], |r| r.get::<_, i64>(0))?;
        let mut set = KeySet::default();
        for h in rows {
            set.insert(from_sql(h?));
        }
        Ok(set)
    }

    /// Loads every position and move into memory.
    pub fn load_graph(&self) -> Result<Graph> {
        load_graph(&self.conn)
    }

    /// Full re-evaluation of every node; writes the values that changed.
    /// Returns the number of positions whose value or choice changed.
    pub fn reevaluate_all(&mut self) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let changed = reevaluate_all(&tx, &self.settings.params)?;
        tx.commit()?;
        Ok(changed)
    }

    pub fn position(&self, key: u64) -> Result<Option<NodeInfo>> {
        Ok(self
            .conn
            .query_row(
                &format!("SELECT {NODE_COLS} FROM positions p LEFT JOIN analysis a ON a.key = p.key WHERE p.key = ?1"),
                [to_sql(key)],
                |r| node_from_row(r, 0),
            )
            .optional()?)
    }

    pub fn stored_best(&self, key: u64) -> Result<Option<MoveCode>> {
        Ok(self
            .conn
            .query_row(
                "SELECT best FROM positions WHERE key = ?1",
                [to_sql(key)],
                |r| r.get::<_, Option<u16>>(0),
            )
            .optional()?
            .flatten()
            .map(MoveCode))
    }

    /// The book moves of a position, with their values.
    pub fn moves(&self, key: u64) -> Result<Vec<BookMove>> {
        let parent = self.position(key)?;
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT m.move, m.uci, m.child, m.white, m.draws, m.black, m.weight, {NODE_COLS}
             FROM moves m LEFT JOIN positions p ON p.key = m.child LEFT JOIN analysis a ON a.key = p.key
             WHERE m.parent = ?1 ORDER BY m.move"
        ))?;
        let mut rows = stmt.query([to_sql(key)])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let child: Option<NodeInfo> = match r.get::<_, Option<i64>>(7)? {
                Some(_) => Some(node_from_row(r, 7)?),
                None => None,
            };
            let q = match (&parent, &child) {
                (Some(p), Some(c)) => minimax::edge_value(p.depth, c, &self.settings.params),
                _ => None,
            };
            out.push(BookMove {
                mv: MoveCode(r.get(0)?),
                uci: r.get(1)?,
                child: r.get::<_, Option<i64>>(2)?.map(from_sql),
                counts: Counts {
                    white: r.get(3)?,
                    draws: r.get(4)?,
                    black: r.get(5)?,
                },
                weight: r.get(6)?,
                q,
                child_games: child.map_or(0, |c| c.counts.total()),
                child_points: match (&parent, &child) {
                    (Some(p), Some(c)) => p.white_to_move().map_or(0, |w| c.points_for(w)),
                    _ => 0,
                },
                child_exact: child.is_some_and(|c| c.exact.is_some()),
                all_lost: match (&parent, &child) {
                    (Some(p), Some(c)) => minimax::all_lost(p, c),
                    _ => false,
                },
            });
        }
        Ok(out)
    }

    /// Counts for `stats`.
    pub fn totals(&self) -> Result<BookTotals> {
        let q = |sql: &str| -> Result<i64> { Ok(self.conn.query_row(sql, [], |r| r.get(0))?) };
        Ok(BookTotals {
            positions: q("SELECT count(*) FROM positions")?,
            moves: q("SELECT count(*) FROM moves")?,
            games: q("SELECT count(*) FROM games")?,
            copies: q("SELECT coalesce(sum(copies), 0) FROM games")?,
            white_wins: q("SELECT coalesce(sum(copies), 0) FROM games WHERE result = '1-0'")?,
            draws: q("SELECT coalesce(sum(copies), 0) FROM games WHERE result = '1/2-1/2'")?,
            black_wins: q("SELECT coalesce(sum(copies), 0) FROM games WHERE result = '0-1'")?,
            unknown: q("SELECT coalesce(sum(copies), 0) FROM games WHERE result = '*'")?,
            single_game_moves: q("SELECT count(*) FROM moves WHERE white + draws + black = 1")?,
            max_depth: q("SELECT coalesce(max(depth), 0) FROM positions")?,
        })
    }

    /// Writes aggregated games into an empty book in key order, with values.
    pub fn bulk_load(&mut self, agg: Aggregate) -> Result<()> {
        let Aggregate {
            nodes,
            edges,
            games,
        } = agg;
        let params = self.settings.params;
        let edge_rows = sorted_edges(edges);
        let edge_list: Vec<(u64, MoveCode, u64)> = edge_rows
            .iter()
            .map(|&((p, mv), ref e)| (from_sql(p), MoveCode(mv), e.child))
            .collect();
        let links = parent_links(&edge_rows);
        let mut node_list: Vec<NodeInfo> = nodes
            .into_iter()
            .map(|(key, n)| NodeInfo {
                expected: n.expected,
                exact: n.exact,
                ..NodeInfo::from_counts(key, Some(n.depth), n.counts)
            })
            .collect();
        node_list.par_sort_unstable_by_key(|n| to_sql(n.key));

        let tx = self.conn.transaction()?;
        // Values do not depend on the rows written first, so they are
        // computed on another core while moves and games are inserted.
        let g = std::thread::scope(|scope| -> Result<Graph> {
            let evaluator = scope.spawn(move || {
                let mut g = Graph::new(node_list, edge_list);
                g.evaluate(&params);
                g
            });
            insert_chunked(
                &tx,
                "INSERT INTO moves(parent, move, uci, child, white, draws, black)",
                7,
                &edge_rows,
                |st, i, &((parent, mv), ref e)| {
                    st.raw_bind_parameter(i, parent)?;
                    st.raw_bind_parameter(i + 1, mv)?;
                    st.raw_bind_parameter(i + 2, MoveCode(mv).uci(e.castle))?;
                    st.raw_bind_parameter(i + 3, to_sql(e.child))?;
                    st.raw_bind_parameter(i + 4, e.counts.white)?;
                    st.raw_bind_parameter(i + 5, e.counts.draws)?;
                    st.raw_bind_parameter(i + 6, e.counts.black)
                },
            )?;
            let mut rows: Vec<&GameRow> = games.values().collect();
            rows.sort_unstable_by_key(|g| (&g.source, g.hash));
            insert_chunked(
                &tx,
                "INSERT INTO games(hash, source, white, black, result, plies, start, copies)",
                8,
                &rows,
                |st, i, g| {
                    st.raw_bind_parameter(i, to_sql(g.hash))?;
                    st.raw_bind_parameter(i + 1, &g.source)?;
                    st.raw_bind_parameter(i + 2, &g.white)?;
                    st.raw_bind_parameter(i + 3, &g.black)?;
                    st.raw_bind_parameter(i + 4, g.result)?;
                    st.raw_bind_parameter(i + 5, g.plies)?;
                    st.raw_bind_parameter(i + 6, to_sql(g.start))?;
                    st.raw_bind_parameter(i + 7, g.copies)
                },
            )?;
            let mut stmt = tx.prepare("INSERT INTO parents(child, parent) VALUES (?1, ?2)")?;
            for group in links.chunk_by(|a, b| a.0 == b.0).filter(|g| g.len() > 1) {
                for &(child, parent) in group {
                    stmt.execute(params![child, parent])?;
                }
            }
            evaluator
                .join()
                .map_err(|_| anyhow!("the evaluation thread panicked"))
        })?;
        {
            // Both lists are sorted by key: the first link of a child is its smallest parent.
            let mut link = links.iter().peekable();
            let rows: Vec<(&NodeInfo, Option<u16>, Option<i64>)> = g
                .nodes
                .iter()
                .zip(&g.best)
                .map(|(n, best)| {
                    let key = to_sql(n.key);
                    while link.next_if(|l| l.0 < key).is_some() {}
                    (
                        n,
                        best.map(|m| m.0),
                        link.peek().filter(|l| l.0 == key).map(|l| l.1),
                    )
                })
                .collect();
            insert_chunked(
                &tx,
                "INSERT INTO positions(key, depth, white, draws, black, exact, value, best, parent, expected)",
                10,
                &rows,
                |st, i, &(n, best, parent)| {
                    st.raw_bind_parameter(i, to_sql(n.key))?;
                    st.raw_bind_parameter(i + 1, n.depth)?;
                    st.raw_bind_parameter(i + 2, n.counts.white)?;
                    st.raw_bind_parameter(i + 3, n.counts.draws)?;
                    st.raw_bind_parameter(i + 4, n.counts.black)?;
                    st.raw_bind_parameter(i + 5, n.exact)?;
                    st.raw_bind_parameter(i + 6, n.value)?;
                    st.raw_bind_parameter(i + 7, best)?;
                    st.raw_bind_parameter(i + 8, parent)?;
                    st.raw_bind_parameter(i + 9, n.expected)
                },
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Adds aggregated games to a non-empty book, then re-evaluates fully.
    pub fn merge(&mut self, agg: Aggregate) -> Result<()> {
        let Aggregate {
            nodes,
            edges,
            games,
        } = agg;
        // Rows in key order: the B-trees are walked once, not at random.
        let mut node_rows: Vec<(i64, NodeAgg)> =
            nodes.into_iter().map(|(k, n)| (to_sql(k), n)).collect();
        node_rows.par_sort_unstable_by_key(|&(k, _)| k);
        let edge_rows = sorted_edges(edges);
        let links = parent_links(&edge_rows);
        // A large transaction: keep its pages in memory rather than
        // spilling them to the WAL again and again.
        self.conn.pragma_update(None, "cache_size", -262_144i64)?;
        let tx = self.conn.transaction()?;
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
                    .map(|&((p, mv), ref e)| (from_sql(p), mv, e)),
            )?;
            write_games(&tx, &games)?;
        }
        // The full re-evaluation loads the whole book: free the rows first.
        drop((node_rows, edge_rows, links, games));
        reevaluate_all(&tx, &self.settings.params)?;
        tx.commit()?;
        self.conn.pragma_update(None, "cache_size", -16_384i64)?;
        Ok(())
    }
}

/// A position's search scores, as `analyze` stores them (table `analysis`).
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    pub key: u64,
    /// Search score of the position, centipawns, side to move (mate:
    /// +-(30000 - plies)).
    pub score: i32,
    pub depth: u32,
    /// Its moves were analysed too: the deviation was searched.
    pub interior: bool,
    /// Score of the best legal move that is not a book move (side to move);
    /// `None` for a leaf of the analysis or when every legal move is a book move.
    pub deviation: Option<i32>,
    pub dev_move: Option<MoveCode>,
    pub dev_depth: Option<u32>,
    /// Book moves with games when it was analysed.
    pub book_moves: u32,
    /// The engine (`learnbook` for the search core, else the UCI `id name`).
    pub engine: String,
    /// The search budget, `nodes=N` or `movetime=MS`.
    pub budget: String,
}

impl Book {
    /// The stored analysis of a position.
    pub fn analysis(&self, key: u64) -> Result<Option<Analysis>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT key, score, depth, interior, deviation, dev_move, dev_depth, book_moves, engine, budget
                 FROM analysis WHERE key = ?1",
            )?
            .query_row([to_sql(key)], |r| {
                Ok(Analysis {
                    key: from_sql(r.get(0)?),
                    score: r.get(1)?,
                    depth: r.get(2)?,
                    interior: r.get(3)?,
                    deviation: r.get(4)?,
                    dev_move: r.get::<_, Option<u16>>(5)?.map(MoveCode),
                    dev_depth: r.get(6)?,
                    book_moves: r.get(7)?,
                    engine: r.get(8)?,
                    budget: r.get(9)?,
                })
            })
            .optional()?)
    }

    /// Number of analysed positions (interior, all).
    pub fn analysed_count(&self) -> Result<(i64, i64)> {
        Ok(self.conn.query_row(
            "SELECT coalesce(sum(interior), 0), count(*) FROM analysis",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?)
    }

    /// Stores search scores (replacing older ones of the same positions) and
    /// re-evaluates what they change, in one transaction: values stay exactly
    /// those of a full re-evaluation after every call.
    pub fn store_analysis(&mut self, rows: &[Analysis]) -> Result<minimax::Reevaluation> {
        let params = self.settings.params;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO analysis(key, score, depth, interior, deviation, dev_move, dev_depth, book_moves, engine, budget)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            for a in rows {
                stmt.execute(params![
                    to_sql(a.key),
                    a.score,
                    a.depth,
                    a.interior,
                    a.deviation,
                    a.dev_move.map(|m| m.0),
                    a.dev_depth,
                    a.book_moves,
                    a.engine,
                    a.budget
                ])?;
            }
        }
        // The cached nodes do not know the new scores.
        self.cache.clear();
        let keys: Vec<u64> = rows.iter().map(|a| a.key).collect();
        // (After this write the next `add_game` finds the stamp changed and
        // starts its cache afresh; an error leaves it to be dropped too.)
        let out = super::learn::reevaluate_keys(&tx, &mut self.cache, &params, &keys);
        if out.is_err() {
            self.cache.clear();
        }
        let out = out?;
        tx.commit()?;
        Ok(out)
    }
}

/// Whole-book counts.
#[derive(Clone, Debug)]
pub struct BookTotals {
    pub positions: i64,
    pub moves: i64,
    pub games: i64,
    /// Games counted, with copies of duplicates (`build --allow-duplicates`).
    pub copies: i64,
    pub white_wins: i64,
    pub draws: i64,
    pub black_wins: i64,
    pub unknown: i64,
    pub single_game_moves: i64,
    pub max_depth: i64,
}

/// Loads every position and move through `conn` (inside a transaction, this
/// sees its uncommitted rows).
/// Aggregated moves as rows, in key order.
fn sorted_edges(edges: KeyMap<(u64, u16), EdgeAgg>) -> Vec<((i64, u16), EdgeAgg)> {
    let mut rows: Vec<((i64, u16), EdgeAgg)> = edges
        .into_iter()
        .map(|((p, mv), e)| ((to_sql(p), mv), e))
        .collect();
    rows.par_sort_unstable_by_key(|&(k, _)| k);
    rows
}

/// `(child, parent)` of every move, sorted and without repeats, so grouped
/// by child.
fn parent_links(edge_rows: &[((i64, u16), EdgeAgg)]) -> Vec<(i64, i64)> {
    let mut links: Vec<(i64, i64)> = edge_rows
        .iter()
        .map(|&((p, _), ref e)| (to_sql(e.child), p))
        .collect();
    links.par_sort_unstable();
    links.dedup();
    links
}

fn load_graph(conn: &Connection) -> Result<Graph> {
    let mut nodes = Vec::new();
    let mut best_stored = Vec::new();
    {
        let mut stmt = conn.prepare(&format!(
            "SELECT {NODE_COLS}, p.best FROM positions p LEFT JOIN analysis a ON a.key = p.key"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            nodes.push(node_from_row(r, 0)?);
            best_stored.push(r.get::<_, Option<u16>>(NODE_WIDTH)?.map(MoveCode));
        }
    }
    let mut edges = Vec::new();
    {
        let mut stmt =
            conn.prepare("SELECT parent, move, child FROM moves WHERE child IS NOT NULL")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            edges.push((
                from_sql(r.get(0)?),
                MoveCode(r.get(1)?),
                from_sql(r.get(2)?),
            ));
        }
    }
    let mut g = Graph::new(nodes, edges);
    g.best = best_stored;
    Ok(g)
}

/// Full re-evaluation through `conn`, to be called inside the transaction
/// that changed the counts, so that no committed state has stale values.
pub(crate) fn reevaluate_all(conn: &Connection, params: &ValueParams) -> Result<usize> {
    let mut g = load_graph(conn)?;
    let before: Vec<(u64, f64, Option<MoveCode>)> = g
        .nodes
        .iter()
        .zip(&g.best)
        .map(|(n, b)| (n.key, n.value, *b))
        .collect();
    g.evaluate(params);
    let mut changed = 0;
    let mut stmt =
        conn.prepare_cached("UPDATE positions SET value = ?2, best = ?3 WHERE key = ?1")?;
    for (i, (key, v, b)) in before.into_iter().enumerate() {
        let (nv, nb) = (g.nodes[i].value, g.best[i]);
        if nv.to_bits() != v.to_bits() || nb != b {
            stmt.execute(params![to_sql(key), nv, nb.map(|m| m.0)])?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// Inserts `rows` into a fresh table many at a time (one statement step per
/// chunk of rows instead of per row): `bind` binds one row's `cols` values
/// starting at parameter index `i`.
fn insert_chunked<T>(
    tx: &Connection,
    head: &str,
    cols: usize,
    rows: &[T],
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
        for (r, row) in chunk.iter().rev().enumerate() {
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
    edges: impl Iterator<Item = (u64, u16, &'a EdgeAgg)>,
) -> Result<()> {
    let mut stmt = tx.prepare(MOVE_UPSERT)?;
    for (parent, mv, e) in edges {
        let c = e.counts;
        stmt.execute(params![
            to_sql(parent),
            mv,
            MoveCode(mv).uci(e.castle),
            to_sql(e.child),
            c.white,
            c.draws,
            c.black
        ])?;
    }
    Ok(())
}

/// Adds game rows, in a stable order; repeated games add to `copies`.
fn write_games(tx: &Connection, games: &KeyMap<u64, GameRow>) -> Result<()> {
    let mut stmt = tx.prepare(
        "INSERT INTO games(hash, source, white, black, result, plies, start, copies) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT(hash) DO UPDATE SET copies = copies + excluded.copies",
    )?;
    let mut rows: Vec<&GameRow> = games.values().collect();
    rows.sort_unstable_by_key(|g| (&g.source, g.hash));
    for g in rows {
        stmt.execute(params![
            to_sql(g.hash),
            g.source,
            g.white,
            g.black,
            g.result,
            g.plies,
            to_sql(g.start),
            g.copies
        ])?;
    }
    Ok(())
}

/// Records that `child` is reached from `a` and from `b` (a transposition).
pub(crate) fn link_transposition(tx: &Connection, child: u64, a: u64, b: u64) -> Result<()> {
    let mut stmt =
        tx.prepare_cached("INSERT OR IGNORE INTO parents(child, parent) VALUES (?1, ?2)")?;
    stmt.execute(params![to_sql(child), to_sql(a)])?;
    stmt.execute(params![to_sql(child), to_sql(b)])?;
    Ok(())
}

/// Links `parent -> child` for an existing `child` (merge, import).
pub(crate) fn link_parent(tx: &Connection, parent: u64, child: u64) -> Result<()> {
    let first: Option<Option<i64>> = tx
        .prepare_cached("SELECT parent FROM positions WHERE key = ?1")?
        .query_row([to_sql(child)], |r| r.get(0))
        .optional()?;
    match first {
        None => bail!("position {child:016x} missing while linking its parent"),
        Some(None) => {
            tx.prepare_cached("UPDATE positions SET parent = ?2 WHERE key = ?1")?
                .execute(params![to_sql(child), to_sql(parent)])?;
        }
        Some(Some(f)) if from_sql(f) != parent => {
            link_transposition(tx, child, from_sql(f), parent)?
        }
        Some(Some(_)) => {}
    }
    Ok(())
}

pub(crate) fn insert_game_row(tx: &Transaction<'_>, game: &Game, source: &str) -> Result<bool> {
    let n = tx.prepare_cached(
        "INSERT OR IGNORE INTO games(hash, source, white, black, result, plies, start) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![to_sql(game.hash), source, game.white, game.black, game.result.as_str(), game.total_plies, to_sql(game.start)])?;
    Ok(n == 1)
}

/// In-memory aggregate of many games, for `build`.
#[derive(Default)]
pub struct Aggregate {
    pub nodes: KeyMap<u64, NodeAgg>,
    pub edges: KeyMap<(u64, u16), EdgeAgg>,
    pub games: KeyMap<u64, GameRow>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct NodeAgg {
    pub depth: u32,
    pub counts: Counts,
    /// White's expected points in thousandths (see [`NodeInfo::expected`]).
    pub expected: i64,
    pub exact: Option<f64>,
}

#[derive(Clone, Copy, Debug)]
pub struct EdgeAgg {
    pub child: u64,
    pub castle: bool,
    pub counts: Counts,
}

#[derive(Clone, Debug)]
pub struct GameRow {
    pub hash: u64,
    pub source: String,
    pub white: String,
    pub black: String,
    pub result: &'static str,
    pub plies: u32,
    pub start: u64,
    pub copies: u32,
}

impl Aggregate {
    pub fn add(&mut self, game: &Game, source: &str) {
        let c = game.result.counts();
        let expected = game.expected_milli();
        for (ply, key) in game.keys().enumerate() {
            let depth = game.start_ply + ply as u32;
            let n = self.nodes.entry(key).or_insert(NodeAgg {
                depth,
                counts: Counts::default(),
                expected: 0,
                exact: None,
            });
            n.depth = n.depth.min(depth);
            n.counts.add(c);
            n.expected += expected;
        }
        if let Some(e) = game.terminal {
            let last = game.plies.last().map_or(game.start, |p| p.child);
            if let Some(n) = self.nodes.get_mut(&last) {
                n.exact = Some(e);
            }
        }
        for p in &game.plies {
            let e = self.edges.entry((p.parent, p.mv.0)).or_insert(EdgeAgg {
                child: p.child,
                castle: p.castle,
                counts: Counts::default(),
            });
            e.counts.add(c);
        }
        if let Some(row) = self.games.get_mut(&game.hash) {
            row.copies += 1;
            return;
        }
        self.games.insert(
            game.hash,
            GameRow {
                copies: 1,
                hash: game.hash,
                source: source.to_string(),
                white: game.white.clone(),
                black: game.black.clone(),
                result: game.result.as_str(),
                plies: game.total_plies,
                start: game.start,
            },
        );
    }
}
