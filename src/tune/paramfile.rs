//! Parameter files as engine authors already keep them, for
//! `tune --engine SPEC --params FILE`: beside our TOML
//! ([`super::spsa::select_params`]),
//!
//! * **OpenBench**'s SPSA lines, `name, int|float, start, min, max, c_end,
//!   r_end` (OpenBench's `verify_workload.py` and `create_workload.py`:
//!   seven comma-separated fields a line, the type `int` or `float`,
//!   `min <= start <= max`, `c_end` and `r_end` positive; OpenBench writes
//!   them back joined by `", "`),
//! * **fishtest**'s lines, `name,start,min,max,c_end,r_end` (fishtest's
//!   `parse_spsa_params`: six fields a line, blank lines skipped; what
//!   Stockfish's `TUNE()` prints, `c_end` a twentieth of the range and
//!   `r_end` 0.0020),
//! * **Weather Factory**'s JSON, a map of option name to
//!   `{"value", "min_value", "max_value", "step"}` (its README's
//!   `config.json`; `step` is the perturbation, taken here as `c_end`, and
//!   `r_end` is fishtest's 0.002).
//!
//! Fields are trimmed (a CRLF line end too); blank lines and lines starting
//! with `#` are skipped (neither site takes comments, and none are written).
//! A line's numbers must be finite; an `int` line's bounds integers. The
//! readers check the file alone; whether the engine has the options, and
//! their ranges, is the external engine's side to check (`tune/external.rs`). [`write`] gives the same
//! format back with the tuned values as the start, so the file read again
//! holds exactly the tuned values.

use std::{fmt, path::Path, str::FromStr};

use anyhow::{bail, Context, Result};
use serde::{
    de::{MapAccess, Visitor},
    Deserialize, Deserializer, Serialize,
};

