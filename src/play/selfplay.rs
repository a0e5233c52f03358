//! `learnbook selfplay`: games of the search core against itself, made for
//! data. One weight set plays both sides at a fixed node count from an
//! opening suite, on every core; each engine move keeps its search score as
//! a cutechess comment (`{+0.35/12}`).
//!
//! Game `i` starts from opening `order[i % n]`, `order` being the suite
//! shuffled with `--seed`; with a node limit and a cleared table at every
//! game, a game depends only on its opening, so the file is the same for
//! any `--concurrency`. Games are appended in index order (finished games
//! wait for the ones before them), one write each, so a killed run keeps a
//! prefix of the games; a rerun counts the complete games, cuts off a
//! partial last one and plays on from there.
//!
//! `--shard I/N` plays the I-th of N contiguous slices of the game numbers,
//! each game as the whole run plays it, tagged with its shard; `merge-games`
//! puts the shards' files together into the whole run's file, byte for byte.

use std::{
    collections::BTreeMap,
    fs::{File, OpenOptions},
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    sync::atomic::{AtomicBool, Ordering},
    time::Instant,
};

use anyhow::{bail, Context, Result};
use rand::{rngs::StdRng, seq::SliceRandom, SeedableRng};
use shakmaty::Position;

use super::{
    builtin::Builtin,
    game::{play_game, Adjudication, GameRecord, Limit, Opening},
};
use crate::{
    book::pgn::{
        input::{GameStream, RawGame},
        validate::{Filter, SkipReason},
    },
    engine::params::Weights,
    shard::Shard,
    workers,
};

/// The Event tag of every game.
pub const EVENT: &str = "learnbook selfplay";

/// The tag with the settings of the run ([`Config::settings_tag`]).
pub const SETTINGS_TAG: &str = "Selfplay";

/// The tag of a shard's games ([`Config::shard_tag`]), which `merge-games`
/// removes.
pub const SHARD_TAG: &str = "Shard";

/// What `learnbook selfplay` was asked for.
pub struct Config {
    /// The PGN file: appended to, and resumed from if it exists.
    pub pgn_out: PathBuf,
    /// Games the file should hold in the end.
    pub games: usize,
    /// Nodes per move.
    pub nodes: u64,
    pub openings: Vec<Opening>,
    /// Games played at once.
    pub concurrency: usize,
    pub weights: Weights,
    /// The learned evaluation both sides use instead of the weights' (`--net`).
    pub net: Option<std::sync::Arc<crate::engine::net::Network>>,
    /// The White and Black tags.
    pub name: String,
    /// Orders the openings.
    pub seed: u64,
    pub adjudication: Adjudication,
    /// Transposition table per engine, MB.
    pub hash_mb: usize,
    /// The part of the games this run plays (`--shard`): its contiguous
    /// slice of the game numbers `0..games`.
    pub shard: Shard,
}

impl Config {
    /// The game numbers this run plays, `[first, end)`.
    pub fn slice(&self) -> (usize, usize) {
        self.shard.slice(self.games)
    }

    /// Games the file holds in the end.
    pub fn own_games(&self) -> usize {
        let (first, end) = self.slice();
        end - first
    }

    /// The [`SHARD_TAG`] of a shard's games (`None` for a whole run):
    /// which shard, and of how many games, for `merge-games` to check.
    pub fn shard_tag(&self) -> Option<String> {
        (!self.shard.is_whole()).then(|| format!("{} games={}", self.shard, self.games))
    }

    /// The TimeControl tag of every game.
    fn time_control(&self) -> String {
        format!("nodes={}", self.nodes)
    }

    /// The `Selfplay` tag of every game: what else decides the games (the
    /// weights by a hash of their values), so that a rerun can tell whether
    /// the file's games are its own.
    pub fn settings_tag(&self) -> String {
        let mut h = crate::fnv::Fnv64::new();
        for v in self.weights.values() {
            h.write_field(&v.to_le_bytes());
        }
        let adj = &self.adjudication;
        let draw = adj.draw.map_or("none".into(), |(n, c, s)| {
            format!("movenumber={n},movecount={c},score={s}")
        });
        let resign = adj
            .resign
            .map_or("none".into(), |(c, s)| format!("movecount={c},score={s}"));
        let net = self.net.as_ref().map_or(String::new(), |n| {
            let mut h = crate::fnv::Fnv64::new();
            h.write_field(&n.to_bytes());
            format!(" net={:016x}", h.finish())
        });
        format!(
            "seed={} openings={} hash={} draw={draw} resign={resign} maxmoves={} weights={:016x}{net}",
            self.seed,
            self.openings.len(),
            self.hash_mb,
            adj.max_moves.map_or("none".into(), |m| m.to_string()),
            h.finish()
        )
    }
}

