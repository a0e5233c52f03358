//! A game as the journal stores it: a record of bytes, and back.

use anyhow::{anyhow, bail, Result};

use crate::keys::{Key, MoveCode};
use crate::pgn::game::{Game, GameResult, GameTags, Ply};

/// The journal record of `game`, for [`Journal::append_record`](super::Journal::append_record) (made on
/// the thread that validated the game).
pub fn record(game: &Game) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 11 * game.plies.len());
    encode(game, &mut out);
    out
}

/// A record: its length (u32, itself included), then the game's fields
/// and, per stored move, its code, castling flag and the key it leads to.
pub(super) fn encode(g: &Game, out: &mut Vec<u8>) {
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&g.hash.to_le_bytes());
    out.push(match g.result {
        GameResult::WhiteWins => 0,
        GameResult::Draw => 1,
        GameResult::BlackWins => 2,
        GameResult::Unknown => 3,
    });
    out.extend_from_slice(&g.start.0.to_le_bytes());
    out.extend_from_slice(&g.start_ply.to_le_bytes());
    out.extend_from_slice(&g.total_plies.to_le_bytes());
    let terminal = g.terminal.map_or(f64::NAN, |t| t);
    out.push(u8::from(g.terminal.is_some()));
    out.extend_from_slice(&terminal.to_le_bytes());
    for elo in [g.white_elo, g.black_elo] {
        out.push(u8::from(elo.is_some()));
        out.extend_from_slice(&elo.unwrap_or(0).to_le_bytes());
    }
    for name in [&g.white, &g.black] {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
    }
    out.extend_from_slice(&(g.plies.len() as u32).to_le_bytes());
    for p in &g.plies {
        out.extend_from_slice(&p.mv.0.to_le_bytes());
        out.push(u8::from(p.castle));
        out.extend_from_slice(&p.child.0.to_le_bytes());
    }
    let t = &g.tags;
    for tag in [&t.event, &t.site, &t.date, &t.round, &t.fen] {
        match tag {
            Some(v) => {
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v.as_bytes());
            }
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
    }
    out.extend_from_slice(&(g.rest.len() as u32).to_le_bytes());
    for m in &g.rest {
        out.extend_from_slice(&m.to_le_bytes());
    }
    let len = out.len() as u32;
    out[..4].copy_from_slice(&len.to_le_bytes());
}

/// What [`decode`] reads of a record.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Fields {
    /// Everything: the game as the book stores it.
    All,
    /// What the counts need: no names, tags or moves past max-ply (the
    /// passes that count read every record, some twice).
    Counts,
}

/// Reads what [`encode`] wrote (after the length).
pub(super) fn decode(b: &[u8], fields: Fields) -> Result<Game> {
    let mut r = Cursor { b, at: 0 };
    let hash = r.u64()?;
    let result = match r.u8()? {
        0 => GameResult::WhiteWins,
        1 => GameResult::Draw,
        2 => GameResult::BlackWins,
        3 => GameResult::Unknown,
        x => bail!("a damaged journal record (result {x})"),
    };
    let start = Key(r.u64()?);
    let start_ply = r.u32()?;
    let total_plies = r.u32()?;
    let has_terminal = r.u8()? != 0;
    let terminal = f64::from_bits(r.u64()?);
    let mut elo = [None; 2];
    for e in &mut elo {
        let has = r.u8()? != 0;
        let v = r.u32()?;
        *e = has.then_some(v);
    }
    let (white, black) = if fields == Fields::All {
        (r.string()?, r.string()?)
    } else {
        r.skip_string()?;
        r.skip_string()?;
        (String::new(), String::new())
    };
    let n = r.u32()? as usize;
    let mut plies = Vec::with_capacity(n.min(b.len()));
    let mut parent = start;
    for _ in 0..n {
        let mv = MoveCode(r.u16()?);
        let castle = r.u8()? != 0;
        let child = Key(r.u64()?);
        plies.push(Ply {
            parent,
            mv,
            child,
            castle,
        });
        parent = child;
    }
    let (tags, rest) = if fields == Fields::All {
        let mut tag = || r.optional_string();
        let tags = GameTags {
            event: tag()?,
            site: tag()?,
            date: tag()?,
            round: tag()?,
            fen: tag()?,
        };
        let n = r.u32()? as usize;
        let mut rest = Vec::with_capacity(n.min(b.len()));
        for _ in 0..n {
            rest.push(r.u16()?);
        }
        (tags, rest)
    } else {
        (GameTags::default(), Vec::new())
    };
    Ok(Game {
        white,
        black,
        result,
        hash,
        start,
        start_ply,
        plies,
        total_plies,
        terminal: has_terminal.then_some(terminal),
        white_elo: elo[0],
        black_elo: elo[1],
        tags,
        rest,
    })
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let s = self
            .b
            .get(self.at..self.at + n)
            .ok_or_else(|| anyhow!("a damaged journal record (cut short)"))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        let mut a = [0; 2];
        a.copy_from_slice(self.take(2)?);
        Ok(u16::from_le_bytes(a))
    }
    fn u32(&mut self) -> Result<u32> {
        let mut a = [0; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    fn u64(&mut self) -> Result<u64> {
        let mut a = [0; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn string(&mut self) -> Result<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|_| anyhow!("a damaged journal record (a name is not UTF-8)"))
    }
    fn skip_string(&mut self) -> Result<()> {
        let n = self.u32()? as usize;
        self.take(n).map(|_| ())
    }
    /// A string or nothing (length `u32::MAX`).
    fn optional_string(&mut self) -> Result<Option<String>> {
        let n = self.u32()?;
        if n == u32::MAX {
            return Ok(None);
        }
        String::from_utf8(self.take(n as usize)?.to_vec())
            .map(Some)
            .map_err(|_| anyhow!("a damaged journal record (a tag is not UTF-8)"))
    }
}
