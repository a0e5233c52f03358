//! `learnbook tune --engine SPEC --params FILE` with the parameter files
//! engine authors keep (issue 52): OpenBench's lines, fishtest's lines and
//! Weather Factory's JSON, each written as its documentation shows, read,
//! tuned for a few iterations at fixed nodes against a real engine
//! (`learnbook uci`; Glaurung where installed) and written back in the same
//! format, which read again holds exactly the tuned values; and bad files
//! refused with exit 2 and a message naming the line or option before
//! anything is written or played.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
};

use common::{ok, run, s, tune_setup};
use learnbook::tune::{
    checkpoint::State,
    external,
    paramfile::{self, Entry, Format},
};

/// `learnbook uci` with the hand-crafted evaluation (`--net none`: the weights
/// tuned here are its), with the table the in-process tuner gives node-limited games.
fn learnbook_uci() -> String {
    format!("name=lb,cmd={} uci --net none,option.Hash=2", common::bin())
}

/// Glaurung 2.2 (Debian), one thread and a small table.
const GLAURUNG: &str = "/usr/games/glaurung";

fn glaurung() -> String {
    format!("name=glaurung,cmd={GLAURUNG},option.Threads=1,option.Hash=4")
}

/// `tune --engine spec --params params` for `iterations` iterations of 2
/// pairs at `nodes`, checkpoint `name.ckpt` and out `name.toml` in `dir`.
fn tune_args(
    dir: &Path,
    openings: &Path,
    spec: &str,
    params: &Path,
    nodes: u32,
    iterations: u32,
    name: &str,
) -> Vec<String> {
    [
        "tune",
        "--engine",
        spec,
        "--params",
        s(params),
        "--nodes",
        &nodes.to_string(),
        "--pairs-per-iteration",
        "2",
        "--iterations",
        &iterations.to_string(),
        "--openings",
        s(openings),
        "--seed",
        "5",
        "--threads",
        "2",
        "--checkpoint",
        s(&dir.join(format!("{name}.ckpt"))),
        "--out",
        s(&dir.join(format!("{name}.toml"))),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `out` + `.suffix`, as `tune` names the files it writes beside `--out`.
fn beside(out: &Path, suffix: &str) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Tunes `text` (a parameter file in `format`, as `file_name`) and checks
/// what a format promises: the run starts from the file's values with its
/// bounds and gains, the tuned values are written back in the same format
/// beside `--out` (and as `setoption` lines and `option.X=V` arguments),
/// the written file read again gives exactly the tuned values, and as
/// `--params` of a new run it starts there. Returns the tuned values.
fn tune_and_read_back(
    spec: &str,
    format: Format,
    file_name: &str,
    text: &str,
    nodes: u32,
    iterations: u32,
) -> Vec<(String, i64)> {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    let params = d.join(file_name);
    fs::write(&params, text).unwrap();
    let given = paramfile::parse(format, text).expect("the test's file is valid");
    ok(&strs(&tune_args(
        d, &openings, spec, &params, nodes, iterations, "run",
    )));

    let state = State::load(&d.join("run.ckpt")).expect("checkpoint");
    let target = state.settings.engine.clone().expect("an engine run");
    assert_eq!(target.format, format);
    assert_eq!(state.iteration(), u64::from(iterations));
    // The file's start, bounds and gains, in its order.
    let params_of: Vec<(&str, f64, f64, f64, f64, f64)> = state
        .settings
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.start, p.min, p.max, p.c_end, p.r_end))
        .collect();
    let want: Vec<(&str, f64, f64, f64, f64, f64)> = given
        .iter()
        .map(|e| (e.name.as_str(), e.start, e.min, e.max, e.c_end, e.r_end))
        .collect();
    assert_eq!(params_of, want);

    // The tuned values: theta rounded, as the engine plays them.
    let tuned = external::values_at(&state, &target);
    let out = d.join("run.toml");
    let suffix = format.suffix().expect("a format other than TOML");
    let written = fs::read_to_string(beside(&out, suffix)).expect("written back");
    assert_eq!(
        paramfile::detect(Path::new("x"), &written).unwrap(),
        format,
        "{written}"
    );
    let again = paramfile::parse(format, &written).expect("the written file reads");
    let strip = |v: &[Entry]| -> Vec<(String, f64, f64, f64, f64, f64)> {
        v.iter()
            .map(|e| (e.name.clone(), e.start, e.min, e.max, e.c_end, e.r_end))
            .collect()
    };
    let expected: Vec<(String, f64, f64, f64, f64, f64)> = given
        .iter()
        .zip(&tuned)
        .map(|(e, (name, v))| {
            assert!(name.eq_ignore_ascii_case(&e.name));
            (name.clone(), *v as f64, e.min, e.max, e.c_end, e.r_end)
        })
        .collect();
    assert_eq!(strip(&again), expected, "{written}");

    // The same values as setoption lines and cutechess/fastchess options.
    let uci = fs::read_to_string(beside(&out, "uci")).unwrap();
    let lines: Vec<String> = tuned
        .iter()
        .map(|(n, v)| format!("setoption name {n} value {v}"))
        .collect();
    assert_eq!(uci.lines().collect::<Vec<_>>(), lines);
    let options = fs::read_to_string(beside(&out, "options")).unwrap();
    for (n, v) in &tuned {
        let arg = format!("option.{n}={v}");
        assert!(
            options.contains(&arg) || options.contains(&format!("'{arg}'")),
            "{arg} in {options}"
        );
    }
    let toml = fs::read_to_string(&out).unwrap();
    assert!(
        toml.contains(&format!(".{suffix}")) && toml.contains(".uci"),
        "--out names the files beside it: {toml}"
    );

    // The written file as --params of a new run starts at the tuned values.
    let mut next = tune_args(d, &openings, spec, &beside(&out, suffix), nodes, 2, "next");
    next.push("--prepare".into());
    ok(&strs(&next));
    let next = State::load(&d.join("next.ckpt")).unwrap();
    let starts: Vec<(String, i64)> = next
        .settings
        .params
        .iter()
        .map(|p| (p.name.clone(), p.start as i64))
        .collect();
    assert_eq!(starts, tuned);
    tuned
}