use super::spsa::R_END;

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
    fn layout(self) -> &'static str {
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
/// [`super::spsa::select_params`] reads), in file order, checked on their
/// own: fields, numbers, `min <= start <= max`, positive gains, one entry
/// a name (whatever its case).
pub fn parse(format: Format, text: &str) -> Result<Vec<Entry>> {
    let entries = match format {
        Format::Toml => bail!("internal: TOML parameter files are read by spsa::select_params"),
        Format::OpenBench | Format::Fishtest => parse_lines(format, text)?,
        Format::WeatherFactory => parse_json(text)?,
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

fn parse_lines(format: Format, text: &str) -> Result<Vec<Entry>> {
    let fields = if format == Format::OpenBench { 7 } else { 6 };
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let n = i + 1;
        let chunks: Vec<&str> = line.split(',').map(str::trim).collect();
        if chunks.len() != fields {
            bail!(
                "line {n}: expected {fields} comma-separated fields ({}), found {}: {line:?}",
                format.layout(),
                chunks.len()
            );
        }
        let name = chunks[0];
        if name.is_empty() {
            bail!("line {n}: the name (the first field) is empty: {line:?}");
        }
        let (float, numbers) = if format == Format::OpenBench {
            let float = match chunks[1] {
                "int" => false,
                "float" => true,
                other => {
                    bail!("line {n} ({name}): the type is {other:?}, expected int or float")
                }
            };
            (float, &chunks[2..])
        } else {
            (false, &chunks[1..])
        };
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
                .with_context(|| {
                    format!("line {n} ({name}): {field} {s:?} is not a finite number")
                })?;
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
        out.push(e);
    }
    Ok(out)
}

/// What the readers of both sites refuse, and an `int` line's bounds
/// that are not integers.
fn check(e: &Entry) -> Result<()> {
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

/// A JSON object's members in the order of the file (serde_json's map
/// would sort them), duplicates kept for [`parse`] to refuse.
struct Ordered(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ordered, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object: option name to {value, min_value, max_value, step}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = map.next_entry::<String, serde_json::Value>()? {
                    v.push(kv);
                }
                Ok(Ordered(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// One option of Weather Factory's `config.json` (its `Param`: exactly
/// these four fields).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WfParam {
    value: f64,
    min_value: f64,
    max_value: f64,
    step: f64,
}

fn parse_json(text: &str) -> Result<Vec<Entry>> {
    let Ordered(members) = serde_json::from_str(text).with_context(|| {
        format!(
            "not Weather Factory's JSON ({})",
            Format::WeatherFactory.layout()
        )
    })?;
    let mut out = Vec::new();
    for (name, value) in members {
        let p: WfParam = serde_json::from_value(value).with_context(|| {
            format!("{name:?}: expected {{\"value\", \"min_value\", \"max_value\", \"step\"}}")
        })?;
        if name.trim().is_empty() {
            bail!("an option's name is empty");
        }
        let finite = [p.value, p.min_value, p.max_value, p.step]
            .iter()
            .all(|x| x.is_finite());
        if !finite {
            bail!("{name:?}: every number must be finite");
        }
        let e = Entry {
            line: 0,
            name,
            float: false,
            start: p.value,
            min: p.min_value,
            max: p.max_value,
            c_end: p.step,
            r_end: R_END,
        };
        check(&e)?;
        out.push(e);
    }
    Ok(out)
}

/// `entries` in `format`, as that site writes them: OpenBench's
/// `", "`-joined lines, fishtest's `","`-joined ones, Weather Factory's
/// JSON object in the entries' order (TOML: `Name = value`). The tuned
/// value is the start.
pub fn write(format: Format, entries: &[Entry]) -> String {
    let mut s = String::new();
    match format {
        // `--out`'s own form: `Name = value`.
        Format::Toml => {
            for e in entries {
                s.push_str(&format!(
                    "{} = {}\n",
                    toml::Value::String(e.name.clone()),
                    e.start
                ));
            }
        }
        Format::OpenBench => {
            for e in entries {
                let kind = if e.float { "float" } else { "int" };
                s.push_str(&format!(
                    "{}, {kind}, {}, {}, {}, {}, {}\n",
                    e.name, e.start, e.min, e.max, e.c_end, e.r_end
                ));
            }
        }
        Format::Fishtest => {
            for e in entries {
                s.push_str(&format!(
                    "{},{},{},{},{},{}\n",
                    e.name, e.start, e.min, e.max, e.c_end, e.r_end
                ));
            }
        }
        Format::WeatherFactory => {
            s.push_str("{\n");
            for (i, e) in entries.iter().enumerate() {
                let name = serde_json::Value::String(e.name.clone());
                s.push_str(&format!(
                    "    {name}: {{\n        \"value\": {},\n        \"min_value\": {},\n        \
                     \"max_value\": {},\n        \"step\": {}\n    }}{}\n",
                    e.start,
                    e.min,
                    e.max,
                    e.c_end,
                    if i + 1 < entries.len() { "," } else { "" }
                ));
            }
            s.push_str("}\n");
        }
    }
    s
}

/// `setoption name X value V` lines, as a UCI engine reads them.
pub fn setoption_lines(values: &[(String, i64)]) -> String {
    values
        .iter()
        .map(|(n, v)| format!("setoption name {n} value {v}\n"))
        .collect()
}

/// `option.X=V` arguments for cutechess-cli's and fastchess's `-engine`,
/// on one line, each quoted for a POSIX shell where it needs to be
/// (`'option.Move Overhead=10'`).
pub fn match_runner_options(values: &[(String, i64)]) -> String {
    let args: Vec<String> = values
        .iter()
        .map(|(n, v)| shell_word(&format!("option.{n}={v}")))
        .collect();
    format!("{}\n", args.join(" "))
}

fn shell_word(s: &str) -> String {
    let plain = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._=-+/:@%,".contains(c));
    if plain && !s.is_empty() {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn uci_and_match_runner_lines() {
        let v = vec![("Hash".to_string(), 16), ("Move Overhead".to_string(), 10)];
        assert_eq!(
            setoption_lines(&v),
            "setoption name Hash value 16\nsetoption name Move Overhead value 10\n"
        );
        assert_eq!(
            match_runner_options(&v),
            "option.Hash=16 'option.Move Overhead=10'\n"
        );
        let odd = vec![("It's".to_string(), -1)];
        assert_eq!(match_runner_options(&odd), "'option.It'\\''s=-1'\n");
    }
}
