//! The options a UCI engine declares: its reply to `uci` lists them, one
//! `option name <id> type <t> [default <x>] [min <m>] [max <m>] [var <v>]*`
//! line each ([`parse_option_line`]), before `uciok` ([`declared_options`]).
//! The tuner reads the spin options from here to know what it can tune and
//! within which range.

use std::time::{Duration, Instant};

use crate::protocol::{EngineSpec, Fault, Process};

/// How long the engine may take to list its options.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// An option as an engine's `uci` reply declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UciOption {
    pub name: String,
    /// `spin`, `check`, `combo`, `button` or `string`.
    pub kind: String,
    pub default: String,
    pub min: Option<i64>,
    pub max: Option<i64>,
}

/// A spin option's integers: its default and its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpinRange {
    pub default: i64,
    pub min: i64,
    pub max: i64,
}

/// Parses `option name <id> type <t> [default <x>] [min <m>] [max <m>] [var <v>]*`.
pub fn parse_option_line(line: &str) -> Option<UciOption> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let ["option", "name", rest @ ..] = words.as_slice() else {
        return None;
    };
    // The name runs to the first `type` (names may hold spaces).
    let type_at = rest.iter().position(|w| *w == "type")?;
    let name = rest[..type_at].join(" ");
    let (mut kind, mut default, mut min, mut max) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut vars = Vec::new();
    let mut field = &mut kind;
    for &w in &rest[type_at + 1..] {
        match w {
            "default" => field = &mut default,
            "min" => field = &mut min,
            "max" => field = &mut max,
            "var" => field = &mut vars,
            _ => field.push(w),
        }
    }
    let number = |v: &[&str]| v.join(" ").parse::<i64>().ok();
    if name.is_empty() || kind.is_empty() {
        return None;
    }
    Some(UciOption {
        name,
        kind: kind.join(" ").to_ascii_lowercase(),
        default: default.join(" "),
        min: number(&min),
        max: number(&max),
    })
}

impl UciOption {
    /// A spin option's default and range; `None` for any other kind, or a
    /// spin option whose numbers are missing or not integers.
    pub fn spin_range(&self) -> Option<SpinRange> {
        if self.kind != "spin" {
            return None;
        }
        Some(SpinRange {
            default: self.default.trim().parse().ok()?,
            min: self.min?,
            max: self.max?,
        })
    }
}

/// Starts the engine of `spec`, sends `uci` and reads the options it
/// declares up to `uciok` (the spec's own `option.X=` are not sent).
pub fn declared_options(spec: &EngineSpec) -> Result<Vec<UciOption>, Fault> {
    let mut p = Process::spawn(&spec.argv, spec.dir.as_deref(), &spec.name)?;
    p.send("uci")?;
    let deadline = Instant::now() + HANDSHAKE;
    let mut options = Vec::new();
    loop {
        let line = p.recv(deadline, "uciok")?;
        if line.trim() == "uciok" {
            break;
        }
        if let Some(o) = parse_option_line(&line) {
            options.push(o);
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_lines_are_read() {
        let o = parse_option_line("option name Move Overhead type spin default 30 min 0 max 5000")
            .unwrap();
        assert_eq!(o.name, "Move Overhead");
        assert_eq!(
            o.spin_range(),
            Some(SpinRange {
                default: 30,
                min: 0,
                max: 5000
            })
        );
        let o = parse_option_line("option name BookFile type string default <empty>").unwrap();
        assert_eq!((o.kind.as_str(), o.default.as_str()), ("string", "<empty>"));
        assert_eq!(o.spin_range(), None);
        let o = parse_option_line(
            "option name Style type combo default Normal var Solid var Normal var Risky",
        )
        .unwrap();
        assert_eq!((o.name.as_str(), o.kind.as_str()), ("Style", "combo"));
        let o = parse_option_line("option name Clear Hash type button").unwrap();
        assert_eq!(o.name, "Clear Hash");
        assert_eq!(parse_option_line("id name x"), None);
        assert_eq!(parse_option_line("option name X"), None);
    }
}
