//! One game between two players: clocks, the rules (from shakmaty),
//! optional adjudication, and the record that becomes PGN.

use std::{collections::HashMap, fmt::Write as _, time::Instant};

use shakmaty::{
    fen::Fen, san::SanPlus, zobrist::Zobrist64, CastlingMode, Chess, Color, EnPassantMode, Move,
    Position,
};

use crate::book::pgn::write::{MoveNumber, MovetextWriter};
use crate::engine_io::protocol::{Budget, Player, Reply, Request};

/// `moves/seconds+increment` (cutechess `tc=`): `40/60+0.6`, `10+0.1`, `60`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeControl {
    pub base_ms: u64,
    pub inc_ms: u64,
    pub moves: Option<u32>,
}

impl std::str::FromStr for TimeControl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "bad time control {s:?} (expected moves/seconds+increment, e.g. 10+0.1 or 40/60)"
            )
        };
        let (moves, rest) = match s.split_once('/') {
            Some((m, r)) => (Some(m.parse::<u32>().map_err(|_| bad())?), r),
            None => (None, s),
        };
        let (base, inc) = match rest.split_once('+') {
            Some((b, i)) => (b, i),
            None => (rest, "0"),
        };
        let secs = |t: &str| -> Result<u64, String> {
            // Also m:ss.
            let v = match t.split_once(':') {
                Some((m, sec)) => {
                    m.parse::<f64>().map_err(|_| bad())? * 60.0
                        + sec.parse::<f64>().map_err(|_| bad())?
                }
                None => t.parse::<f64>().map_err(|_| bad())?,
            };
            if !(0.0..1e7).contains(&v) {
                return Err(bad());
            }
            Ok((v * 1000.0).round() as u64)
        };
        let tc = TimeControl {
            base_ms: secs(base)?,
            inc_ms: secs(inc)?,
            moves,
        };
        if tc.base_ms == 0 && tc.inc_ms == 0 {
            return Err(bad());
        }
        Ok(tc)
    }
}

impl std::fmt::Display for TimeControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(m) = self.moves {
            write!(f, "{m}/")?;
        }
        write!(f, "{}", self.base_ms as f64 / 1000.0)?;
        if self.inc_ms > 0 {
            write!(f, "+{}", self.inc_ms as f64 / 1000.0)?;
        }
        Ok(())
    }
}

/// How long each move may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    Clock(TimeControl),
    Nodes(u64),
    Depth(u32),
}

/// Optional early ends, as cutechess's `-draw` and `-resign`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Adjudication {
    /// Draw once both engines report |score| <= `score` cp for `movecount`
    /// consecutive moves each, after move `movenumber`.
    pub draw: Option<(u32, u32, i32)>,
    /// A loss once an engine reports <= -`score` cp for `movecount` consecutive moves
    /// and its opponent agrees (>= `score`).
    pub resign: Option<(u32, i32)>,
    /// A draw after this many full moves.
    pub max_moves: Option<u32>,
}

/// Where a game starts: a position (FEN) and moves played from it.
#[derive(Clone, Debug)]
pub struct Opening {
    pub fen: Option<String>,
    pub moves: Vec<Move>,
}

impl Opening {
    pub fn start_position(&self) -> Result<Chess, String> {
        match &self.fen {
            None => Ok(Chess::default()),
            Some(f) => f
                .parse::<Fen>()
                .map_err(|e| format!("bad FEN {f:?}: {e}"))?
                .into_position(CastlingMode::Standard)
                .map_err(|e| format!("illegal position {f:?}: {e}")),
        }
    }
}

/// What the engine said about the move it played: its score and depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eval {
    /// Centipawns from the mover's view; mate in `n` plies as `+-(30000 - n)`
    /// (the search core's and [`crate::engine_io::protocol::parse_info`]'s convention).
    pub score_cp: i32,
    pub depth: u32,
}

/// Scores beyond this are mates (`MATE - plies`).
const MATE: i32 = crate::engine::search::MATE;
const MATE_BOUND: i32 = crate::engine::search::MATE_BOUND;

impl Eval {
    /// The score as cutechess writes it in PGN comments: pawns with two
    /// decimals and a sign when positive (`+0.35`, `-1.20`, `0.00`), a mate
    /// as `+M5` / `-M4` (plies to mate); then `/depth`.
    pub fn cutechess(&self) -> String {
        let s = self.score_cp;
        let score = if s >= MATE_BOUND {
            format!("+M{}", MATE - s)
        } else if s <= -MATE_BOUND {
            format!("-M{}", MATE + s)
        } else if s > 0 {
            format!("+{}.{:02}", s / 100, s % 100)
        } else {
            format!(
                "{}{}.{:02}",
                if s < 0 { "-" } else { "" },
                -s / 100,
                -s % 100
            )
        };
        format!("{score}/{}", self.depth)
    }

