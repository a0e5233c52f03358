//! `learnbook bench suite`: opening suites compared by the resolution they
//! give a match. The same two engines play the same number of game pairs
//! over each suite; a suite whose pairs vary less (fewer dead draws, fewer
//! pairs decided by the opening alone) tells the engines apart in fewer
//! games. The measure is normalized Elo (fishtest's nElo, Michel Van den
//! Bergh's LLRcalc): the SPRT's cost goes as 1/nElo^2.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
};

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use shakmaty::{CastlingMode, Color};

use learnbook::book::pgn::input::GameStream;
use learnbook::play::{
    draw_model::{level_draw_rate, Ceiling, ColourWdl, DrawModel},
    game::{Adjudication, GameRecord, Opening},
    journal::{identity, Journal},
    resolution::{Resolution, SprtLength},
    runner::{first_player_white, read_openings, resume_match, MatchConfig, Standing},
    spec::{CommonLimit, MatchEngines as Engines},
    stats::Sprt,
};

/// The Event tag of the games: with the players' names and the round, it
/// tells the runner which games of a `--pgnout` file a rerun may count.
const EVENT: &str = "learnbook bench suite";

/// Opening suites compared by the resolution they give a match: nElo and expected SPRT length.
///
/// The same two engines play --pairs game pairs over each --suite: each opening twice,
/// colours swapped, the openings in an order shuffled with --seed (the same engines,
/// limits and number of pairs for every suite; a suite with fewer openings than pairs
/// has them taken again, and the output says so). A suite whose pairs vary less tells
/// the engines apart in fewer games: the SPRT's cost goes as 1/nElo^2.
///
/// Prints, per suite: pairs, games, wins/draws/losses from the first engine's side and
/// the draw rate; the pentanomial counts [LL, LD, DD+WL, WD, WW], the share of pairs
/// scoring 1-1 and of pairs with both games drawn; the score and the Elo with its 95%
/// interval (pentanomial); the variance per pair and nElo with its 95% interval
/// (fishtest's definitions); the GSPRT's expected length in games for --elo0/--elo1
/// (logistic Elo, --alpha, --beta) by Wald's approximation with the suite's measured
/// variance, if the true Elo is elo1 and at the measured score. Then one table row per
/// suite: draw rate, nElo [95%], nElo over the first suite's, expected SPRT games.
///
/// Runs are long (hours for the thousands of pairs a useful comparison needs): give
/// --pgnout-dir. Each suite's games are appended to DIR/<suite name>.pgn as they end,
/// and the same command run again counts the games already there and plays only the
/// rest, so a killed bench resumes where it stopped. --journal keeps only each game's
/// result, a character a game, in a file small enough to keep with the project: the
/// same command resumes from it on another machine.
#[derive(clap::Args, Debug)]
pub struct SuiteArgs {
    /// An opening suite: EPD (one position a line) or PGN (.gz, .zst). Once per suite;
    /// the first is the one the others are compared with.
    #[arg(long = "suite", value_name = "FILE", required = true)]
    suites: Vec<PathBuf>,
    /// name=N,cmd=CMD[,proto=uci|xboard][,option.X=V][,dir=D][,tc=|nodes=|depth=];
    /// cmd=builtin[,weights=W]. Twice, with different names; results are the first's.
    #[arg(long = "engine", required = true, num_args = 1)]
    engines: Vec<String>,
    /// Game pairs per suite (2 games each).
    #[arg(long)]
    pairs: usize,
    /// Games played at once (each worker owns its engine processes).
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    #[command(flatten)]
    limit: crate::cli::args::LimitArgs,
    /// Seed of each suite's opening order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The SPRT's H0, logistic Elo (for the expected length).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    elo0: f64,
    /// The SPRT's H1, logistic Elo.
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    elo1: f64,
    /// The SPRT's type I error.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// The SPRT's type II error.
    #[arg(long, default_value_t = 0.05)]
    beta: f64,
    #[command(flatten)]
    adjudication: crate::cli::args::MatchAdjudication,
    /// Append each suite's games to DIR/<suite name>.pgn; games already there from an
    /// earlier run of the same command are counted, not played again.
    #[arg(long, value_name = "DIR")]
    pgnout_dir: Option<PathBuf>,
    /// A results journal: each game's result is written there as it ends, and games
    /// already there from an earlier run of the same command are counted, not played
    /// again (with --pgnout-dir too, a game in both counts once).
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

impl SuiteArgs {
    /// `bench suite`: the report on stdout and, with --json, in that file.
    pub(super) fn run(self) -> Result<()> {
        let SuiteArgs {
            suites,
            engines: specs,
            pairs,
            concurrency,
            limit,
            seed,
            elo0,
            elo1,
            alpha,
            beta,
            adjudication,
            pgnout_dir,
            journal,
            json,
        } = self;
        // What decides the games, as given (the journal's match identity).
        let identity = format!(
            "engines={specs:?} tc={:?} nodes={:?} depth={:?} draw={:?} resign={:?} maxmoves={:?}",
            limit.tc,
            limit.nodes,
            limit.depth,
            adjudication.draw,
            adjudication.resign,
            adjudication.maxmoves
        );
        let cfg = SuiteBench {
            suites,
            engines: engines(&specs, &limit.limit())?,
            pairs,
            concurrency,
            seed,
            // parse_sprt checks the bounds as `play --sprt` does.
            sprt: learnbook::play::spec::parse_sprt(&format!(
                "elo0={elo0},elo1={elo1},alpha={alpha},beta={beta}"
            ))?,
            adjudication: adjudication.adjudication()?,
            pgnout_dir,
            journal,
            identity,
        };
        let report = bench_suites(&cfg)?;
        print!("{report}");
        if let Some(path) = json {
            let text = serde_json::to_string_pretty(&report).context("--json")?;
            learnbook::atomic_file::write(&path, text.as_bytes())
                .with_context(|| format!("--json: cannot write {}", path.display()))?;
        }
        Ok(())
    }
}

/// The two players and their limits as `play` reads them, with different
/// names (a suite's games are told apart by them).
pub fn engines(specs: &[String], limit: &CommonLimit) -> Result<Engines> {
    let e = Engines::parse(specs, limit)?;
    let [a, b] = &e.players;
    if a.name() == b.name() {
        bail!(
            "both engines are named {:?}: give them different name= (the games are told apart by it)",
            a.name()
        );
    }
    Ok(e)
}

/// What `bench suite` plays.
pub struct SuiteBench {
    pub suites: Vec<PathBuf>,
    pub engines: Engines,
    /// Game pairs per suite.
    pub pairs: usize,
    pub concurrency: usize,
    /// Seed of each suite's opening order.
    pub seed: u64,
    /// The test whose expected length is reported.
    pub sprt: Sprt,
    pub adjudication: Adjudication,
    /// Each suite's games go to DIR/<suite>.pgn, and a rerun counts them.
    pub pgnout_dir: Option<PathBuf>,
    /// Each game's result goes to this results journal, and a rerun counts them.
    pub journal: Option<PathBuf>,
    /// What decides the games besides the openings and the seed, as given on
    /// the command line (engines, limits, adjudication): with them, it tells
    /// a journal's matches from other matches of the same suite.
    pub identity: String,
}

/// The SPRT settings, for the JSON report.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SprtSettings {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
}

