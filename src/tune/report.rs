//! `learnbook tune-report`: the trajectory of every tuned parameter, as CSV
//! (one row per iteration) and as a PNG plot.

use std::{fmt::Write as _, path::Path};

use anyhow::Result;

use super::checkpoint::State;
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

/// Each parameter's change from its start in units of its `c_end`, by
/// iteration; the ten that moved most are named in the legend.
pub fn plot(state: &State, path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot draw {}: {e}", path.display());
    let params = &state.settings.params;
    let series: Vec<Vec<(f64, f64)>> = params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            std::iter::once((0.0, 0.0))
                .chain(
                    state
                        .history
                        .iter()
                        .map(|it| (it.number as f64, (it.theta[i] - p.start) / p.c_end)),
                )
                .collect()
        })
        .collect();
    let span = series
        .iter()
        .flatten()
        .map(|&(_, y)| y.abs())
        .fold(1.0f64, f64::max)
        * 1.05;
    let mut order: Vec<usize> = (0..params.len()).collect();
    let last = |i: usize| series[i].last().map_or(0.0, |&(_, y)| y.abs());
    order.sort_by(|&a, &b| last(b).total_cmp(&last(a)));
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "SPSA: {} parameters, {} iterations, {} games",
                params.len(),
                state.iteration(),
                state.games()
            ),
            (crate::plot::font()?, 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(0f64..state.iteration().max(1) as f64, -span..span)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc("(theta - start) / c_end")
        .draw()
        .map_err(|e| err(&e))?;
    // The others first, in grey, so the named ten are drawn on top.
    for &i in order.iter().skip(10) {
        chart
            .draw_series(LineSeries::new(
                series[i].iter().copied(),
                RGBColor(200, 200, 200),
            ))
            .map_err(|e| err(&e))?;
    }
    for (n, &i) in order.iter().take(10).enumerate() {
        let color = Palette99::pick(n).stroke_width(2);
        chart
            .draw_series(LineSeries::new(series[i].iter().copied(), color))
            .map_err(|e| err(&e))?
            .label(params[i].name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
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
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot draw {}: {e}", path.display());
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
    // theta against games, from the start.
    let series = |st: &State, i: usize| -> Vec<(f64, f64)> {
        let mut games = 0u64;
        std::iter::once((0.0, st.settings.params[i].start))
            .chain(st.history.iter().map(|it| {
                games += u64::from(it.wins + it.draws + it.losses);
                (games as f64, it.theta[i])
            }))
            .collect()
    };
    let cols = (pairs.len() as f64).sqrt().ceil().max(1.0) as usize;
    let cols = if pairs.len() > 9 { cols.max(6) } else { cols };
    let rows = pairs.len().div_ceil(cols);
    let font = crate::plot::font()?;
    let root =
        BitMapBackend::new(path, (260 * cols as u32, 60 + 200 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled(
            &format!(
                "blue: {} ({}, {} games)   red: {} ({}, {} games)",
                labels[0],
                kind(a),
                a.games(),
                labels[1],
                kind(b),
                b.games()
            ),
            (font, 16),
        )
        .map_err(|e| err(&e))?;
    let max_games = a.games().max(b.games()).max(1) as f64;
    let blue = RGBColor(30, 90, 200);
    let red = RGBColor(210, 40, 40);
    for (area, &(i, j)) in root.split_evenly((rows, cols)).iter().zip(&pairs) {
        let (sa, sb) = (series(a, i), series(b, j));
        let p = &a.settings.params[i];
        let (lo, hi) = sa
            .iter()
            .chain(&sb)
            .fold((f64::MAX, f64::MIN), |(lo, hi), &(_, y)| {
                (lo.min(y), hi.max(y))
            });
        let pad = ((hi - lo) * 0.08).max(1.0);
        let mut chart = ChartBuilder::on(area)
            .caption(&p.name, (font, 14))
            .margin(6)
            .x_label_area_size(20)
            .y_label_area_size(40)
            .build_cartesian_2d(0.0..max_games, (lo - pad)..(hi + pad))
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_labels(3)
            .y_labels(4)
            .x_label_formatter(&|x| format!("{:.0}k", x / 1000.0))
            .label_style((font, 10))
            .draw()
            .map_err(|e| err(&e))?;
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, p.start), (max_games, p.start)],
                4,
                4,
                BLACK.mix(0.5).stroke_width(1),
            ))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(LineSeries::new(sb, red.stroke_width(2)))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(LineSeries::new(sa, blue.stroke_width(2)))
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
