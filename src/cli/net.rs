//! The learned evaluation's commands: `net-data` (training positions from
//! self-play PGN) and `train` (the CPU trainer). `selfplay --data` runs
//! `net-data` on its own file at the end.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};
use clap::Args;
use learnbook::tune::net::data;

/// Which positions of the games become training data.
#[derive(Args, Clone, Debug)]
pub struct DataFilterArgs {
    /// Skip positions before this ply of the game (from the initial position: a FEN's
    /// move number counts).
    #[arg(long, default_value_t = 16)]
    min_ply: u32,
    /// Skip positions whose score is this many centipawns from 0 or more (mate scores are
    /// always skipped).
    #[arg(long, default_value_t = 3000)]
    max_score: i32,
    /// Keep positions with the side to move in check (skipped by default).
    #[arg(long)]
    keep_check: bool,
    /// Keep positions whose move played is a capture or a promotion (skipped by default).
    #[arg(long)]
    keep_noisy: bool,
    /// Games whose Round is a multiple of this go to the validation file (0: no validation
    /// file).
    #[arg(long, default_value_t = 20)]
    valid_every: u64,
}

impl DataFilterArgs {
    pub fn filter(&self) -> data::Filter {
        data::Filter {
            min_ply: self.min_ply,
            max_score: self.max_score.max(1),
            keep_check: self.keep_check,
            keep_noisy: self.keep_noisy,
            valid_every: self.valid_every,
        }
    }
}

/// Arguments of `learnbook net-data`.
#[derive(Args)]
pub struct NetDataArgs {
    /// Self-play games with the search's scores as cutechess comments (`selfplay`'s
    /// files, shards in order); .gz and .zst too.
    #[arg(required = true, value_name = "GAMES.pgn")]
    pgn: Vec<PathBuf>,
    /// The training positions (bullet's ChessBoard layout, 32 bytes each); the validation
    /// games' positions go beside it (`x.bin` -> `x.valid.bin`). Both replaced whole.
    #[arg(long, value_name = "FILE.bin")]
    out: PathBuf,
    #[command(flatten)]
    filter: DataFilterArgs,
}

/// Writes the data files and says what was kept.
pub fn write_data(pgns: &[PathBuf], out: &std::path::Path, filter: &DataFilterArgs) -> Result<()> {
    let filter = filter.filter();
    let outputs = data::Outputs {
        train: out.to_path_buf(),
        valid: (filter.valid_every > 0).then(|| data::valid_path(out)),
    };
    let counts = data::extract(pgns, &filter, &outputs)?;
    println!(
        "{}{}: {}",
        outputs.train.display(),
        outputs
            .valid
            .as_ref()
            .map_or(String::new(), |v| format!(" and {}", v.display())),
        counts.report()
    );
    Ok(())
}