/// Which opening each game index plays: the suite shuffled by the seed,
/// then taken in turn (again from the top after the last one).
pub struct Schedule {
    order: Vec<usize>,
}

impl Schedule {
    pub fn new(seed: u64, openings: usize) -> Schedule {
        let mut order: Vec<usize> = (0..openings).collect();
        order.shuffle(&mut StdRng::seed_from_u64(seed));
        Schedule { order }
    }

    /// The index in the suite of game `i`'s opening (0-based).
    pub fn opening(&self, i: usize) -> usize {
        self.order[i % self.order.len()]
    }
}

/// The games already in the output file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Existing {
    /// Complete games at the start of the file.
    pub games: usize,
    /// Bytes of those games.
    pub keep_bytes: u64,
    /// Bytes after them: a game cut off by a kill (removed before playing on).
    pub partial_bytes: u64,
}

/// Reads the complete games at the start of `path` (which [`run`] wrote)
/// and checks that they were played with `cfg`'s settings. A game is
/// complete when it reads back with its termination marker and the blank
/// line after it; only the last one may be incomplete.
pub fn scan_existing(path: &Path, cfg: &Config, schedule: &Schedule) -> Result<Existing> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::default()),
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
    };
    let mut reader = BufReader::new(file);
    let (mut offset, mut line) = (0u64, Vec::new());
    // The game being read: its first byte and its text.
    let mut chunk: Option<(u64, Vec<u8>)> = None;
    let mut existing = Existing::default();
    let mut incomplete_at: Option<u64> = None;
    let mut finish = |start: u64, text: &[u8], existing: &mut Existing| -> Result<()> {
        match complete_game(text) {
            Some((raw, tags)) => {
                if let Some(at) = incomplete_at {
                    bail!(
                        "{}: the game at byte {at} is incomplete but complete games follow it; \
                         not a file that selfplay wrote, so it is not resumed",
                        path.display()
                    );
                }
                check_game(cfg, schedule, cfg.slice().0 + existing.games, &raw, &tags)
                    .with_context(|| format!("{}: game {}", path.display(), existing.games + 1))?;
                existing.games += 1;
                existing.keep_bytes = start + text.len() as u64;
            }
            None => incomplete_at = incomplete_at.or(Some(start)),
        }
        Ok(())
    };
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        if line.starts_with(b"[Event ") {
            if let Some((start, text)) = chunk.take() {
                finish(start, &text, &mut existing)?;
            }
            chunk = Some((offset, Vec::new()));
        }
        match chunk.as_mut() {
            Some((_, text)) => text.extend_from_slice(&line),
            None if line.iter().all(u8::is_ascii_whitespace) => {}
            None => bail!(
                "{}: text before the first game: not a file that selfplay wrote (give another --pgnout)",
                path.display()
            ),
        }
        offset += n as u64;
    }
    if let Some((start, text)) = chunk.take() {
        finish(start, &text, &mut existing)?;
    }
    existing.partial_bytes = offset - existing.keep_bytes;
    Ok(existing)
}

/// The tags of a game as written (name, value).
type Tags = Vec<(String, String)>;

/// The game in `text` if it is whole and valid.
fn complete_game(text: &[u8]) -> Option<(RawGame, Tags)> {
    if !text.ends_with(b"\n\n") {
        return None;
    }
    let stream = GameStream::from_bytes(text.to_vec());
    let mut games = stream.collect::<Result<Vec<RawGame>, String>>().ok()?;
    if games.len() != 1 {
        return None;
    }
    let raw = games.pop()?;
    let filter = Filter {
        max_ply: 0,
        min_elo: None,
        allow_duplicates: true,
        no_tails: false,
    };
    match raw.validate(&filter) {
        Ok(_) | Err(SkipReason::NoMoves) if raw.outcome.is_some() => {}
        _ => return None,
    }
    let tags = String::from_utf8_lossy(text)
        .lines()
        .take_while(|l| l.starts_with('['))
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix('[')?.split_once(' ')?;
            let value = rest.strip_suffix(']')?.trim().strip_prefix('"')?;
            Some((name.to_string(), value.strip_suffix('"')?.to_string()))
        })
        .collect();
    Some((raw, tags))
}

