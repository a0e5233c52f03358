//! `learnbook merge-games`: the files of a selfplay run's shards
//! (`selfplay --shard I/N`) put together into the file of the whole run.
//!
//! Each shard's file must hold its whole slice of the game numbers, in
//! order; the shards must be the N of one run (the same settings tag and
//! number of games), each once. The games are written in game order with
//! their shard tag removed, so the result is the file one unsharded run
//! writes, byte for byte. It is written beside the output and renamed into
//! place: a failed merge writes nothing. The files are read a game at a
//! time (twice: checked, then copied), so their size does not matter.

use std::{
    fs::File,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
};

use anyhow::{anyhow, bail, Context, Result};

use super::selfplay::{SETTINGS_TAG, SHARD_TAG};
use crate::shard::{check_complete, Shard};

/// One shard's file, checked.
struct ShardFile {
    path: PathBuf,
    shard: Shard,
    /// The run's number of games.
    games: usize,
    settings: String,
}

/// What [`merge_games`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    pub games: usize,
    pub shards: u32,
}

/// Merges the shard files `inputs` into `out`: a first pass checks every
/// file, a second copies the games; one game is in memory at a time.
pub fn merge_games(out: &Path, inputs: &[PathBuf]) -> Result<Merged> {
    if inputs.is_empty() {
        bail!("no shard files to merge");
    }
    let mut files: Vec<ShardFile> = inputs
        .iter()
        .map(|p| check_shard_file(p).with_context(|| format!("reading {}", p.display())))
        .collect::<Result<_>>()?;
    let first = &files[0];
    for f in &files[1..] {
        if f.settings != first.settings || f.games != first.games {
            bail!(
                "{} and {} are shards of different runs (other settings, openings, seed or \
                 number of games)",
                first.path.display(),
                f.path.display()
            );
        }
    }
    let names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    check_complete(files.iter().zip(&names).map(|(f, n)| (f.shard, n.as_str())))?;
    files.sort_by_key(|f| f.shard.index);
    crate::atomic_file::write_with(out, |w| {
        for f in &files {
            let line = format!("[{SHARD_TAG} \"{}\"]\n", shard_tag(f.shard, f.games));
            for_each_game(&f.path, |_, game| {
                w.write_all(game.replacen(&line, "", 1).as_bytes())
                    .map_err(anyhow::Error::from)
            })
            .map_err(|e| std::io::Error::other(format!("{}: {e:#}", f.path.display())))?;
        }
        Ok(())
    })?;
    Ok(Merged {
        games: files[0].games,
        shards: files.len() as u32,
    })
}

/// The value of the shard tag of shard `shard` of a run of `games` games.
fn shard_tag(shard: Shard, games: usize) -> String {
    format!("{shard} games={games}")
}

/// Calls `f(index, text)` for each game of the file, in order (the text
/// from its `[Event` line to the next game's).
fn for_each_game(path: &Path, mut f: impl FnMut(usize, &str) -> Result<()>) -> Result<()> {
    let mut reader = BufReader::new(File::open(path)?);
    let (mut line, mut game, mut index) = (String::new(), String::new(), 0);
    loop {
        line.clear();
        let n = reader.read_line(&mut line)?;
        if n == 0 || line.starts_with("[Event ") {
            if !game.is_empty() {
                f(index, &game)?;
                index += 1;
                game.clear();
            }
            if n == 0 {
                return Ok(());
            }
        } else if game.is_empty() && !line.trim().is_empty() {
            bail!("text before the first game: not a file that selfplay wrote");
        }
        if !(game.is_empty() && line.trim().is_empty()) {
            game.push_str(&line);
        }
    }
}

/// Checks a shard's file: every game's tags as the first's, the rounds its
/// whole slice in order, every game complete.
fn check_shard_file(path: &Path) -> Result<ShardFile> {
    let mut found: Option<ShardFile> = None;
    let mut count = 0;
    for_each_game(path, |i, game| {
        let (shard_value, settings) = (tag(game, SHARD_TAG), tag(game, SETTINGS_TAG));
        let file = match &found {
            Some(f) => f,
            None => {
                let value = shard_value
                    .as_deref()
                    .ok_or_else(|| anyhow!("no {SHARD_TAG} tag: not a selfplay shard's file"))?;
                let (shard, games) = parse_shard_tag(value)?;
                let settings = settings.clone().ok_or_else(|| {
                    anyhow!("no {SETTINGS_TAG} tag: not a file that selfplay wrote")
                })?;
                found.insert(ShardFile {
                    path: path.to_path_buf(),
                    shard,
                    games,
                    settings,
                })
            }
        };
        if !game.ends_with("\n\n") {
            bail!(
                "game {} is incomplete: run the shard again to finish it",
                i + 1
            );
        }
        let from = file.shard.slice(file.games).0;
        let round = tag(game, "Round").and_then(|r| r.parse::<usize>().ok());
        if round != Some(from + i + 1) {
            bail!(
                "game {} has round {round:?} where shard {} has round {}",
                i + 1,
                file.shard,
                from + i + 1
            );
        }
        if shard_value.as_deref() != Some(shard_tag(file.shard, file.games).as_str())
            || settings.as_deref() != Some(file.settings.as_str())
        {
            bail!(
                "game {} has other {SHARD_TAG} or {SETTINGS_TAG} tags than the first",
                i + 1
            );
        }
        count += 1;
        Ok(())
    })?;
    let Some(file) = found else {
        bail!("no games (a shard that has not run yet?)");
    };
    let (from, end) = file.shard.slice(file.games);
    if count != end - from {
        bail!(
            "holds {count} of shard {}'s {} games (rounds {} to {end}): run the shard to its end",
            file.shard,
            end - from,
            from + 1,
        );
    }
    Ok(file)
}

/// `I/N games=G` back into the shard and G.
fn parse_shard_tag(value: &str) -> Result<(Shard, usize)> {
    let bad = || anyhow!("the {SHARD_TAG} tag {value:?} is not \"I/N games=G\"");
    let (shard, games) = value.split_once(" games=").ok_or_else(bad)?;
    let shard: Shard = shard.parse().map_err(|_| bad())?;
    let games = games.parse().map_err(|_| bad())?;
    Ok((shard, games))
}

/// The value of tag `name` in a game's text, as selfplay writes tags.
fn tag(game: &str, name: &str) -> Option<String> {
    let prefix = format!("[{name} \"");
    game.lines()
        .take_while(|l| l.starts_with('['))
        .find_map(|l| {
            l.strip_prefix(&prefix)?
                .strip_suffix("\"]")
                .map(str::to_string)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_tags_read_back() {
        assert_eq!(
            parse_shard_tag("1/4 games=10").unwrap(),
            (Shard { index: 1, count: 4 }, 10)
        );
        for bad in ["1/4", "1/4 games=x", "4/4 games=3", ""] {
            assert!(parse_shard_tag(bad).is_err(), "{bad}");
        }
    }
}
