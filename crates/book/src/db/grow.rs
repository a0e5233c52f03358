//! Engine moves (`learnbook grow`): moves no game played, each stored with
//! the search that found it, and the values they change re-evaluated in the
//! same transaction.

use anyhow::{bail, Result};
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use super::analysis::{insert_analysis, Analysis, INSERT_ANALYSIS};
use super::book::Book;
use super::graph::link_parent;
use super::learn::reevaluate_keys;
use super::tails::materialize_keys;
use crate::keys::{Key, MoveCode};
use crate::values::minimax::Reevaluation;

/// A move `grow` adds: its code and UCI, the position it leads to, and that
/// position's search score (from the side to move there; stored only where
/// the position has no analysis yet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineMove {
    pub mv: MoveCode,
    pub uci: String,
    pub child: Key,
    pub child_analysis: Analysis,
}

/// One expanded position: its analysis (interior, `grown` set, the
/// deviation the best move outside the book after the expansion), the
/// engine moves it gets, and the search scores of its game moves'
/// positions that had none (stored only where there is still none), so
/// that every option is valued by a search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Expansion {
    pub parent: Key,
    pub analysis: Analysis,
    pub moves: Vec<EngineMove>,
    pub leaves: Vec<Analysis>,
}

/// What [`Book::store_expansions`] did.
#[derive(Clone, Debug, Default)]
pub struct Stored {
    /// Positions the engine moves added (not in the book before).
    pub new_positions: usize,
    /// Engine moves added.
    pub moves: usize,
    pub reevaluation: Reevaluation,
}

impl Book {
    /// Engine moves no game has played.
    pub fn engine_moves(&self) -> Result<i64> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM moves WHERE grown = 1 AND white + draws + black = 0",
            [],
            |r| r.get(0),
        )?)
    }

    /// Stores `expansions` and re-evaluates what they change, in one
    /// transaction: values equal a full re-evaluation after every call, and
    /// a kill keeps every earlier call whole and nothing of this one.
    pub fn store_expansions(&mut self, expansions: &[Expansion]) -> Result<Stored> {
        let params = self.settings.params;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Positions inside single-game tails become rows first.
        let all = expansions.iter().flat_map(|x| {
            std::iter::once(x.parent)
                .chain(x.moves.iter().map(|m| m.child))
                .chain(x.leaves.iter().map(|a| a.key))
        });
        materialize_keys(&tx, &params, all)?;
        let mut keys = Vec::new();
        let mut stored = Stored::default();
        {
            let mut depth_of = tx.prepare_cached("SELECT depth FROM positions WHERE key = ?1")?;
            let mut new_row = tx.prepare_cached(
                "INSERT INTO positions(key, depth, parent, value) VALUES (?1, ?2, ?3, 0)",
            )?;
            let mut lower = tx.prepare_cached("UPDATE positions SET depth = ?2 WHERE key = ?1")?;
            let mut add_move = tx.prepare_cached(
                "INSERT OR IGNORE INTO moves(parent, move, uci, child, grown) VALUES (?1, ?2, ?3, ?4, 1)",
            )?;
            let mut analysed = tx.prepare_cached("SELECT 1 FROM analysis WHERE key = ?1")?;
            let mut analysis = tx.prepare_cached(INSERT_ANALYSIS)?;
            for x in expansions {
                let depth: Option<Option<u32>> =
                    depth_of.query_row([x.parent], |r| r.get(0)).optional()?;
                let Some(Some(depth)) = depth else {
                    bail!("position {} is not in the book's tree", x.parent);
                };
                for m in &x.moves {
                    let child_depth: Option<Option<u32>> =
                        depth_of.query_row([m.child], |r| r.get(0)).optional()?;
                    match child_depth {
                        None => {
                            new_row.execute(params![m.child, depth + 1, x.parent])?;
                            stored.new_positions += 1;
                        }
                        Some(d) => {
                            link_parent(&tx, x.parent, m.child)?;
                            // Reached at a smaller ply now (depth is the
                            // smallest ply of any line into the position).
                            if d.is_none_or(|d| d > depth + 1) {
                                lower.execute(params![m.child, depth + 1])?;
                            }
                        }
                    }
                    stored.moves += add_move.execute(params![x.parent, m.mv.0, m.uci, m.child])?;
                    if !analysed.exists([m.child])? {
                        insert_analysis(&mut analysis, &m.child_analysis)?;
                    }
                    keys.push(m.child);
                }
                for leaf in &x.leaves {
                    if !analysed.exists([leaf.key])? {
                        insert_analysis(&mut analysis, leaf)?;
                        keys.push(leaf.key);
                    }
                }
                insert_analysis(&mut analysis, &x.analysis)?;
                keys.push(x.parent);
            }
        }
        // The cached nodes know neither the new moves nor the scores.
        self.cache.clear();
        let out = reevaluate_keys(&tx, &mut self.cache, &params, &keys);
        if out.is_err() {
            self.cache.clear();
        }
        stored.reevaluation = out?;
        tx.commit()?;
        Ok(stored)
    }
}
