//! `learnbook merge-games`: the files of a selfplay run's shards
//! (`selfplay --shard I/N`) put together into the file of the whole run.
//!
//! Each shard's file must hold its whole slice of the game numbers, in
//! order; the shards must be the N of one run (the same settings tag and
//! number of games), each once. The games are written in game order with
//! their shard tag removed, so the result is the file one unsharded run
//! writes, byte for byte. It is written beside the output and renamed into
//! place: a failed merge writes nothing.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::selfplay::{SETTINGS_TAG, SHARD_TAG};
use crate::shard::{check_complete, Shard};

/// One shard's file, read.
struct ShardFile {
    path: PathBuf,
    shard: Shard,
    /// The run's number of games.
    games: usize,
    settings: String,
    /// Each game's text without its shard tag.
    texts: Vec<String>,
}

/// What [`merge_games`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    pub games: usize,
    pub shards: u32,
}

/// Merges the shard files `inputs` into `out`.
pub fn merge_games(out: &Path, inputs: &[PathBuf]) -> Result<Merged> {
    if inputs.is_empty() {
        bail!("no shard files to merge");
    }
    let mut files: Vec<ShardFile> = inputs
        .iter()
        .map(|p| read_shard_file(p).with_context(|| format!("reading {}", p.display())))
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
    let total = files[0].games;
    let mut text = String::new();
    for f in &files {
        text.extend(f.texts.iter().map(String::as_str));
    }
    crate::atomic_file::write(out, text.as_bytes())?;
    Ok(Merged {
        games: total,
        shards: files.len() as u32,
    })
}

/// Reads a shard's file: every game's tags checked against the first's,
/// the rounds its whole slice in order.
fn read_shard_file(path: &Path) -> Result<ShardFile> {
    let text = std::fs::read_to_string(path)?;
    let mut games: Vec<&str> = Vec::new();
    let mut start = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("[Event ") {
            if let Some(s) = start {
                games.push(&text[s..at]);
            }
            start = Some(at);
        } else if start.is_none() && !line.trim().is_empty() {
            bail!("text before the first game: not a file that selfplay wrote");
        }
        at += line.len();
    }
    if let Some(s) = start {
        games.push(&text[s..]);
    }
    let Some(first) = games.first() else {
        bail!("no games (a shard that has not run yet?)");
    };
    let shard_value = tag(first, SHARD_TAG)
        .ok_or_else(|| anyhow!("no {SHARD_TAG} tag: not a selfplay shard's file"))?;
    let (shard, games_total) = parse_shard_tag(&shard_value)?;
    let settings = tag(first, SETTINGS_TAG)
        .ok_or_else(|| anyhow!("no {SETTINGS_TAG} tag: not a file that selfplay wrote"))?;
    let (from, end) = shard.slice(games_total);
    let mut texts = Vec::with_capacity(games.len());
    for (i, game) in games.iter().enumerate() {
        if !game.ends_with("\n\n") {
            bail!(
                "game {} is incomplete: run the shard again to finish it",
                i + 1
            );
        }
        let round = tag(game, "Round").and_then(|r| r.parse::<usize>().ok());
        if round != Some(from + i + 1) {
            bail!(
                "game {} has round {:?} where shard {shard} has round {}",
                i + 1,
                round,
                from + i + 1
            );
        }
        if tag(game, SHARD_TAG).as_deref() != Some(&shard_value)
            || tag(game, SETTINGS_TAG).as_deref() != Some(&settings)
        {
            bail!(
                "game {} has other {SHARD_TAG} or {SETTINGS_TAG} tags than the first",
                i + 1
            );
        }
        let line = format!("[{SHARD_TAG} \"{shard_value}\"]\n");
        texts.push(game.replacen(&line, "", 1));
    }
    if texts.len() != end - from {
        bail!(
            "holds {} of shard {shard}'s {} games (rounds {} to {}): run the shard to its end",
            texts.len(),
            end - from,
            from + 1,
            end
        );
    }
    Ok(ShardFile {
        path: path.to_path_buf(),
        shard,
        games: games_total,
        settings,
        texts,
    })
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
