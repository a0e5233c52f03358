//! The rows a new book's bulk writer makes, one typed record per table:
//! a record's fields are its table's columns in `CREATE TABLE`'s order,
//! listed once (here, by [`record!`]); the `INSERT` statement's column list
//! and its bound values both come from that list
//! ([`insert_head`], [`Record::bind`]).

use rusqlite::Statement;

/// A value as SQLite is given it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Value<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

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

/// A column as a record gives it.
#[derive(Clone, Copy, Debug)]
// The declared type and NULL-ness are checked against the schema by the
// tests; the inserts name the columns only.
#[cfg_attr(not(test), allow(dead_code))]
pub(super) struct Column {
    pub name: &'static str,
    pub ty: &'static str,
    pub nullable: bool,
}

/// A row of one table of a new book.
pub(super) trait Record {
    const TABLE: &'static str;
    /// The columns in the table's order.
    const COLUMNS: &'static [Column];
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

/// Declares a record: `Name: "table" { field[ as "column"]: Type, ... }`,
/// fields in the table's column order.
macro_rules! record {
    (
        $(#[$meta:meta])*
        $name:ident $(<$lt:lifetime>)?: $table:literal {
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
            const COLUMNS: &'static [Column] = &[$(Column {
                name: record!(@name $field $($col)?),
                ty: <$ty as Field>::TYPE,
                nullable: <$ty as Field>::NULLABLE,
            },)+];

            fn bind(&self, st: &mut Statement<'_>, at: usize) -> rusqlite::Result<()> {
                bind_values(st, at, &[$(Field::value(&self.$field),)+])
            }
        }
    };
    (@name $field:ident) => { stringify!($field) };
    (@name $field:ident $col:literal) => { $col };
}

record! {
    /// A row of `positions`, the position's key its rowid.
    PositionRecord<'a>: "positions" {
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
    MoveRecord<'a>: "moves" {
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
    ParentRecord: "parents" {
        child: i64,
        parent: i64,
    }
}

record! {
    /// A row of `games`, its id the rowid; `source` the source's id as
    /// text (the column's affinity).
    GameRecord<'a>: "games" {
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

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn book() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().expect("dir");
        let conn = Connection::open(dir.path().join("b.sqlite")).expect("open");
        conn.execute_batch(super::super::schema::SCHEMA)
            .expect("schema");
        (dir, conn)
    }

    /// `R`'s columns as the book's schema has them: name, declared type,
    /// and a field that may be NULL only for a column that may hold it.
    fn assert_is_the_table<R: Record>(conn: &Connection) {
        let have: Vec<(String, String, bool)> = conn
            .prepare("SELECT name, type, \"notnull\" FROM pragma_table_xinfo(?1)")
            .and_then(|mut st| {
                st.query_map([R::TABLE], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .expect("table_xinfo");
        assert_eq!(have.len(), R::COLUMNS.len(), "{}", R::TABLE);
        for (c, (name, ty, not_null)) in R::COLUMNS.iter().zip(&have) {
            assert_eq!((c.name, c.ty), (name.as_str(), ty.as_str()), "{}", R::TABLE);
            assert!(
                !(*not_null && c.nullable),
                "{}.{name} is NOT NULL",
                R::TABLE
            );
        }
    }

    /// Every record is its table in the book's schema, column for column.
    #[test]
    fn the_records_are_the_schemas_tables() {
        let (_dir, conn) = book();
        assert_is_the_table::<PositionRecord>(&conn);
        assert_is_the_table::<MoveRecord>(&conn);
        assert_is_the_table::<ParentRecord>(&conn);
        assert_is_the_table::<GameRecord>(&conn);
    }

    /// A record bound to its insert reads back field for field, each value
    /// with its type (a whole REAL stays REAL, NULL stays NULL).
    #[test]
    fn a_record_bound_reads_back_as_its_fields() {
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
        type Read = (
            i64,
            Option<i64>,
            i64,
            i64,
            i64,
            Option<f64>,
            f64,
            Option<i64>,
            Option<i64>,
            i64,
            Option<Vec<u8>>,
            String,
        );
        let back: Vec<Read> = conn
            .prepare("SELECT key, depth, white, draws, black, exact, value, best, parent, expected, top, typeof(value) FROM positions ORDER BY key")
            .and_then(|mut st| {
                st.query_map([], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                        r.get(10)?,
                        r.get(11)?,
                    ))
                })?
                .collect()
            })
            .expect("rows");
        assert_eq!(back.len(), 2);
        for (r, b) in rows.iter().zip(&back) {
            let read = (
                b.0,
                b.1,
                b.2,
                b.3,
                b.4,
                b.5,
                b.6,
                b.7,
                b.8,
                b.9,
                b.10.as_deref(),
            );
            let want = (
                r.key, r.depth, r.white, r.draws, r.black, r.exact, r.value, r.best, r.parent,
                r.expected, r.top,
            );
            assert_eq!(read, want);
            assert_eq!(b.11, "real");
        }
        assert_eq!(
            insert_head::<MoveRecord>(),
            "INSERT INTO moves(parent, move, uci, child, white, draws, black, weight, rating_sum, rated, grown)"
        );
    }
}
