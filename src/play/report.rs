//! `learnbook report`: a player's results over a PGN of games in order:
//! the score per window of games (the learning curve) and the lost games
//! that repeat an earlier lost game move for move.

use std::{collections::HashSet, fmt::Write as _, path::Path};

use anyhow::{anyhow, bail, Result};

use crate::book::pgn::input::{open_input, GameStream};

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
    let stream = GameStream::new(open_input(pgn)?);
    let mut r = Report::default();
    let mut lost: HashSet<(Option<String>, Vec<String>)> = HashSet::new();
    for g in stream {
        let g = g.map_err(|e| anyhow!("{}: {e}", pgn.display()))?;
        if let Some(why) = &g.unreadable {
            bail!("{}: game {}: {why}", pgn.display(), g.number);
        }
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

impl Report {
    /// The learning curve as a PNG: the score per window (points and line)
    /// and the moving average over the last `window` games.
    pub fn plot(&self, player: &str, window: usize, path: &Path) -> Result<()> {
        use plotters::prelude::*;
        let err =
            |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot draw {}: {e}", path.display());
        let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{player}: score per {window} games"),
                (crate::plot::font()?, 24),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(55)
            .build_cartesian_2d(0f64..self.games.max(1) as f64, 0f64..100f64)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("games")
            .y_desc("score %")
            .draw()
            .map_err(|e| err(&e))?;
        let moving: Vec<(f64, f64)> = (window..=self.scores.len())
            .map(|end| {
                let s: f64 = self.scores[end - window..end].iter().sum();
                (end as f64, 100.0 * s / window as f64)
            })
            .collect();
        chart
            .draw_series(LineSeries::new(moving, RGBColor(160, 160, 220)))
            .map_err(|e| err(&e))?
            .label(format!("last {window} games"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RGBColor(160, 160, 220)));
        let points: Vec<(f64, f64)> = self
            .windows
            .iter()
            .map(|(a, b, s)| ((*a + *b) as f64 / 2.0, 100.0 * s))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), BLUE.stroke_width(3)))
            .map_err(|e| err(&e))?
            .label(format!("games in windows of {window}"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(3)));
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 5, BLUE.filled())))
            .map_err(|e| err(&e))?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
        Ok(())
    }
}