/// One suite's match, from the first engine's point of view.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteResult {
    /// The file name without .epd/.pgn and compression.
    pub name: String,
    pub path: String,
    /// Openings in the file.
    pub openings: usize,
    /// More pairs than openings: the runner took them again, in the same order.
    pub openings_reused: bool,
    pub pgn: Option<String>,
    /// The results journal.
    pub journal: Option<String>,
    /// Games an earlier run wrote to `journal` or `pgn`, counted and not played again.
    pub resumed_games: usize,
    /// Games lost because an engine could not start.
    pub start_failures: usize,
    pub pairs: u32,
    pub games: u32,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    pub score: f64,
    pub draw_rate: f64,
    /// Pairs scoring 0, 0.5, 1, 1.5, 2 points: [LL, LD, DD+WL, WD, WW].
    pub pentanomial: [u32; 5],
    /// Pairs scoring 1-1 (two draws, or a win and a loss).
    pub pair_draw_rate: f64,
    /// Pairs whose two games were both drawn; None when some game's result
    /// is not known one by one.
    pub both_drawn_rate: Option<f64>,
    #[serde(flatten)]
    pub resolution: Resolution,
    /// This suite's nElo over the first suite's.
    pub nelo_ratio_to_first: f64,
    #[serde(flatten)]
    pub sprt: SprtLength,
    /// The first player's results with White and with Black.
    pub as_white: ColourWdl,
    pub as_black: ColourWdl,
    /// The BayesElo model fitted to them, and the best any suite could do
    /// with these engines in it (`None` before both colours have played).
    pub model: Option<Ceiling>,
}

