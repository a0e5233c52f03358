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
