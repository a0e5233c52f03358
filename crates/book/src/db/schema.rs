//! The tables, the settings kept in `meta`, and the upgrade of older books.

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::graph::reevaluate_all;
use super::tail_index::migrate_rows;
use crate::values::minimax::ValueParams;
use learnbook_base::shard::Shard;

pub const SCHEMA_VERSION: u32 = 8;

pub(super) const SCHEMA: &str = "
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
    expected INTEGER NOT NULL DEFAULT 0,
    top BLOB
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
    rating_sum INTEGER NOT NULL DEFAULT 0,
    rated INTEGER NOT NULL DEFAULT 0,
    grown INTEGER NOT NULL DEFAULT 0,
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
    budget TEXT NOT NULL,
    grown INTEGER
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
    copies INTEGER NOT NULL DEFAULT 1,
    moves BLOB,
    expected INTEGER,
    tail INTEGER,
    white_elo INTEGER,
    black_elo INTEGER,
    date TEXT,
    event TEXT,
    site TEXT,
    round TEXT,
    fen TEXT,
    rest BLOB
);
CREATE TABLE IF NOT EXISTS sources(
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS tail_index(
    bucket INTEGER PRIMARY KEY,
    entries BLOB NOT NULL
);
";

/// Settings fixed when a book is created.
#[derive(Copy, Clone, Debug)]
pub struct BookSettings {
    pub max_ply: u32,
    pub params: ValueParams,
    /// Positions and moves fewer games reach were dropped when the book was
    /// built (`--min-games`, as Polyglot's `-min-game`); 1: nothing dropped.
    pub min_games: u32,
    /// The rest of a game no other game reaches is kept as its moves, not as
    /// rows ([`super::tails`]): by `build` unless `--no-tails`, and by
    /// `learn` in a book that has them.
    pub tails: bool,
}

impl Default for BookSettings {
    fn default() -> Self {
        BookSettings {
            max_ply: 40,
            params: ValueParams::default(),
            min_games: 1,
            tails: true,
        }
    }
}

/// A book's writing connection.
pub(super) fn open_conn(path: &Path) -> Result<Connection> {
    let conn =
        Connection::open(path).with_context(|| format!("cannot open book {}", path.display()))?;
    configure(conn, path)
}

fn configure(conn: Connection, path: &Path) -> Result<Connection> {
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
    // Learning one game uses more distinct statements than rusqlite's
    // default cache of 16 holds: each game would parse some of them again.
    conn.set_prepared_statement_cache_capacity(64);
    // Checkpoints (and their fsync) every ~32 MB of WAL instead of 4 MB.
    conn.pragma_update(None, "wal_autocheckpoint", 8192)?;
    conn.pragma_update(None, "cache_size", -16_384i64)?;
    conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
    Ok(conn)
}

/// A read-only connection to an existing book (WAL: it reads the last
/// committed state while another connection writes).
pub(super) fn open_conn_read_only(path: &Path) -> Result<Connection> {
    use rusqlite::OpenFlags;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("cannot open book {}", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    conn.pragma_update(None, "cache_size", -16_384i64)?;
    conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
    Ok(conn)
}

/// Creates the tables if missing; a new book gets `settings`, an existing
/// one keeps (and returns) its own.
pub(super) fn create_or_read(
    conn: &Connection,
    path: &Path,
    settings: BookSettings,
) -> Result<BookSettings> {
    conn.execute_batch(SCHEMA)
        .with_context(|| format!("{} is not a learnbook book", path.display()))?;
    match read_meta(conn, "schema_version")? {
        None => {
            write_meta(conn, &settings)?;
            Ok(settings)
        }
        Some(_) => read_settings(conn, path),
    }
}

/// The settings of an existing book, upgrading it first if it is older.
pub(super) fn read_settings(conn: &Connection, path: &Path) -> Result<BookSettings> {
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
    }
    if version == 2 || version == 3 {
        migrate_v3(conn).with_context(|| format!("cannot upgrade {}", path.display()))?;
    }
    if (2..=4).contains(&version) {
        migrate_v4(conn).with_context(|| format!("cannot upgrade {}", path.display()))?;
    }
    if version == 5 {
        migrate_v5(conn).with_context(|| format!("cannot upgrade {}", path.display()))?;
    }
    if version == 6 {
        migrate_v6(conn).with_context(|| format!("cannot upgrade {}", path.display()))?;
    } else if version == 7 {
        migrate_v7(conn).with_context(|| format!("cannot upgrade {}", path.display()))?;
    } else if !(2..=SCHEMA_VERSION).contains(&version) {
        bail!(
            "{} has schema version {version}, this learnbook reads {SCHEMA_VERSION}",
            path.display()
        );
    }
    let max_ply: u32 = read_meta(conn, "max_ply")?
        .ok_or_else(|| anyhow!("meta max_ply missing"))?
        .parse()
        .context("meta max_ply")?;
    // Books from before --min-games dropped nothing.
    let min_games: u32 = match read_meta(conn, "min_games")? {
        Some(v) => v.parse().context("meta min_games")?,
        None => 1,
    };
    // Books from before this setting: tails unless the build had none.
    let tails = match read_meta(conn, "tails")?.as_deref() {
        Some("0") => false,
        Some("1") => true,
        Some(v) => bail!("meta tails is {v:?}, not 0 or 1"),
        None => !no_tails_built(conn)?,
    };
    let settings = BookSettings {
        max_ply,
        params: read_params(conn)?,
        min_games,
        tails,
    };
    settings.params.validate()?;
    Ok(settings)
}

/// Whether a book from before the `tails` setting was built without tails:
/// games but an empty tails index.
fn no_tails_built(conn: &Connection) -> Result<bool> {
    let (games, tails): (bool, bool) = conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM games), EXISTS(SELECT 1 FROM tail_index)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(games && !tails)
}

