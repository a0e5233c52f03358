//! The commands that play games: `uci` (the engine), `play` (a match), `duel`
//! (two books), `selfplay` and `merge-games` (games for data), `report` (a
//! player's learning curve).

use std::{io::BufReader, path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};
use clap::Args;
use learnbook::book::{choose::Mode, Book};
use learnbook::engine::default_net::NetChoice;
use learnbook::shard::Shard;

use super::args::{
    all_cores, exit_code, LearnAnalysisArgs, LimitArgs, MatchAdjudication, SelfAdjudication,
};

/// Arguments of `learnbook uci`.
#[derive(Args)]
pub struct UciArgs {
    /// A learnbook book to play from (UCI options OwnBook, BookFile, BookMode).
    #[arg(long, value_name = "BOOK.sqlite")]
    book: Option<PathBuf>,
    /// Evaluation weights: a TOML file (as `learnbook weights` writes) or a preset
    /// (default, search-hand, hand, kaissa, kotok).
    #[arg(long, value_name = "W.toml")]
    weights: Option<PathBuf>,
    /// Learn every game played into the book when it ends (UCI option
    /// BookLearning): the result from the last position or the engine's own
    /// scores (docs/LEARNING.md).
    #[arg(long)]
    learn: bool,
    /// The evaluation (UCI option EvalFile): `default`, the net embedded in the binary;
    /// `none`, the weights' hand-crafted evaluation; or a net file (`learnbook train`'s
    /// output). The weights' search parameters apply with each.
    #[arg(long, value_name = "NET.nnue|default|none")]
    net: Option<NetChoice>,
    /// Put the book (and its learning) in front of this UCI engine instead of the search
    /// core, as Polyglot's adapter does: a command (`/usr/games/stockfish`) or
    /// `cmd=CMD[,name=N][,option.X=V][,dir=D]`. Its options are listed beside the book's.
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["weights", "net"])]
    engine: Option<String>,
    /// With --engine: seconds the engine may take to answer `uci`, `isready` and `stop`
    /// before the adapter reports it hung and exits with status 1.
    #[arg(long, value_name = "S", default_value_t = 10.0, requires = "engine")]
    engine_timeout: f64,
}

