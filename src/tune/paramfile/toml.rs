//! Our own parameter files, TOML: which parameters to tune,
//! `name = { c_end = 20, r_end = 0.002, min = 150, max = 600 }`
//! ([`read_param_file`] over the evaluation's weights, [`select_params`]
//! over any list, an engine's spin options too), and option values,
//! `Name = value`, as an `--engine` run's `--out` writes them
//! ([`write_values`]) and its `--start` reads them ([`read_values`]).

use std::collections::HashSet;

use anyhow::{bail, Context, Result};

use super::Entry;
use crate::{
    engine::params::Weights,
    tune::spsa::{all_params, TuneParam},
};

/// Reads a parameter file: TOML, one entry per parameter to tune,
/// `name = { c_end = 20, r_end = 0.002, min = 150, max = 600 }` (every key
/// optional; `{}` takes the defaults). A name ending in `*` selects every
/// parameter with that prefix (`pst_knight_mg_* = {}`). Unknown names, keys
/// or bounds outside the parameter's own range are errors.
pub fn read_param_file(text: &str, start: &Weights) -> Result<Vec<TuneParam>> {
    select_params(text, &all_params(start), false, &|key| {
        format!("unknown parameter {key:?} (`learnbook weights` lists them all)")
    })
}

/// Reads a parameter file (as [`read_param_file`]) choosing among `all`;
/// `unknown` words the error for a name that selects nothing. With
/// `ignore_case` names match whatever their case (UCI option names).
pub fn select_params(
    text: &str,
    all: &[TuneParam],
    ignore_case: bool,
    unknown: &dyn Fn(&str) -> String,
) -> Result<Vec<TuneParam>> {
    let table: ::toml::Table = text.parse().context("not valid TOML")?;
    let fold = |s: &str| {
        if ignore_case {
            s.to_ascii_lowercase()
        } else {
            s.to_string()
        }
    };
    let mut chosen: Vec<TuneParam> = Vec::new();
    let mut seen = HashSet::new();
    for (key, value) in &table {
        let Some(opts) = value.as_table() else {
            bail!("{key}: expected a table such as {{ c_end = 10, r_end = 0.002 }}, found {value}");
        };
        let matches: Vec<&TuneParam> = match key.strip_suffix('*') {
            Some(prefix) => all
                .iter()
                .filter(|p| fold(&p.name).starts_with(&fold(prefix)))
                .collect(),
            None => all.iter().filter(|p| fold(&p.name) == fold(key)).collect(),
        };
        if matches.is_empty() {
            bail!("{}", unknown(key));
        }
        for base in matches {
            // The key names the parameter, unless it is a prefix with `*`.
            let p = apply_options(base.clone(), opts).map_err(|e| {
                if fold(key) == fold(&base.name) {
                    e
                } else {
                    e.context(key.clone())
                }
            })?;
            if !seen.insert(p.index) {
                bail!("{} is selected twice", p.name);
            }
            chosen.push(p);
        }
    }
    if chosen.is_empty() {
        bail!("the parameter file selects no parameter");
    }
    chosen.sort_by_key(|p| p.index);
    Ok(chosen)
}

fn apply_options(mut p: TuneParam, opts: &::toml::Table) -> Result<TuneParam> {
    let (range_min, range_max) = (p.min, p.max);
    for (k, v) in opts {
        let x = v
            .as_float()
            .or_else(|| v.as_integer().map(|i| i as f64))
            .with_context(|| format!("{}: {k}: expected a number, found {v}", p.name))?;
        match k.as_str() {
            "c_end" => p.c_end = x,
            "r_end" => p.r_end = x,
            "min" => p.min = x,
            "max" => p.max = x,
            other => bail!("{}: unknown key {other:?} (c_end, r_end, min, max)", p.name),
        }
    }
    // Written so that nan (TOML has it) fails too.
    if !(range_min <= p.min && p.min <= p.max && p.max <= range_max) {
        bail!(
            "{}: bounds [{}, {}] are outside the parameter's range [{range_min}, {range_max}]",
            p.name,
            p.min,
            p.max
        );
    }
    if !(p.min <= p.start && p.start <= p.max) {
        bail!(
            "{}: the start value {} is outside the bounds [{}, {}]",
            p.name,
            p.start,
            p.min,
            p.max
        );
    }
    let positive = |x: f64| x > 0.0 && x.is_finite();
    if !positive(p.c_end) || !positive(p.r_end) {
        bail!("{}: c_end and r_end must be positive", p.name);
    }
    Ok(p)
}