/// Stores a new engine margin `M` (the caller re-evaluates in the same
/// transaction).
pub(super) fn write_engine_margin(conn: &Connection, cp: f64) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('engine_margin', ?1)",
        [cp.to_string()],
    )?;
    Ok(())
}

fn read_meta(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| {
            r.get::<_, String>(0)
        })
        .optional()?)
}

/// The `meta` rows of a shard: which one (`I/N`) and of which job.
const SHARD_KEYS: [&str; 2] = ["shard", "shard_job"];

/// The shard a book is, and its job's fingerprint (`None` for a whole book).
pub(super) fn read_shard(conn: &Connection) -> Result<Option<(Shard, String)>> {
    let (Some(shard), Some(job)) = (
        read_meta(conn, SHARD_KEYS[0])?,
        read_meta(conn, SHARD_KEYS[1])?,
    ) else {
        return Ok(None);
    };
    let shard = Shard::parse(&shard).with_context(|| format!("the book's shard {shard:?}"))?;
    Ok(Some((shard, job)))
}

/// Marks the book as `shard` of the job `job`.
pub(super) fn write_shard(conn: &Connection, shard: Shard, job: &str) -> Result<()> {
    for (k, v) in SHARD_KEYS.iter().zip([shard.to_string(), job.to_string()]) {
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
            params![k, v],
        )?;
    }
    Ok(())
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
        ("engine_margin", settings.params.engine_margin.to_string()),
        ("min_games", settings.min_games.to_string()),
        ("tails", u8::from(settings.tails).to_string()),
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
        // Books from before the margin existed were valued without one.
        engine_margin: match read_meta(conn, "engine_margin")? {
            Some(v) => v.parse::<f64>().context("meta engine_margin")?,
            None => 0.0,
        },
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
    // The re-evaluation below reads the games as the current schema has them.
    add_game_columns(
        &tx,
        &[
            ("moves", "BLOB"),
            ("expected", "INTEGER"),
            ("tail", "INTEGER"),
        ],
    )?;
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
        "UPDATE meta SET value = '3' WHERE key = 'schema_version'",
        [],
    )?;
    // Values now follow the new formula.
    let params = read_params(&tx)?;
    reevaluate_all(&tx, &params)?;
    tx.commit()?;
    Ok(())
}

/// Schema 3 -> 4: each game's moves and rating expectation (`games.moves`,
/// `games.expected`), which `merge` needs to count a game found in two books
/// once. Older games have neither (NULL): such a game, if found again in
/// another book, cannot be taken out of its counts, and `merge` says so.
fn migrate_v3(conn: &Connection) -> Result<()> {
    let tx = conn.unchecked_transaction()?;
    add_game_columns(&tx, &[("moves", "BLOB"), ("expected", "INTEGER")])?;
    tx.execute(
        "UPDATE meta SET value = '4' WHERE key = 'schema_version'",
        [],
    )?;
    tx.commit()?;
    Ok(())
}