/// The UCI loop on standard input until `quit`.
pub fn uci(args: UciArgs) -> Result<ExitCode> {
    let UciArgs {
        book,
        weights,
        learn,
        net,
        engine,
        engine_timeout,
    } = args;
    if let Some(spec) = engine {
        let timeout = std::time::Duration::try_from_secs_f64(engine_timeout)
            .ok()
            .filter(|t| !t.is_zero())
            .with_context(|| {
                format!("--engine-timeout {engine_timeout}: not a positive number of seconds")
            })?;
        let config = learnbook::uci::adapter::AdapterConfig {
            engine: learnbook::play::spec::parse_inner_engine(&spec)?,
            book,
            learn,
            timeout,
        };
        // A failed inner engine is said in an `info string`; the status tells the GUI.
        return Ok(
            match learnbook::uci::adapter::run(BufReader::new(std::io::stdin()), config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::from(1),
            },
        );
    }
    let stdin = std::io::stdin();
    learnbook::uci::run(
        stdin.lock(),
        learnbook::uci::Config {
            book,
            weights,
            learn,
            net: net.unwrap_or_default(),
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook play`.
#[derive(Args)]
pub struct PlayArgs {
    /// name=N,cmd=CMD[,proto=uci|xboard][,option.X=V][,dir=D][,tc=|nodes=|depth=]; cmd=builtin[,weights=W.toml|PRESET][,net=NET.nnue][,book=B][,bookmode=M]. Twice.
    #[arg(long = "engine", required = true, num_args = 1)]
    engines: Vec<String>,
    #[command(flatten)]
    limit: LimitArgs,
    /// Games to play in all (fewer if --sprt decides first).
    #[arg(long, default_value_t = 2)]
    games: usize,
    /// Games played at once (each worker owns its engine processes).
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Openings: EPD (one position per line) or PGN (.gz, .zst); default the start position.
    #[arg(long)]
    openings: Option<PathBuf>,
    /// Shuffle the openings (seeded with --seed).
    #[arg(long)]
    random: bool,
    /// Seed of the opening order with --random (and of the engines' book choices).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Play each opening twice, colours swapped.
    #[arg(long)]
    repeat: bool,
    /// The first engine always plays White.
    #[arg(long)]
    noswap: bool,
    /// Append the games to this PGN file. Games of this match already in it
    /// (an earlier run of the same command) are counted, not played again.
    #[arg(long)]
    pgnout: Option<PathBuf>,
    /// elo0=E0,elo1=E1,alpha=A,beta=B: stop when the GSPRT decides.
    #[arg(long)]
    sprt: Option<String>,
    /// With --sprt: note where the SPRT decides and play on to --games (a
    /// decision and a fixed number of games, as a confirmation run asks).
    #[arg(long, requires = "sprt")]
    sprt_play_on: bool,
    #[command(flatten)]
    adjudication: MatchAdjudication,
    /// Add each game of --learn-as to this book and re-evaluate at once.
    #[arg(long, requires = "learn_as")]
    learn: Option<PathBuf>,
    /// The engine (name=) whose games are learned.
    #[arg(long)]
    learn_as: Option<String>,
    /// After each learned game, analyse what it added or changed (as `analyze` would).
    #[arg(long, requires = "learn")]
    learn_analyze: bool,
    #[command(flatten)]
    analysis: LearnAnalysisArgs,
    /// The Event tag of the games.
    #[arg(long, default_value = "learnbook match")]
    event: String,
}

/// The match, a line a game, then the final standing.
pub fn play(args: PlayArgs) -> Result<ExitCode> {
    let PlayArgs {
        engines,
        limit: limit_args,
        games,
        concurrency,
        openings,
        random,
        seed,
        repeat,
        noswap,
        pgnout,
        sprt,
        sprt_play_on,
        adjudication,
        learn,
        learn_as,
        learn_analyze,
        analysis,
        event,
    } = args;
    use learnbook::play::{game, runner, spec};
    let spec::MatchEngines {
        players,
        limit,
        limits,
    } = spec::MatchEngines::parse(&engines, &limit_args.limit())?;
    // A builtin's net is read before the first game: a bad file is an error, not forfeits.
    for p in &players {
        if let runner::PlayerSpec::Builtin { net, .. } = p {
            net.load().context("net=")?;
        }
    }
    let cfg = runner::MatchConfig {
        node_jitter: 0.0,
        players,
        limit,
        limits,
        games,
        concurrency,
        openings: match openings {
            Some(p) => runner::read_openings(&p)?,
            None => vec![game::Opening {
                fen: None,
                moves: Vec::new(),
            }],
        },
        random_seed: random.then_some(seed),
        repeat,
        noswap,
        pgn_out: pgnout,
        sprt: sprt.as_deref().map(spec::parse_sprt).transpose()?,
        sprt_play_on,
        adjudication: adjudication.adjudication()?,
        learn: learn.zip(learn_as),
        after_learn: match learn_analyze.then(|| analysis.options()).transpose()? {
            Some(opts) => Some(Box::new(
                move |b: &mut Book, start: &shakmaty::Chess, moves: &[shakmaty::Move]| {
                    learnbook::analyze::run_on_game(
                        b,
                        &learnbook::analyze::boards(start, moves),
                        &opts,
                    )
                    .map(|_| ())
                },
            )),
            None => None,
        },
        event,
    };
    let first = cfg.players[0].name().to_string();
    let standing = runner::run_match(&cfg, |round, g, st| {
        println!(
            "game {round} ({} done): {} - {} {} ({}); {first}: +{} ={} -{}",
            st.played,
            g.white,
            g.black,
            g.result,
            g.termination,
            st.wdl.wins,
            st.wdl.draws,
            st.wdl.losses
        );
    })?;
    print!("{}", runner::final_report(&cfg, &standing));
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook duel`.
#[derive(Args)]
pub struct DuelArgs {
    /// The engine that plays both books: cmd=CMD[,option.X=V][,dir=D] (UCI or proto=xboard).
    #[arg(long)]
    engine: String,
    /// The two books, first and second: Polyglot .bin (as exported) or learnbook books.
    #[arg(long = "book", required = true, num_args = 1, value_name = "BOOK")]
    books: Vec<PathBuf>,
    /// How a book picks its move: weighted (at random in proportion to its weights, as GUIs
    /// and match runners play a book) or best (the heaviest move).
    #[arg(long, default_value = "weighted")]
    mode: Mode,
    /// Games whose first plies are the starts (PGN, .gz, .zst).
    #[arg(long, value_name = "PGN")]
    starts: PathBuf,
    /// How many plies of each game make its start: a range, drawn per game.
    #[arg(long, default_value = "4-8", value_name = "LO-HI")]
    start_plies: String,
    /// Starts, each played twice (colours swapped).
    #[arg(long, default_value_t = 1000)]
    pairs: usize,
    /// The engine's nodes per move once out of book.
    #[arg(long, default_value_t = 20_000)]
    nodes: u64,
    /// A fixed depth per move instead of --nodes (for engines whose `go nodes` is unreliable).
    #[arg(long)]
    depth: Option<u32>,
    /// The nodes vary by up to this percentage either way, drawn every move.
    #[arg(long, default_value_t = 10.0)]
    jitter: f64,
    /// Games played at once.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Draws the starts (and the weighted books' choices).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The games (appended; a rerun of the same duel continues from them).
    #[arg(long, value_name = "FILE.pgn")]
    pgnout: PathBuf,
    #[command(flatten)]
    adjudication: SelfAdjudication,
    /// The ceiling instead of a first book: the engine itself searches the game's first
    /// PLIES plies (from the standard start) at NODES; give --book once, the opponent's.
    #[arg(long, value_name = "PLIES:NODES")]
    deep_start: Option<String>,
    /// The ceiling of any choice within the first book's reach: where that book has a
    /// move, the engine searches at NODES and plays its own move instead.
    #[arg(long, value_name = "NODES", conflicts_with = "deep_start")]
    deep_book: Option<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// The duel, a line every 50 games on standard error, then its report.
pub fn duel(args: DuelArgs) -> Result<ExitCode> {
    use learnbook::play::{duel, spec};
    let engine = match spec::parse_player(&args.engine).context("--engine")? {
        learnbook::play::runner::PlayerSpec::External(e) => e,
        _ => anyhow::bail!(
            "--engine: give an external engine (cmd=...) without book=; the books are --book"
        ),
    };
    let deep_start = match &args.deep_start {
        None => None,
        Some(text) => Some(
            text.split_once(':')
                .and_then(|(p, n)| Some((p.parse::<usize>().ok()?, n.parse::<u64>().ok()?)))
                .filter(|&(p, n)| p > 0 && n > 0)
                .with_context(|| {
                    format!("--deep-start {text:?}: give PLIES:NODES, e.g. 16:1000000")
                })?,
        ),
    };
    let (a, b) = match (&args.books[..], deep_start) {
        ([a, b], None) => (a.clone(), b.clone()),
        ([b], Some(_)) => (PathBuf::from("deep-start"), b.clone()),
        (_, None) => anyhow::bail!("--book must be given exactly twice"),
        (_, Some(_)) => anyhow::bail!("with --deep-start, give --book once (the opponent's)"),
    };
    let (lo, hi) = args
        .start_plies
        .split_once('-')
        .and_then(|(l, h)| Some((l.trim().parse().ok()?, h.trim().parse().ok()?)))
        .filter(|&(l, h): &(u32, u32)| l >= 1 && l <= h)
        .with_context(|| format!("--start-plies {:?}: give LO-HI, e.g. 4-8", args.start_plies))?;
    for p in &args.books {
        learnbook::book::opening_book::OpeningBook::open(p)
            .with_context(|| format!("--book {}", p.display()))?;
    }
    if !(0.0..90.0).contains(&args.jitter) {
        anyhow::bail!("--jitter must be a percentage from 0 to 90");
    }
    if args.nodes == 0 || args.pairs == 0 {
        anyhow::bail!("--nodes and --pairs must be at least 1");
    }
    let starts = duel::starts_from_games(&args.starts, (lo, hi), args.pairs, args.seed)
        .context("--starts")?;
    if starts.len() < args.pairs {
        eprintln!(
            "{} has {} distinct starts, fewer than --pairs {}",
            args.starts.display(),
            starts.len(),
            args.pairs
        );
    }
    let cfg = duel::DuelConfig {
        engine,
        books: [a, b],
        mode: args.mode,
        starts,
        limit: match args.depth {
            Some(0) => anyhow::bail!("--depth must be at least 1"),
            Some(d) => learnbook::play::game::Limit::Depth(d),
            None => learnbook::play::game::Limit::Nodes(args.nodes),
        },
        jitter: args.jitter / 100.0,
        concurrency: args.concurrency.max(1),
        pgnout: args.pgnout,
        adjudication: args.adjudication.adjudication()?,
        deep_start,
        deep_book: match args.deep_book {
            Some(0) => anyhow::bail!("--deep-book must be at least 1"),
            n => n,
        },
    };
    let report = cfg.run(|round, g, st| {
        if st.played % 50 == 0 {
            eprintln!(
                "{} games ({} read back); last: round {round} {} - {} {}",
                st.played, st.resumed, g.white, g.black, g.result
            );
        }
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook selfplay`.
#[derive(Args)]
pub struct SelfplayArgs {
    /// The games go here, appended one by one in order; if the file exists, its complete
    /// games are kept (a partial last game is removed) and the run goes on from there.
    #[arg(long, value_name = "FILE.pgn")]
    pgnout: PathBuf,
    /// Games the file holds in the end.
    #[arg(long)]
    games: usize,
    /// Nodes per move (fixed: the same games on any machine and any --concurrency).
    #[arg(long, default_value_t = 5000)]
    nodes: u64,
    /// Openings: EPD (one position per line) or PGN (.gz, .zst), shuffled by --seed and
    /// played in turn; game i plays opening i of that order.
    #[arg(long, value_name = "FILE")]
    openings: PathBuf,
    /// Games played at once (default: every core).
    #[arg(long)]
    concurrency: Option<usize>,
    /// The weights of both sides: a TOML file (`learnbook weights`, `tune --out`) or a preset
    /// (default, search-hand, hand, kaissa, kotok).
    #[arg(long, value_name = "W.toml", default_value = "default")]
    weights: String,
    /// Orders the openings: the same seed, openings and settings give the same games.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Transposition table of each engine, MB.
    #[arg(long, default_value_t = 16)]
    hash: usize,
    #[command(flatten)]
    adjudication: SelfAdjudication,
    /// Play shard I of N (0 <= I < N): the I-th of N contiguous slices of the game numbers,
    /// each game as the whole run plays it; `merge-games` puts the shards' files together.
    /// auto/N takes I from SLURM_ARRAY_TASK_ID (less SLURM_ARRAY_TASK_MIN) or
    /// JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// Both sides' evaluation: `default`, the net embedded in the binary; `none`, the
    /// weights' hand-crafted evaluation (what the night's data was played with); or a net
    /// file. The weights' search parameters apply with each.
    #[arg(long, value_name = "NET.nnue|default|none", default_value = "default")]
    net: NetChoice,
    /// At the end, the training positions of the whole file (`net-data`): FILE and its
    /// validation games' positions beside it (`x.bin` -> `x.valid.bin`).
    #[arg(long, value_name = "FILE.bin")]
    data: Option<PathBuf>,
    #[command(flatten)]
    data_filter: super::net::DataFilterArgs,
}

/// The games the file lacks, resumed where it stops (130 when interrupted).
pub fn selfplay(args: SelfplayArgs) -> Result<ExitCode> {
    let SelfplayArgs {
        pgnout,
        games,
        nodes,
        openings,
        concurrency,
        weights,
        seed,
        hash,
        adjudication,
        shard,
        data,
        data_filter,
        net,
    } = args;
    use learnbook::play::{runner, selfplay};
    let adjudication = adjudication.adjudication()?;
    if nodes == 0 {
        anyhow::bail!("--nodes must be at least 1");
    }
    let w = learnbook::engine::presets::load(&weights).context("--weights")?;
    let net = net.load().context("--net")?;
    let suite = runner::read_openings(&openings).context("--openings")?;
    let cfg = selfplay::Config {
        pgn_out: pgnout,
        games,
        nodes,
        concurrency: concurrency.unwrap_or_else(all_cores),
        name: selfplay::player_name(&weights),
        weights: w,
        net,
        seed,
        adjudication,
        hash_mb: hash.max(1),
        openings: suite,
        shard: shard.unwrap_or(Shard::WHOLE),
    };
    if games > cfg.openings.len() {
        eprintln!(
            "note: {games} games from {} openings: games beyond the first {} repeat an opening, \
             and at fixed nodes the game too",
            cfg.openings.len(),
            cfg.openings.len()
        );
    }
    let existing = selfplay::resume_point(&cfg)?;
    print!("{}", selfplay::start_report(&cfg, &existing));
    learnbook::interrupt::stop_on_sigint();
    let summary = selfplay::run_with_progress(&cfg, existing)?;
    print!("{}", selfplay::report(&cfg, &summary));
    if summary.interrupted {
        println!("interrupted; the same command continues the run");
    } else if let Some(out) = &data {
        super::net::write_data(std::slice::from_ref(&cfg.pgn_out), out, &data_filter)?;
    }
    Ok(exit_code(summary.interrupted))
}

/// Arguments of `learnbook merge-games`.
#[derive(Args)]
pub struct MergeGamesArgs {
    /// The whole run's file (replaced if it exists).
    #[arg(long, value_name = "FILE.pgn")]
    pgnout: PathBuf,
    /// The shards' files, one per shard, in any order.
    #[arg(required = true, value_name = "SHARD.pgn")]
    shards: Vec<PathBuf>,
}

/// The shards' files as the whole run's file.
pub fn merge_games(args: MergeGamesArgs) -> Result<ExitCode> {
    let merged = learnbook::play::merge_games::merge_games(&args.pgnout, &args.shards)?;
    println!(
        "{}: {} games from {} shards",
        args.pgnout.display(),
        merged.games,
        merged.shards
    );
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook report`.
#[derive(Args)]
pub struct ReportArgs {
    /// The games, in the order they were played.
    #[arg(long)]
    pgn: PathBuf,
    /// The player's name as in the White/Black tags.
    #[arg(long)]
    player: String,
    /// Games per window of the learning curve.
    #[arg(long, default_value_t = 50)]
    window: usize,
    /// Draw the learning curve into this PNG.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// The learning curve (and its plot).
pub fn report(args: ReportArgs) -> Result<ExitCode> {
    let ReportArgs {
        pgn,
        player,
        window,
        plot,
    } = args;
    let r = learnbook::play::report::report(&pgn, &player, window)?;
    print!("{}", r.text(&player));
    if let Some(png) = plot {
        r.plot(&player, window, &png)?;
        println!("learning curve written to {}", png.display());
    }
    Ok(ExitCode::SUCCESS)
}
