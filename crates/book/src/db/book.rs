//! [`Book`]: an open book file, its settings, and reads of single positions.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use rusqlite::{Connection, OptionalExtension};

use super::cache::NodeCache;
use super::codec::hash_from_sql;
use super::node_rows::{node_from_row, NODE_COLS};
use super::schema::{
    create_or_read, open_conn, open_conn_read_only, read_settings, read_shard, write_shard,
    BookSettings,
};
use super::tails::tail_node;
use crate::keys::{Key, KeySet, MoveCode};
use crate::pgn::game::Counts;
use crate::values::minimax::{self, NodeInfo};
use learnbook_base::shard::Shard;

/// An open book.
pub struct Book {
    /// Only this folder speaks SQL; the rest of the crate calls methods.
    pub(super) conn: Connection,
    pub path: PathBuf,
    pub settings: BookSettings,
    /// What `add_game`'s incremental pass has read, kept between games.
    pub(super) cache: NodeCache,
    /// The budget [`Book::limit_memory`] set: past half of it the
    /// whole-book commands read a position at a time instead of the graph.
    pub(super) memory: std::cell::Cell<Option<u64>>,
}

/// A book move as `show` and the move choice see it.
#[derive(Clone, Debug)]
pub struct BookMove {
    pub mv: MoveCode,
    pub uci: String,
    pub child: Option<Key>,
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
    /// The child's depth (`None`: unknown, or no child).
    pub child_depth: Option<u32>,
    /// Every game through the child was lost by the side playing this move.
    pub all_lost: bool,
    /// Added by `grow` (an engine move), and no game has played it since.
    pub engine: bool,
    /// The child is a position no game reached, valued by search
    /// ([`NodeInfo::engine_only`]).
    pub child_engine: bool,
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
    /// Positions kept in single-game tails rather than as rows (in `positions`).
    pub tail_positions: i64,
}

impl Book {
    /// Opens an existing book, or creates an empty one with `settings`.
    /// An existing book keeps its own settings.
    pub fn open_or_create(path: &Path, settings: BookSettings) -> Result<Book> {
        settings.params.validate()?;
        let conn = open_conn(path)?;
        let settings = create_or_read(&conn, path, settings)?;
        Ok(Book {
            conn,
            path: path.to_path_buf(),
            settings,
            cache: NodeCache::default(),
            memory: std::cell::Cell::new(None),
        })
    }

    /// Opens an existing book; fails if there is none.
    pub fn open(path: &Path) -> Result<Book> {
        Book::open_existing(path, open_conn)
    }

    /// Opens an existing book for reading only (a server's connections):
    /// it sees what other connections commit, and never writes. Open it
    /// once with [`Book::open`] first, which upgrades an older book.
    pub fn open_read_only(path: &Path) -> Result<Book> {
        Book::open_existing(path, open_conn_read_only)
    }

    fn open_existing(path: &Path, connect: fn(&Path) -> Result<Connection>) -> Result<Book> {
        if !path.exists() {
            bail!(
                "no book at {} (create one with `learnbook build`)",
                path.display()
            );
        }
        let conn = connect(path)?;
        let settings = read_settings(&conn, path)?;
        Ok(Book {
            conn,
            path: path.to_path_buf(),
            settings,
            cache: NodeCache::default(),
            memory: std::cell::Cell::new(None),
        })
    }

