//! `learn --follow`: a PGN file that grows game by game (a match runner's
//! `-pgnout`, a GUI's autosave) learned as it grows. Each complete game
//! appended is learned at once, with the result its PGN records; a game
//! still being written waits for its end. Restarted, the follower reads the
//! file from its start again and the games table skips the games already
//! in the book, so each game counts once.

use std::{
    fs::File,
    io::{Read, Seek, SeekFrom},
    path::Path,
    time::Duration,
};

use anyhow::{Context, Result};

use super::Learned;
use crate::db::Book;
use crate::pgn::{game::Game, input::GameStream, validate::Filter};

/// The end of the last complete game in `text`: just past the line that
/// ends a game's movetext with its termination (`1-0`, `0-1`, `1/2-1/2`,
/// `*`). What follows it is a game still being written.
pub fn complete_games_end(text: &[u8]) -> usize {
    let mut end = 0;
    let mut at = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        at += line.len();
        if !line.ends_with(b"\n") {
            break;
        }
        let trimmed = String::from_utf8_lossy(line);
        let trimmed = trimmed.trim();
        if trimmed.starts_with('[') || trimmed.starts_with('%') {
            continue;
        }
        let last = trimmed.rsplit(char::is_whitespace).next().unwrap_or("");
        if matches!(last, "1-0" | "0-1" | "1/2-1/2" | "*") {
            end = at;
        }
    }
    end
}

/// What [`follow`] did.
#[derive(Debug, Default)]
pub struct Followed {
    /// Games learned (new to the book).
    pub learned: u64,
    /// Complete games already in the book.
    pub known: u64,
    /// Games that could not be learned (an illegal move, no moves...).
    pub skipped: u64,
}

/// Learns the complete games of `path` as they are appended, checking for
/// more every `poll`, until `stop()` says so (then the games complete by
/// then are learned). The file may not exist yet; a file that shrinks
/// (replaced) is read again from its start.
pub fn follow(
    book: &mut Book,
    path: &Path,
    poll: Duration,
    stop: impl Fn() -> bool,
    mut on_game: impl FnMut(&Game, Option<&Learned>),
) -> Result<Followed> {
    let filter = Filter {
        max_ply: book.settings.max_ply,
        min_elo: None,
        allow_duplicates: false,
        no_tails: false,
    };
    let source = path.display().to_string();
    let mut done = Followed::default();
    let mut offset = 0u64;
    loop {
        let stopping = stop();
        let text = read_from(path, &mut offset)?;
        let end = complete_games_end(&text);
        if end > 0 {
            let mut stream = GameStream::from_bytes(text[..end].to_vec());
            loop {
                let batch = stream.next_batch(64);
                if batch.is_empty() {
                    break;
                }
                for raw in batch {
                    let game = match raw.validate(&filter) {
                        Ok(g) => g,
                        Err(_) => {
                            done.skipped += 1;
                            continue;
                        }
                    };
                    match book.add_game(&game, &source)? {
                        Some(re) => {
                            done.learned += 1;
                            let l = Learned {
                                source: source.clone(),
                                white: game.white.clone(),
                                black: game.black.clone(),
                                result: game.result.as_str(),
                                recomputed: re.recomputed,
                                choices: re.choices,
                            };
                            on_game(&game, Some(&l));
                        }
                        None => {
                            done.known += 1;
                            on_game(&game, None);
                        }
                    }
                }
            }
            offset += end as u64;
        }
        if stopping {
            return Ok(done);
        }
        std::thread::sleep(poll);
    }
}

/// The bytes of `path` from `offset` on (none if it does not exist yet);
/// `offset` goes back to 0 if the file is now shorter (a new file).
fn read_from(path: &Path, offset: &mut u64) -> Result<Vec<u8>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let len = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if len < *offset {
        *offset = 0;
    }
    file.seek(SeekFrom::Start(*offset))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut text = Vec::new();
    file.read_to_end(&mut text)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_game_counts_as_complete_only_once_its_termination_is_written() {
        let one = "[Event \"m\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 1-0\n\n";
        let partial = "[Event \"m\"]\n[Result \"*\"]\n\n1. d4 d5";
        let text = format!("{one}{partial}");
        let end = complete_games_end(text.as_bytes());
        assert_eq!(&text[..end], &one[..one.len() - 1]);
        // A result tag alone ends nothing; a line cut before its newline neither.
        assert_eq!(complete_games_end(b"[Result \"1-0\"]\n"), 0);
        assert_eq!(complete_games_end(b"1. e4 e5 1-0"), 0);
        assert_eq!(complete_games_end(b"1. e4 e5 1/2-1/2\n"), 17);
    }
}
