//! `learnbook tune-report`: the trajectory of every tuned parameter, as CSV
//! (one row per iteration) and as a PNG plot.

use std::{fmt::Write as _, path::Path};

use anyhow::Result;

use super::{checkpoint::State, run};
use crate::atomic_file;

/// `iteration,games,wins,draws,losses,<parameter>...`; row 0 holds the start values.
pub fn csv(state: &State) -> String {
    let params = &state.settings.params;
    let mut s = String::from("iteration,games,wins,draws,losses");
    for p in params {
        let _ = write!(s, ",{}", p.name);
    }
    s.push('\n');
    s.push_str("0,0,0,0,0");
    for p in params {
        let _ = write!(s, ",{}", p.start);
    }
    s.push('\n');
    let mut games = 0u64;
    for it in &state.history {
        games += u64::from(it.wins) + u64::from(it.draws) + u64::from(it.losses);
        let _ = write!(
            s,
            "{},{games},{},{},{}",
            it.number, it.wins, it.draws, it.losses
        );
        for t in &it.theta {
            let _ = write!(s, ",{t:.4}");
        }
        s.push('\n');
    }
    s
}

pub fn write_csv(state: &State, path: &Path) -> Result<()> {
    atomic_file::write(path, csv(state).as_bytes())
}

/// Every parameter's trajectory, a panel each (theta against games
/// played, the start dashed), after a first panel with the progress
/// matches' Elo and 95% interval when the run played them.
pub fn plot(state: &State, path: &Path) -> Result<()> {
    let blue = plotters::style::RGBColor(30, 90, 200);
    let mut panels = Vec::new();
    if !state.matches.is_empty() {
        panels.push(match_panel(state));
    }
    for (i, p) in state.settings.params.iter().enumerate() {
        panels.push(Panel {
            caption: p.name.clone(),
            reference: p.start,
            lines: vec![(trajectory(state, i), blue)],
        });
    }
    let title = format!(
        "SPSA: {} parameters, {} iterations, {} games{}",
        state.settings.params.len(),
        state.iteration(),
        state.games(),
        if state.matches.is_empty() {
            String::new()
        } else {
            "; first panel: the values then against the start".to_string()
        }
    );
    draw_panels(path, &title, state.games(), &panels)
}

/// Theta of parameter `i` against games played, from the start.
fn trajectory(state: &State, i: usize) -> Vec<(f64, f64)> {
    let mut games = 0u64;
    std::iter::once((0.0, state.settings.params[i].start))
        .chain(state.history.iter().map(|it| {
            games += u64::from(it.wins + it.draws + it.losses);
            (games as f64, it.theta[i])
        }))
        .collect()
}

/// The progress matches' Elo (black) and 95% interval (grey) against the
/// SPSA games played before each.
fn match_panel(state: &State) -> Panel {
    use crate::play::stats::Wdl;
    let mut games_at = vec![0u64];
    for it in &state.history {
        let last = games_at.last().copied().unwrap_or(0);
        games_at.push(last + u64::from(it.wins + it.draws + it.losses));
    }
    let (mut elo, mut low, mut high) = (Vec::new(), Vec::new(), Vec::new());
    for m in &state.matches {
        let x = games_at.get(m.iteration as usize).copied().unwrap_or(0) as f64;
        let s = Wdl {
            wins: m.wins,
            draws: m.draws,
            losses: m.losses,
        }
        .summary();
        // An interval that reaches 0% or 100% is cut at +-800 to keep the scale.
        let cut = |e: f64| e.clamp(-800.0, 800.0);
        elo.push((x, cut(s.elo)));
        low.push((x, cut(s.elo_low)));
        high.push((x, cut(s.elo_high)));
    }
    let grey = plotters::style::RGBColor(160, 160, 160);
    Panel {
        caption: "Elo against the start".to_string(),
        reference: 0.0,
        lines: vec![(low, grey), (high, grey), (elo, plotters::style::BLACK)],
    }
}