    /// SQLite's `PRAGMA data_version` of this connection: it changes
    /// whenever another connection commits to the book.
    pub fn data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?)
    }

    /// The shard this book is (`build --shard`) and its job's fingerprint,
    /// or `None` for a book of all its games.
    pub fn shard(&self) -> Result<Option<(Shard, String)>> {
        read_shard(&self.conn)
    }

    /// Marks the book as `shard` of the job with fingerprint `job`, for
    /// `merge` to check that it has every shard of one job.
    pub fn set_shard(&self, shard: Shard, job: &str) -> Result<()> {
        write_shard(&self.conn, shard, job)
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self
            .conn
            .query_row("SELECT NOT EXISTS(SELECT 1 FROM positions)", [], |r| {
                r.get(0)
            })?)
    }

    /// The hashes of the games in the book (`Game::hash`).
    pub fn game_hashes(&self) -> Result<KeySet<u64>> {
        let mut stmt = self.conn.prepare("SELECT hash FROM games")?;
        let rows = stmt.query_map([], |r| r.get::<_, i64>(0))?;
        let mut set = KeySet::default();
        for h in rows {
            set.insert(hash_from_sql(h?));
        }
        Ok(set)
    }

    /// A position: its row, or its place in a single-game tail.
    pub fn position(&self, key: Key) -> Result<Option<NodeInfo>> {
        let row = self
            .conn
            .prepare_cached(&format!(
                "SELECT {NODE_COLS} FROM positions p LEFT JOIN analysis a ON a.key = p.key WHERE p.key = ?1"
            ))?
            .query_row([key], |r| node_from_row(r, 0))
            .optional()?;
        match row {
            Some(n) => Ok(Some(n)),
            None => Ok(tail_node(&self.conn, key, &self.settings.params)?.map(|(t, i)| t.nodes[i])),
        }
    }

    /// The positions with a book move into `key`: a row's first parent and
    /// the `parents` table, or the position before it in its tail.
    pub fn parents_of(&self, key: Key) -> Result<Vec<Key>> {
        let row: Option<Option<Key>> = self
            .conn
            .prepare_cached("SELECT parent FROM positions WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?;
        let Some(first) = row else {
            return Ok(tail_node(&self.conn, key, &self.settings.params)?
                .map(|(t, i)| t.parent_of(i))
                .into_iter()
                .collect());
        };
        let mut out: Vec<Key> = first.into_iter().collect();
        let mut linked = self
            .conn
            .prepare_cached("SELECT parent FROM parents WHERE child = ?1")?;
        for parent in linked.query_map([key], |r| r.get(0))? {
            out.push(parent?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    pub fn stored_best(&self, key: Key) -> Result<Option<MoveCode>> {
        let row = self
            .conn
            .prepare_cached("SELECT best FROM positions WHERE key = ?1")?
            .query_row([key], |r| r.get::<_, Option<u16>>(0))
            .optional()?;
        match row {
            Some(best) => Ok(best.map(MoveCode)),
            None => {
                Ok(tail_node(&self.conn, key, &self.settings.params)?.and_then(|(t, i)| t.best[i]))
            }
        }
    }

    /// The book moves of a position, with their values.
    pub fn moves(&self, key: Key) -> Result<Vec<BookMove>> {
        let parent = self.position(key)?;
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT m.move, m.uci, m.child, m.white, m.draws, m.black, m.weight, m.grown, {NODE_COLS}
             FROM moves m LEFT JOIN positions p ON p.key = m.child LEFT JOIN analysis a ON a.key = p.key
             WHERE m.parent = ?1 ORDER BY m.move"
        ))?;
        let mut rows = stmt.query([key])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let child_key: Option<Key> = r.get(2)?;
            let child: Option<NodeInfo> = match (r.get::<_, Option<i64>>(8)?, child_key) {
                (Some(_), _) => Some(node_from_row(r, 8)?),
                // Not a row: the first position of a tail.
                (None, Some(c)) => {
                    tail_node(&self.conn, c, &self.settings.params)?.map(|(t, i)| t.nodes[i])
                }
                (None, None) => None,
            };
            let counts = Counts {
                white: r.get(3)?,
                draws: r.get(4)?,
                black: r.get(5)?,
            };
            let mut m = self.book_move(
                parent.as_ref(),
                MoveCode(r.get(0)?),
                r.get(1)?,
                child_key,
                counts,
                r.get(6)?,
                child.as_ref(),
            );
            m.engine = r.get::<_, bool>(7)? && counts.total() == 0;
            out.push(m);
        }
        if parent.is_some() && out.is_empty() {
            // A tail position: its one move leads to the next.
            if let Some((t, i)) = tail_node(&self.conn, key, &self.settings.params)? {
                if let Some(child) = t.nodes.get(i + 1) {
                    let (mv, castle) = t.moves[i];
                    out.push(self.book_move(
                        parent.as_ref(),
                        mv,
                        mv.uci(castle),
                        Some(child.key),
                        child.counts,
                        None,
                        Some(child),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// A [`BookMove`] of `parent` to `child` with the move's own counts.
    #[allow(clippy::too_many_arguments)]
    fn book_move(
        &self,
        parent: Option<&NodeInfo>,
        mv: MoveCode,
        uci: String,
        child_key: Option<Key>,
        counts: Counts,
        weight: Option<u32>,
        child: Option<&NodeInfo>,
    ) -> BookMove {
        let both = parent.zip(child);
        BookMove {
            mv,
            uci,
            child: child_key,
            counts,
            weight,
            q: both.and_then(|(p, c)| minimax::edge_value(p.depth, c, &self.settings.params)),
            child_games: child.map_or(0, |c| c.counts.total()),
            child_points: both.map_or(0, |(p, c)| p.white_to_move().map_or(0, |w| c.points_for(w))),
            child_exact: child.is_some_and(|c| c.exact.is_some()),
            child_depth: child.and_then(|c| c.depth),
            all_lost: both.is_some_and(|(p, c)| minimax::all_lost(p, c)),
            engine: false,
            child_engine: child.is_some_and(NodeInfo::engine_only),
        }
    }

    /// Counts for `stats`.
    pub fn totals(&self) -> Result<BookTotals> {
        let q = |sql: &str| -> Result<i64> { Ok(self.conn.query_row(sql, [], |r| r.get(0))?) };
        // A tail of L positions stands for L rows and L - 1 moves of one game.
        let tail_positions = q(
            "SELECT coalesce(sum(length(moves) / 2 - tail + 1), 0) FROM games WHERE tail IS NOT NULL",
        )?;
        let tail_moves = tail_positions - q("SELECT count(*) FROM games WHERE tail IS NOT NULL")?;
        Ok(BookTotals {
            positions: q("SELECT count(*) FROM positions")? + tail_positions,
            moves: q("SELECT count(*) FROM moves")? + tail_moves,
            tail_positions,
            games: q("SELECT count(*) FROM games")?,
            copies: q("SELECT coalesce(sum(copies), 0) FROM games")?,
            white_wins: q("SELECT coalesce(sum(copies), 0) FROM games WHERE result = '1-0'")?,
            draws: q("SELECT coalesce(sum(copies), 0) FROM games WHERE result = '1/2-1/2'")?,
            black_wins: q("SELECT coalesce(sum(copies), 0) FROM games WHERE result = '0-1'")?,
            unknown: q("SELECT coalesce(sum(copies), 0) FROM games WHERE result = '*'")?,
            single_game_moves: q("SELECT count(*) FROM moves WHERE white + draws + black = 1")?
                + tail_moves,
            max_depth: q("SELECT coalesce(max(depth), 0) FROM positions")?.max(q(
                "SELECT coalesce(max(length(moves) / 2), 0) FROM games WHERE tail IS NOT NULL",
            )?),
        })
    }

    /// Keeps what SQLite maps and caches within a share of `bytes`: each
    /// database (this book and any attached later) maps at most an eighth
    /// of it, and this book caches at most a sixteenth (never more than
    /// the defaults of [`open`](Book::open)). Mapped pages count in the
    /// process's resident memory as much as its heap does.
    /// The budget also decides how the whole book is read: a graph larger
    /// than half of it is valued depth by depth and exported and checked a
    /// position at a time ([`Book::graph_exceeds_budget`]).
    pub fn limit_memory(&self, bytes: u64) -> Result<()> {
        self.memory.set(Some(bytes));
        let map = (bytes / 8).min(1 << 30);
        let cache_kib = (bytes / 16 / 1024).clamp(1024, 16_384);
        self.conn.pragma_update(None, "mmap_size", map as i64)?;
        self.conn
            .pragma_update(None, "cache_size", -(cache_kib as i64))?;
        Ok(())
    }
}
