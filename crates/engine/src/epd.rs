//! EPD records: a position (FEN without or with counters) and operations
//! such as `bm Qg6; id "WAC.001";` or, in perft suites, `;D4 197281`.

use anyhow::{anyhow, Context, Result};
use shakmaty::{san::San, Move};

use super::position::Position;

#[derive(Clone, Debug)]
pub struct Epd {
    pub pos: Position,
    pub fen: String,
    /// (opcode, operands) in file order, quotes removed.
    pub ops: Vec<(String, String)>,
}

impl Epd {
    pub fn parse(line: &str) -> Result<Epd> {
        let mut fields = line.split_whitespace();
        let board: Vec<&str> = fields.by_ref().take(4).collect();
        if board.len() < 4 {
            return Err(anyhow!("an EPD record needs 4 position fields"));
        }
        let rest: Vec<&str> = fields.collect();
        // Optional halfmove and fullmove counters before the operations.
        let counters: Vec<&str> = rest
            .iter()
            .take(2)
            .take_while(|w| w.parse::<u32>().is_ok())
            .copied()
            .collect();
        let fen = if counters.len() == 2 {
            format!("{} {}", board.join(" "), counters.join(" "))
        } else {
            format!("{} 0 1", board.join(" "))
        };
        let ops_text = rest[counters.len().min(2).min(rest.len())..].join(" ");
        let ops = ops_text
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|op| {
                let (code, operands) = op.split_once(char::is_whitespace).unwrap_or((op, ""));
                (
                    code.to_string(),
                    operands.trim().trim_matches('"').to_string(),
                )
            })
            .collect();
        let pos = Position::from_fen(&fen)?;
        Ok(Epd { pos, fen, ops })
    }

    pub fn op(&self, code: &str) -> Option<&str> {
        self.ops
            .iter()
            .find(|(c, _)| c == code)
            .map(|(_, v)| v.as_str())
    }

    pub fn id(&self) -> String {
        self.op("id").unwrap_or("").to_string()
    }

    /// The moves of a SAN move-list operation (`bm`, `am`).
    pub fn moves(&self, code: &str) -> Result<Vec<Move>> {
        let Some(list) = self.op(code) else {
            return Ok(Vec::new());
        };
        list.split_whitespace()
            .map(|san| {
                let san: San = san.parse().map_err(|e| anyhow!("bad SAN {san:?}: {e}"))?;
                san.to_move(&self.pos.chess)
                    .map_err(|e| anyhow!("{san} is not legal here: {e}"))
            })
            .collect()
    }
}

/// All records of an EPD file; a bad line is an error naming its line number.
pub fn read(path: &std::path::Path) -> Result<Vec<Epd>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| Epd::parse(l).with_context(|| format!("{}:{}", path.display(), i + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_wac_and_perft_records() {
        let e = Epd::parse(
            "2rr3k/pp3pp1/1nnqbN1p/3pN3/2pP4/2P3Q1/PPB4P/R4RK1 w - - bm Qg6; id \"WAC.001\";",
        )
        .unwrap();
        assert_eq!(e.id(), "WAC.001");
        assert_eq!(e.moves("bm").unwrap().len(), 1);
        let p = Epd::parse("4k3/8/8/8/8/8/8/4K2R w K - 0 1 ;D1 15 ;D2 66").unwrap();
        assert_eq!(p.op("D2"), Some("66"));
        assert!(Epd::parse("8/8 w").is_err());
    }
}
