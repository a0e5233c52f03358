//! `learnbook bench suite`: two small suites played by the built-in engine
//! on both sides, the report and its JSON, resuming from --pgnout-dir or a
//! results journal, and a bad suite path.

mod common;

use std::path::{Path, PathBuf};

use common::{ok, repo, run, s};

/// Writes `n` positions of the repository's opening sample, from line
/// `skip`, to `dir/name`.
fn suite(dir: &Path, name: &str, skip: usize, n: usize) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("data/openings-sample.epd")).expect("sample");
    let lines: Vec<&str> = text.lines().skip(skip).take(n).collect();
    assert_eq!(lines.len(), n, "the sample has too few positions");
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").expect("write suite");
    path
}

/// `bench suite` over `suites` with --pairs `pairs`; returns stdout and the JSON.
fn bench(
    suites: &[&Path],
    pairs: usize,
    extra: &[&str],
    json: &Path,
) -> (String, serde_json::Value) {
    let pairs = pairs.to_string();
    let mut args = vec!["bench", "suite"];
    for p in suites {
        args.extend(["--suite", s(p)]);
    }
    args.extend([
        "--engine",
        "name=a,cmd=builtin",
        "--engine",
        "name=b,cmd=builtin",
        "--nodes",
        "300",
        "--pairs",
        &pairs,
        "--json",
        s(json),
    ]);
    args.extend(extra);
    let out = ok(&args);
    let text = std::fs::read_to_string(json).expect("the JSON report");
    let value = serde_json::from_str(&text).expect("the JSON report parses");
    (String::from_utf8_lossy(&out.stdout).into_owned(), value)
}

fn number(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

#[test]
fn two_suites_are_measured_and_compared() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = suite(dir.path(), "first.epd", 0, 10);
    let second = suite(dir.path(), "second.epd", 10, 10);
    let json = dir.path().join("report.json");
    let (out, report) = bench(&[&first, &second], 4, &[], &json);

    assert!(out.contains("suite first ("), "{out}");
    assert!(out.contains("suite second ("), "{out}");
    assert_eq!(out.matches("a vs b: 4 pairs, 8 games").count(), 2, "{out}");
    assert!(out.contains("nElo/first"), "{out}");
    assert!(!out.contains("took them again"), "{out}");

    assert_eq!(report["engines"], serde_json::json!(["a", "b"]));
    assert_eq!(report["pairs_per_suite"], 4);
    assert_eq!(number(&report["sprt"], "elo1"), 5.0);
    let suites = report["suites"].as_array().expect("suites");
    assert_eq!(suites.len(), 2);
    for (r, name) in suites.iter().zip(["first", "second"]) {
        assert_eq!(r["name"], name);
        assert_eq!(r["pairs"], 4);
        assert_eq!(r["games"], 8);
        assert_eq!(r["openings"], 10);
        assert_eq!(r["openings_reused"], false);
        let penta: Vec<u64> = r["pentanomial"]
            .as_array()
            .expect("pentanomial")
            .iter()
            .map(|c| c.as_u64().expect("count"))
            .collect();
        assert_eq!(penta.len(), 5);
        assert_eq!(penta.iter().sum::<u64>(), 4, "{r}");
        let wdl = ["wins", "draws", "losses"].map(|k| number(r, k));
        assert_eq!(wdl.iter().sum::<f64>(), 8.0);
        for key in ["score", "draw_rate", "pair_draw_rate", "both_drawn_rate"] {
            assert!((0.0..=1.0).contains(&number(r, key)), "{key} in {r}");
        }
        for key in [
            "variance_per_pair",
            "sigma_per_game",
            "games_at_elo1",
            "games_at_score",
        ] {
            assert!(number(r, key) > 0.0, "{key} in {r}");
        }
        for key in ["elo", "nelo"] {
            let i = &r[key];
            let (v, lo, hi) = (number(i, "value"), number(i, "low"), number(i, "high"));
            assert!(lo <= v && v <= hi, "{key} in {r}");
        }
        assert!(r.get("nelo_ratio_to_first").is_some(), "{r}");
        // The colours split the games as the pairs do: four each.
        let colour = |c: &str| ["wins", "draws", "losses"].map(|k| number(&r[c], k));
        let (white, black) = (colour("as_white"), colour("as_black"));
        assert_eq!(white.iter().sum::<f64>(), 4.0, "{r}");
        assert_eq!(black.iter().sum::<f64>(), 4.0, "{r}");
        for k in 0..3 {
            assert_eq!(white[k] + black[k], wdl[k], "{r}");
        }
        let model = &r["model"];
        let (here, best) = (number(model, "nelo_here"), number(model, "best_nelo"));
        assert!(best >= here, "the best bias was searched: {model}");
    }
    assert!(out.contains("BayesElo model of first's games"), "{out}");
}

