//! The rows a new book's bulk writer makes, one typed record per table:
//! a record's fields are its table's columns in `CREATE TABLE`'s order,
//! listed once (here, by [`record!`]), and the same record is bound to
//! SQLite's `INSERT` (the plain path) or encoded as a cell of the table's
//! pages ([`super::pages`], the fast path). [`mismatch`] checks a record's
//! list against the table SQLite has before any page is written.

use anyhow::Result;
use rusqlite::{Connection, Statement};

use super::pages::{encode_record, Value};

/// A Rust type a column holds: the column's declared type and whether a
/// NULL can come from it.
pub(super) trait Field {
    const TYPE: &'static str;
    const NULLABLE: bool = false;
    fn value(&self) -> Value<'_>;
}

impl Field for i64 {
    const TYPE: &'static str = "INTEGER";
    fn value(&self) -> Value<'_> {
        Value::Int(*self)
    }
}

impl Field for f64 {
    const TYPE: &'static str = "REAL";
    fn value(&self) -> Value<'_> {
        Value::Real(*self)
    }
}

impl Field for &str {
    const TYPE: &'static str = "TEXT";
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl Field for &[u8] {
    const TYPE: &'static str = "BLOB";
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}

impl<T: Field> Field for Option<T> {
    const TYPE: &'static str = T::TYPE;
    const NULLABLE: bool = true;
    fn value(&self) -> Value<'_> {
        self.as_ref().map_or(Value::Null, Field::value)
    }
}

/// The kind of B-tree a record is a row of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tree {
    /// A rowid table: the first column is its `INTEGER PRIMARY KEY`.
    Rowid,
    /// A `WITHOUT ROWID` table whose primary key is its first columns.
    WithoutRowid,
    /// An index: its columns, then the table's rowid (named `rowid`).
    Index,
}

/// A column as a record gives it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Column {
    pub name: &'static str,
    pub ty: &'static str,
    pub nullable: bool,
}

/// A row of one table (or index) of a new book.
pub(super) trait Record {
    /// The table or index.
    const TABLE: &'static str;
    const TREE: Tree;
    /// The columns in the table's order.
    const COLUMNS: &'static [Column];
    /// The indexes on the table the writer fills itself (the page writer
    /// fills no other: a table with one it does not know takes the plain
    /// path).
    const INDEXES: &'static [&'static str] = &[];
    /// The key the rows are ordered by: the rowid, or the first two columns.
    fn key(&self) -> (i64, i64);
    /// The record as SQLite stores it (a rowid table's key as NULL).
    fn encode(&self, out: &mut Vec<u8>);
    /// Binds the columns from parameter `at`.
    fn bind(&self, st: &mut Statement<'_>, at: usize) -> rusqlite::Result<()>;
}

/// `INSERT INTO table(columns)`, the head of the plain path's statements.
pub(super) fn insert_head<R: Record>() -> String {
    let names: Vec<&str> = R::COLUMNS.iter().map(|c| c.name).collect();
    format!("INSERT INTO {}({})", R::TABLE, names.join(", "))
}

