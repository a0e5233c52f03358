//! `learnbook bench ...`: measured, side by side with the named peer.

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Full build against `polyglot make-book` on the same decompressed PGN.
    Build {
        /// The PGN (any compression); it is decompressed once for both tools.
        #[arg(default_value = "../shared/data/games/master-games.pgn.gz")]
        pgn: std::path::PathBuf,
        #[arg(long, default_value_t = 40)]
        max_ply: u32,
        #[arg(long, default_value_t = 3)]
        min_game: u32,
        /// Work directory (default: a temporary one).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
}

pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Build { .. } => anyhow::bail!("not yet"),
    }
}
