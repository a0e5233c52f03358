//! The evaluation as a function of its weights, over traced positions
//! ([`crate::engine::eval::trace`]): the value and the exact gradient the
//! fitting descends, with no finite differences. It is [`evaluate`] in real
//! numbers (no integer rounding), so the two agree within a centipawn or two.
//!
//! [`evaluate`]: crate::engine::eval::evaluate

use anyhow::{Context, Result};

use crate::engine::{
    eval::{Trace, MAX_PHASE},
    params::Weights,
};

/// One term of a position: a weight and its net count (White's minus Black's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    pub index: u16,
    pub mg: i16,
    pub eg: i16,
}

/// A traced position, its terms stored apart (in the samples' term list).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub start: u32,
    pub len: u16,
    pub phase: u8,
    pub scaled: bool,
    pub white_to_move: bool,
    /// King-zone squares attacked by knights, bishops, rooks, queens, for
    /// White's and Black's attack (with two or more attackers).
    pub attack: [Option<[i8; 4]>; 2],
    /// The label: White's expected score, 0..=1.
    pub target: f32,
}

/// Turns a trace into terms (summed per weight) and a row without label.
pub fn terms_of(trace: &Trace, n_params: usize, out: &mut Vec<Term>) -> Row {
    let mut mg = vec![0i32; n_params];
    let mut eg = vec![0i32; n_params];
    for (side, sign) in [(&trace.white, 1), (&trace.black, -1)] {
        for &(i, n) in &side.mg {
            mg[usize::from(i)] += sign * n;
        }
        for &(i, n) in &side.eg {
            eg[usize::from(i)] += sign * n;
        }
    }
    let start = out.len() as u32;
    for i in 0..n_params {
        if mg[i] != 0 || eg[i] != 0 {
            out.push(Term {
                index: i as u16,
                mg: mg[i].clamp(-i16::MAX as i32, i16::MAX as i32) as i16,
                eg: eg[i].clamp(-i16::MAX as i32, i16::MAX as i32) as i16,
            });
        }
    }
    let squares = |a: Option<[i32; 4]>| a.map(|s| s.map(|n| n.clamp(0, 64) as i8));
    Row {
        start,
        len: (out.len() - start as usize) as u16,
        phase: trace.phase.clamp(0, MAX_PHASE) as u8,
        scaled: trace.scaled,
        white_to_move: trace.white_to_move,
        attack: [
            squares(trace.white.king_attack),
            squares(trace.black.king_attack),
        ],
        target: 0.5,
    }
}

/// Where the non-linear weights are in [`Weights::params`].
#[derive(Clone, Debug)]
pub struct Model {
    pub n_params: usize,
    king_attack: [usize; 4],
    divisor: usize,
    cap: usize,
    scale: usize,
    tempo: usize,
}

impl Model {
    pub fn new() -> Result<Model> {
        let params = Weights::default().params();
        let at = |name: &str| {
            params
                .iter()
                .position(|p| p.name == name)
                .with_context(|| format!("the evaluation has no weight {name}"))
        };
        Ok(Model {
            n_params: params.len(),
            king_attack: [
                at("king_attack_knight")?,
                at("king_attack_bishop")?,
                at("king_attack_rook")?,
                at("king_attack_queen")?,
            ],
            divisor: at("king_attack_divisor")?,
            cap: at("king_attack_cap")?,
            scale: at("scale_no_pawns")?,
            tempo: at("tempo")?,
        })
    }

    /// White's evaluation of `row` under weights `x`, in centipawns; with
    /// `grad` the derivative of it times `factor` is added to `grad`.
    pub fn eval(
        &self,
        row: &Row,
        terms: &[Term],
        x: &[f64],
        grad: Option<(&mut [f64], f64)>,
    ) -> f64 {
        let phase = f64::from(row.phase) / f64::from(MAX_PHASE);
        let (mut mg, mut eg) = (0.0, 0.0);
        for t in terms {
            let w = x[usize::from(t.index)];
            mg += f64::from(t.mg) * w;
            eg += f64::from(t.eg) * w;
        }
        // The king attacks: min(units^2 / divisor, cap), White's minus Black's.
        let divisor = x[self.divisor].max(1.0);
        let cap = x[self.cap];
        let mut attacks = [(0.0, 0.0, false); 2];
        for (side, squares) in row.attack.iter().enumerate() {
            if let Some(sq) = squares {
                let units: f64 = (0..4)
                    .map(|k| f64::from(sq[k]) * x[self.king_attack[k]])
                    .sum();
                let raw = units * units / divisor;
                let capped = raw >= cap;
                mg += if side == 0 { 1.0 } else { -1.0 } * raw.min(cap);
                attacks[side] = (units, raw, capped);
            }
        }
        let unscaled = mg * phase + eg * (1.0 - phase);
        let scale = if row.scaled {
            x[self.scale] / 64.0
        } else {
            1.0
        };
        let tempo_sign = if row.white_to_move { 1.0 } else { -1.0 };
        let value = unscaled * scale + tempo_sign * x[self.tempo];
        if let Some((grad, factor)) = grad {
            let f_mg = factor * scale * phase;
            let f_eg = factor * scale * (1.0 - phase);
            for t in terms {
                grad[usize::from(t.index)] += f64::from(t.mg) * f_mg + f64::from(t.eg) * f_eg;
            }
            for (side, squares) in row.attack.iter().enumerate() {
                let Some(sq) = squares else { continue };
                let (units, raw, capped) = attacks[side];
                let sign = if side == 0 { f_mg } else { -f_mg };
                if capped {
                    grad[self.cap] += sign;
                } else {
                    for k in 0..4 {
                        grad[self.king_attack[k]] +=
                            sign * 2.0 * units * f64::from(sq[k]) / divisor;
                    }
                    if x[self.divisor] >= 1.0 {
                        grad[self.divisor] -= sign * raw / divisor;
                    }
                }
            }
            if row.scaled {
                grad[self.scale] += factor * unscaled / 64.0;
            }
            grad[self.tempo] += factor * tempo_sign;
        }
        value
    }
}
