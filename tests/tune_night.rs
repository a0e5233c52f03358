//! scripts/tune_night.sh, the night's tune in parts: stopped at the end of
//! each part and resumed on a fresh machine (only its journal carried),
//! it reaches the very checkpoint that one uninterrupted run reaches.

mod common;

use std::{fs, path::Path, process::Command};

use common::{bin, have_program, repo, s, tune_setup};
use learnbook::tune::checkpoint::State;

/// One part of the script with its settings at small size; the journal
/// in `journal`, the work files in `work`.
fn part(work: &Path, journal: &Path, openings: &Path, params: &Path, length: &str) {
    let out = Command::new("sh")
        .arg(repo().join("scripts/tune_night.sh"))
        .args([s(work), length])
        .current_dir(repo())
        .env("JOURNAL", journal)
        .env("LEARNBOOK", bin())
        .env("OPENINGS", openings)
        .env("PARAMS", params)
        .env("NODES", "3000")
        .env("ITERATIONS", "40")
        .env("PAIRS", "2")
        .env("MATCH_EVERY", "8")
        .env("MATCH_PAIRS", "1")
        .env("SEED", "5")
        .output()
        .expect("run scripts/tune_night.sh");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The journal's checkpoint.
fn journal_state(journal: &Path, scratch: &Path) -> State {
    let text = Command::new("gzip")
        .args(["-dc", s(&journal.join("search.ckpt.gz"))])
        .output()
        .expect("gzip");
    fs::write(scratch, text.stdout).expect("write");
    State::load(scratch).expect("the journal's checkpoint loads")
}

#[test]
fn the_night_in_parts_on_fresh_machines_is_the_night_in_one_go() {
    if !have_program("/usr/bin/time") {
        return;
    }
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    let (whole_journal, parts_journal) = (d.join("journal-whole"), d.join("journal-parts"));
    part(&d.join("whole"), &whole_journal, &openings, &params, "30m");
    let whole = journal_state(&whole_journal, &d.join("whole.ckpt"));
    assert_eq!(whole.iteration(), 40);
    let mut parts = 0;
    loop {
        // A fresh machine: nothing but the journal.
        let work = d.join("work");
        let _ = fs::remove_dir_all(&work);
        part(&work, &parts_journal, &openings, &params, "2s");
        parts += 1;
        let now = journal_state(&parts_journal, &d.join("parts.ckpt"));
        if now.iteration() == 40 && now.matches.len() == whole.matches.len() {
            break;
        }
        assert!(parts < 200, "no end after {parts} parts");
    }
    let resumed = journal_state(&parts_journal, &d.join("parts.ckpt"));
    assert_eq!(resumed.history, whole.history, "the same trajectory");
    assert_eq!(resumed.matches, whole.matches, "the same progress matches");
    assert_eq!(resumed.matches.len(), 5);
    let rows = fs::read_to_string(parts_journal.join("parts.tsv")).expect("parts.tsv");
    assert_eq!(rows.lines().count(), 1 + parts, "a row a part: {rows}");
    assert!(parts >= 2, "the run was cut into parts");
    assert_eq!(
        fs::read(parts_journal.join("search-tuned.toml")).expect("tuned"),
        fs::read(whole_journal.join("search-tuned.toml")).expect("tuned")
    );
    assert!(parts_journal.join("search-trajectory.png").is_file());
}
