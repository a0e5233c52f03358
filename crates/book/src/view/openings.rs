//! Opening names: lichess's chess-openings tables (CC0, in
//! `assets/openings/`), embedded in the binary and keyed by the Polyglot
//! key of each named line's final position, so a name is one lookup of
//! the key the book already uses.
//!
//! The table is built once, on first use (3,807 lines replayed: a few
//! milliseconds). A position has a name only when it is exactly the end of
//! a named line, as the lichess explorer names moves.

use std::{collections::HashMap, sync::OnceLock};

use shakmaty::{san::San, Chess, Position};

use crate::keys::{polyglot_key, Key};

/// The tables as shipped: `eco<TAB>name<TAB>pgn`, a header line first.
const TABLES: [(&str, &str); 5] = [
    ("a.tsv", include_str!("../../assets/openings/a.tsv")),
    ("b.tsv", include_str!("../../assets/openings/b.tsv")),
    ("c.tsv", include_str!("../../assets/openings/c.tsv")),
    ("d.tsv", include_str!("../../assets/openings/d.tsv")),
    ("e.tsv", include_str!("../../assets/openings/e.tsv")),
];

/// A named opening: its ECO code and name, as lichess writes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opening {
    pub eco: String,
    pub name: String,
}

/// The names by position, and the lines that could not be read (none in
/// the shipped tables; a test holds them to that).
struct Table {
    by_key: HashMap<Key, Opening>,
    unreadable: Vec<String>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut by_key = HashMap::new();
        let mut unreadable = Vec::new();
        for (file, text) in TABLES {
            for (i, line) in text.lines().enumerate().skip(1) {
                if line.trim().is_empty() {
                    continue;
                }
                match parse_line(line) {
                    // The tables name each position once; were one named
                    // twice, the first (file order) would stand.
                    Ok((key, opening)) => {
                        by_key.entry(key).or_insert(opening);
                    }
                    Err(e) => unreadable.push(format!("{file}:{}: {e}", i + 1)),
                }
            }
        }
        Table { by_key, unreadable }
    })
}

/// One table line: the key of the position its moves reach, and its name.
fn parse_line(line: &str) -> Result<(Key, Opening), String> {
    let mut cols = line.split('\t');
    let (Some(eco), Some(name), Some(pgn)) = (cols.next(), cols.next(), cols.next()) else {
        return Err("expected three tab-separated columns".to_string());
    };
    let pos = replay(pgn)?;
    Ok((
        polyglot_key(&pos),
        Opening {
            eco: eco.to_string(),
            name: name.to_string(),
        },
    ))
}

/// The position after a line of SAN moves with move numbers (`1. e4 c5`).
fn replay(pgn: &str) -> Result<Chess, String> {
    let mut pos = Chess::default();
    for token in pgn.split_whitespace() {
        if token.ends_with('.') && token.bytes().any(|b| b.is_ascii_digit()) {
            continue;
        }
        let san: San = token.parse().map_err(|e| format!("move {token:?}: {e}"))?;
        let mv = san
            .to_move(&pos)
            .map_err(|e| format!("move {token:?}: {e}"))?;
        pos.play_unchecked(mv);
    }
    Ok(pos)
}

/// The name of the position with this key, if it ends a named line.
pub fn lookup(key: Key) -> Option<&'static Opening> {
    table().by_key.get(&key)
}

/// The name of the last named position of a line of keys (lichess's
/// opening of a position reached by `play`: the deepest name on the way).
pub fn last_named(line: &[Key]) -> Option<&'static Opening> {
    line.iter().rev().find_map(|k| lookup(*k))
}

/// Named positions in the tables.
pub fn count() -> usize {
    table().by_key.len()
}

/// Table lines that could not be replayed (file:line: why).
pub fn unreadable() -> &'static [String] {
    &table().unreadable
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::uci::UciMove;

    fn after(ucis: &[&str]) -> (Key, Vec<Key>) {
        let mut pos = Chess::default();
        let mut line = vec![polyglot_key(&pos)];
        for u in ucis {
            let m: UciMove = u.parse().expect("uci");
            let mv = m.to_move(&pos).expect("legal");
            pos.play_unchecked(mv);
            line.push(polyglot_key(&pos));
        }
        (polyglot_key(&pos), line)
    }

    #[test]
    fn every_line_of_the_tables_is_read() {
        assert!(unreadable().is_empty(), "{:?}", unreadable());
        // 3,807 lines, each naming a position of its own.
        assert_eq!(count(), 3807);
    }

    #[test]
    fn the_sicilian_is_b20() {
        let (key, _) = after(&["e2e4", "c7c5"]);
        let o = lookup(key).expect("named");
        assert_eq!(
            (o.eco.as_str(), o.name.as_str()),
            ("B20", "Sicilian Defense")
        );
    }

    #[test]
    fn a_position_between_named_ones_has_no_name_of_its_own() {
        // 1. e4 c5 2. Nf3 is named; after 2...h5?! it is not, and the line's
        // last named position is 2. Nf3's.
        let (key, line) = after(&["e2e4", "c7c5", "g1f3", "h7h5"]);
        assert!(lookup(key).is_none());
        let (named, _) = after(&["e2e4", "c7c5", "g1f3"]);
        assert_eq!(last_named(&line), lookup(named));
        assert!(lookup(named).is_some());
    }

    #[test]
    fn the_start_position_has_no_name() {
        assert!(lookup(polyglot_key(&Chess::default())).is_none());
    }
}
