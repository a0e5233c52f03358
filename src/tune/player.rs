//! Who plays the tuner's games, behind one trait ([`Player`]): the
//! in-process search core on a thread pool ([`InProcess`]), or the
//! processes of an external UCI engine ([`super::external::Arena`]). A
//! player turns tuned values into a side (weights, or `setoption` values)
//! and plays game pairs between two sides; what the sides are is decided
//! here once for every player: an SPSA iteration's theta + c against
//! theta - c, from [`draw`] ([`play_iteration`]), and a progress match's
//! current values against the start ([`play_match`]). `tune` plays whole
//! iterations with them, `tune-shard` its share of the pairs.

use std::sync::Arc;

use anyhow::{Context, Result};
use rand::Rng;
use rayon::prelude::*;
use shakmaty::Color;

use super::{
    settings::{adjudication_of, draw, limit_of, Draw, Settings},
    spsa,
};
use crate::{
    engine::{net::Network, params::Weights},
    play::{
        builtin::Builtin,
        game::{play_game, Adjudication, Limit, Opening},
    },
};

/// The values a side plays with.
#[derive(Clone, Copy, Debug)]
pub enum Values<'a> {
    /// These tuned numbers (theta, or theta +- c), rounded as the engine
    /// gets them.
    At(&'a [f64]),
    /// The run's start, which progress matches measure against.
    Start,
}

/// Plays the games of a tuning run.
pub trait Player {
    /// What one side plays with.
    type Side: Sync;

    /// The side that plays with `values`.
    fn side(&self, settings: &Settings, values: Values<'_>) -> Self::Side;

    /// A game pair per pick between `sides[0]` and `sides[1]`, colours
    /// swapped: the first side's score in each game, in order (a pair's
    /// game with the first side White first), or `None` if SIGINT came
    /// first (nothing of the games is kept).
    fn play(
        &mut self,
        settings: &Settings,
        sides: [&Self::Side; 2],
        picks: &[usize],
        openings: &[Opening],
    ) -> Result<Option<Vec<f64>>>;
}

/// `all` restricted to the pairs numbered `pairs` (all of them if `None`).
fn share(all: Vec<usize>, pairs: Option<&[usize]>) -> Vec<usize> {
    match pairs {
        Some(pairs) => pairs.iter().map(|&p| all[p]).collect(),
        None => all,
    }
}

/// Iteration `k` (0-based) from `theta`, the pairs numbered `pairs` of it
/// (every pair if `None`): its perturbation, and the score of theta + c
/// against theta - c in each game, in order; `None` if SIGINT came first.
pub fn play_iteration<P: Player>(
    player: &mut P,
    settings: &Settings,
    theta: &[f64],
    k: u64,
    openings: &[Opening],
    pairs: Option<&[usize]>,
) -> Result<Option<(Vec<f64>, Vec<f64>)>> {
    let Draw {
        flip,
        picks,
        plus,
        minus,
    } = draw(settings, theta, k, openings.len());
    let picks = share(picks, pairs);
    if picks.is_empty() {
        return Ok(Some((flip, Vec::new())));
    }
    let plus = player.side(settings, Values::At(&plus));
    let minus = player.side(settings, Values::At(&minus));
    Ok(player
        .play(settings, [&plus, &minus], &picks, openings)?
        .map(|scores| (flip, scores)))
}

/// The openings of the progress match after iteration `k`: a random
/// stream of their own, so the SPSA iterations draw what they would
/// without matches.
pub fn match_picks(settings: &Settings, k: u64, pairs: usize, n_openings: usize) -> Vec<usize> {
    // "match" in ASCII: another seed than the iterations'.
    let mut rng = spsa::iteration_rng(settings.seed ^ 0x6d61_7463_6800_0000, k);
    (0..pairs)
        .map(|_| rng.random_range(0..n_openings))
        .collect()
}

/// The progress match of `total` pairs after iteration `k` (0-based), the
/// pairs numbered `pairs` of it (every pair if `None`): the score of the
/// values at `theta` against the start in each game, in order; `None` if
/// SIGINT came first.
pub fn play_match<P: Player>(
    player: &mut P,
    settings: &Settings,
    theta: &[f64],
    (k, total): (u64, usize),
    openings: &[Opening],
    pairs: Option<&[usize]>,
) -> Result<Option<Vec<f64>>> {
    let picks = share(match_picks(settings, k, total, openings.len()), pairs);
    if picks.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let now = player.side(settings, Values::At(theta));
    let start = player.side(settings, Values::Start);
    player.play(settings, [&now, &start], &picks, openings)
}

/// The search core in-process: a game a task on a thread pool, each side
/// a set of weights.
pub struct InProcess {
    pool: rayon::ThreadPool,
    /// The start weights, which the tuned numbers replace their part of.
    base: Weights,
    /// The net both sides evaluate with (`None`: the weights' evaluation).
    net: Option<Arc<Network>>,
}

impl InProcess {
    /// `threads` games at once, over the start weights `base`, evaluating
    /// with `net` if there is one.
    pub fn new(threads: usize, base: Weights, net: Option<Arc<Network>>) -> Result<InProcess> {
        Ok(InProcess {
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(threads.max(1))
                .build()
                .context("cannot start the thread pool")?,
            base,
            net,
        })
    }
}

impl Player for InProcess {
    type Side = Weights;

