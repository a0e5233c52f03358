//! Positions to fit on, from PGN: every game's quiet positions after the
//! opening, labelled with the game's result (optionally blended with the
//! search score the game stored in its comments, `{+0.35/12}`), traced
//! under the start weights.

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use pgn_reader::{KnownOutcome, Outcome};
use rayon::prelude::*;
use shakmaty::{fen::Fen, CastlingMode, Chess, Color};

use super::model::{terms_of, Row, Term};
use crate::{
    book::pgn::input::{open_input, GameStream, RawGame},
    engine::{eval::trace, params::Weights, position::Position, search::see},
};

/// Which positions, and how they are labelled.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Selection {
    /// Positions before this ply (the opening) are skipped.
    pub skip_plies: u32,
    /// Weight of the game's result in the label; the rest is the stored
    /// search score's expectation (1.0: the result alone).
    pub lambda: f64,
    /// Stop after this many positions (0: all).
    pub max_positions: usize,
    /// Every this-many-th game is kept apart for validation: its positions
    /// are not fitted, and their loss against the game's result alone shows
    /// whether the fit generalises (0: none).
    #[serde(default)]
    pub holdout: u64,
}

/// Why positions or games were not used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    pub games_without_result: u64,
    pub games_unreadable: u64,
    pub opening: u64,
    pub in_check: u64,
    pub capture_pending: u64,
}

/// The traced positions.
#[derive(Default)]
pub struct Samples {
    pub rows: Vec<Row>,
    pub terms: Vec<Term>,
    pub games: u64,
    pub skipped: Skipped,
    /// The held-out games' positions ([`Selection::holdout`]).
    pub validation: Option<Box<Samples>>,
}

impl Samples {
    fn push(&mut self, mut row: Row, terms: Vec<Term>) {
        row.start = self.terms.len() as u32;
        self.terms.extend(terms);
        self.rows.push(row);
    }

    pub fn terms_of(&self, row: &Row) -> &[Term] {
        &self.terms[row.start as usize..row.start as usize + usize::from(row.len)]
    }

    /// A fingerprint of the data (count and labels): a resumed fit must see
    /// the same positions.
    pub fn fingerprint(&self) -> u64 {
        let mut h = crate::fnv::Fnv64::new();
        h.write(&(self.rows.len() as u64).to_le_bytes());
        for r in &self.rows {
            h.write(&r.target.to_le_bytes());
            h.write(&[r.phase, r.len as u8]);
        }
        h.write(&(self.terms.len() as u64).to_le_bytes());
        h.finish()
    }
}

/// The search score in a cutechess comment (`+0.35/12 0.52s`, `-M5/12`),
/// in centipawns from the mover's view.
pub fn comment_score(text: &str) -> Option<i32> {
    let head = text.trim().split(['/', ' ']).next()?;
    let (sign, body) = match head.as_bytes().first()? {
        b'-' => (-1, &head[1..]),
        b'+' => (1, &head[1..]),
        _ => (1, head),
    };
    if let Some(n) = body.strip_prefix('M') {
        let _: u32 = n.parse().ok()?;
        return Some(sign * 10_000);
    }
    let pawns: f64 = body.parse().ok()?;
    pawns
        .is_finite()
        .then(|| sign * (pawns * 100.0).round().clamp(-10_000.0, 10_000.0) as i32)
}

/// The expectation of a score (centipawns) on the usual 400-point logistic.
fn expectation(cp: i32) -> f64 {
    1.0 / (1.0 + 10f64.powf(-f64::from(cp) / 400.0))
}

/// A position's row and its terms.
type Traced = (Row, Vec<Term>);