/// One small chart: lines against games, a dashed reference level.
struct Panel {
    caption: String,
    reference: f64,
    lines: Vec<(Vec<(f64, f64)>, plotters::style::RGBColor)>,
}

/// `panels` in a grid under `title`, x from 0 to `max_games`.
fn draw_panels(path: &Path, title: &str, max_games: u64, panels: &[Panel]) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot draw {}: {e}", path.display());
    let cols = (panels.len() as f64).sqrt().ceil().max(1.0) as usize;
    let cols = if panels.len() > 9 { cols.max(6) } else { cols };
    let rows = panels.len().div_ceil(cols).max(1);
    let font = crate::plot::font()?;
    let root =
        BitMapBackend::new(path, (260 * cols as u32, 60 + 200 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root.titled(title, (font, 16)).map_err(|e| err(&e))?;
    let max_games = max_games.max(1) as f64;
    for (area, panel) in root.split_evenly((rows, cols)).iter().zip(panels) {
        let (lo, hi) = panel
            .lines
            .iter()
            .flat_map(|(l, _)| l)
            .fold((panel.reference, panel.reference), |(lo, hi), &(_, y)| {
                (lo.min(y), hi.max(y))
            });
        let pad = ((hi - lo) * 0.08).max(1.0);
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.caption, (font, 14))
            .margin(6)
            .x_label_area_size(20)
            .y_label_area_size(40)
            .build_cartesian_2d(0.0..max_games, (lo - pad)..(hi + pad))
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_labels(3)
            .y_labels(4)
            .x_label_formatter(&|x| {
                if max_games < 10_000.0 {
                    format!("{x:.0}")
                } else {
                    format!("{:.0}k", x / 1000.0)
                }
            })
            .label_style((font, 10))
            .draw()
            .map_err(|e| err(&e))?;
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, panel.reference), (max_games, panel.reference)],
                4,
                4,
                BLACK.mix(0.5).stroke_width(1),
            ))
            .map_err(|e| err(&e))?;
        for (line, color) in &panel.lines {
            chart
                .draw_series(LineSeries::new(line.iter().copied(), color.stroke_width(2)))
                .map_err(|e| err(&e))?;
        }
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// A run's label in comparisons: in-process or the engine it tuned.
fn kind(state: &State) -> String {
    match &state.settings.engine {
        None => "in-process".to_string(),
        Some(e) => format!("--engine {:?}", e.spec),
    }
}

/// The parameters both runs tuned (by name, whatever the case): index in
/// `a`, index in `b`.
fn common(a: &State, b: &State) -> Vec<(usize, usize)> {
    a.settings
        .params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            b.settings
                .params
                .iter()
                .position(|q| q.name.eq_ignore_ascii_case(&p.name))
                .map(|j| (i, j))
        })
        .collect()
}

/// -1, 0 or 1: where `end` is from `start`.
fn side(start: f64, end: f64) -> i8 {
    let d = end - start;
    if d.abs() < 1e-9 {
        0
    } else if d > 0.0 {
        1
    } else {
        -1
    }
}