    /// Reads a comment as [`Eval::cutechess`] writes it (cutechess's own
    /// comments, with a time after a space, are read too).
    pub fn parse(comment: &str) -> Option<Eval> {
        let text = comment.split_whitespace().next()?;
        let (score, depth) = text.split_once('/')?;
        let depth: u32 = depth.parse().ok()?;
        let (negative, body) = match score.as_bytes().first()? {
            b'+' => (false, &score[1..]),
            b'-' => (true, &score[1..]),
            _ => (false, score),
        };
        let cp = if let Some(plies) = body.strip_prefix('M') {
            let plies: i32 = plies.parse().ok()?;
            if !(0..=MATE - MATE_BOUND).contains(&plies) {
                return None;
            }
            MATE - plies
        } else {
            // Pawns: digits, then optionally a point and one or two digits.
            let (whole, frac) = body.split_once('.').unwrap_or((body, "0"));
            let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
            if !digits(whole) || !digits(frac) || frac.len() > 2 || whole.len() > 3 {
                return None;
            }
            let hundredths = if frac.len() == 1 { 10 } else { 1 };
            whole.parse::<i32>().ok()? * 100 + frac.parse::<i32>().ok()? * hundredths
        };
        Some(Eval {
            score_cp: if negative { -cp } else { cp },
            depth,
        })
    }
}

/// A finished game.
#[derive(Clone, Debug)]
pub struct GameRecord {
    pub white: String,
    pub black: String,
    pub start_fen: Option<String>,
    pub moves: Vec<Move>,
    /// The engine's score and depth for each of `moves` (`None` for opening
    /// and book moves, and for engines that report no score).
    pub evals: Vec<Option<Eval>>,
    /// `1-0`, `0-1` or `1/2-1/2`.
    pub result: &'static str,
    pub termination: String,
    pub time_control: String,
    /// The side whose engine failed (crash, hang, illegal move): it must be restarted.
    pub fault: Option<Color>,
}

impl GameRecord {
    /// The score of `color`'s player: 1, 0.5 or 0.
    pub fn score_of(&self, color: Color) -> f64 {
        match (self.result, color) {
            ("1-0", Color::White) | ("0-1", Color::Black) => 1.0,
            ("1/2-1/2", _) => 0.5,
            _ => 0.0,
        }
    }

    /// The game as PGN: the standard tags, then `tags`; the engine's score
    /// of every move it searched as a comment after it, as cutechess writes
    /// them: `{+0.35/12}` (none after book and opening moves).
    pub fn pgn(&self, event: &str, round: u64, date: &str, tags: &[(&str, &str)]) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "[Event \"{event}\"]");
        let _ = writeln!(s, "[Site \"learnbook\"]");
        let _ = writeln!(s, "[Date \"{date}\"]");
        let _ = writeln!(s, "[Round \"{round}\"]");
        let _ = writeln!(s, "[White \"{}\"]", self.white.replace('"', "'"));
        let _ = writeln!(s, "[Black \"{}\"]", self.black.replace('"', "'"));
        let _ = writeln!(s, "[Result \"{}\"]", self.result);
        if let Some(f) = &self.start_fen {
            let _ = writeln!(s, "[SetUp \"1\"]");
            let _ = writeln!(s, "[FEN \"{f}\"]");
        }
        let _ = writeln!(s, "[PlyCount \"{}\"]", self.moves.len());
        let _ = writeln!(s, "[TimeControl \"{}\"]", self.time_control);
        let _ = writeln!(
            s,
            "[Termination \"{}\"]",
            self.termination.replace('"', "'")
        );
        for (name, value) in tags {
            let _ = writeln!(s, "[{name} \"{}\"]", value.replace('"', "'"));
        }
        s.push('\n');
        let mut pos = Opening {
            fen: self.start_fen.clone(),
            moves: Vec::new(),
        }
        .start_position()
        .unwrap_or_default();
        // Writing to memory cannot fail.
        let mut line = MovetextWriter::cutechess(Vec::new());
        for (i, m) in self.moves.iter().enumerate() {
            let at = MoveNumber::of(&pos);
            let san = SanPlus::from_move_and_play_unchecked(&mut pos, *m);
            let _ = line.mv(at, &san.to_string());
            if let Some(Some(e)) = self.evals.get(i) {
                let _ = line.comment(&e.cutechess());
            }
        }
        let _ = line.result(self.result);
        let _ = line.raw("\n");
        s.push_str(&line.into_string());
        s
    }
}

fn key(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0
}

