//! Parameter files, one module a format: our TOML ([`toml`], which the
//! in-process tuner reads too, and the `Name = value` files `--out` and
//! `--start` are), and those engine authors already keep, for
//! `tune --engine SPEC --params FILE`:
//!
//! * **OpenBench**'s SPSA lines ([`openbench`]), `name, int|float, start,
//!   min, max, c_end, r_end` (OpenBench's `verify_workload.py` and
//!   `create_workload.py`: seven comma-separated fields a line, the type
//!   `int` or `float`, `min <= start <= max`, `c_end` and `r_end` positive;
//!   OpenBench writes them back joined by `", "`),
//! * **fishtest**'s lines ([`fishtest`]), `name,start,min,max,c_end,r_end`
//!   (fishtest's `parse_spsa_params`: six fields a line, blank lines
//!   skipped; what Stockfish's `TUNE()` prints, `c_end` a twentieth of the
//!   range and `r_end` 0.0020),
//! * **Weather Factory**'s JSON ([`weather_factory`]), a map of option name
//!   to `{"value", "min_value", "max_value", "step"}` (its README's
//!   `config.json`; `step` is the perturbation, taken here as `c_end`, and
//!   `r_end` is fishtest's 0.002);
//!
//! and the values written beside `--out` for other programs: `setoption`
//! lines ([`uci`]) and match runners' `option.X=V` arguments
//! ([`match_runner`]).
//!
//! Fields are trimmed (a CRLF line end too); blank lines and lines starting
//! with `#` are skipped (neither site takes comments, and none are written).
//! A line's numbers must be finite; an `int` line's bounds integers. The
//! readers check the file alone; whether the engine has the options, and
//! their ranges, is the external engine's side to check
//! (`tune/external.rs`). [`write()`] gives the same format back with the
//! tuned values as the start, so the file read again holds exactly the
//! tuned values.

pub mod fishtest;
pub mod match_runner;
pub mod openbench;
pub mod toml;
pub mod uci;
pub mod weather_factory;

use std::{fmt, path::Path, str::FromStr};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The format of a `--params` file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Our own: `name = { c_end = .., r_end = .., min = .., max = .. }`.
    #[default]
    Toml,
    /// `name, int|float, start, min, max, c_end, r_end`.
    OpenBench,
    /// `name,start,min,max,c_end,r_end`.
    Fishtest,
    /// `{"name": {"value": v, "min_value": a, "max_value": b, "step": s}}`.
    WeatherFactory,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::Toml,
        Format::OpenBench,
        Format::Fishtest,
        Format::WeatherFactory,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Toml => "toml",
            Format::OpenBench => "openbench",
            Format::Fishtest => "fishtest",
            Format::WeatherFactory => "weather-factory",
        }
    }

    pub fn is_toml(&self) -> bool {
        *self == Format::Toml
    }

    /// The suffix of the file the tuned values are written back to in this
    /// format, beside `--out` (`tuned.toml.openbench`); none for TOML,
    /// which `--out` is.
    pub fn suffix(self) -> Option<&'static str> {
        match self {
            Format::Toml => None,
            Format::OpenBench => Some("openbench"),
            Format::Fishtest => Some("fishtest"),
            Format::WeatherFactory => Some("json"),
        }
    }

    /// What a line (or the file) looks like, for messages.
    pub(crate) fn layout(self) -> &'static str {
        match self {
            Format::Toml => "name = { c_end = .., r_end = .., min = .., max = .. }",
            Format::OpenBench => "name, int|float, start, min, max, c_end, r_end",
            Format::Fishtest => "name,start,min,max,c_end,r_end",
            Format::WeatherFactory => {
                "{\"name\": {\"value\": v, \"min_value\": a, \"max_value\": b, \"step\": s}}"
            }
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        let s = s.trim().to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s || (s == "weatherfactory" && *f == Format::WeatherFactory))
            .ok_or_else(|| {
                format!("unknown parameter file format {s:?} (toml, openbench, fishtest, weather-factory)")
            })
    }
}