/// Binds `values` from parameter `i`.
pub(super) fn bind_values(
    st: &mut Statement<'_>,
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

/// Declares a record: `Name: Tree "table", key(a[, b]) { field[ as
/// "column"]: Type, ... }`, fields in the table's column order.
macro_rules! record {
    (
        $(#[$meta:meta])*
        $name:ident $(<$lt:lifetime>)?: $tree:ident $table:literal, key($k1:ident $(, $k2:ident)?)
        $(, indexes [$($index:literal),*])?
        {
            $($(#[$fmeta:meta])* $field:ident $(as $col:literal)?: $ty:ty,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub(super) struct $name $(<$lt>)? {
            $($(#[$fmeta])* pub $field: $ty,)+
        }

        impl $(<$lt>)? Record for $name $(<$lt>)? {
            const TABLE: &'static str = $table;
            const TREE: Tree = Tree::$tree;
            const COLUMNS: &'static [Column] = &[$(Column {
                name: record!(@name $field $($col)?),
                ty: <$ty as Field>::TYPE,
                nullable: <$ty as Field>::NULLABLE,
            },)+];
            $(const INDEXES: &'static [&'static str] = &[$($index),*];)?

            fn key(&self) -> (i64, i64) {
                let r = self;
                (r.$k1, record!(@second r $($k2)?))
            }

            fn encode(&self, out: &mut Vec<u8>) {
                let mut values = [$(Field::value(&self.$field),)+];
                if Self::TREE == Tree::Rowid {
                    // The rowid is the cell's key, NULL in the record.
                    values[0] = Value::Null;
                }
                encode_record(&values, out);
            }

            fn bind(&self, st: &mut Statement<'_>, at: usize) -> rusqlite::Result<()> {
                bind_values(st, at, &[$(Field::value(&self.$field),)+])
            }
        }
    };
    (@name $field:ident) => { stringify!($field) };
    (@name $field:ident $col:literal) => { $col };
    (@second $r:ident) => { 0 };
    (@second $r:ident $k2:ident) => { $r.$k2 };
}

record! {
    /// A row of `positions`, the position's key its rowid.
    PositionRecord<'a>: Rowid "positions", key(key) {
        key: i64,
        depth: Option<i64>,
        white: i64,
        draws: i64,
        black: i64,
        exact: Option<f64>,
        value: f64,
        best: Option<i64>,
        parent: Option<i64>,
        expected: i64,
        top: Option<&'a [u8]>,
    }
}

record! {
    /// A row of `moves` (`WITHOUT ROWID`, keyed by parent and move code).
    MoveRecord<'a>: WithoutRowid "moves", key(parent, mv) {
        parent: i64,
        mv as "move": i64,
        uci: &'a str,
        child: i64,
        white: i64,
        draws: i64,
        black: i64,
        weight: Option<i64>,
        rating_sum: i64,
        rated: i64,
        grown: i64,
    }
}

record! {
    /// A row of `parents`: a position reached from two or more.
    ParentRecord: WithoutRowid "parents", key(child, parent) {
        child: i64,
        parent: i64,
    }
}

record! {
    /// A row of `games`, its id the rowid; `source` the source's id as
    /// text (the column's affinity).
    GameRecord<'a>: Rowid "games", key(id), indexes ["sqlite_autoindex_games_1"] {
        id: i64,
        hash: i64,
        source: &'a str,
        white: &'a str,
        black: &'a str,
        result: &'a str,
        plies: i64,
        start: i64,
        copies: i64,
        moves: &'a [u8],
        expected: i64,
        tail: Option<i64>,
        white_elo: Option<i64>,
        black_elo: Option<i64>,
        date: Option<&'a str>,
        event: Option<&'a str>,
        site: Option<&'a str>,
        round: Option<&'a str>,
        fen: Option<&'a str>,
        rest: Option<&'a [u8]>,
    }
}

record! {
    /// An entry of the index of the games' hashes (`UNIQUE` on `games.hash`).
    GameHashEntry: Index "sqlite_autoindex_games_1", key(hash, id) {
        hash: i64,
        id as "rowid": i64,
    }
}