/// Every suite's result, in the order given.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteReport {
    pub engines: [String; 2],
    pub pairs_per_suite: usize,
    pub seed: u64,
    pub sprt: SprtSettings,
    pub suites: Vec<SuiteResult>,
}

/// A suite read and checked before any game is played.
struct Suite {
    path: PathBuf,
    name: String,
    openings: Vec<Opening>,
}

/// The file name without its compression and format extensions.
fn suite_name(path: &Path) -> String {
    let mut name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    for exts in [[".gz", ".zst"], [".epd", ".pgn"]] {
        for ext in exts {
            let lower = name.to_ascii_lowercase();
            if lower.ends_with(ext) && lower.len() > ext.len() {
                name.truncate(name.len() - ext.len());
            }
        }
    }
    name
}

/// Reads every suite first: a bad file fails the run before hours of games.
fn read_suites(paths: &[PathBuf]) -> Result<Vec<Suite>> {
    if paths.is_empty() {
        bail!("give at least one --suite");
    }
    let mut suites: Vec<Suite> = Vec::new();
    for path in paths {
        let name = suite_name(path);
        if let Some(other) = suites.iter().find(|s| s.name == name) {
            bail!(
                "--suite {} and {} have the same name {name:?} (their games would share a PGN file)",
                other.path.display(),
                path.display()
            );
        }
        let openings = read_openings(path).context("--suite")?;
        suites.push(Suite {
            path: path.clone(),
            name,
            openings,
        });
    }
    Ok(suites)
}

/// Plays (or resumes) every suite's match and measures it.
pub fn bench_suites(cfg: &SuiteBench) -> Result<SuiteReport> {
    if cfg.pairs == 0 {
        bail!("--pairs must be at least 1");
    }
    let suites = read_suites(&cfg.suites)?;
    if let Some(dir) = &cfg.pgnout_dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--pgnout-dir: cannot create {}", dir.display()))?;
    }
    let mut journal = cfg.journal.as_deref().map(Journal::open).transpose()?;
    let mut results = Vec::with_capacity(suites.len());
    for suite in suites {
        results.push(play_suite(cfg, suite, journal.as_mut())?);
    }
    // A first suite with no measured difference has no ratio to give.
    let first = results
        .first()
        .map(|r| r.resolution.nelo.value)
        .filter(|v| v.abs() > 1e-6)
        .unwrap_or(f64::NAN);
    for r in &mut results {
        r.nelo_ratio_to_first = r.resolution.nelo.value / first;
    }
    let [a, b] = &cfg.engines.players;
    Ok(SuiteReport {
        engines: [a.name().to_string(), b.name().to_string()],
        pairs_per_suite: cfg.pairs,
        seed: cfg.seed,
        sprt: SprtSettings {
            elo0: cfg.sprt.elo0,
            elo1: cfg.sprt.elo1,
            alpha: cfg.sprt.alpha,
            beta: cfg.sprt.beta,
        },
        suites: results,
    })
}

