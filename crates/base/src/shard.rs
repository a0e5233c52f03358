//! `--shard I/N`: one part of a job split N ways, as the job arrays of a
//! scheduler run it (Slurm's `--array`, Kubernetes' Indexed Jobs). Shards
//! are numbered from 0; `auto/N` takes the number from the scheduler.
//!
//! Every sharded command splits its work the same way for any N and keeps
//! nothing from another shard, so that the N shards' results, merged, are
//! exactly the result of one run.

use std::fmt;

use anyhow::{anyhow, bail, Result};

/// Shard `index` of `count` (0 <= index < count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// The whole job as one shard.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Whether item `n` of the job (a game's index, a position's key) is
    /// this shard's: every `count`-th one.
    pub fn owns(&self, n: u64) -> bool {
        n % u64::from(self.count) == u64::from(self.index)
    }

    /// This shard's contiguous slice `[start, end)` of `total` items in
    /// order (the slices of the N shards, in shard order, are `0..total`).
    pub fn slice(&self, total: usize) -> (usize, usize) {
        let part = |i: u32| (total as u128 * u128::from(i) / u128::from(self.count)) as usize;
        (part(self.index), part(self.index + 1))
    }

    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// Parses `I/N` or `auto/N` (the index from the environment, see
    /// [`Shard::from_scheduler`]).
    pub fn parse(text: &str) -> Result<Shard> {
        Shard::parse_with(text, |name| std::env::var(name).ok())
    }

    fn parse_with(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Shard> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| anyhow!("a shard is I/N (0 <= I < N) or auto/N, not {text:?}"))?;
        let count: u32 = count
            .trim()
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| {
                anyhow!("the number of shards in {text:?} is not a whole number >= 1")
            })?;
        let index = match index.trim() {
            "auto" => Shard::from_scheduler(&env)?,
            i => i
                .parse()
                .map_err(|_| anyhow!("the shard index in {text:?} is not a whole number"))?,
        };
        if index >= count {
            bail!(
                "shard {index} of {count}: shards are numbered 0 to {}",
                count - 1
            );
        }
        Ok(Shard { index, count })
    }

    /// The index a scheduler gives a task of a job array: Slurm's
    /// `SLURM_ARRAY_TASK_ID` counted from `SLURM_ARRAY_TASK_MIN` (so
    /// `--array=1-4` works as well as `0-3`), or Kubernetes'
    /// `JOB_COMPLETION_INDEX`.
    fn from_scheduler(env: &impl Fn(&str) -> Option<String>) -> Result<u32> {
        let number = |name: &str| -> Result<Option<u32>> {
            env(name)
                .map(|v| {
                    v.trim()
                        .parse::<u32>()
                        .map_err(|_| anyhow!("{name}={v:?} is not a task number"))
                })
                .transpose()
        };
        if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            return id.checked_sub(min).ok_or_else(|| {
                anyhow!("SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}")
            });
        }
        if let Some(i) = number("JOB_COMPLETION_INDEX")? {
            return Ok(i);
        }
        bail!(
            "--shard auto/N takes the shard from SLURM_ARRAY_TASK_ID (a Slurm job array) or \
             JOB_COMPLETION_INDEX (a Kubernetes Indexed Job), and neither is set"
        )
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Shard> {
        Shard::parse(s)
    }
}

/// Checks that `shards` (each with what names it, e.g. its file) are the
/// N shards of one job, each once; the error names what is missing,
/// repeated or of another job.
pub fn check_complete<'a>(shards: impl IntoIterator<Item = (Shard, &'a str)>) -> Result<()> {
    let shards: Vec<(Shard, &str)> = shards.into_iter().collect();
    let Some(&(first, first_name)) = shards.first() else {
        return Ok(());
    };
    let mut seen: Vec<Option<&str>> = vec![None; first.count as usize];
    for &(s, name) in &shards {
        if s.count != first.count {
            bail!(
                "{name} is shard {s} but {first_name} is shard {first}: shards of one job have the same N"
            );
        }
        if let Some(other) = seen[s.index as usize] {
            bail!("shard {s} is given twice: {other} and {name}");
        }
        seen[s.index as usize] = Some(name);
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| format!("{i}/{}", first.count))
        .collect();
    if !missing.is_empty() {
        bail!(
            "shard{} {} missing: a merge needs all {} shards of the job",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", ") + if missing.len() > 1 { " are" } else { " is" },
            first.count
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn shards_parse_from_the_command_line_and_the_scheduler() {
        let none = env(&[]);
        assert_eq!(
            Shard::parse_with("2/4", &none).unwrap(),
            Shard { index: 2, count: 4 }
        );
        for bad in ["4/4", "1/0", "x/3", "3", "-1/4", "auto/4"] {
            assert!(Shard::parse_with(bad, &none).is_err(), "{bad}");
        }
        let slurm = env(&[("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_MIN", "1")]);
        assert_eq!(Shard::parse_with("auto/4", &slurm).unwrap().index, 2);
        let k8s = env(&[("JOB_COMPLETION_INDEX", "3")]);
        assert_eq!(Shard::parse_with("auto/4", &k8s).unwrap().index, 3);
        assert!(Shard::parse_with("auto/3", &k8s).is_err(), "index 3 of 3");
        let garbage = env(&[("SLURM_ARRAY_TASK_ID", "three")]);
        assert!(Shard::parse_with("auto/4", &garbage).is_err());
    }

    #[test]
    fn slices_and_owned_items_cover_a_job_exactly_once() {
        for count in 1..6u32 {
            for total in [0usize, 1, 7, 100] {
                let mut next = 0;
                for index in 0..count {
                    let (a, b) = Shard { index, count }.slice(total);
                    assert_eq!(a, next);
                    next = b;
                }
                assert_eq!(next, total);
            }
            for n in 0..50u64 {
                let owners = (0..count)
                    .filter(|&index| Shard { index, count }.owns(n))
                    .count();
                assert_eq!(owners, 1);
            }
        }
    }

    #[test]
    fn an_incomplete_or_repeated_set_is_refused_by_name() {
        let s = |index, count| Shard { index, count };
        assert!(check_complete([(s(0, 2), "a"), (s(1, 2), "b")]).is_ok());
        let missing = check_complete([(s(0, 3), "a"), (s(2, 3), "c")]).unwrap_err();
        assert!(
            missing.to_string().contains("shard 1/3 is missing"),
            "{missing}"
        );
        let twice = check_complete([(s(0, 2), "a"), (s(0, 2), "b"), (s(1, 2), "c")]).unwrap_err();
        assert!(
            twice.to_string().contains("0/2 is given twice: a and b"),
            "{twice}"
        );
        let other = check_complete([(s(0, 2), "a"), (s(1, 3), "b")]).unwrap_err();
        assert!(other.to_string().contains("same N"), "{other}");
    }
}
