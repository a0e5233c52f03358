//! How values are encoded in the book's columns: a position
//! [`Key`](crate::keys::Key) as SQLite binds and reads it, a game
//! hash as a signed integer, a game's moves as a blob. A leaf of `db/`: it
//! imports no other file here, so that the tables (`schema`), the graph,
//! the tails and the top games can all read the same encoding.

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::keys::Key;

/// Keys are bound and read as [`Key::to_sql`] stores them.
impl ToSql for Key {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(Key::to_sql(*self)))
    }
}

impl FromSql for Key {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        i64::column_result(value).map(Key::from_sql)
    }
}

/// A game hash (`games.hash`) as SQLite stores it: the same bits, signed.
pub(super) fn hash_to_sql(hash: u64) -> i64 {
    hash as i64
}

/// Back from [`hash_to_sql`].
pub(super) fn hash_from_sql(v: i64) -> u64 {
    v as u64
}

/// A game's stored moves as `games.moves` keeps them: each Polyglot move
/// code in two bytes, little-endian.
pub(crate) fn moves_to_blob(moves: impl Iterator<Item = u16>) -> Vec<u8> {
    moves.flat_map(u16::to_le_bytes).collect()
}

/// Back from [`moves_to_blob`]; `None` if the length is odd.
pub(crate) fn moves_from_blob(blob: &[u8]) -> Option<Vec<u16>> {
    if !blob.len().is_multiple_of(2) {
        return None;
    }
    Some(
        blob.chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect(),
    )
}