/// Game `index` of the file must be what this run would have played there.
fn check_game(
    cfg: &Config,
    schedule: &Schedule,
    index: usize,
    raw: &RawGame,
    tags: &Tags,
) -> Result<()> {
    let tag = |name: &str| {
        tags.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let opening = &cfg.openings[schedule.opening(index)];
    let round = (index + 1).to_string();
    let tc = cfg.time_control();
    let settings = cfg.settings_tag();
    let shard = cfg.shard_tag();
    let expected = [
        (SHARD_TAG, shard.as_deref()),
        ("Round", Some(round.as_str())),
        ("White", Some(cfg.name.as_str())),
        ("Black", Some(cfg.name.as_str())),
        ("TimeControl", Some(tc.as_str())),
        (SETTINGS_TAG, Some(settings.as_str())),
        ("FEN", opening.fen.as_deref()),
    ];
    for (name, want) in expected {
        let have = tag(name);
        if have != want {
            bail!(
                "was played with other settings: its {name} tag is {}, this run's would be {} \
                 (resume with the settings that wrote the file, or give another --pgnout)",
                have.map_or("missing".into(), |v| format!("{v:?}")),
                want.map_or("absent".into(), |v| format!("{v:?}")),
            );
        }
    }
    let mut pos = opening.start_position().map_err(anyhow::Error::msg)?;
    for (k, m) in opening.moves.iter().enumerate() {
        let played = raw.sans.get(k).and_then(|s| s.san.to_move(&pos).ok());
        if played != Some(*m) {
            bail!(
                "does not start with opening {} of the suite, which this run plays there \
                 (resume with the --openings and --seed that wrote the file, or give another --pgnout)",
                schedule.opening(index) + 1
            );
        }
        pos.play_unchecked(*m);
    }
    Ok(())
}

/// Where a run stands, after each game written.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Games in the file.
    pub written: usize,
    /// Of those, played by this run.
    pub played: usize,
    /// White wins, draws, Black wins of the games played by this run.
    pub results: [usize; 3],
    /// Plies of the games played by this run.
    pub plies: usize,
    pub seconds: f64,
}

impl Progress {
    pub fn games_per_second(&self) -> f64 {
        self.played as f64 / self.seconds.max(1e-9)
    }
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct Summary {
    pub existing: Existing,
    pub progress: Progress,
    /// Stopped by SIGINT before `games` were written.
    pub interrupted: bool,
}

/// The player's name in the PGN for a `--weights` argument:
/// `learnbook-default`, `learnbook-kaissa`, `learnbook-tuned` for `tuned.toml`.
pub fn player_name(weights: &str) -> String {
    let path = Path::new(weights);
    let label = match path.file_stem() {
        Some(stem) if path.exists() => stem.to_string_lossy().into_owned(),
        _ => weights.to_string(),
    };
    format!("learnbook-{label}")
}

/// Where the run starts: the complete games already in the output file
/// (checked against `cfg`), after removing a partial game at its end.
pub fn resume_point(cfg: &Config) -> Result<Existing> {
    if cfg.openings.is_empty() {
        bail!("no openings");
    }
    let schedule = Schedule::new(cfg.seed, cfg.openings.len());
    let existing = scan_existing(&cfg.pgn_out, cfg, &schedule)?;
    if existing.partial_bytes > 0 {
        OpenOptions::new()
            .write(true)
            .open(&cfg.pgn_out)
            .and_then(|f| f.set_len(existing.keep_bytes))
            .with_context(|| {
                format!(
                    "cannot remove the partial game at the end of {}",
                    cfg.pgn_out.display()
                )
            })?;
    }
    Ok(existing)
}

/// Plays the games the file lacks after [`resume_point`]'s `existing`
/// games; `progress` is called after each game written. SIGINT (after
/// [`crate::interrupt::stop_on_sigint`]) stops the start of new games;
/// those under way are finished and written.
pub fn run(
    cfg: &Config,
    existing: Existing,
    mut progress: impl FnMut(&Progress),
) -> Result<Summary> {
    if cfg.openings.is_empty() {
        bail!("no openings");
    }
    let schedule = Schedule::new(cfg.seed, cfg.openings.len());
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&cfg.pgn_out)
        .with_context(|| format!("cannot open {}", cfg.pgn_out.display()))?;
    let mut st = Progress {
        written: existing.games,
        ..Progress::default()
    };
    let (first, end) = cfg.slice();
    if existing.games >= end - first {
        return Ok(Summary {
            existing,
            progress: st,
            interrupted: false,
        });
    }
    let date = super::runner::today();
    let settings = cfg.settings_tag();
    let shard_tag = cfg.shard_tag();
    let mut tags = vec![(SETTINGS_TAG, settings.as_str())];
    tags.extend(shard_tag.as_deref().map(|t| (SHARD_TAG, t)));
    let limit = Limit::Nodes(cfg.nodes);
    // Job k is game `base + k`.
    let base = first + existing.games;
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    // Games are written in index order: a finished game waits for those before it.
    let mut waiting: BTreeMap<usize, GameRecord> = BTreeMap::new();
    workers::run(
        end - base,
        cfg.concurrency,
        &stop,
        |_| {
            let white = Builtin::search_only(&cfg.name, cfg.weights.clone(), cfg.hash_mb)
                .with_net(cfg.net.clone());
            let black = Builtin::search_only(&cfg.name, cfg.weights.clone(), cfg.hash_mb)
                .with_net(cfg.net.clone());
            Ok::<_, anyhow::Error>((white, black))
        },
        |(white, black), k| {
            // After Ctrl-C no game starts; `None` tells the writer to stop the others.
            if crate::interrupt::interrupted() {
                return Ok(None);
            }
            let opening = &cfg.openings[schedule.opening(base + k)];
            let limits = [&limit, &limit];
            Ok(Some(play_game(
                white,
                black,
                opening,
                limits,
                &cfg.adjudication,
            )))
        },
        |k, record| {
            let Some(record) = record else {
                stop.store(true, Ordering::Relaxed);
                return Ok(());
            };
            waiting.insert(base + k, record);
            while let Some(record) = waiting.remove(&(first + st.written)) {
                let round = (first + st.written) as u64 + 1;
                let text = record.pgn(EVENT, round, &date, &tags);
                file.write_all(text.as_bytes())
                    .and_then(|_| file.flush())
                    .with_context(|| format!("cannot write {}", cfg.pgn_out.display()))?;
                st.written += 1;
                st.played += 1;
                st.plies += record.moves.len() - record.moves.len().min(opening_plies(&record));
                st.results[match record.result {
                    "1-0" => 0,
                    "0-1" => 2,
                    _ => 1,
                }] += 1;
                st.seconds = start.elapsed().as_secs_f64();
                progress(&st);
            }
            Ok(())
        },
    )?;
    Ok(Summary {
        existing,
        interrupted: st.written < end - first,
        progress: st,
    })
}