/// OpenBench's SPSA input, one `name, int, start, min, max, c_end, r_end`
/// line a parameter (as its wiki and engines' `ToOBFormat` print it; its
/// own `spsa_original_input` joins the fields with ", "). Starts away from
/// the engine's defaults, and an r_end that moves them within 4 iterations.
#[test]
fn an_openbench_file_is_tuned_and_written_back_as_openbench_lines() {
    let text = "\
knight_mg, int, 280, 150, 600, 20, 0.05
rook_eg, int, 600.0, 250.0, 900.0, 30.0, 0.05
";
    let tuned = tune_and_read_back(
        &learnbook_uci(),
        Format::OpenBench,
        "spsa.txt",
        text,
        600,
        4,
    );
    // The games moved the values (with --nodes the run is reproducible),
    // so the written file is not the input read back.
    assert_ne!(
        tuned,
        vec![("knight_mg".to_string(), 280), ("rook_eg".to_string(), 600)]
    );
}

/// fishtest's SPSA input, `name,start,min,max,c_end,r_end` as Stockfish's
/// `TUNE()` prints it (c_end a twentieth of the range; r_end raised from
/// its 0.0020 so that 4 iterations move the values).
#[test]
fn a_fishtest_file_is_tuned_and_written_back_as_fishtest_lines() {
    let text = "\
bishop_mg,290,150,600,22.5,0.0500
queen_mg,1000,500,1800,65,0.0500
";
    let tuned = tune_and_read_back(
        &learnbook_uci(),
        Format::Fishtest,
        "tune.fishtest",
        text,
        600,
        4,
    );
    assert_ne!(
        tuned,
        vec![
            ("bishop_mg".to_string(), 290),
            ("queen_mg".to_string(), 1000)
        ]
    );
}

/// Weather Factory's `config.json`: option name to value, min_value,
/// max_value and step (its README's example); step is taken as c_end.
#[test]
fn a_weather_factory_json_is_tuned_and_written_back_as_json() {
    let text = r#"{
    "knight_mg": {
        "value": 280,
        "min_value": 150,
        "max_value": 600,
        "step": 20
    },
    "rook_eg": {
        "value": 600,
        "min_value": 250,
        "max_value": 900,
        "step": 30
    }
}"#;
    tune_and_read_back(
        &learnbook_uci(),
        Format::WeatherFactory,
        "config.json",
        text,
        600,
        3,
    );
}