/// Plays `white` against `black` from `opening`. Never fails: a fault of an
/// engine loses the game for it, with the reason in `termination`.
pub fn play_game(
    white: &mut dyn Player,
    black: &mut dyn Player,
    opening: &Opening,
    limits: [&Limit; 2],
    adj: &Adjudication,
) -> GameRecord {
    let names = [white.name().to_string(), black.name().to_string()];
    let describe = |l: &Limit| match l {
        Limit::Clock(tc) => tc.to_string(),
        Limit::Nodes(n) => format!("nodes={n}"),
        Limit::Depth(d) => format!("depth={d}"),
    };
    let tc_text = if limits[0] == limits[1] {
        describe(limits[0])
    } else {
        format!("{} vs {}", describe(limits[0]), describe(limits[1]))
    };
    let mut record = GameRecord {
        white: names[0].clone(),
        black: names[1].clone(),
        start_fen: opening.fen.clone(),
        moves: Vec::new(),
        evals: Vec::new(),
        result: "*",
        termination: String::new(),
        time_control: tc_text,
        fault: None,
    };
    let start = match opening.start_position() {
        Ok(p) => p,
        Err(e) => {
            record.result = "1/2-1/2";
            record.termination = format!("bad opening: {e}");
            return record;
        }
    };
    let mut pos = start.clone();
    let mut repetitions: HashMap<u64, u32> = HashMap::new();
    *repetitions.entry(key(&pos)).or_default() += 1;
    for &m in &opening.moves {
        if !pos.is_legal(m) {
            record.result = "1/2-1/2";
            record.termination = "bad opening: illegal move".into();
            return record;
        }
        pos.play_unchecked(m);
        record.moves.push(m);
        record.evals.push(None);
        *repetitions.entry(key(&pos)).or_default() += 1;
    }
    if let Err(f) = white.new_game() {
        return lose(record, Color::White, f.to_string(), true);
    }
    if let Err(f) = black.new_game() {
        return lose(record, Color::Black, f.to_string(), true);
    }
    let base = |l: &Limit| match l {
        Limit::Clock(tc) => tc.base_ms as i64,
        _ => 0,
    };
    let mut clock = [base(limits[0]), base(limits[1])];
    // Adjudication streaks: [white, black] consecutive qualifying moves.
    let mut draw_streak = [0u32; 2];
    let mut resign_streak = [0u32; 2];
    let mut win_streak = [0u32; 2];
    let mut moves_in_period = [0u32; 2];
    loop {
        if let Some(outcome) = rules_outcome(&pos, &repetitions) {
            record.result = outcome.0;
            record.termination = outcome.1.into();
            return record;
        }
        let side = pos.turn();
        let idx = if side == Color::White { 0 } else { 1 };
        if let Some(max) = adj.max_moves {
            if pos.fullmoves().get() > max {
                record.result = "1/2-1/2";
                record.termination = format!("adjudication: {max} moves");
                return record;
            }
        }
        let limit = limits[idx];
        let inc = |l: &Limit| match l {
            Limit::Clock(tc) => tc.inc_ms,
            _ => 0,
        };
        // An unclocked opponent is shown the mover's own clock.
        let other = if matches!(limits[1 - idx], Limit::Clock(_)) {
            clock[1 - idx]
        } else {
            clock[idx]
        };
        let (wtime, btime) = if idx == 0 {
            (clock[0], other)
        } else {
            (other, clock[1])
        };
        let budget = match limit {
            Limit::Clock(tc) => Budget::Clock {
                wtime: wtime.max(0) as u64,
                btime: btime.max(0) as u64,
                winc: if idx == 0 { tc.inc_ms } else { inc(limits[0]) },
                binc: if idx == 1 { tc.inc_ms } else { inc(limits[1]) },
                movestogo: tc.moves.map(|m| m - moves_in_period[idx] % m),
            },
            Limit::Nodes(n) => Budget::Nodes(*n),
            Limit::Depth(d) => Budget::Depth(*d),
        };
        let req = Request {
            start_fen: opening.fen.as_deref(),
            start: &start,
            moves: &record.moves,
            position: &pos,
            budget,
        };
        let player: &mut dyn Player = if side == Color::White {
            &mut *white
        } else {
            &mut *black
        };
        let t = Instant::now();
        let reply = player.think(&req);
        let used = t.elapsed().as_millis() as i64;
        let (mv, score, depth) = match reply {
            Ok(Reply::Move {
                mv,
                score_cp,
                depth,
            }) => (mv, score_cp, depth),
            Ok(Reply::Resign) => return lose(record, side, "resignation".into(), false),
            Err(f) => return lose(record, side, f.to_string(), true),
        };
        if let Limit::Clock(tc) = limit {
            clock[idx] -= used;
            if clock[idx] < 0 {
                return lose(record, side, "time forfeit".into(), false);
            }
            clock[idx] += tc.inc_ms as i64;
            moves_in_period[idx] += 1;
            if let Some(m) = tc.moves {
                if moves_in_period[idx] % m == 0 {
                    clock[idx] += tc.base_ms as i64;
                }
            }
        }
        pos.play_unchecked(mv);
        record.moves.push(mv);
        record.evals.push(score.map(|score_cp| Eval {
            score_cp,
            depth: depth.unwrap_or(0),
        }));
        *repetitions.entry(key(&pos)).or_default() += 1;

        if let Some(s) = score {
            if let Some((movenumber, movecount, margin)) = adj.draw {
                draw_streak[idx] = if s.abs() <= margin && pos.fullmoves().get() > movenumber {
                    draw_streak[idx] + 1
                } else {
                    0
                };
                if draw_streak[0] >= movecount && draw_streak[1] >= movecount {
                    record.result = "1/2-1/2";
                    record.termination = "adjudication: draw by score".into();
                    return record;
                }
            }
            if let Some((movecount, margin)) = adj.resign {
                resign_streak[idx] = if s <= -margin {
                    resign_streak[idx] + 1
                } else {
                    0
                };
                win_streak[idx] = if s >= margin { win_streak[idx] + 1 } else { 0 };
                let other = 1 - idx;
                if resign_streak[idx] >= movecount && win_streak[other] >= movecount {
                    return lose(record, side, "adjudication: loss by score".into(), false);
                }
            }
        }
    }
}