/// Moves of the record that came from its opening (no engine score).
fn opening_plies(record: &GameRecord) -> usize {
    record.evals.iter().take_while(|e| e.is_none()).count()
}

/// [`run`] with an indicatif bar on a terminal (games, games/s, results,
/// ETA), or a line every tenth of the games otherwise.
pub fn run_with_progress(cfg: &Config, existing: Existing) -> Result<Summary> {
    use indicatif::{ProgressBar, ProgressStyle};
    use std::io::IsTerminal;
    let bar = if std::io::stderr().is_terminal() {
        let pb = ProgressBar::new(cfg.own_games() as u64);
        pb.set_position(existing.games as u64);
        pb.reset_eta();
        pb.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} games, {msg}, ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        pb
    } else {
        ProgressBar::hidden()
    };
    let log = bar.is_hidden();
    let games = cfg.own_games();
    let step = (games / 10).max(1);
    let summary = run(cfg, existing, |st| {
        let [w, d, b] = st.results;
        bar.set_position(st.written as u64);
        bar.set_message(format!(
            "{:.2} games/s, +{w} ={d} -{b}",
            st.games_per_second()
        ));
        if log && (st.written % step == 0 || st.written == games) {
            eprintln!(
                "{}/{} games, {:.2} games/s, +{w} ={d} -{b} (White's view)",
                st.written,
                games,
                st.games_per_second()
            );
        }
    });
    bar.finish_and_clear();
    summary
}

/// What a run says before it plays: the partial game [`resume_point`]
/// removed, the shard's slice of the games, the games the file already holds.
pub fn start_report(cfg: &Config, existing: &Existing) -> String {
    let mut out = String::new();
    if existing.partial_bytes > 0 {
        out.push_str(&format!(
            "removed a partial game ({} bytes) from the end of {}\n",
            existing.partial_bytes,
            cfg.pgn_out.display()
        ));
    }
    let (first, end) = cfg.slice();
    if !cfg.shard.is_whole() {
        out.push_str(&format!(
            "shard {}: games {} to {end} of {}\n",
            cfg.shard,
            first + 1,
            cfg.games
        ));
    }
    if existing.games > 0 {
        out.push_str(&format!(
            "{} already holds {} games: {}\n",
            cfg.pgn_out.display(),
            existing.games,
            if existing.games >= end - first {
                "nothing to play".to_string()
            } else {
                format!("playing games {} to {end}", first + existing.games + 1)
            }
        ));
    }
    out
}

/// The end-of-run report.
pub fn report(cfg: &Config, s: &Summary) -> String {
    let p = &s.progress;
    let [w, d, b] = p.results;
    let mut out = format!(
        "{}: {} game{} ({} already there, {} played now",
        cfg.pgn_out.display(),
        p.written,
        if p.written == 1 { "" } else { "s" },
        s.existing.games,
        p.played
    );
    if p.played > 0 {
        out.push_str(&format!(
            " in {:.1} s, {:.2} games/s, {:.0} engine moves/game; +{w} ={d} -{b} from White's view",
            p.seconds,
            p.games_per_second(),
            p.plies as f64 / p.played as f64
        ));
    }
    out.push_str(")\n");
    out
}
