//! The runner's command-line values, cutechess/fastchess style:
//! `name=lb,cmd=learnbook uci,proto=uci,option.Hash=64,dir=engines` for an
//! engine (`book=` a Polyglot `.bin` or learnbook book and `bookmode=best|weighted`,
//! weighted by default, as cutechess plays a book; `cmd=builtin` for the
//! in-process search core, with `weights=`, `net=` (the learned evaluation's
//! file), and `book=` played `best` by
//! default), `elo0=0,elo1=5,alpha=0.05,beta=0.05` for SPRT,
//! `movenumber=40,movecount=8,score=10` for draw adjudication,
//! `movecount=5,score=600` for resign adjudication.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};

use super::{
    game::{Limit, TimeControl},
    runner::PlayerSpec,
    stats::Sprt,
};
use crate::{
    book::choose::Mode,
    engine_io::protocol::{EngineSpec, Proto},
};

fn pairs(s: &str) -> Result<Vec<(String, String)>> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| anyhow!("{p:?} is not key=value"))
        })
        .collect()
}

/// A player and its own limit, if the spec gives `tc=`, `nodes=` or `depth=`.
pub fn parse_player_and_limit(s: &str) -> Result<(PlayerSpec, Option<Limit>)> {
    let mut limit = None;
    let mut rest = Vec::new();
    for part in s.split(',') {
        match part.split_once('=') {
            Some(("tc", v)) => {
                limit = Some(Limit::Clock(
                    v.parse::<TimeControl>().map_err(|e| anyhow!(e))?,
                ))
            }
            Some(("nodes", v)) => {
                limit = Some(Limit::Nodes(
                    v.parse().map_err(|_| anyhow!("nodes={v}: not a number"))?,
                ))
            }
            Some(("depth", v)) => {
                limit = Some(Limit::Depth(
                    v.parse().map_err(|_| anyhow!("depth={v}: not a number"))?,
                ))
            }
            _ => rest.push(part),
        }
    }
    Ok((parse_player(&rest.join(","))?, limit))
}

pub fn parse_player(s: &str) -> Result<PlayerSpec> {
    let mut name = None;
    let mut cmd = None;
    let mut proto = Proto::Uci;
    let mut options = Vec::new();
    let mut dir = None;
    let (mut weights, mut book, mut book_mode, mut net) = (None, None, None, None);
    for (k, v) in pairs(s)? {
        match k.as_str() {
            "name" => name = Some(v),
            "cmd" => cmd = Some(v),
            "proto" => {
                proto = match v.as_str() {
                    "uci" => Proto::Uci,
                    "xboard" | "cecp" => Proto::Xboard,
                    _ => bail!("proto must be uci or xboard, not {v:?}"),
                }
            }
            "dir" => dir = Some(PathBuf::from(v)),
            "weights" => weights = Some(PathBuf::from(v)),
            "net" => net = Some(crate::engine::default_net::NetChoice::named(&v)),
            "book" => book = Some(PathBuf::from(v)),
            "bookmode" => book_mode = Some(v.parse().map_err(|e: String| anyhow!(e))?),
            _ => match k.strip_prefix("option.") {
                Some(opt) => options.push((opt.to_string(), v)),
                None => bail!("unknown engine setting {k:?} (name, cmd, proto, dir, option.X, weights, net, book, bookmode)"),
            },
        }
    }
    let cmd = cmd.ok_or_else(|| anyhow!("engine {s:?} has no cmd="))?;
    if cmd == "builtin" {
        return Ok(PlayerSpec::Builtin {
            name: name.unwrap_or_else(|| "builtin".into()),
            weights,
            net: net.unwrap_or_default(),
            book,
            book_mode: book_mode.unwrap_or(Mode::Best),
        });
    }
    if weights.is_some() || net.is_some() {
        bail!("weights= and net= are for cmd=builtin; external engines take option.X=");
    }
    if book.is_none() && book_mode.is_some() {
        bail!("bookmode= needs book=");
    }
    let argv: Vec<String> = cmd.split_whitespace().map(String::from).collect();
    let name = name.unwrap_or_else(|| argv.first().cloned().unwrap_or_default());
    let engine = EngineSpec {
        name,
        argv,
        proto,
        options,
        dir,
    };
    Ok(match book {
        // As cutechess plays a book: by weight unless told otherwise.
        Some(book) => PlayerSpec::Booked {
            engine,
            book,
            book_mode: book_mode.unwrap_or(Mode::Weighted),
            deep_nodes: None,
        },
        None => PlayerSpec::External(engine),
    })
}