/// The format of `path`, whose text is `text`: by its extension (`.toml`,
/// `.json`, `.openbench`, `.fishtest`), else by its first line that is not
/// blank or a comment: `{` opens Weather Factory's JSON, `=` or `[` is
/// TOML, seven comma-separated fields are OpenBench's, six fishtest's.
pub fn detect(path: &Path, text: &str) -> Result<Format> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("toml") => return Ok(Format::Toml),
        Some("json") => return Ok(Format::WeatherFactory),
        Some("openbench") => return Ok(Format::OpenBench),
        Some("fishtest") => return Ok(Format::Fishtest),
        _ => {}
    }
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    let Some(line) = first else {
        // Empty: TOML's reader says that it selects nothing.
        return Ok(Format::Toml);
    };
    if line.starts_with('{') {
        return Ok(Format::WeatherFactory);
    }
    if line.contains('=') || line.starts_with('[') {
        return Ok(Format::Toml);
    }
    match line.split(',').count() {
        7 => Ok(Format::OpenBench),
        6 => Ok(Format::Fishtest),
        n => bail!(
            "cannot tell the format of {} from its first line {line:?} ({n} comma-separated \
             fields; OpenBench's lines have 7, fishtest's 6): give --params-format \
             toml|openbench|fishtest|weather-factory",
            path.display()
        ),
    }
}

/// One tunable as a parameter file gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// 1-based line of a line format; 0 in JSON.
    pub line: usize,
    pub name: String,
    /// OpenBench's `float` type (refused for a spin option).
    pub float: bool,
    pub start: f64,
    pub min: f64,
    pub max: f64,
    pub c_end: f64,
    pub r_end: f64,
}

impl Entry {
    /// Where the entry is, for messages: `line 3 (Hash)`, or `"Hash"` in JSON.
    pub fn place(&self) -> String {
        if self.line > 0 {
            format!("line {} ({})", self.line, self.name)
        } else {
            format!("{:?}", self.name)
        }
    }
}

/// The entries of `text` in `format` (not TOML, which
/// [`toml::select_params`] reads), in file order, checked on their
/// own: fields, numbers, `min <= start <= max`, positive gains, one entry
/// a name (whatever its case).
pub fn parse(format: Format, text: &str) -> Result<Vec<Entry>> {
    let entries = match format {
        Format::Toml => bail!("internal: TOML parameter files are read by toml::select_params"),
        Format::OpenBench => openbench::read(text)?,
        Format::Fishtest => fishtest::read(text)?,
        Format::WeatherFactory => weather_factory::read(text)?,
    };
    for (i, e) in entries.iter().enumerate() {
        if let Some(d) = entries[..i]
            .iter()
            .find(|d| d.name.eq_ignore_ascii_case(&e.name))
        {
            if e.line > 0 {
                bail!("{}: {} is already on line {}", e.place(), e.name, d.line);
            }
            bail!("{} is given twice", e.place());
        }
    }
    if entries.is_empty() {
        bail!(
            "the parameter file names no parameter (a line a parameter: {})",
            format.layout()
        );
    }
    Ok(entries)
}

/// What the readers of both sites refuse, and an `int` line's bounds
/// that are not integers.
pub(crate) fn check(e: &Entry) -> Result<()> {
    let at = e.place();
    if e.min > e.max {
        bail!("{at}: min {} is above max {}", e.min, e.max);
    }
    if !(e.min <= e.start && e.start <= e.max) {
        bail!(
            "{at}: the start value {} is outside [min, max] = [{}, {}]",
            e.start,
            e.min,
            e.max
        );
    }
    if !e.float && (e.min.fract() != 0.0 || e.max.fract() != 0.0) {
        bail!(
            "{at}: an int parameter's min and max must be integers, found {} and {}",
            e.min,
            e.max
        );
    }
    if e.c_end <= 0.0 || e.r_end <= 0.0 {
        bail!(
            "{at}: c_end and r_end must be positive, found {} and {}",
            e.c_end,
            e.r_end
        );
    }
    Ok(())
}

/// The lines of a line format that hold an entry (not blank, not a
/// comment), trimmed, with their 1-based numbers and fields (each trimmed),
/// checked to be `fields` of them.
fn entry_lines(
    format: Format,
    text: &str,
    fields: usize,
) -> impl Iterator<Item = Result<(usize, Vec<&str>)>> + '_ {
    text.lines().enumerate().filter_map(move |(i, raw)| {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let n = i + 1;
        let chunks: Vec<&str> = line.split(',').map(str::trim).collect();
        if chunks.len() != fields {
            return Some(Err(anyhow::anyhow!(
                "line {n}: expected {fields} comma-separated fields ({}), found {}: {line:?}",
                format.layout(),
                chunks.len()
            )));
        }
        if chunks[0].is_empty() {
            return Some(Err(anyhow::anyhow!(
                "line {n}: the name (the first field) is empty: {line:?}"
            )));
        }
        Some(Ok((n, chunks)))
    })
}