/// The first player's score in a finished game.
fn first_player_score(cfg: &MatchConfig, record: &GameRecord) -> f64 {
    let color = if record.white == cfg.players[0].name() {
        Color::White
    } else {
        Color::Black
    };
    record.score_of(color)
}

/// A suite's match as the runner left it.
struct Played {
    standing: Standing,
    /// Game index -> the first player's score, to tell two draws from a win and a loss.
    scores: BTreeMap<usize, f64>,
    /// Games lost because an engine could not start.
    start_failures: usize,
}

/// The identity of a suite's match in a results journal: the options that
/// decide its games and the openings themselves (so that a suite file made
/// again differently does not inherit the games of the first).
fn match_identity(cfg: &SuiteBench, openings: &[Opening]) -> String {
    let mut lines = String::new();
    for o in openings {
        lines.push_str(o.fen.as_deref().unwrap_or("startpos"));
        for m in &o.moves {
            let _ = write!(lines, " {}", m.to_uci(CastlingMode::Standard));
        }
        lines.push('\n');
    }
    let seed = cfg.seed.to_string();
    identity(&[
        EVENT.as_bytes(),
        cfg.identity.as_bytes(),
        seed.as_bytes(),
        lines.as_bytes(),
    ])
}

fn play_suite(
    cfg: &SuiteBench,
    suite: Suite,
    journal: Option<&mut Journal>,
) -> Result<SuiteResult> {
    let Suite {
        path,
        name,
        openings,
    } = suite;
    let n_openings = openings.len();
    let id = match_identity(cfg, &openings);
    let pgn = cfg
        .pgnout_dir
        .as_ref()
        .map(|dir| dir.join(format!("{name}.pgn")));
    let mcfg = MatchConfig {
        node_jitter: 0.0,
        players: cfg.engines.players.clone(),
        limit: cfg.engines.limit,
        limits: cfg.engines.limits,
        games: 2 * cfg.pairs,
        concurrency: cfg.concurrency,
        openings,
        random_seed: Some(cfg.seed),
        repeat: true,
        noswap: false,
        pgn_out: pgn.clone(),
        sprt: None,
        sprt_play_on: false,
        adjudication: cfg.adjudication,
        learn: None,
        after_learn: None,
        event: EVENT.into(),
    };
    let played = play_match(&mcfg, &name, journal.map(|j| (j, id.as_str())))
        .with_context(|| format!("suite {}", path.display()))?;
    let st = &played.standing;
    let (games, pairs) = (st.wdl.games(), st.pairs.pairs());
    let share = |k: u32, of: u32| f64::from(k) / f64::from(of.max(1));
    let resolution = Resolution::of(&st.pairs);
    let (mut as_white, mut as_black) = (ColourWdl::default(), ColourWdl::default());
    for (&i, &score) in &played.scores {
        if first_player_white(&mcfg, i) {
            as_white.add(score);
        } else {
            as_black.add(score);
        }
    }
    Ok(SuiteResult {
        name,
        path: path.display().to_string(),
        openings: n_openings,
        openings_reused: cfg.pairs > n_openings,
        pgn: pgn.map(|p| p.display().to_string()),
        journal: cfg.journal.as_ref().map(|p| p.display().to_string()),
        resumed_games: st.resumed,
        start_failures: played.start_failures,
        pairs,
        games,
        wins: st.wdl.wins,
        draws: st.wdl.draws,
        losses: st.wdl.losses,
        score: (f64::from(st.wdl.wins) + 0.5 * f64::from(st.wdl.draws)) / f64::from(games.max(1)),
        draw_rate: share(st.wdl.draws, games),
        pentanomial: st.pairs.0,
        pair_draw_rate: share(st.pairs.0[2], pairs),
        both_drawn_rate: pairs_both_drawn(&played.scores, pairs).map(|k| share(k, pairs)),
        resolution,
        nelo_ratio_to_first: f64::NAN,
        sprt: SprtLength::of(&cfg.sprt, &resolution),
        as_white,
        as_black,
        model: DrawModel::fit(&as_white, &as_black).map(|m| m.ceiling()),
    })
}

