//! A long bench's results, a character per game: small enough (a few KB for
//! thousands of games) to keep in a repository, so that a bench of many
//! hours resumes on another machine, where its PGN files are gone.
//!
//! One line per match: its name, a hash of what makes it that match (the
//! engines, limits, adjudication, seed and openings), then one character per
//! game in round order: `1` the first engine won, `=` drawn, `0` lost, `.`
//! not played yet. Lines starting with `#` are comments. The file is
//! replaced whole after every game (write and rename), so a kill leaves the
//! last complete state.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use anyhow::{bail, Context, Result};

use crate::fnv::Fnv64;

const HEADER: &str = "# learnbook results journal: a line per match: its name, the hash of its \
engines, limits, adjudication, seed and openings, then a character per game in round order \
(1 the first engine won, = drawn, 0 lost, . not played yet)\n";

/// The journal file and the matches it holds.
pub struct Journal {
    path: PathBuf,
    /// Match name -> (identity hash, results).
    matches: BTreeMap<String, (String, Vec<u8>)>,
}

/// The identity hash of a match, from the fields that decide its games.
pub fn identity(fields: &[&[u8]]) -> String {
    let mut h = Fnv64::new();
    for f in fields {
        h.write_field(f);
    }
    format!("{:016x}", h.finish())
}

fn score_char(score: f64) -> u8 {
    if score > 0.75 {
        b'1'
    } else if score > 0.25 {
        b'='
    } else {
        b'0'
    }
}

impl Journal {
    /// Reads `path`, or starts an empty journal there if there is no file yet.
    pub fn open(path: &Path) -> Result<Journal> {
        let mut journal = Journal {
            path: path.to_path_buf(),
            matches: BTreeMap::new(),
        };
        let text = match std::fs::read(path) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
                anyhow::anyhow!("{}: not a results journal (not UTF-8)", path.display())
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(journal),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| {
                anyhow::anyhow!(
                    "{} line {}: {why}: not a results journal line (name, hash, results)",
                    path.display(),
                    n + 1
                )
            };
            let mut fields = line.split(' ');
            let (Some(name), Some(id), results, None) = (
                fields.next(),
                fields.next(),
                fields.next().unwrap_or(""),
                fields.next(),
            ) else {
                bail!(bad("not three fields"));
            };
            if id.len() != 16 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!(bad("the hash is not 16 hex digits"));
            }
            if let Some(c) = results.chars().find(|c| !"10=.".contains(*c)) {
                bail!(bad(&format!("{c:?} is not a result")));
            }
            if journal.matches.contains_key(name) {
                bail!(bad(&format!("a second line for {name:?}")));
            }
            journal.matches.insert(
                name.to_string(),
                (id.to_string(), results.as_bytes().to_vec()),
            );
        }
        Ok(journal)
    }

    /// The games of match `name` already played, as `(game index, first
    /// engine's score)`. A line of that name with another identity is an
    /// error: its games are not this match's.
    pub fn played(&self, name: &str, id: &str) -> Result<Vec<(usize, f64)>> {
        let Some((have, results)) = self.matches.get(name) else {
            return Ok(Vec::new());
        };
        if have != id {
            bail!(
                "{}: the match {name:?} there was played with other engines, limits, adjudication, seed or openings \
                 (hash {have}, this one {id}): give another journal, or the options that wrote it",
                self.path.display()
            );
        }
        Ok(results
            .iter()
            .enumerate()
            .filter_map(|(i, c)| match c {
                b'1' => Some((i, 1.0)),
                b'=' => Some((i, 0.5)),
                b'0' => Some((i, 0.0)),
                _ => None,
            })
            .collect())
    }

    /// Records game `index` of match `name` and replaces the file.
    pub fn record(&mut self, name: &str, id: &str, index: usize, score: f64) -> Result<()> {
        let entry = self
            .matches
            .entry(name.to_string())
            .or_insert_with(|| (id.to_string(), Vec::new()));
        if entry.0 != id {
            bail!(
                "{}: the match {name:?} has another hash",
                self.path.display()
            );
        }
        if entry.1.len() <= index {
            entry.1.resize(index + 1, b'.');
        }
        entry.1[index] = score_char(score);
        self.save()
    }

    fn save(&self) -> Result<()> {
        let mut text = String::from(HEADER);
        for (name, (id, results)) in &self.matches {
            text.push_str(name);
            text.push(' ');
            text.push_str(id);
            text.push(' ');
            text.push_str(&String::from_utf8_lossy(results));
            text.push('\n');
        }
        crate::atomic_file::write(&self.path, text.as_bytes())
            .with_context(|| format!("cannot write the journal {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_survive_a_reopen_and_another_match_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.txt");
        let id = identity(&[b"a", b"b"]);
        let mut j = Journal::open(&path).unwrap();
        j.record("uho", &id, 0, 1.0).unwrap();
        j.record("uho", &id, 3, 0.5).unwrap();
        j.record("uho", &id, 1, 0.0).unwrap();
        let j = Journal::open(&path).unwrap();
        assert_eq!(
            j.played("uho", &id).unwrap(),
            vec![(0, 1.0), (1, 0.0), (3, 0.5)]
        );
        assert!(j.played("other", &id).unwrap().is_empty());
        let other = identity(&[b"ab", b""]);
        assert_ne!(other, id);
        let err = j.played("uho", &other).unwrap_err().to_string();
        assert!(err.contains("other engines"), "{err}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with(&format!("uho {id} 10.=\n")), "{text}");
    }

    #[test]
    fn a_damaged_journal_is_an_error_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.txt");
        for (text, why) in [
            ("# c\nuho 0123456789abcdef 1=x\n", "'x' is not a result"),
            ("uho 0123 1=\n", "16 hex digits"),
            ("uho\n", "three fields"),
            (
                "uho 0123456789abcdef 1\nuho 0123456789abcdef 0\n",
                "second line",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = Journal::open(&path).err().unwrap().to_string();
            assert!(err.contains(why) && err.contains("line"), "{text:?}: {err}");
        }
    }
}
