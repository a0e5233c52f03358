//! The evaluation a search uses, as a command line or UCI's `EvalFile`
//! names it: the net embedded in the binary (the default), the
//! hand-crafted evaluation of the weights, or a net file.
//!
//! The embedded net is the night's N = 64 net (docs/bench/net-night): +108
//! Elo over the hand-crafted evaluation at 10+0.1 on openings its data never
//! saw. The hand-crafted evaluation stays for the Texel fit, the presets
//! (`hand`, `kaissa`, `kotok`, `default`) and the tuner's named weights.

use std::{fmt, path::PathBuf, str::FromStr, sync::Arc};

use anyhow::{Context, Result};

use crate::net::Network;

/// The embedded net's bytes (the layout of [`crate::net`]).
const EMBEDDED: &[u8] = include_bytes!("../nets/nn-b5ce2d146a31.nnue");

/// The embedded net's name: the first 12 hex digits of its SHA-256, as the
/// file in `crates/engine/nets` is named. No UCI keyword (`default`, `name`,
/// `type`, `min`, `max`, `var`) as a word in it: GUIs' option parsers split
/// `option` lines at those words (python-chess read `default-…` as `-…`).
pub const EMBEDDED_NAME: &str = "nn-b5ce2d146a31.nnue";

/// The embedded net, read afresh (about 100 KB; a test checks it reads).
pub fn embedded() -> Result<Network> {
    Network::from_bytes(EMBEDDED).context("the embedded net")
}

/// The embedded net's file, as `crates/engine/nets` holds it.
pub fn embedded_bytes() -> &'static [u8] {
    EMBEDDED
}

/// Which evaluation to search with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum NetChoice {
    /// The net embedded in the binary (`default`, or its [`EMBEDDED_NAME`]).
    #[default]
    Embedded,
    /// The hand-crafted evaluation of the weights (`none`).
    HandCrafted,
    /// A net file (`learnbook train`'s output).
    File(PathBuf),
}

impl NetChoice {
    /// `default` or the embedded net's name, `none`, or a path (`./none`
    /// for a file of that name).
    pub fn named(s: &str) -> NetChoice {
        match s {
            "default" | EMBEDDED_NAME => NetChoice::Embedded,
            "none" => NetChoice::HandCrafted,
            _ => NetChoice::File(PathBuf::from(s)),
        }
    }

    /// The net to search with (`None`: the weights' evaluation).
    pub fn load(&self) -> Result<Option<Arc<Network>>> {
        Ok(match self {
            NetChoice::Embedded => Some(Arc::new(embedded()?)),
            NetChoice::HandCrafted => None,
            NetChoice::File(p) => Some(Arc::new(Network::load(p)?)),
        })
    }
}

impl FromStr for NetChoice {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<NetChoice, Self::Err> {
        Ok(NetChoice::named(s))
    }
}

impl fmt::Display for NetChoice {
    /// What [`NetChoice::from_str`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetChoice::Embedded => f.write_str("default"),
            NetChoice::HandCrafted => f.write_str("none"),
            NetChoice::File(p) => write!(f, "{}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_net_reads_and_knows_material() {
        let net = embedded().expect("embedded net");
        assert_eq!(net.hidden(), 64);
        let start = shakmaty::Chess::default();
        let queen_odds: shakmaty::Chess =
            "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
                .parse::<shakmaty::fen::Fen>()
                .expect("fen")
                .into_position(shakmaty::CastlingMode::Standard)
                .expect("legal");
        let (even, up) = (
            net.evaluate_position(&start),
            net.evaluate_position(&queen_odds),
        );
        assert!(even.abs() < 100, "start {even}");
        assert!(up > even + 500, "a queen up {up}, start {even}");
    }

    #[test]
    fn choices_read_back_as_written() {
        for text in ["default", "none", "nets/x.nnue"] {
            let c: NetChoice = text.parse().expect("infallible");
            assert_eq!(c.to_string(), text);
        }
        assert_eq!(EMBEDDED_NAME.parse(), Ok(NetChoice::Embedded));
        assert!(matches!("./none".parse(), Ok(NetChoice::File(_))));
    }
}