/// One game's positions, in order.
fn positions(g: &RawGame, sel: &Selection, w: &Weights, skipped: &mut Skipped) -> Vec<Traced> {
    let mut out = Vec::new();
    let result = match g.outcome {
        Some(Outcome::Known(KnownOutcome::Decisive {
            winner: Color::White,
        })) => Some(1.0f32),
        Some(Outcome::Known(KnownOutcome::Decisive {
            winner: Color::Black,
        })) => Some(0.0),
        Some(Outcome::Known(KnownOutcome::Draw)) => Some(0.5),
        _ => None,
    };
    let Some(result) = result else {
        skipped.games_without_result += 1;
        return out;
    };
    let start = match &g.fen {
        None => Chess::default(),
        Some(f) => match f
            .trim()
            .parse::<Fen>()
            .ok()
            .and_then(|f| f.into_position(CastlingMode::Standard).ok())
        {
            Some(p) => p,
            None => {
                skipped.games_unreadable += 1;
                return out;
            }
        },
    };
    let n_params = Weights::default().params().len();
    let mut pos = Position::new(start);
    for (ply, san) in g.sans.iter().enumerate() {
        let Ok(mv) = san.san.to_move(&pos.chess) else {
            skipped.games_unreadable += 1;
            return out; // the positions so far are sound; the rest is unknown
        };
        if (ply as u32) < sel.skip_plies {
            skipped.opening += 1;
        } else if pos.is_check() {
            skipped.in_check += 1;
        } else if pos
            .legal_moves()
            .iter()
            .any(|&m| (m.is_capture() || m.is_promotion()) && see(&pos, m) > 0)
        {
            skipped.capture_pending += 1;
        } else {
            let mut terms = Vec::new();
            let mut row = terms_of(&trace(&pos.chess, w), n_params, &mut terms);
            let mut target = f64::from(result);
            if sel.lambda < 1.0 {
                // The comment after this move: the one read after ply + 1 moves.
                let comment = g.comments.iter().find(|(n, _)| *n == ply + 1);
                if let Some(cp) = comment.and_then(|(_, c)| comment_score(c)) {
                    let white_cp = if pos.turn() == Color::White { cp } else { -cp };
                    target = sel.lambda * target + (1.0 - sel.lambda) * expectation(white_cp);
                }
            }
            row.target = target as f32;
            out.push((row, terms));
        }
        pos.play_in_place(mv);
    }
    out
}

/// Reads every file's games and traces their usable positions under `w`,
/// in parallel; the result is the same for any number of threads.
pub fn read(files: &[impl AsRef<Path>], sel: &Selection, w: &Weights) -> Result<Samples> {
    let mut samples = Samples::default();
    'files: for file in files {
        let file = file.as_ref();
        let mut stream = GameStream::with_comments(open_input(file)?);
        for batch in stream.batches(1024) {
            let batch = batch.map_err(|e| anyhow!("cannot read {}: {e}", file.display()))?;
            let first_game = samples.games;
            samples.games += batch.len() as u64;
            let held_out = |i: usize| {
                sel.holdout > 0 && (first_game + i as u64 + 1).is_multiple_of(sel.holdout)
            };
            // Held-out positions are labelled with the result alone, so that
            // fits with any --lambda are judged against the same labels.
            let result_only = Selection {
                lambda: 1.0,
                ..*sel
            };
            let traced: Vec<(Vec<Traced>, Skipped)> = batch
                .par_iter()
                .enumerate()
                .map(|(i, g)| {
                    let mut skipped = Skipped::default();
                    let sel = if held_out(i) { &result_only } else { sel };
                    (positions(g, sel, w, &mut skipped), skipped)
                })
                .collect();
            for (i, (rows, s)) in traced.into_iter().enumerate() {
                let k = &mut samples.skipped;
                k.games_without_result += s.games_without_result;
                k.games_unreadable += s.games_unreadable;
                k.opening += s.opening;
                k.in_check += s.in_check;
                k.capture_pending += s.capture_pending;
                let held_out =
                    sel.holdout > 0 && (first_game + i as u64 + 1).is_multiple_of(sel.holdout);
                for (row, terms) in rows {
                    if held_out {
                        let v = samples.validation.get_or_insert_with(Default::default);
                        v.push(row, terms);
                        continue;
                    }
                    samples.push(row, terms);
                    if sel.max_positions > 0 && samples.rows.len() >= sel.max_positions {
                        break 'files;
                    }
                }
            }
        }
    }
    if samples.rows.is_empty() {
        bail!(
            "no usable positions in {} games (each needs a result, and positions after ply {} that are quiet)",
            samples.games,
            sel.skip_plies
        );
    }
    Ok(samples)
}

impl Skipped {
    pub fn report(&self) -> String {
        format!(
            "skipped: {} opening plies, {} in check, {} with a winning capture; {} games without a result, {} unreadable",
            self.opening, self.in_check, self.capture_pending, self.games_without_result, self.games_unreadable
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_in_comments_are_read_as_cutechess_writes_them() {
        assert_eq!(comment_score("+0.35/12"), Some(35));
        assert_eq!(comment_score("-1.20/9 0.41s"), Some(-120));
        assert_eq!(comment_score("0.00/1"), Some(0));
        assert_eq!(comment_score("+M5/12"), Some(10_000));
        assert_eq!(comment_score("-M3/8"), Some(-10_000));
        assert_eq!(comment_score("book"), None);
        assert_eq!(comment_score(""), None);
        assert_eq!(comment_score("+nan/3"), None);
    }
}