/// Runs (or resumes) the match, with a progress line on stderr now and then.
fn play_match(
    mcfg: &MatchConfig,
    name: &str,
    mut journal: Option<(&mut Journal, &str)>,
) -> Result<Played> {
    let games = mcfg.games;
    let earlier = match &journal {
        Some((j, id)) => j.played(name, id)?,
        None => Vec::new(),
    };
    let mut scores: BTreeMap<usize, f64> = earlier.iter().copied().collect();
    let (mut start_failures, mut why) = (0usize, None::<String>);
    let mut journal_error = None;
    let every = (games / 20).max(1);
    let standing = resume_match(mcfg, &earlier, |round, record, st| {
        let score = first_player_score(mcfg, record);
        scores.insert(round - 1, score);
        if let Some((j, id)) = journal.as_mut() {
            if let Err(e) = j.record(name, id, round - 1, score) {
                if journal_error.is_none() {
                    eprintln!("{name}: {e:#} (the games go on; the error ends the bench)");
                }
                journal_error.get_or_insert(e);
            }
        }
        if record.termination.contains("could not start") {
            start_failures += 1;
            why.get_or_insert_with(|| record.termination.clone());
        }
        if st.played % every == 0 || st.played == games {
            eprintln!(
                "{name}: {}/{games} games, +{} ={} -{}",
                st.played, st.wdl.wins, st.wdl.draws, st.wdl.losses
            );
        }
    })?;
    if let Some(e) = journal_error {
        return Err(e);
    }
    // An engine that never starts loses every game at once: say so rather
    // than report a match that was not played.
    if let (Some(why), true) = (&why, start_failures == standing.played - standing.resumed) {
        bail!("every game was lost because {why}");
    }
    if let (Some(pgn), true) = (&mcfg.pgn_out, standing.resumed > 0) {
        scores_from_pgn(pgn, mcfg, &mut scores)?;
    }
    Ok(Played {
        standing,
        scores,
        start_failures,
    })
}

/// Pairs whose two games were drawn, if every one of the `pairs` complete
/// pairs is in `scores` (game 2k and 2k + 1 make pair k).
fn pairs_both_drawn(scores: &BTreeMap<usize, f64>, pairs: u32) -> Option<u32> {
    let (mut complete, mut both) = (0u32, 0u32);
    for (&i, &first) in scores.iter().filter(|(i, _)| i.is_multiple_of(2)) {
        if let Some(&second) = scores.get(&(i + 1)) {
            complete += 1;
            both += u32::from(first == 0.5 && second == 0.5);
        }
    }
    (complete == pairs).then_some(both)
}

/// Adds the scores of this match's games in `pgn` that `scores` lacks (the
/// games an earlier run wrote, which the runner counted without replaying).
/// The runner has already checked that they are this match's games.
fn scores_from_pgn(pgn: &Path, cfg: &MatchConfig, scores: &mut BTreeMap<usize, f64>) -> Result<()> {
    let bytes = std::fs::read(pgn).with_context(|| format!("cannot read {}", pgn.display()))?;
    let names = [cfg.players[0].name(), cfg.players[1].name()];
    let event = format!("Event={}", cfg.event);
    for raw in GameStream::from_bytes(bytes) {
        // A game or an input that cannot be read would cut the scores short.
        let raw = raw.map_err(|e| anyhow!("cannot read {}: {e}", pgn.display()))?;
        if let Some(why) = &raw.unreadable {
            bail!("cannot read {}: game {}: {why}", pgn.display(), raw.number);
        }
        let players_match = (raw.white == names[0] && raw.black == names[1])
            || (raw.white == names[1] && raw.black == names[0]);
        let round = raw
            .identity
            .iter()
            .find_map(|t| t.strip_prefix("Round=")?.parse::<usize>().ok());
        let (true, true, Some(round)) = (raw.identity.contains(&event), players_match, round)
        else {
            continue;
        };
        if round == 0 || round > cfg.games {
            continue;
        }
        let first_won = if raw.white == names[0] { "1-0" } else { "0-1" };
        let score = match raw.result_tag.as_deref() {
            Some("1/2-1/2") => 0.5,
            Some(r) if r == first_won => 1.0,
            _ => 0.0,
        };
        scores.entry(round - 1).or_insert(score);
    }
    Ok(())
}

