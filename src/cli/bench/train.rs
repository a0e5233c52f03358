//! `bench train`: the net trainer's positions/s on one thread and on two,
//! the same data and seed, checked to give the same net; beside them two
//! one-thread runs at once, the ratio the machine's cores allow.

use std::{path::PathBuf, time::Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;

use learnbook::tune::net::{data::Record, train as t};

use super::median;

/// The trainer on one thread and on two: positions/s each, the ratio, and the two nets compared.
/// Beside them, the floor: two one-thread runs at once (what the machine's two cores give).
#[derive(Args, Debug)]
pub struct TrainArgs {
    /// Training positions (`net-data`'s or `selfplay --data`'s files).
    #[arg(long = "data", value_name = "FILE.bin", required = true, num_args = 1)]
    data: Vec<PathBuf>,
    /// Neurons of the hidden layer (per perspective).
    #[arg(long, default_value_t = 64)]
    hidden: usize,
    /// Epochs per measurement.
    #[arg(long, default_value_t = 3)]
    epochs: usize,
    /// Positions per AdamW step.
    #[arg(long, default_value_t = 16_384)]
    batch: usize,
    /// Rounds of the three measurements, alternating; the medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

impl TrainArgs {
    pub(super) fn run(self) -> Result<()> {
        if self.hidden == 0 || self.hidden > learnbook::engine::net::MAX_HIDDEN {
            bail!(
                "--hidden must be 1 to {}",
                learnbook::engine::net::MAX_HIDDEN
            );
        }
        if self.epochs == 0 || self.batch == 0 || self.rounds == 0 {
            bail!("--epochs, --batch and --rounds must be above 0");
        }
        let data = t::read_data(&self.data)?;
        let config = t::Config {
            hidden: self.hidden,
            epochs: self.epochs,
            batch: self.batch,
            ..t::Config::default()
        };
        let positions = (data.len() * self.epochs) as f64;
        let (mut one, mut two, mut pair) = (Vec::new(), Vec::new(), Vec::new());
        for round in 1..=self.rounds {
            let start = Instant::now();
            let single = train_on(1, &config, &data)?;
            one.push(positions / start.elapsed().as_secs_f64());
            let start = Instant::now();
            let double = train_on(2, &config, &data)?;
            two.push(positions / start.elapsed().as_secs_f64());
            // The weights, not the states: without validation positions the
            // states' validation losses are NaN, never equal.
            if single.params != double.params {
                bail!("the nets of 1 and 2 threads differ");
            }
            // Two one-thread runs at once, nothing shared but the cores.
            let start = Instant::now();
            std::thread::scope(|scope| -> Result<()> {
                let runs: Vec<_> = (0..2)
                    .map(|_| scope.spawn(|| train_on(1, &config, &data)))
                    .collect();
                for run in runs {
                    run.join()
                        .map_err(|_| anyhow!("a training thread panicked"))??;
                }
                Ok(())
            })?;
            pair.push(2.0 * positions / start.elapsed().as_secs_f64());
            println!(
                "round {round}: 1 thread {:.0}, 2 threads {:.0}, two 1-thread runs at once {:.0} positions/s",
                one[round - 1],
                two[round - 1],
                pair[round - 1]
            );
        }
        let (one, two, pair) = (median(&mut one), median(&mut two), median(&mut pair));
        println!(
            "{} positions x {} epochs, medians: 1 thread {one:.0}, 2 threads {two:.0} positions/s",
            data.len(),
            self.epochs
        );
        println!(
            "ratio 2/1 threads: {:.2}; the floor (two 1-thread runs at once / one): {:.2}",
            two / one,
            pair / one
        );
        println!("the same net on 1 and 2 threads");
        Ok(())
    }
}

/// A whole run of `config` on `data` on a pool of `threads`, nothing written.
fn train_on(threads: usize, config: &t::Config, data: &[Record]) -> Result<t::State> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("cannot start the thread pool")?;
    let outputs = t::Outputs {
        net: None,
        best: None,
        checkpoint: None,
        plot: None,
    };
    let mut state = t::State::new(config.clone(), data);
    pool.install(|| t::train(&mut state, data, &[], &outputs, &|| false, &mut |_| {}))?;
    Ok(state)
}