    fn side(&self, settings: &Settings, values: Values<'_>) -> Weights {
        match values {
            Values::At(theta) => spsa::weights_at(&self.base, &settings.params, theta),
            Values::Start => self.base.clone(),
        }
    }

    /// Never `None`: SIGINT is looked at between iterations.
    fn play(
        &mut self,
        settings: &Settings,
        sides: [&Weights; 2],
        picks: &[usize],
        openings: &[Opening],
    ) -> Result<Option<Vec<f64>>> {
        let limit = limit_of(&settings.limit)?;
        let adj = adjudication_of(&settings.adjudication);
        // A node-limited game needs a small table; a clock game fills more.
        let hash_mb = if matches!(limit, Limit::Nodes(_)) {
            2
        } else {
            16
        };
        // One task per game, not per pair: finer pieces keep both threads
        // busy to the end of the iteration.
        let scores: Vec<f64> = self.pool.install(|| {
            (0..2 * picks.len())
                .into_par_iter()
                .map(|g| {
                    let first_white = g % 2 == 0;
                    play_one(
                        sides,
                        self.net.as_ref(),
                        &openings[picks[g / 2]],
                        first_white,
                        &limit,
                        &adj,
                        hash_mb,
                    )
                })
                .collect()
        });
        Ok(Some(scores))
    }
}

/// One game of a pair from `opening`; the first side's score.
fn play_one(
    sides: [&Weights; 2],
    net: Option<&Arc<Network>>,
    opening: &Opening,
    first_white: bool,
    limit: &Limit,
    adj: &Adjudication,
    hash_mb: usize,
) -> f64 {
    let mut p = Builtin::search_only("plus", sides[0].clone(), hash_mb).with_net(net.cloned());
    let mut m = Builtin::search_only("minus", sides[1].clone(), hash_mb).with_net(net.cloned());
    if first_white {
        play_game(&mut p, &mut m, opening, [limit, limit], adj).score_of(Color::White)
    } else {
        play_game(&mut m, &mut p, opening, [limit, limit], adj).score_of(Color::Black)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::{
        external::Arena,
        paramfile::toml::read_param_file,
        settings::{AdjudicationSpec, EngineTarget, LimitSpec, SpinOption, TunedEngine},
        spsa::Schedule,
    };

    /// Two evaluation weights tuned with a large perturbation, so that
    /// the sides differ and hit the bounds now and then.
    fn settings() -> Settings {
        let base = Weights::default();
        let params = read_param_file(
            "knight_mg = { c_end = 40, min = 250, max = 400 }\nrook_mg = { c_end = 30 }",
            &base,
        )
        .unwrap();
        Settings {
            limit: LimitSpec::Nodes(100),
            pairs_per_iteration: 5,
            schedule: Schedule::new(50),
            seed: 7,
            openings: "openings.epd".into(),
            openings_count: 9,
            adjudication: AdjudicationSpec {
                draw: None,
                resign: None,
                max_moves: None,
            },
            base: base.values(),
            params,
            engine: None,
            progress_match: None,
            net: None,
        }
    }

    /// An engine declaring the tuned parameters as spin options.
    fn arena(settings: &Settings) -> Arena {
        let target = EngineTarget {
            spec: TunedEngine::parse("cmd=engine").unwrap(),
            options: settings
                .params
                .iter()
                .map(|p| SpinOption {
                    name: p.name.clone(),
                    default: p.start as i64,
                    min: p.min as i64,
                    max: p.max as i64,
                })
                .collect(),
            fixed: Vec::new(),
            format: Default::default(),
        };
        Arena::new(&target, 1)
    }

    /// The numbers a side plays with, by parameter: the weights' own for
    /// the search core, the `setoption` values for an engine.
    fn in_process_numbers(s: &Settings, w: &Weights) -> Vec<i64> {
        let values = w.values();
        s.params
            .iter()
            .map(|p| i64::from(values[p.index]))
            .collect()
    }

    fn engine_numbers(options: &[(String, String)]) -> Vec<i64> {
        options.iter().map(|(_, v)| v.parse().unwrap()).collect()
    }

    #[test]
    fn both_kinds_of_player_play_the_same_plus_and_minus_sides() {
        let s = settings();
        let in_process = InProcess::new(1, Weights::default(), None).unwrap();
        let engine = arena(&s);
        let mut theta: Vec<f64> = s.params.iter().map(|p| p.start).collect();
        for k in 0..40 {
            let d = draw(&s, &theta, k, s.openings_count);
            for values in [&d.plus, &d.minus, &theta] {
                let a = in_process_numbers(&s, &in_process.side(&s, Values::At(values)));
                let b = engine_numbers(&engine.side(&s, Values::At(values)));
                assert_eq!(a, b, "iteration {k}: {values:?}");
            }
            assert_ne!(d.plus, d.minus);
            // Somewhere between the draws, as a run wanders.
            theta = d
                .plus
                .iter()
                .zip(&d.minus)
                .map(|(p, m)| (p + m) / 2.0 + 0.3)
                .collect();
        }
        let a = in_process_numbers(&s, &in_process.side(&s, Values::Start));
        assert_eq!(a, engine_numbers(&engine.side(&s, Values::Start)));
    }

    /// A player that plays nothing: it records the sides and openings it
    /// was given, and the first side wins every game.
    #[derive(Default)]
    struct Recorder {
        played: Vec<([Vec<f64>; 2], Vec<usize>)>,
    }

    impl Player for Recorder {
        type Side = Vec<f64>;

        fn side(&self, settings: &Settings, values: Values<'_>) -> Vec<f64> {
            match values {
                Values::At(v) => v.to_vec(),
                Values::Start => settings.params.iter().map(|p| p.start).collect(),
            }
        }

        fn play(
            &mut self,
            _: &Settings,
            sides: [&Vec<f64>; 2],
            picks: &[usize],
            _: &[Opening],
        ) -> Result<Option<Vec<f64>>> {
            self.played
                .push(([sides[0].clone(), sides[1].clone()], picks.to_vec()));
            Ok(Some(vec![1.0; 2 * picks.len()]))
        }
    }

    #[test]
    fn an_iteration_plays_its_draw_and_a_share_its_pairs_of_it() {
        let s = settings();
        let start = Opening {
            fen: None,
            moves: Vec::new(),
        };
        let openings = vec![start; s.openings_count];
        let theta: Vec<f64> = s.params.iter().map(|p| p.start).collect();
        let d = draw(&s, &theta, 3, openings.len());
        let mut whole = Recorder::default();
        let (flip, scores) = play_iteration(&mut whole, &s, &theta, 3, &openings, None)
            .unwrap()
            .unwrap();
        assert_eq!((flip, scores.len()), (d.flip.clone(), 10));
        assert_eq!(
            whole.played,
            vec![([d.plus.clone(), d.minus.clone()], d.picks.clone())]
        );
        let mut share = Recorder::default();
        let (flip, scores) = play_iteration(&mut share, &s, &theta, 3, &openings, Some(&[1, 4]))
            .unwrap()
            .unwrap();
        assert_eq!((flip, scores.len()), (d.flip.clone(), 4));
        assert_eq!(
            share.played,
            vec![([d.plus, d.minus], vec![d.picks[1], d.picks[4]])]
        );
        // A match: the values at theta against the start, on its own openings.
        let mut m = Recorder::default();
        play_match(&mut m, &s, &d.flip, (3, 4), &openings, Some(&[2])).unwrap();
        let picks = match_picks(&s, 3, 4, openings.len());
        assert_eq!(m.played, vec![([d.flip.clone(), theta], vec![picks[2]])]);
        // Nothing to play: no game, and the player is not asked.
        let mut none = Recorder::default();
        play_iteration(&mut none, &s, &d.flip, 3, &openings, Some(&[])).unwrap();
        assert!(none.played.is_empty());
    }
}