/// The engine behind `uci --engine`: a command line, or a spec with
/// `cmd=` (`name=`, `option.X=`, `dir=`); a UCI engine without a book of
/// its own (the adapter's book is `--book`).
pub fn parse_inner_engine(s: &str) -> Result<EngineSpec> {
    if !s.contains("cmd=") {
        let argv: Vec<String> = s.split_whitespace().map(String::from).collect();
        let Some(program) = argv.first() else {
            bail!("--engine needs a command");
        };
        let name = std::path::Path::new(program)
            .file_name()
            .map_or(program.clone(), |n| n.to_string_lossy().into_owned());
        return Ok(EngineSpec {
            name,
            argv,
            proto: Proto::Uci,
            options: Vec::new(),
            dir: None,
        });
    }
    match parse_player(s)? {
        PlayerSpec::External(e) if e.proto == Proto::Uci => Ok(e),
        PlayerSpec::External(_) => bail!("--engine: the adapter speaks UCI only (proto=uci)"),
        PlayerSpec::Booked { .. } => {
            bail!("--engine takes no book=: the adapter's book is --book")
        }
        _ => bail!("--engine takes an external UCI engine (without --engine `learnbook uci` is the search core)"),
    }
}

pub fn parse_sprt(s: &str) -> Result<Sprt> {
    let mut sprt = Sprt {
        elo0: 0.0,
        elo1: 5.0,
        alpha: 0.05,
        beta: 0.05,
    };
    for (k, v) in pairs(s)? {
        let x: f64 = v
            .parse()
            .map_err(|_| anyhow!("{k}: {v:?} is not a number"))?;
        match k.as_str() {
            "elo0" => sprt.elo0 = x,
            "elo1" => sprt.elo1 = x,
            "alpha" => sprt.alpha = x,
            "beta" => sprt.beta = x,
            _ => bail!("unknown SPRT setting {k:?} (elo0, elo1, alpha, beta)"),
        }
    }
    if sprt.elo1 <= sprt.elo0
        || !(0.0..0.5).contains(&sprt.alpha)
        || !(0.0..0.5).contains(&sprt.beta)
    {
        bail!("SPRT needs elo0 < elo1 and 0 < alpha, beta < 0.5");
    }
    Ok(sprt)
}

fn numbers(s: &str, keys: &[&str]) -> Result<Vec<i64>> {
    let mut out = vec![None; keys.len()];
    for (k, v) in pairs(s)? {
        let i = keys
            .iter()
            .position(|x| *x == k)
            .ok_or_else(|| anyhow!("unknown setting {k:?} (expected {keys:?})"))?;
        out[i] = Some(
            v.parse::<i64>()
                .map_err(|_| anyhow!("{k}: {v:?} is not an integer"))?,
        );
    }
    out.into_iter()
        .zip(keys)
        .map(|(v, k)| v.ok_or_else(|| anyhow!("missing {k}=")))
        .collect()
}

/// `movenumber=N,movecount=N,score=CP`.
pub fn parse_draw(s: &str) -> Result<(u32, u32, i32)> {
    let v = numbers(s, &["movenumber", "movecount", "score"])?;
    Ok((v[0].max(0) as u32, v[1].max(1) as u32, v[2].abs() as i32))
}

