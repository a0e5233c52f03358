//! `learnbook report`: a player's results over a PGN of games in order:
//! the score per window of games (the learning curve) and the lost games
//! that repeat an earlier lost game move for move.

use std::{collections::HashSet, fmt::Write as _, path::Path};

use anyhow::{bail, Result};

use crate::book::ingest::{open_input, GameStream};

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub games: usize,
    /// (first game, last game, score 0..1) per window.
    pub windows: Vec<(usize, usize, f64)>,
    pub losses: usize,
    /// Lost games whose moves repeat an earlier lost game.
    pub repeated_losses: usize,
    pub scores: Vec<f64>,
}

pub fn report(pgn: &Path, player: &str, window: usize) -> Result<Report> {
    if window == 0 {
        bail!("--window must be at least 1");
    }
    let mut stream = GameStream::new(open_input(pgn)?);
    let mut r = Report::default();
    let mut lost: HashSet<(Option<String>, Vec<String>)> = HashSet::new();
    loop {
        let batch = stream.next_batch(1024);
        if batch.is_empty() {
            break;
        }
        for g in batch {
            let white = g.white == player;
            if !white && g.black != player {
                continue;
            }
            let score = match (g.result_tag.as_deref(), white) {
                (Some("1-0"), true) | (Some("0-1"), false) => 1.0,
                (Some("1/2-1/2"), _) => 0.5,
                (Some("1-0"), false) | (Some("0-1"), true) => 0.0,
                _ => continue,
            };
            r.games += 1;
            r.scores.push(score);
            if score == 0.0 {
                r.losses += 1;
                let moves: Vec<String> = g.sans.iter().map(|s| s.to_string()).collect();
                if !lost.insert((g.fen.clone(), moves)) {
                    r.repeated_losses += 1;
                }
            }
        }
    }
    if let Some(e) = stream.error {
        bail!("{}: {e}", pgn.display());
    }
    if r.games == 0 {
        bail!("no finished games of {player:?} in {}", pgn.display());
    }
    for (i, chunk) in r.scores.chunks(window).enumerate() {
        let score = chunk.iter().sum::<f64>() / chunk.len() as f64;
        r.windows
            .push((i * window + 1, i * window + chunk.len(), score));
    }
    Ok(r)
}

impl Report {
    pub fn text(&self, player: &str) -> String {
        let mut s = String::new();
        let total = self.scores.iter().sum::<f64>() / self.games.max(1) as f64;
        let _ = writeln!(
            s,
            "{player}: {} games, score {:.1}%",
            self.games,
            100.0 * total
        );
        for (a, b, score) in &self.windows {
            let bar = "#".repeat((score * 40.0).round() as usize);
            let _ = writeln!(s, "games {a:>5}-{b:<5} {:>5.1}%  {bar}", 100.0 * score);
        }
        let _ = writeln!(
            s,
            "lost games: {}, of which repeat an earlier lost game move for move: {}",
            self.losses, self.repeated_losses
        );
        s
    }
}