/// The entry of line `n`, `name` with the five numbers `start, min, max,
/// c_end, r_end` of its fields, checked.
fn line_entry(n: usize, name: &str, float: bool, numbers: &[&str]) -> Result<Entry> {
    let mut v = [0.0; 5];
    for ((x, s), field) in v
        .iter_mut()
        .zip(numbers)
        .zip(["start", "min", "max", "c_end", "r_end"])
    {
        *x = s
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .with_context(|| format!("line {n} ({name}): {field} {s:?} is not a finite number"))?;
    }
    let [start, min, max, c_end, r_end] = v;
    let e = Entry {
        line: n,
        name: name.to_string(),
        float,
        start,
        min,
        max,
        c_end,
        r_end,
    };
    check(&e)?;
    Ok(e)
}

/// `entries` in `format`, as that site writes them: OpenBench's
/// `", "`-joined lines, fishtest's `","`-joined ones, Weather Factory's
/// JSON object in the entries' order (TOML: `Name = value`). The tuned
/// value is the start.
pub fn write(format: Format, entries: &[Entry]) -> String {
    match format {
        Format::Toml => toml::write_entries(entries),
        Format::OpenBench => openbench::write(entries),
        Format::Fishtest => fishtest::write(entries),
        Format::WeatherFactory => weather_factory::write(entries),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::spsa::R_END;

    /// As OpenBench's wiki and engines print them (e.g. `ToOBFormat`).
    const OPENBENCH: &str = "\
LmrBase, int, 77, 0, 200, 10, 0.002
FutilityMargin, int, 80.0, 20.0, 200.0, 9.0, 0.002\r
\r
TimeScale, float, 0.5, 0.1, 1.0, 0.05, 0.002
";

    /// As Stockfish's `TUNE()` prints them for fishtest.
    const FISHTEST: &str = "\
Aggressiveness,30,0,200,10,0.0020
Cowardice,150,0,200,10,0.0020
";

    const WEATHER: &str = r#"{
    "TEST": {
        "value": 100,
        "min_value": 50,
        "max_value": 150,
        "step": 10
    },
    "Another One": { "value": 3, "min_value": 0, "max_value": 8, "step": 0.5 }
}"#;

    #[test]
    fn openbench_lines_are_read_with_their_types_and_gains() {
        let e = parse(Format::OpenBench, OPENBENCH).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(
            e[0],
            Entry {
                line: 1,
                name: "LmrBase".into(),
                float: false,
                start: 77.0,
                min: 0.0,
                max: 200.0,
                c_end: 10.0,
                r_end: 0.002
            }
        );
        assert_eq!((e[1].line, e[1].start, e[1].c_end), (2, 80.0, 9.0));
        assert_eq!((e[2].line, e[2].float, e[2].start), (4, true, 0.5));
    }

    #[test]
    fn fishtest_lines_and_weather_factory_json_are_read() {
        let e = parse(Format::Fishtest, FISHTEST).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[1].name.as_str(), e[1].start, e[1].min, e[1].max),
            ("Cowardice", 150.0, 0.0, 200.0)
        );
        assert_eq!((e[1].c_end, e[1].r_end), (10.0, 0.002));
        let e = parse(Format::WeatherFactory, WEATHER).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(
            (
                e[0].name.as_str(),
                e[0].start,
                e[0].min,
                e[0].max,
                e[0].c_end
            ),
            ("TEST", 100.0, 50.0, 150.0, 10.0)
        );
        assert_eq!(e[0].r_end, R_END);
        // File order, not sorted.
        assert_eq!(e[1].name, "Another One");
    }

    #[test]
    fn formats_are_told_from_the_extension_or_the_first_line() {
        let p = |s: &str| Path::new(s).to_path_buf();
        for (path, text, want) in [
            ("p.toml", "a, int, 1, 0, 2, 1, 0.002", Format::Toml),
            ("p.json", "", Format::WeatherFactory),
            ("p.txt", OPENBENCH, Format::OpenBench),
            ("p", FISHTEST, Format::Fishtest),
            ("p", WEATHER, Format::WeatherFactory),
            ("p", "# comment\n\nknight_mg = {}\n", Format::Toml),
            ("out.toml.openbench", FISHTEST, Format::OpenBench),
            ("out.toml.fishtest", "", Format::Fishtest),
        ] {
            assert_eq!(detect(&p(path), text).unwrap(), want, "{path}: {text}");
        }
        let err = detect(&p("p.txt"), "a, b, c\n").unwrap_err().to_string();
        assert!(err.contains("cannot tell the format") && err.contains("--params-format"));
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        assert!("cutechess".parse::<Format>().is_err());
    }

    /// Every message names the line (or the option in JSON) and what is wrong.
    #[test]
    fn malformed_files_are_refused_naming_the_line() {
        for (format, text, want) in [
            (
                Format::OpenBench,
                "A, int, 1, 0, 2, 1, 0.002\nB, int, 1, 0, 2, 1\n",
                "line 2: expected 7 comma-separated fields",
            ),
            (
                Format::OpenBench,
                "A, integer, 1, 0, 2, 1, 0.002",
                "line 1 (A): the type is \"integer\"",
            ),
            (
                Format::OpenBench,
                "A, int, x, 0, 2, 1, 0.002",
                "line 1 (A): start \"x\" is not a finite number",
            ),
            (
                Format::OpenBench,
                "A, int, 1, 0, nan, 1, 0.002",
                "line 1 (A): max \"nan\" is not a finite number",
            ),
            (
                Format::OpenBench,
                "A, int, 5, 0, 2, 1, 0.002",
                "line 1 (A): the start value 5 is outside [min, max] = [0, 2]",
            ),
            (
                Format::OpenBench,
                "A, int, 1, 0.5, 2, 1, 0.002",
                "an int parameter's min and max must be integers",
            ),
            (
                Format::OpenBench,
                "A, int, 1, 0, 2, 0, 0.002",
                "line 1 (A): c_end and r_end must be positive",
            ),
            (
                Format::OpenBench,
                "A, int, 1, 3, 2, 1, 0.002",
                "line 1 (A): min 3 is above max 2",
            ),
            (
                Format::OpenBench,
                "A, int, 1, 0, 2, 1, 0.002\na, int, 1, 0, 2, 1, 0.002",
                "line 2 (a): a is already on line 1",
            ),
            (
                Format::Fishtest,
                "A,1,0,2,1,0.002\n\nB,1,0,2,1,0.002,7\n",
                "line 3: expected 6 comma-separated fields",
            ),
            (
                Format::Fishtest,
                ",1,0,2,1,0.002",
                "line 1: the name (the first field) is empty",
            ),
            (
                Format::Fishtest,
                "\n# only a comment\n",
                "names no parameter",
            ),
            (
                Format::WeatherFactory,
                r#"{"A": {"value": 1, "min_value": 0, "max_value": 2}}"#,
                "\"A\": expected",
            ),
            (
                Format::WeatherFactory,
                r#"{"A": {"value": 1, "min_value": 0, "max_value": 2, "step": 1, "c": 2}}"#,
                "\"A\": expected",
            ),
            (
                Format::WeatherFactory,
                r#"{"A": {"value": 9, "min_value": 0, "max_value": 2, "step": 1}}"#,
                "\"A\": the start value 9 is outside",
            ),
            (
                Format::WeatherFactory,
                r#"{"A": {"value": 1, "min_value": 0, "max_value": 2, "step": 1},
                    "A": {"value": 1, "min_value": 0, "max_value": 2, "step": 1}}"#,
                "\"A\" is given twice",
            ),
            (
                Format::WeatherFactory,
                "[1, 2]",
                "not Weather Factory's JSON",
            ),
            (
                Format::WeatherFactory,
                "{\"A\": ",
                "not Weather Factory's JSON",
            ),
        ] {
            let err = match parse(format, text) {
                Ok(e) => panic!("{format}: {text:?} was read: {e:?}"),
                Err(e) => format!("{e:#}"),
            };
            assert!(err.contains(want), "{format}: {text:?}: {err}");
        }
    }

    #[test]
    fn written_files_read_back_to_the_same_entries() {
        for (format, text) in [
            (Format::OpenBench, OPENBENCH),
            (Format::Fishtest, FISHTEST),
            (Format::WeatherFactory, WEATHER),
        ] {
            let mut entries = parse(format, text).unwrap();
            // Tuned values as the start.
            for (i, e) in entries.iter_mut().enumerate() {
                if !e.float {
                    e.start = (e.min + i as f64 + 1.0).min(e.max);
                }
            }
            let written = write(format, &entries);
            let again = parse(format, &written).unwrap();
            let strip = |v: &[Entry]| -> Vec<Entry> {
                v.iter()
                    .map(|e| Entry {
                        line: 0,
                        ..e.clone()
                    })
                    .collect()
            };
            assert_eq!(strip(&again), strip(&entries), "{format}:\n{written}");
            assert_eq!(
                detect(Path::new("x"), &written).unwrap(),
                format,
                "{written}"
            );
        }
        // OpenBench's own separator; fishtest's TUNE() line.
        let e = parse(Format::Fishtest, FISHTEST).unwrap();
        assert_eq!(
            write(Format::Fishtest, &e[..1]),
            "Aggressiveness,30,0,200,10,0.002\n"
        );
        assert_eq!(
            write(Format::OpenBench, &e[..1]),
            "Aggressiveness, int, 30, 0, 200, 10, 0.002\n"
        );
    }
}