/// `movecount=N,score=CP`.
pub fn parse_resign(s: &str) -> Result<(u32, i32)> {
    let v = numbers(s, &["movecount", "score"])?;
    Ok((v[0].max(1) as u32, v[1].abs() as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_and_settings() {
        let p =
            parse_player("name=ph,cmd=/usr/games/phalanx -l-,proto=xboard,option.Hash=16").unwrap();
        match p {
            PlayerSpec::External(e) => {
                assert_eq!(e.name, "ph");
                assert_eq!(e.argv, vec!["/usr/games/phalanx", "-l-"]);
                assert_eq!(e.proto, Proto::Xboard);
                assert_eq!(e.options, vec![("Hash".to_string(), "16".to_string())]);
            }
            _ => panic!("external expected"),
        }
        assert!(matches!(
            parse_player("cmd=builtin,bookmode=weighted").unwrap(),
            PlayerSpec::Builtin { .. }
        ));
        assert!(parse_player("name=x").is_err());
        match parse_player("cmd=stockfish,book=a.bin").unwrap() {
            PlayerSpec::Booked {
                book, book_mode, ..
            } => assert_eq!((book, book_mode), (PathBuf::from("a.bin"), Mode::Weighted)),
            other => panic!("booked expected, got {other:?}"),
        }
        assert!(matches!(
            parse_player("cmd=stockfish,book=a.bin,bookmode=best").unwrap(),
            PlayerSpec::Booked {
                book_mode: Mode::Best,
                ..
            }
        ));
        assert!(parse_player("cmd=stockfish,bookmode=best").is_err());
        assert!(parse_player("cmd=stockfish,weights=w.toml").is_err());
        let (p, l) = parse_player_and_limit("name=g,cmd=glaurung,depth=6").unwrap();
        assert_eq!(p.name(), "g");
        assert_eq!(l, Some(Limit::Depth(6)));
        assert!(parse_player("cmd=x,proto=telnet").is_err());
        assert!(parse_player("cmd=x,frob=1").is_err());
        let s = parse_sprt("elo0=0,elo1=10").unwrap();
        assert_eq!((s.elo0, s.elo1, s.alpha), (0.0, 10.0, 0.05));
        assert!(parse_sprt("elo0=5,elo1=0").is_err());
        assert_eq!(
            parse_draw("movenumber=40,movecount=8,score=10").unwrap(),
            (40, 8, 10)
        );
        assert!(parse_resign("movecount=3").is_err());
    }
}

/// A match's limit as given for both engines: at most one of them.
#[derive(Clone, Debug, Default)]
pub struct CommonLimit {
    /// Time control moves/seconds+increment (10+0.1, 40/60).
    pub tc: Option<String>,
    /// Fixed nodes per move.
    pub nodes: Option<u64>,
    /// Fixed depth per move.
    pub depth: Option<u32>,
}

/// The two players of a match and their limits, from two `--engine` specs
/// and at most one of --tc, --nodes, --depth (without one, a per-engine
/// limit stands for both): what `play` and `bench suite` read.
#[derive(Clone, Debug)]
pub struct MatchEngines {
    pub players: [PlayerSpec; 2],
    pub limit: Limit,
    /// Per-engine `tc=`, `nodes=`, `depth=`, overriding `limit`.
    pub limits: [Option<Limit>; 2],
}

impl MatchEngines {
    pub fn parse(specs: &[String], limit: &CommonLimit) -> Result<MatchEngines> {
        let [a, b] = specs else {
            bail!("--engine must be given exactly twice");
        };
        let (pa, la) = parse_player_and_limit(a)?;
        let (pb, lb) = parse_player_and_limit(b)?;
        let limit = match (limit.tc.as_deref(), limit.nodes, limit.depth) {
            (Some(tc), None, None) => Limit::Clock(tc.parse().map_err(|e: String| anyhow!(e))?),
            (None, Some(n), None) => Limit::Nodes(n),
            (None, None, Some(d)) => Limit::Depth(d),
            (None, None, None) => match (la, lb) {
                (Some(l), _) | (None, Some(l)) => l,
                _ => {
                    bail!("give one of --tc, --nodes, --depth (or tc=, nodes=, depth= per engine)")
                }
            },
            _ => bail!("give one of --tc, --nodes, --depth"),
        };
        Ok(MatchEngines {
            players: [pa, pb],
            limit,
            limits: [la, lb],
        })
    }
}