/// A third-party engine: Glaurung's own options, as Stockfish's `TUNE()`
/// would print them for fishtest (20,000 nodes: at a few thousand Glaurung
/// 2.2 sometimes answers `bestmove (none)`).
#[test]
fn glaurung_options_tuned_from_a_fishtest_file() {
    if !common::have_program(GLAURUNG) {
        return;
    }
    let text = "\
Mobility (Middle Game),60,0,200,10,0.0020
King Safety Coefficient,20,1,100,4.95,0.0020
";
    tune_and_read_back(
        &glaurung(),
        Format::Fishtest,
        "glaurung.txt",
        text,
        20_000,
        2,
    );
}

/// Bad files are refused with exit 2 and a message naming the line (or the
/// option) before anything is written or a game is played.
#[test]
fn bad_parameter_files_are_refused_before_any_game() {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    let spec = learnbook_uci();
    let ob_ok = "knight_mg, int, 300, 150, 600, 20, 0.002\n";
    let ft_ok = "knight_mg,300,150,600,20,0.002\n";
    let wf = |name: &str, body: &str| format!("{{\n  \"{name}\": {body}\n}}\n");
    let wf_ok = r#"{"value": 300, "min_value": 150, "max_value": 600, "step": 20}"#;
    let cases: Vec<(&str, Option<&str>, String, Vec<&str>)> = vec![
        // OpenBench: an option the engine lacks, a bound outside its range,
        // a combo (check, string, button) option named as a spin, a float
        // line for a spin option, malformed lines.
        (
            "p.txt",
            None,
            format!("{ob_ok}knight_value, int, 3, 0, 9, 1, 0.002\n"),
            vec![
                "line 2 (knight_value): unknown option \"knight_value\"",
                "spin options are",
                "knight_mg",
            ],
        ),
        (
            "p.txt",
            None,
            "knight_mg, int, 300, 100, 600, 20, 0.002\n".into(),
            vec!["line 1 (knight_mg): the bounds [100, 600] are outside the engine's range [150, 600]"],
        ),
        (
            "p.txt",
            None,
            format!("{ob_ok}BookMode, int, 1, 0, 1, 1, 0.002\n"),
            vec!["line 2 (BookMode)", "\"BookMode\" is a combo option", "only spin options"],
        ),
        (
            "p.txt",
            None,
            "Ponder, int, 0, 0, 1, 1, 0.002\n".into(),
            vec!["line 1 (Ponder)", "is a check option"],
        ),
        (
            "p.txt",
            None,
            "BookFile, int, 0, 0, 1, 1, 0.002\n".into(),
            vec!["is a string option"],
        ),
        (
            "p.txt",
            None,
            "Clear Hash, int, 0, 0, 1, 1, 0.002\n".into(),
            vec!["is a button option"],
        ),
        (
            "p.txt",
            None,
            "knight_mg, float, 300.5, 150, 600, 20, 0.002\n".into(),
            vec!["line 1 (knight_mg): a float parameter", "spin option", "write the line as int"],
        ),
        (
            "p.txt",
            None,
            format!("{ob_ok}rook_eg, int, 500, 250, 900, 20\n"),
            vec!["line 2: expected 7 comma-separated fields", "found 6"],
        ),
        (
            "p.txt",
            None,
            format!("{ob_ok}rook_eg, int, 5OO, 250, 900, 20, 0.002\n"),
            vec!["line 2 (rook_eg): start \"5OO\" is not a finite number"],
        ),
        // fishtest: the same, six fields a line.
        (
            "p.fishtest",
            None,
            format!("{ft_ok}knight_value,3,0,9,1,0.002\n"),
            vec!["line 2 (knight_value): unknown option \"knight_value\""],
        ),
        (
            "p.fishtest",
            None,
            "rook_eg,500,250,1000,20,0.002\n".into(),
            vec!["line 1 (rook_eg): the bounds [250, 1000] are outside the engine's range [250, 900]"],
        ),
        (
            "p.fishtest",
            None,
            "BookMode,1,0,1,1,0.002\n".into(),
            vec!["line 1 (BookMode)", "is a combo option"],
        ),
        (
            "p.fishtest",
            None,
            format!("{ft_ok}\nrook_eg;500;250;900;20;0.002\n"),
            vec!["line 3: expected 6 comma-separated fields", "found 1"],
        ),
        (
            "p.fishtest",
            None,
            "knight_mg,700,150,600,20,0.002\n".into(),
            vec!["line 1 (knight_mg): the start value 700 is outside [min, max] = [150, 600]"],
        ),
        // Weather Factory's JSON.
        (
            "config.json",
            None,
            format!(
                "{{\"knight_mg\": {wf_ok},\n \"knight_value\": {{\"value\": 3, \"min_value\": 0, \"max_value\": 9, \"step\": 1}}}}"
            ),
            vec!["\"knight_value\": unknown option \"knight_value\""],
        ),
        (
            "config.json",
            None,
            wf(
                "knight_mg",
                r#"{"value": 300, "min_value": 0, "max_value": 600, "step": 20}"#,
            ),
            vec!["\"knight_mg\": the bounds [0, 600] are outside the engine's range [150, 600]"],
        ),
        (
            "config.json",
            None,
            wf(
                "BookMode",
                r#"{"value": 0, "min_value": 0, "max_value": 1, "step": 1}"#,
            ),
            vec!["\"BookMode\" is a combo option"],
        ),
        (
            "config.json",
            None,
            wf("knight_mg", r#"{"value": 300, "min_value": 150, "max_value": 600}"#),
            vec!["\"knight_mg\": expected", "missing field `step`"],
        ),
        (
            "config.json",
            None,
            format!("{{\"knight_mg\": {wf_ok},"),
            vec!["not Weather Factory's JSON", "line 1"],
        ),
        // A format named by the flag that the file is not in; a file whose
        // format cannot be told.
        (
            "p.txt",
            Some("fishtest"),
            ob_ok.into(),
            vec![
                "(fishtest format)",
                "line 1: expected 6 comma-separated fields",
                "found 7",
            ],
        ),
        (
            "p.txt",
            None,
            "knight_mg 300 150 600\n".into(),
            vec!["cannot tell the format", "--params-format"],
        ),
    ];
    for (file, format, text, says) in cases {
        let params = d.join(file);
        fs::write(&params, &text).unwrap();
        let mut args = tune_args(d, &openings, &spec, &params, 600, 2, "bad");
        if let Some(f) = format {
            args.extend(["--params-format".into(), f.into()]);
        }
        let out = run(&strs(&args));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        for want in says {
            assert!(err.contains(want), "{text}: expected {want:?} in {err}");
        }
        let written: Vec<_> = fs::read_dir(d)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("bad."))
            .collect();
        assert!(written.is_empty(), "{text}: wrote {written:?}");
        fs::remove_file(&params).unwrap();
    }

    // --params-format: a value it does not know; a format other than TOML
    // without --engine (the in-process tuner reads TOML only).
    let params = d.join("p.txt");
    fs::write(&params, ob_ok).unwrap();
    let mut args = tune_args(d, &openings, &spec, &params, 600, 2, "bad");
    args.extend(["--params-format".into(), "cutechess".into()]);
    let out = run(&strs(&args));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown parameter file format"));
    let mut args = tune_args(d, &openings, &spec, &params, 600, 2, "bad");
    args.splice(1..3, ["--start".to_string(), "default".to_string()]);
    args.extend(["--params-format".into(), "openbench".into()]);
    let out = run(&strs(&args));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs --engine"), "{err}");
    assert!(!d.join("bad.ckpt").exists() && !d.join("bad.toml").exists());
}

/// Glaurung's combo option and a bound outside its range, by a third
/// party's own option names.
#[test]
fn glaurung_combo_and_out_of_range_options_are_refused() {
    if !common::have_program(GLAURUNG) {
        return;
    }
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    for (text, want) in [
        (
            "Space,100,0,200,10,0.0020\nKing Safety Curve,0,0,1,1,0.0020\n",
            "line 2 (King Safety Curve): \"King Safety Curve\" is a combo option",
        ),
        (
            "Space,100,0,300,10,0.0020\n",
            "line 1 (Space): the bounds [0, 300] are outside the engine's range [0, 200]",
        ),
        (
            "Spaces,100,0,200,10,0.0020\n",
            "line 1 (Spaces): unknown option \"Spaces\"",
        ),
    ] {
        let params = d.join("glaurung.txt");
        fs::write(&params, text).unwrap();
        let out = run(&strs(&tune_args(
            d,
            &openings,
            &glaurung(),
            &params,
            20_000,
            2,
            "bad",
        )));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(want), "{text}: expected {want:?} in {err}");
        assert!(!d.join("bad.ckpt").exists() && !d.join("bad.toml").exists());
    }
}