#[test]
fn a_rerun_with_pgnout_dir_counts_the_games_already_played() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Three openings for four pairs: the runner takes them again.
    let small = suite(dir.path(), "small.epd", 20, 3);
    let pgn_dir = dir.path().join("games");
    let extra = ["--pgnout-dir", s(&pgn_dir)];
    let json = dir.path().join("report.json");
    let (out, first) = bench(&[&small], 4, &extra, &json);
    assert!(out.contains("took them again"), "{out}");
    assert_eq!(first["suites"][0]["openings_reused"], true);
    assert_eq!(first["suites"][0]["resumed_games"], 0);
    assert!(pgn_dir.join("small.pgn").is_file());

    let (out, again) = bench(&[&small], 4, &extra, &json);
    let (r0, r1) = (&first["suites"][0], &again["suites"][0]);
    assert_eq!(r1["resumed_games"], 8, "{out}");
    assert!(out.contains("8 of the games read back"), "{out}");
    for key in ["pentanomial", "wins", "draws", "losses", "both_drawn_rate"] {
        assert_eq!(r0[key], r1[key], "{key}");
    }
}

#[test]
fn a_rerun_with_a_journal_counts_its_games_and_refuses_another_match() {
    let dir = tempfile::tempdir().expect("tempdir");
    let small = suite(dir.path(), "small.epd", 30, 4);
    let journal = dir.path().join("journal.txt");
    let json = dir.path().join("report.json");
    let extra = ["--journal", s(&journal)];
    let (_, first) = bench(&[&small], 3, &extra, &json);
    let text = std::fs::read_to_string(&journal).expect("the journal");
    let line = text
        .lines()
        .find(|l| l.starts_with("small "))
        .unwrap_or_else(|| panic!("no line for the suite in {text}"));
    let results = line.rsplit(' ').next().expect("results");
    assert_eq!(results.len(), 6, "{line}");
    let count = |c: char| results.chars().filter(|&x| x == c).count() as f64;
    let r0 = &first["suites"][0];
    assert_eq!(count('1'), number(r0, "wins"), "{line}");
    assert_eq!(count('='), number(r0, "draws"), "{line}");
    assert_eq!(count('0'), number(r0, "losses"), "{line}");

    // No PGN file anywhere: the journal alone resumes, and two more pairs are played.
    let (out, again) = bench(&[&small], 5, &extra, &json);
    let r1 = &again["suites"][0];
    assert_eq!(r1["resumed_games"], 6, "{out}");
    assert_eq!(r1["games"], 10, "{out}");
    assert!(out.contains("6 of the games read back from"), "{out}");
    let text = std::fs::read_to_string(&journal).expect("the journal");
    let line = text
        .lines()
        .find(|l| l.starts_with("small "))
        .expect("line");
    let now = line.rsplit(' ').next().expect("results");
    assert_eq!(now.len(), 10, "{line}");
    assert!(
        now.starts_with(results),
        "the games of the first run kept: {line}"
    );

    // Other limits make another match: its games are not these.
    let out = run(&[
        "bench",
        "suite",
        "--suite",
        s(&small),
        "--engine",
        "name=a,cmd=builtin",
        "--engine",
        "name=b,cmd=builtin",
        "--nodes",
        "400",
        "--pairs",
        "5",
        "--journal",
        s(&journal),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("other engines, limits"), "{err}");
}

#[test]
fn a_missing_suite_is_a_one_line_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = suite(dir.path(), "good.epd", 0, 10);
    let missing = dir.path().join("no-such-suite.epd");
    let out = run(&[
        "bench",
        "suite",
        "--suite",
        s(&good),
        "--suite",
        s(&missing),
        "--engine",
        "name=a,cmd=builtin",
        "--engine",
        "name=b,cmd=builtin",
        "--nodes",
        "300",
        "--pairs",
        "4",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(s(&missing)), "{err}");
    // Every suite is read before a game is played.
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