fn signed(x: f64) -> String {
    // No "-0.0" for a rounding error's worth below zero.
    let x = if x.abs() < 0.05 { 0.0 } else { x };
    if x.is_finite() {
        format!("{x:+.1}")
    } else {
        "-".into()
    }
}

fn percent(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// Games as a whole number, or "-" when the expectation is not finite.
fn whole(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.0}")
    } else {
        "-".into()
    }
}

impl SuiteResult {
    fn block(&self, engines: &[String; 2], sprt: &SprtSettings) -> String {
        let mut s = String::new();
        let reused = if self.openings_reused {
            " (fewer openings than pairs: the runner took them again, in the same order)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "suite {} ({}): {} openings, {} used{reused}",
            self.name,
            self.path,
            self.openings,
            (self.pairs as usize).min(self.openings)
        );
        let _ = writeln!(
            s,
            "  {} vs {}: {} pairs, {} games, +{} ={} -{}, draw rate {}",
            engines[0],
            engines[1],
            self.pairs,
            self.games,
            self.wins,
            self.draws,
            self.losses,
            percent(self.draw_rate)
        );
        let both = self
            .both_drawn_rate
            .map_or_else(|| "unknown".into(), percent);
        let _ = writeln!(
            s,
            "  pairs [LL, LD, DD+WL, WD, WW]: {:?}; pair-draw rate (1-1) {}, both games drawn {both}",
            self.pentanomial,
            percent(self.pair_draw_rate)
        );
        let (r, e, n) = (
            &self.resolution,
            &self.resolution.elo,
            &self.resolution.nelo,
        );
        let _ = writeln!(
            s,
            "  score {}, Elo {} [{}, {}] (95%, pentanomial)",
            percent(self.score),
            signed(e.value),
            signed(e.low),
            signed(e.high)
        );
        let _ = writeln!(
            s,
            "  variance per pair {:.5}, sigma per game {:.4}; nElo {} [{}, {}] (95%)",
            r.variance_per_pair,
            r.sigma_per_game,
            signed(n.value),
            signed(n.low),
            signed(n.high)
        );
        let _ = writeln!(
            s,
            "  expected SPRT length (elo0={} elo1={} alpha={} beta={}, logistic; Wald's approximation \
             with this suite's measured variance per pair): {} games if the true Elo is elo1, {} games at the measured score",
            sprt.elo0,
            sprt.elo1,
            sprt.alpha,
            sprt.beta,
            whole(self.sprt.games_at_elo1),
            whole(self.sprt.games_at_score)
        );
        if let Some(c) = &self.model {
            let m = &c.model;
            let _ = writeln!(
                s,
                "  BayesElo model from the results by colour (first player +{}/={}/-{} as White, +{}/={}/-{} as Black): \
                 gap {}, White's bias {}, draw Elo {:.0}; in it this suite gives nElo {} ({} draws), and the best suite \
                 for these engines nElo {} at a bias of {:.0} ({} draws): {} x this suite's",
                self.as_white.wins,
                self.as_white.draws,
                self.as_white.losses,
                self.as_black.wins,
                self.as_black.draws,
                self.as_black.losses,
                signed(m.gap),
                signed(m.bias),
                m.draw_elo,
                signed(c.nelo_here),
                percent(c.draws_here),
                signed(c.best_nelo),
                c.best_bias,
                percent(c.best_draws),
                c.gain().map_or_else(|| "-".into(), |g| format!("{g:.3}"))
            );
        }
        let sources: Vec<&str> = [&self.journal, &self.pgn]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        if self.resumed_games > 0 && !sources.is_empty() {
            let _ = writeln!(
                s,
                "  ({} of the games read back from {}, written by an earlier run)",
                self.resumed_games,
                sources.join(" and ")
            );
        }
        if self.start_failures > 0 {
            let _ = writeln!(
                s,
                "  ({} games lost because an engine could not start)",
                self.start_failures
            );
        }
        s
    }
}