/// `Name = integer` entries (an `--engine` run's `--start`), in the
/// file's order: `resolve` turns each name into what the caller knows it
/// as (or the error for a name it does not know), `accept` checks each
/// value, entry by entry.
pub fn read_values<K>(
    text: &str,
    resolve: impl Fn(&str) -> Result<K>,
    accept: impl Fn(&K, &str, i64) -> Result<()>,
) -> Result<Vec<(K, i64)>> {
    let table: ::toml::Table = text.parse().context("not valid TOML")?;
    let mut out = Vec::new();
    for (k, v) in &table {
        let key = resolve(k)?;
        let Some(v) = v.as_integer() else {
            bail!("{k}: expected an integer, found {v}");
        };
        accept(&key, k, v)?;
        out.push((key, v));
    }
    Ok(out)
}

/// A TOML key: bare if it can be, else quoted.
pub fn key(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        name.to_string()
    } else {
        ::toml::Value::String(name.to_string()).to_string()
    }
}

/// `Name = value` a line after `header` (comment lines, each ending in a
/// newline); the values from `tuned` on under a comment saying they were
/// not tuned (they come from `--start`).
pub fn write_values(header: &str, values: &[(String, i64)], tuned: usize) -> String {
    let mut s = header.to_string();
    for (i, (name, v)) in values.iter().enumerate() {
        if i == tuned {
            s.push_str("# not tuned (from --start):\n");
        }
        s.push_str(&format!("{} = {v}\n", key(name)));
    }
    s
}

/// Entries as `Name = value`, the start their value.
pub fn write_entries(entries: &[Entry]) -> String {
    let values: Vec<(String, i64)> = entries
        .iter()
        .map(|e| (e.name.clone(), e.start as i64))
        .collect();
    write_values("", &values, values.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::spsa::R_END;

    #[test]
    fn param_file_selects_and_validates() {
        let w = Weights::default();
        let ps =
            read_param_file("knight_mg = { c_end = 15 }\n\"pst_knight_mg_*\" = {}\n", &w).unwrap();
        assert_eq!(ps.len(), 33);
        assert_eq!(ps[0].name, "knight_mg");
        assert_eq!(ps[0].c_end, 15.0);
        assert_eq!(ps[0].r_end, R_END);
        for bad in [
            "knight_mgx = {}",
            "knight_mg = { c_end = 0 }",
            "knight_mg = { min = 100 }",
            "knight_mg = { max = 700 }",
            "knight_mg = { step = 3 }",
            "knight_mg = 3",
            "knight_mg = {}\n\"knight_*\" = {}",
        ] {
            assert!(read_param_file(bad, &w).is_err(), "{bad}");
        }
    }

    /// Every message names the parameter, once (the fuzzer's error list
    /// showed `min: expected a number` with no name, and names twice).
    #[test]
    fn a_parameter_file_error_names_the_parameter_once() {
        let w = Weights::default();
        for (text, want) in [
            (
                "knight_mg = { min = [] }",
                "knight_mg: min: expected a number, found []",
            ),
            (
                "knight_mg = { step = 1 }",
                "knight_mg: unknown key \"step\"",
            ),
            (
                "knight_mg = { c_end = 0 }",
                "knight_mg: c_end and r_end must be positive",
            ),
            ("\"knight_*\" = { c_end = 0 }", "knight_*: knight_mg: c_end"),
        ] {
            let err = format!("{:#}", read_param_file(text, &w).map(|_| ()).unwrap_err());
            assert!(err.starts_with(want), "{text}: {err}");
        }
    }

    /// TOML has nan: `min = nan` passed every comparison of the bounds
    /// check and made the first step panic in `f64::clamp`.
    #[test]
    fn a_parameter_file_with_nan_bounds_is_refused_not_a_panic() {
        let w = Weights::default();
        for bad in [
            "knight_mg = { min = nan }",
            "knight_mg = { max = nan }",
            "knight_mg = { min = -nan, max = nan }",
            "knight_mg = { min = -inf }",
        ] {
            let err = read_param_file(bad, &w).map(|_| ()).unwrap_err();
            assert!(format!("{err:#}").contains("bounds"), "{bad}: {err:#}");
        }
    }

    #[test]
    fn values_are_written_with_keys_bare_where_they_can_be() {
        assert_eq!(key("pawn_mg"), "pawn_mg");
        assert_eq!(key("Move Overhead"), "\"Move Overhead\"");
        let v = vec![("A".to_string(), 1), ("Move Overhead".to_string(), -2)];
        assert_eq!(
            write_values("# h\n", &v, 1),
            "# h\nA = 1\n# not tuned (from --start):\n\"Move Overhead\" = -2\n"
        );
        let back = read_values(
            &write_values("", &v, 2),
            |k| Ok(k.to_string()),
            |_, _, _| Ok(()),
        )
        .unwrap();
        assert_eq!(back, v);
    }
}