fn lose(mut record: GameRecord, side: Color, why: String, fault: bool) -> GameRecord {
    record.result = if side == Color::White { "0-1" } else { "1-0" };
    record.termination = format!(
        "{} {why}",
        if side == Color::White {
            "white"
        } else {
            "black"
        }
    );
    if fault {
        record.fault = Some(side);
    }
    record
}

/// The result by the rules, if the game is over.
fn rules_outcome(pos: &Chess, reps: &HashMap<u64, u32>) -> Option<(&'static str, &'static str)> {
    if pos.is_checkmate() {
        return Some((
            if pos.turn() == Color::White {
                "0-1"
            } else {
                "1-0"
            },
            "checkmate",
        ));
    }
    if pos.is_stalemate() {
        return Some(("1/2-1/2", "stalemate"));
    }
    if pos.is_insufficient_material() {
        return Some(("1/2-1/2", "insufficient material"));
    }
    if pos.halfmoves() >= 100 {
        return Some(("1/2-1/2", "fifty-move rule"));
    }
    if reps.get(&key(pos)).copied().unwrap_or(0) >= 3 {
        return Some(("1/2-1/2", "threefold repetition"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_controls() {
        let tc: TimeControl = "10+0.1".parse().unwrap();
        assert_eq!(
            tc,
            TimeControl {
                base_ms: 10_000,
                inc_ms: 100,
                moves: None
            }
        );
        assert_eq!(tc.to_string(), "10+0.1");
        let tc: TimeControl = "40/60".parse().unwrap();
        assert_eq!(
            tc,
            TimeControl {
                base_ms: 60_000,
                inc_ms: 0,
                moves: Some(40)
            }
        );
        assert_eq!("1:30+1".parse::<TimeControl>().unwrap().base_ms, 90_000);
        assert!("abc".parse::<TimeControl>().is_err());
        assert!("0".parse::<TimeControl>().is_err());
    }

    #[test]
    fn evals_are_written_and_read_as_cutechess_does() {
        let cases = [
            (35, 12, "+0.35/12"),
            (-120, 9, "-1.20/9"),
            (0, 1, "0.00/1"),
            (-5, 3, "-0.05/3"),
            (1999, 20, "+19.99/20"),
            (MATE - 5, 12, "+M5/12"),
            (-MATE + 4, 8, "-M4/8"),
            (MATE - 1, 1, "+M1/1"),
        ];
        for (score_cp, depth, text) in cases {
            let e = Eval { score_cp, depth };
            assert_eq!(e.cutechess(), text);
            assert_eq!(Eval::parse(text), Some(e), "{text}");
        }
        // cutechess's own comments carry the time after a space.
        assert_eq!(
            Eval::parse("+0.3/16 5.1s"),
            Some(Eval {
                score_cp: 30,
                depth: 16
            })
        );
        for bad in [
            "",
            "book",
            "+0.35",
            "+/12",
            "+0.355/12",
            "+0.3x/12",
            "+M/3",
            "+M999/3",
            "1.2.3/4",
            "+0.35/-1",
        ] {
            assert_eq!(Eval::parse(bad), None, "{bad:?}");
        }
    }
}