impl std::fmt::Display for SuiteReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for r in &self.suites {
            writeln!(f, "{}", r.block(&self.engines, &self.sprt))?;
        }
        let width = self
            .suites
            .iter()
            .map(|r| r.name.len())
            .chain([5])
            .max()
            .unwrap_or(5);
        writeln!(
            f,
            "{:<width$}  {:>6}  {:>26}  {:>11}  {:>15}  {:>15}",
            "suite", "draws", "nElo [95%]", "nElo/first", "SPRT games@elo1", "@measured score"
        )?;
        for r in &self.suites {
            let n = &r.resolution.nelo;
            let nelo = format!(
                "{} [{}, {}]",
                signed(n.value),
                signed(n.low),
                signed(n.high)
            );
            let ratio = if r.nelo_ratio_to_first.is_finite() {
                format!("{:.3}", r.nelo_ratio_to_first)
            } else {
                "-".into()
            };
            writeln!(
                f,
                "{:<width$}  {:>6}  {nelo:>26}  {ratio:>11}  {:>15}  {:>15}",
                r.name,
                percent(r.draw_rate),
                whole(r.sprt.games_at_elo1),
                whole(r.sprt.games_at_score)
            )?;
        }
        writeln!(
            f,
            "(the SPRT's cost goes as 1/nElo^2: a suite with nElo ratio r needs about 1/r^2 the games)"
        )?;
        if let Some((first, c)) = self.suites.first().and_then(|r| Some((r, r.model?))) {
            let need = |gain: f64| {
                c.model.draw_elo_for_gain(gain).map_or_else(
                    || "none found".into(),
                    |d| {
                        format!(
                            "{d:.0} ({} drawn between equals)",
                            percent(level_draw_rate(d))
                        )
                    },
                )
            };
            match c.gain() {
                Some(gain) => writeln!(
                    f,
                    "(the BayesElo model of {}'s games: no suite gives these engines more than {gain:.3} x its nElo; \
                     their draw Elo is {:.0} ({} drawn between equals); over balanced openings, a 1.2 x gain \
                     needs a draw Elo of {}, 1.5 x {}: stronger engines, more nodes or time)",
                    first.name,
                    c.model.draw_elo,
                    percent(level_draw_rate(c.model.draw_elo)),
                    need(1.2),
                    need(1.5)
                )?,
                None => writeln!(
                    f,
                    "(the BayesElo model of {}'s games: the engines are level, no suite tells them apart)",
                    first.name
                )?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use learnbook::play::game::Limit;

    #[test]
    fn both_drawn_pairs_need_every_game() {
        let scores: BTreeMap<usize, f64> =
            [(0, 0.5), (1, 0.5), (2, 1.0), (3, 0.0), (4, 0.5), (5, 0.5)].into();
        assert_eq!(pairs_both_drawn(&scores, 3), Some(2));
        let mut missing = scores.clone();
        missing.remove(&5);
        assert_eq!(pairs_both_drawn(&missing, 3), None);
    }

    #[test]
    fn a_game_cut_short_in_the_pgn_is_an_error_naming_the_file() {
        let e = engines(
            &[
                "name=a,cmd=builtin".to_string(),
                "name=b,cmd=builtin".to_string(),
            ],
            &limit(None, Some(300), None),
        )
        .unwrap();
        let cfg = MatchConfig {
            node_jitter: 0.0,
            players: e.players.clone(),
            limit: e.limit,
            limits: e.limits,
            games: 4,
            concurrency: 1,
            openings: Vec::new(),
            random_seed: None,
            repeat: true,
            noswap: false,
            pgn_out: None,
            sprt: None,
            sprt_play_on: false,
            adjudication: Adjudication::default(),
            learn: None,
            after_learn: None,
            event: EVENT.into(),
        };
        let game = |round: u32, white: &str, black: &str, result: &str, rest: &str| {
            format!(
                "[Event \"{EVENT}\"]\n[Round \"{round}\"]\n[White \"{white}\"]\n\
                 [Black \"{black}\"]\n[Result \"{result}\"]\n\n{rest}"
            )
        };
        let whole = game(1, "a", "b", "1-0", "1. e4 e5 1-0\n\n");
        let dir = std::env::temp_dir().join(format!("suite-scores-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pgn = dir.join("cut.pgn");
        std::fs::write(
            &pgn,
            format!("{whole}{}", game(2, "b", "a", "*", "1. d4 {+0.31/12")),
        )
        .unwrap();
        let mut scores = BTreeMap::new();
        let err = scores_from_pgn(&pgn, &cfg, &mut scores).unwrap_err();
        assert!(err.to_string().contains("cut.pgn"), "{err:#}");
        assert!(err.to_string().contains("game 2"), "{err:#}");
        std::fs::write(
            &pgn,
            format!(
                "{whole}{}",
                game(2, "b", "a", "1/2-1/2", "1. d4 d5 1/2-1/2\n\n")
            ),
        )
        .unwrap();
        let mut scores = BTreeMap::new();
        scores_from_pgn(&pgn, &cfg, &mut scores).unwrap();
        assert_eq!(scores, BTreeMap::from([(0, 1.0), (1, 0.5)]));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn suite_names_drop_format_and_compression() {
        assert_eq!(suite_name(Path::new("a/8moves_v3.pgn.gz")), "8moves_v3");
        assert_eq!(
            suite_name(Path::new("8mvs_big_+80_+109.epd.gz")),
            "8mvs_big_+80_+109"
        );
        assert_eq!(suite_name(Path::new("x/UHO.EPD")), "UHO");
        assert_eq!(suite_name(Path::new("plain")), "plain");
    }

    fn limit(tc: Option<&str>, nodes: Option<u64>, depth: Option<u32>) -> CommonLimit {
        CommonLimit {
            tc: tc.map(str::to_string),
            nodes,
            depth,
        }
    }

    #[test]
    fn engines_need_two_names_and_a_limit() {
        let two = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
        let e = engines(
            &two("name=a,cmd=builtin", "name=b,cmd=builtin,nodes=5"),
            &limit(None, Some(300), None),
        )
        .unwrap();
        assert_eq!(e.limit, Limit::Nodes(300));
        assert_eq!(e.limits[1], Some(Limit::Nodes(5)));
        let e = engines(
            &two("name=a,cmd=builtin", "name=b,cmd=builtin,depth=3"),
            &limit(None, None, None),
        )
        .unwrap();
        assert_eq!(e.limit, Limit::Depth(3));
        assert!(engines(
            &two("name=a,cmd=builtin", "name=a,cmd=builtin"),
            &limit(None, Some(1), None),
        )
        .is_err());
        assert!(engines(
            &two("name=a,cmd=builtin", "name=b,cmd=builtin"),
            &limit(None, None, None),
        )
        .is_err());
        assert!(engines(
            &["name=a,cmd=builtin".to_string()],
            &limit(None, Some(1), None)
        )
        .is_err());
        assert!(engines(
            &two("name=a,cmd=builtin", "name=b,cmd=builtin"),
            &limit(Some("x"), None, None),
        )
        .is_err());
    }
}
