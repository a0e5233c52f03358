//! `bench train`: the net trainer's positions/s on one thread and on two,
//! the same data and seed, checked to give the same net.

use std::{path::PathBuf, time::Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use learnbook::tune::net::train as t;

/// The trainer on one thread and on two: positions/s each, the ratio, and the two nets compared.
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
    #[arg(long, default_value_t = 4096)]
    batch: usize,
}

impl TrainArgs {
    pub(super) fn run(self) -> Result<()> {
        if self.hidden == 0 || self.hidden > learnbook::engine::net::MAX_HIDDEN {
            bail!(
                "--hidden must be 1 to {}",
                learnbook::engine::net::MAX_HIDDEN
            );
        }
        if self.epochs == 0 || self.batch == 0 {
            bail!("--epochs and --batch must be above 0");
        }
        let data = t::read_data(&self.data)?;
        let config = t::Config {
            hidden: self.hidden,
            epochs: self.epochs,
            batch: self.batch,
            ..t::Config::default()
        };
        let outputs = t::Outputs {
            net: None,
            best: None,
            checkpoint: None,
            plot: None,
        };
        let mut rates = Vec::new();
        let mut states = Vec::new();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .context("cannot start the thread pool")?;
            let mut state = t::State::new(config.clone(), &data);
            let start = Instant::now();
            pool.install(|| t::train(&mut state, &data, &[], &outputs, &|| false, &mut |_| {}))?;
            let secs = start.elapsed().as_secs_f64();
            let rate = (data.len() * self.epochs) as f64 / secs;
            println!(
                "{threads} thread(s): {} positions x {} epochs in {secs:.2} s, {rate:.0} positions/s",
                data.len(),
                self.epochs
            );
            rates.push(rate);
            states.push(state);
        }
        println!("ratio 2/1 threads: {:.2}", rates[1] / rates[0]);
        // The weights, not the states: without validation positions the
        // states' validation losses are NaN, never equal.
        if states[0].params != states[1].params {
            bail!("the nets of 1 and 2 threads differ");
        }
        println!("the same net on 1 and 2 threads");
        Ok(())
    }
}