/// Schema 4 -> 6: single-game tails (`games.tail` and the tails index).
/// An older book has none: every position stays a row, which is still a
/// valid book of schema 6.
fn migrate_v4(conn: &Connection) -> Result<()> {
    upgrade_to_current(conn, |tx| {
        add_game_columns(tx, &[("tail", "INTEGER")])?;
        // Input names once each, in `sources`.
        tx.execute_batch(
            "INSERT OR IGNORE INTO sources(name) SELECT DISTINCT source FROM games WHERE typeof(source) = 'text';
             UPDATE games SET source = (SELECT id FROM sources WHERE name = games.source) WHERE typeof(source) = 'text';",
        )?;
        Ok(())
    })
}

/// Schema 5 -> 6: the tails index kept a row per tail position (`tails`);
/// it now keeps them in buckets (`tail_index`).
fn migrate_v5(conn: &Connection) -> Result<()> {
    upgrade_to_current(conn, migrate_rows)
}

/// Schema 6 -> 7: what the explorer shows. The games' headers and whole
/// moves, each move's rating sums and each position's top games are added
/// empty: the games already there show no ratings and are not among the top
/// games (rebuild the book to have them).
fn migrate_v6(conn: &Connection) -> Result<()> {
    upgrade_to_current(conn, |_| Ok(()))
}

/// Schema 7 -> 8: `grow`'s engine moves (`moves.grown`) and the positions
/// it expanded (`analysis.grown`); an older book has none.
fn migrate_v7(conn: &Connection) -> Result<()> {
    let tx = conn.unchecked_transaction()?;
    add_grow_columns(&tx)?;
    mark_current(&tx)?;
    tx.commit()?;
    Ok(())
}

/// The columns schema 8 added, where missing.
pub(super) fn add_grow_columns(conn: &Connection) -> Result<()> {
    add_columns(conn, "moves", &[("grown", "INTEGER NOT NULL DEFAULT 0")])?;
    add_columns(conn, "analysis", &[("grown", "INTEGER")])
}

/// The columns schema 7 added, where missing.
fn add_explorer_columns(conn: &Connection) -> Result<()> {
    add_columns(
        conn,
        "games",
        &[
            ("white_elo", "INTEGER"),
            ("black_elo", "INTEGER"),
            ("date", "TEXT"),
            ("event", "TEXT"),
            ("site", "TEXT"),
            ("round", "TEXT"),
            ("fen", "TEXT"),
            ("rest", "BLOB"),
        ],
    )?;
    add_columns(
        conn,
        "moves",
        &[
            ("rating_sum", "INTEGER NOT NULL DEFAULT 0"),
            ("rated", "INTEGER NOT NULL DEFAULT 0"),
        ],
    )?;
    add_columns(conn, "positions", &[("top", "BLOB")])
}

/// Runs `upgrade` in one transaction, with this schema's tables created,
/// and marks the book as of this schema.
fn upgrade_to_current(
    conn: &Connection,
    upgrade: impl FnOnce(&Connection) -> Result<()>,
) -> Result<()> {
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(SCHEMA)?;
    upgrade(&tx)?;
    add_explorer_columns(&tx)?;
    add_grow_columns(&tx)?;
    // Its games have no explorer data: `check` cannot expect it.
    tx.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('explorer', 'partial')",
        [],
    )?;
    mark_current(&tx)?;
    tx.commit()?;
    Ok(())
}

/// Records that the book is of this schema.
fn mark_current(conn: &Connection) -> Result<()> {
    conn.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
        [SCHEMA_VERSION.to_string()],
    )?;
    Ok(())
}

/// The id of the input `name` in `sources` (added if new): what
/// `games.source` holds.
pub(super) fn source_id(conn: &Connection, name: &str) -> Result<i64> {
    conn.prepare_cached("INSERT OR IGNORE INTO sources(name) VALUES (?1)")?
        .execute([name])?;
    Ok(conn
        .prepare_cached("SELECT id FROM sources WHERE name = ?1")?
        .query_row([name], |r| r.get(0))?)
}

/// Adds the `games` columns that are missing (later schemas' columns).
fn add_game_columns(conn: &Connection, columns: &[(&str, &str)]) -> Result<()> {
    add_columns(conn, "games", columns)
}

/// Adds the columns of `table` that are missing.
fn add_columns(conn: &Connection, table: &str, columns: &[(&str, &str)]) -> Result<()> {
    for (column, kind) in columns {
        let has: bool = conn.query_row(
            "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
            [table, column],
            |r| r.get(0),
        )?;
        if !has {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind};"))?;
        }
    }
    Ok(())
}