/// How two runs' parameters ended: for every parameter both tuned, its start
/// and end in each, and whether both ended on the same side of their start.
/// `labels` name the runs (their checkpoint files).
pub fn compare(a: &State, b: &State, labels: [&str; 2]) -> Result<String> {
    let pairs = common(a, b);
    if pairs.is_empty() {
        anyhow::bail!(
            "{} and {} tuned no parameter in common",
            labels[0],
            labels[1]
        );
    }
    let mut s = String::new();
    for (label, st) in labels.iter().zip([a, b]) {
        let _ = writeln!(
            s,
            "{label}: {}, {} of {} iterations, {} games",
            kind(st),
            st.iteration(),
            st.settings.schedule.iterations,
            st.games()
        );
    }
    let _ = writeln!(
        s,
        "{:<24} {:>8} {:>10} {:>10} {:>10}",
        "parameter", "start", "end (1st)", "end (2nd)", "same side"
    );
    let mut same = 0;
    for &(i, j) in &pairs {
        let (p, q) = (&a.settings.params[i], &b.settings.params[j]);
        let (ea, eb) = (a.theta[i], b.theta[j]);
        let agree = side(p.start, ea) == side(q.start, eb);
        same += usize::from(agree);
        let start = if p.start == q.start {
            format!("{}", p.start)
        } else {
            format!("{}/{}", p.start, q.start)
        };
        let _ = writeln!(
            s,
            "{:<24} {start:>8} {ea:>10.2} {eb:>10.2} {:>10}",
            p.name,
            if agree { "yes" } else { "NO" }
        );
    }
    let _ = writeln!(
        s,
        "{same} of {} parameters end on the same side of their start in both runs",
        pairs.len()
    );
    Ok(s)
}

/// Both runs' trajectories on one plot: a panel per parameter both tuned
/// (at most 36, those that moved most in `a`), theta against games played,
/// `a` in blue, `b` in red, the start dashed.
pub fn plot_compare(a: &State, b: &State, labels: [&str; 2], path: &Path) -> Result<()> {
    let mut pairs = common(a, b);
    if pairs.is_empty() {
        anyhow::bail!(
            "{} and {} tuned no parameter in common",
            labels[0],
            labels[1]
        );
    }
    let moved = |&(i, _): &(usize, usize)| {
        let p = &a.settings.params[i];
        (a.theta[i] - p.start).abs() / p.c_end
    };
    pairs.sort_by(|x, y| moved(y).total_cmp(&moved(x)));
    pairs.truncate(36);
    pairs.sort();
    let blue = plotters::style::RGBColor(30, 90, 200);
    let red = plotters::style::RGBColor(210, 40, 40);
    let panels: Vec<Panel> = pairs
        .iter()
        .map(|&(i, j)| Panel {
            caption: a.settings.params[i].name.clone(),
            reference: a.settings.params[i].start,
            // `b` first, so that `a` is drawn on top.
            lines: vec![(trajectory(b, j), red), (trajectory(a, i), blue)],
        })
        .collect();
    let title = format!(
        "blue: {} ({}, {} games)   red: {} ({}, {} games)",
        labels[0],
        kind(a),
        a.games(),
        labels[1],
        kind(b),
        b.games()
    );
    draw_panels(path, &title, a.games().max(b.games()), &panels)
}

/// `learnbook tune-report`: the run's summary; with `compare`, the
/// parameters both runs tuned side by side; the trajectory as CSV and as a
/// plot (both runs' with `compare`). Each line goes to `say` as its file is
/// written.
pub fn report(
    checkpoint: &Path,
    compare: Option<&Path>,
    csv: Option<&Path>,
    plot: Option<&Path>,
    say: &mut dyn std::io::Write,
) -> Result<()> {
    let state = State::load(checkpoint)?;
    write!(say, "{}", run::summary(&state))?;
    let other = compare
        .map(|p| State::load(p).map(|st| (p, st)))
        .transpose()?;
    let name = |p: &Path| {
        p.file_name()
            .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
    };
    if let Some((path, b)) = &other {
        let labels = [name(checkpoint), name(path)];
        write!(
            say,
            "{}",
            self::compare(&state, b, [&labels[0], &labels[1]])?
        )?;
    }
    if let Some(p) = csv {
        write_csv(&state, p)?;
        writeln!(say, "trajectory written to {}", p.display())?;
    }
    if let Some(p) = plot {
        match &other {
            None => self::plot(&state, p)?,
            Some((path, b)) => {
                let labels = [name(checkpoint), name(path)];
                plot_compare(&state, b, [&labels[0], &labels[1]], p)?
            }
        }
        writeln!(say, "plot written to {}", p.display())?;
    }
    Ok(())
}