/// Why the table SQLite has for `R` is not the one `R` describes (`None`:
/// it is, and is empty): the columns, their order, declared types and
/// NOT NULL, the primary key, the kind of tree, and no index or trigger
/// the page writer would not fill.
pub(super) fn mismatch<R: Record>(conn: &Connection) -> Result<Option<String>> {
    let table = R::TABLE;
    if R::TREE == Tree::Index {
        return index_mismatch::<R>(conn);
    }
    // (name, declared type, not null, primary key position, hidden)
    let mut st =
        conn.prepare("SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?1)")?;
    let have: Vec<(String, String, bool, i64, i64)> = st
        .query_map([table], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    if have.len() != R::COLUMNS.len() {
        return Ok(Some(format!(
            "{table} has {} columns, the writer knows {}",
            have.len(),
            R::COLUMNS.len()
        )));
    }
    for (i, (c, (name, ty, not_null, _, hidden))) in R::COLUMNS.iter().zip(&have).enumerate() {
        if c.name != name
            || !c.ty.eq_ignore_ascii_case(ty)
            || (*not_null && c.nullable)
            || *hidden != 0
        {
            return Ok(Some(format!(
                "{table}'s column {i} is {name} {ty}{}, the writer's {} {}{}",
                if *not_null { " NOT NULL" } else { "" },
                c.name,
                c.ty,
                if c.nullable { " (may be NULL)" } else { "" }
            )));
        }
    }
    let without_rowid: Option<bool> = conn
        .query_row(
            "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
            [table],
            |r| r.get(0),
        )
        .ok();
    let pk: Vec<i64> = have.iter().map(|c| c.3).collect();
    let keyed = pk.iter().filter(|&&p| p > 0).count();
    // The primary key's columns first, in order: a WITHOUT ROWID table's
    // record then holds the columns in the table's order.
    let pk_first = pk
        .iter()
        .enumerate()
        .all(|(i, &p)| if i < keyed { p == i as i64 + 1 } else { p == 0 });
    let tree_ok = match R::TREE {
        Tree::Rowid => {
            without_rowid == Some(false) && keyed == 1 && pk[0] == 1 && have[0].1 == "INTEGER"
        }
        _ => without_rowid == Some(true) && keyed >= 1 && pk_first,
    };
    if !tree_ok {
        return Ok(Some(format!(
            "{table}'s primary key is not the one the writer knows"
        )));
    }
    let mut st = conn.prepare(
        "SELECT type, name FROM sqlite_schema WHERE tbl_name = ?1 AND type IN ('index', 'trigger') ORDER BY name",
    )?;
    let others: Vec<String> = st
        .query_map([table], |r| {
            Ok(format!(
                "{} {}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let known: Vec<String> = R::INDEXES.iter().map(|i| format!("index {i}")).collect();
    if others != known {
        return Ok(Some(format!(
            "{table} has {others:?}, the writer fills {known:?}"
        )));
    }
    let empty: bool = conn.query_row(
        &format!("SELECT NOT EXISTS (SELECT 1 FROM \"{table}\")"),
        [],
        |r| r.get(0),
    )?;
    Ok((!empty).then(|| format!("{table} is not empty")))
}

/// [`mismatch`] for an index: its columns, then the rowid.
fn index_mismatch<R: Record>(conn: &Connection) -> Result<Option<String>> {
    let index = R::TABLE;
    let mut st = conn.prepare("SELECT cid, name, coll, desc FROM pragma_index_xinfo(?1)")?;
    let have: Vec<(i64, Option<String>, Option<String>, bool)> = st
        .query_map([index], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let names: Vec<String> = have
        .iter()
        .map(|(cid, name, _, _)| match (cid, name) {
            (-1, _) => "rowid".to_string(),
            (_, Some(n)) => n.clone(),
            _ => "?".to_string(),
        })
        .collect();
    let want: Vec<&str> = R::COLUMNS.iter().map(|c| c.name).collect();
    if names != want {
        return Ok(Some(format!(
            "{index} indexes {names:?}, the writer {want:?}"
        )));
    }
    // Integer keys compare alike under any collation; a descending key
    // would reverse the order the entries are written in.
    if have.iter().any(|h| h.3) {
        return Ok(Some(format!("{index} has a descending column")));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().expect("dir");
        let conn = Connection::open(dir.path().join("b.sqlite")).expect("open");
        conn.execute_batch(super::super::schema::SCHEMA)
            .expect("schema");
        (dir, conn)
    }

    /// Every record matches the book's own schema: the column list here
    /// and `CREATE TABLE` agree.
    #[test]
    fn the_records_are_the_schemas_tables() {
        let (_dir, conn) = book();
        assert_eq!(mismatch::<PositionRecord>(&conn).expect("check"), None);
        assert_eq!(mismatch::<MoveRecord>(&conn).expect("check"), None);
        assert_eq!(mismatch::<ParentRecord>(&conn).expect("check"), None);
        assert_eq!(mismatch::<GameRecord>(&conn).expect("check"), None);
        assert_eq!(mismatch::<GameHashEntry>(&conn).expect("check"), None);
    }

    /// A table that is not the writer's (another column order, another
    /// type, an index or trigger it would not fill, a row already there)
    /// is found, with what differs.
    #[test]
    fn a_table_other_than_the_records_is_found() {
        for (change, said) in [
            ("ALTER TABLE parents RENAME TO p0; CREATE TABLE parents(parent INTEGER NOT NULL, child INTEGER NOT NULL, PRIMARY KEY(child, parent)) WITHOUT ROWID", "column 0"),
            ("ALTER TABLE parents RENAME TO p0; CREATE TABLE parents(child INTEGER NOT NULL, parent INTEGER NOT NULL, PRIMARY KEY(parent, child)) WITHOUT ROWID", "primary key"),
            ("ALTER TABLE parents RENAME TO p0; CREATE TABLE parents(child INTEGER NOT NULL, parent INTEGER NOT NULL, PRIMARY KEY(child, parent))", "primary key"),
            ("ALTER TABLE parents RENAME TO p0; CREATE TABLE parents(child TEXT NOT NULL, parent INTEGER NOT NULL, PRIMARY KEY(child, parent)) WITHOUT ROWID", "column 0"),
            ("ALTER TABLE parents ADD COLUMN extra INTEGER", "3 columns"),
            ("CREATE INDEX by_parent ON parents(parent)", "by_parent"),
            ("CREATE TRIGGER t AFTER INSERT ON parents BEGIN SELECT 1; END", "trigger"),
            ("INSERT INTO parents VALUES (1, 2)", "not empty"),
        ] {
            let (_dir, conn) = book();
            conn.execute_batch(change).expect(change);
            let why = mismatch::<ParentRecord>(&conn).expect("check");
            assert!(why.as_deref().is_some_and(|w| w.contains(said)), "{change}: {why:?}");
        }
        let (_dir, conn) = book();
        conn.execute_batch("ALTER TABLE positions ADD COLUMN extra INTEGER")
            .expect("alter");
        assert!(mismatch::<PositionRecord>(&conn).expect("check").is_some());
    }

    /// Bound by SQLite or encoded as a record, a row reads back the same.
    #[test]
    fn a_record_bound_and_a_record_encoded_are_one_row() {
        let (_dir, conn) = book();
        let top = [1u8, 2, 3];
        let rows = [
            PositionRecord {
                key: -5,
                depth: Some(3),
                white: 1,
                draws: 0,
                black: 2,
                exact: None,
                value: 0.25,
                best: Some(796),
                parent: None,
                expected: -1500,
                top: Some(&top),
            },
            PositionRecord {
                key: 7,
                depth: None,
                white: 0,
                draws: 0,
                black: 0,
                exact: Some(1.0),
                value: 2.0,
                best: None,
                parent: Some(-5),
                expected: 0,
                top: None,
            },
        ];
        let mut st = conn
            .prepare(&format!(
                "{} VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                insert_head::<PositionRecord>()
            ))
            .expect("prepare");
        for r in &rows {
            r.bind(&mut st, 1).expect("bind");
            st.raw_execute().expect("insert");
        }
        drop(st);
        // The same rows as pages of another book's table.
        let dir = tempfile::tempdir().expect("dir");
        let paged = dir.path().join("p.sqlite");
        let other = Connection::open(&paged).expect("open");
        other
            .execute_batch(super::super::schema::SCHEMA)
            .expect("schema");
        let root: u32 = other
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'positions'",
                [],
                |r| r.get(0),
            )
            .expect("root");
        let mut w = super::super::pages::TableWriter::new(&paged, root, 1.0).expect("writer");
        let mut record = Vec::new();
        for r in &rows {
            record.clear();
            r.encode(&mut record);
            let pushed = w.push(r.key().0, &record).expect("push");
            assert_eq!(pushed, super::super::pages::Push::Added);
        }
        w.finish().expect("finish");
        let all = |c: &Connection| -> Vec<String> {
            c.prepare(
                "SELECT quote(key) || quote(depth) || quote(white) || quote(draws) || quote(black) || quote(exact) || quote(value) || quote(best) || quote(parent) || quote(expected) || quote(top) || typeof(value) || typeof(exact) FROM positions ORDER BY key",
            )
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .expect("rows")
        };
        let bound = all(&conn);
        assert_eq!(bound.len(), 2);
        assert_eq!(bound, all(&other));
        for r in &rows {
            assert_eq!(r.key(), (r.key, 0));
        }
        let m = MoveRecord {
            parent: 3,
            mv: 9,
            uci: "e2e4",
            child: 4,
            white: 1,
            draws: 1,
            black: 0,
            weight: None,
            rating_sum: 2700,
            rated: 1,
            grown: 0,
        };
        assert_eq!(m.key(), (3, 9));
        assert_eq!(
            insert_head::<MoveRecord>(),
            "INSERT INTO moves(parent, move, uci, child, white, draws, black, weight, rating_sum, rated, grown)"
        );
    }
}