pub fn net_data(args: NetDataArgs) -> Result<ExitCode> {
    write_data(&args.pgn, &args.out, &args.filter)?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook train`.
#[derive(Args)]
pub struct TrainArgs {
    /// Training positions (`net-data`'s files, bullet's ChessBoard layout), read whole.
    #[arg(long = "data", required = true, value_name = "FILE.bin")]
    data: Vec<PathBuf>,
    /// Validation positions (held-out games: `net-data`'s `x.valid.bin`).
    #[arg(long, value_name = "FILE.bin")]
    valid: Option<PathBuf>,
    /// The quantised net, written after every epoch (the engine's `--net`, UCI `EvalFile`).
    #[arg(long, value_name = "NET.nnue")]
    out: PathBuf,
    /// The quantised net of the epoch with the lowest validation loss (needs --valid).
    #[arg(long, value_name = "NET.nnue", requires = "valid")]
    best: Option<PathBuf>,
    /// The run's state after every epoch and on Ctrl-C (gzipped weights and Adam's moments).
    #[arg(long, value_name = "CK.gz")]
    checkpoint: Option<PathBuf>,
    /// Continue the run in --checkpoint (its settings; the same data): ends with the net
    /// an uninterrupted run ends with.
    #[arg(long, requires = "checkpoint", conflicts_with = "init")]
    resume: bool,
    /// Start a new run (these settings, this data) from another run's checkpoint: its
    /// weights and Adam's moments (the next part of a night, on new data).
    #[arg(long, value_name = "CK.gz")]
    init: Option<PathBuf>,
    /// Neurons of the hidden layer (per perspective).
    #[arg(long, default_value_t = 32)]
    hidden: usize,
    #[arg(long, default_value_t = 20)]
    epochs: usize,
    /// Positions per AdamW step.
    #[arg(long, default_value_t = 16384)]
    batch: usize,
    /// The learning rate at the start; it falls on a cosine to --final-lr.
    #[arg(long, default_value_t = 0.001)]
    lr: f32,
    #[arg(long, default_value_t = 0.00001)]
    final_lr: f32,
    /// AdamW's decoupled weight decay.
    #[arg(long, default_value_t = 0.01)]
    weight_decay: f32,
    /// The weight of the game's result in the target; the rest is sigmoid(score / --scale).
    #[arg(long, default_value_t = 0.5)]
    lambda: f32,
    /// Centipawns per unit of the net's output (the score's sigmoid scale).
    #[arg(long, default_value_t = 400.0)]
    scale: f32,
    /// Initial weights and the shuffles: the same data and seed give the same net on any
    /// number of threads.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The losses per epoch as a PNG.
    #[arg(long, value_name = "FILE.png")]
    plot: Option<PathBuf>,
    /// Add every training position mirrored left to right (files a <-> h; castling
    /// rights are not an input): twice the positions.
    #[arg(long)]
    mirror: bool,
    #[command(flatten)]
    threads: super::args::PoolThreads,
}

/// Trains the net; 130 when interrupted (the checkpoint then holds where).
pub fn train(args: TrainArgs) -> Result<ExitCode> {
    use learnbook::tune::net::train as t;
    if args.hidden == 0 || args.hidden > learnbook::engine::net::MAX_HIDDEN {
        anyhow::bail!(
            "--hidden must be 1 to {}",
            learnbook::engine::net::MAX_HIDDEN
        );
    }
    if !(0.0..=1.0).contains(&args.lambda) {
        anyhow::bail!("--lambda must be between 0 and 1");
    }
    if !(args.scale > 0.0 && args.lr > 0.0 && args.final_lr >= 0.0 && args.batch > 0) {
        anyhow::bail!("--scale, --lr and --batch must be above 0, --final-lr at least 0");
    }
    args.threads.init()?;
    let mut data = t::read_data(&args.data)?;
    if args.mirror {
        let mirrored: Vec<data::Record> = data.iter().map(data::Record::mirrored).collect();
        data.extend(mirrored);
    }
    let valid = match &args.valid {
        Some(p) => data::read_file(p)?,
        None => Vec::new(),
    };
    let config = t::Config {
        hidden: args.hidden,
        epochs: args.epochs,
        batch: args.batch,
        lr: args.lr,
        final_lr: args.final_lr,
        weight_decay: args.weight_decay,
        lambda: args.lambda,
        scale: args.scale,
        seed: args.seed,
    };
    let mut state = match (&args.checkpoint, args.resume) {
        (Some(c), true) => {
            let s = t::State::load(c)?;
            if s.config != config {
                eprintln!(
                    "note: resuming with the checkpoint's settings: {:?}",
                    s.config
                );
            }
            s
        }
        _ => match &args.init {
            Some(p) => t::State::warm_start(t::State::load(p)?, config, &data)
                .with_context(|| format!("--init {}", p.display()))?,
            None => t::State::new(config, &data),
        },
    };
    println!(
        "{} training positions, {} validation; (768 -> {}) x 2 -> 1, epoch {} of {}, {} threads",
        data.len(),
        valid.len(),
        state.config.hidden,
        state.epoch,
        state.config.epochs,
        rayon::current_num_threads()
    );
    if !valid.is_empty() {
        println!(
            "the hand-crafted evaluation's loss on the validation positions: {:.6}",
            t::hand_loss(
                &valid,
                &state.config,
                &learnbook::engine::params::Weights::default()
            )
        );
    }
    learnbook::interrupt::stop_on_sigint();
    let bar = progress_bar();
    let log = bar.is_hidden();
    let mut last_epoch = state.epoch;
    let outputs = t::Outputs {
        net: Some(&args.out),
        best: args.best.as_deref(),
        checkpoint: args.checkpoint.as_deref(),
        plot: args.plot.as_deref(),
    };
    let outcome = t::train(
        &mut state,
        &data,
        &valid,
        &outputs,
        &learnbook::interrupt::interrupted,
        &mut |p| {
            let rate = p.positions as f64 / p.seconds.max(1e-9);
            let valid = p.valid_loss.map_or("-".into(), |v| format!("{v:.5}"));
            bar.set_length((p.epochs * p.batches) as u64);
            bar.set_position((p.epoch * p.batches + p.batch) as u64);
            bar.set_message(format!(
                "epoch {}/{}, {:.0} positions/s, loss {:.5}, validation {valid}",
                p.epoch + 1,
                p.epochs,
                rate,
                p.train_loss
            ));
            if log && p.batch == p.batches && p.epoch + 1 > last_epoch {
                last_epoch = p.epoch + 1;
                eprintln!(
                    "epoch {}/{}: {:.0} positions/s, training loss {:.5}",
                    p.epoch + 1,
                    p.epochs,
                    rate,
                    p.train_loss
                );
            }
        },
    )?;
    bar.finish_and_clear();
    for h in &state.history {
        println!(
            "epoch {:>3}: training loss {:.6}, validation loss {:.6}",
            h.epoch, h.train, h.valid
        );
    }
    let interrupted = matches!(outcome, t::Outcome::Interrupted);
    if interrupted {
        println!(
            "interrupted at epoch {}, batch {}; --resume continues",
            state.epoch, state.batch
        );
    } else {
        println!(
            "{}: the net after {} epochs",
            args.out.display(),
            state.epoch
        );
    }
    Ok(super::args::exit_code(interrupted))
}

fn progress_bar() -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressStyle};
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(1);
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {msg}, ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}
