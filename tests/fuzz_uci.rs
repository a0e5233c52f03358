//! Fuzzing the UCI command loop with random and mutated command lines (the
//! harness and its environment: `tests/common/fuzz.rs`).

mod common;

use std::{
    io::Write,
    sync::{Arc, Mutex},
    time::Duration,
};

use common::fuzz::*;
use learnbook::uci;
use rand::{rngs::StdRng, Rng};
use shakmaty::{fen::Fen, EnPassantMode};

// -------------------------------------------------------------------- UCI

/// The engine's output, captured in process.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("capture").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const UCI_COMMANDS: &[&str] = &[
    "uci",
    "isready",
    "ucinewgame",
    "setoption",
    "position",
    "go",
    "stop",
    "ponderhit",
    "quit",
    "eval",
];

const UCI_WORDS: &[&str] = &[
    "uci",
    "isready",
    "ucinewgame",
    "setoption",
    "name",
    "value",
    "position",
    "startpos",
    "fen",
    "moves",
    "go",
    "wtime",
    "btime",
    "winc",
    "binc",
    "movestogo",
    "movetime",
    "nodes",
    "depth",
    "mate",
    "infinite",
    "ponder",
    "searchmoves",
    "stop",
    "ponderhit",
    "quit",
    "eval",
    "Hash",
    "Clear",
    "Move",
    "Overhead",
    "OwnBook",
    "BookFile",
    "BookMode",
    "WeightsFile",
    "pawn_mg",
    "king_attack_divisor",
    "true",
    "false",
    "best",
    "weighted",
    "<empty>",
    "e2e4",
    "e7e5",
    "e1g1",
    "a7a8q",
    "0000",
    "0",
    "-1",
    "1",
    "3",
    "100",
    "4294967296",
    "99999999999999999999",
    "-",
    "w",
    "b",
    "KQkq",
    "8/8/8/8/8/8/8/8",
    "x",
    "\u{1F600}",
    "ünïcode",
];

fn uci_line(rng: &mut StdRng, bin: &str) -> Vec<u8> {
    let toml = common::repo()
        .join("data/tune/scrambled.toml")
        .display()
        .to_string();
    let moves = random_line(rng, 60).0.join(" ");
    let fen = Fen::from_position(&random_line(rng, 30).1, EnPassantMode::Legal).to_string();
    let more = random_line(rng, 3).0.join(" ");
    let base = [
        "uci".to_string(),
        "isready".into(),
        "ucinewgame".into(),
        "eval".into(),
        "stop".into(),
        "ponderhit".into(),
        format!("position startpos moves {moves}"),
        format!("position fen {fen}"),
        format!("position fen {fen} moves {more}"),
        "go depth 2".into(),
        "go nodes 3000".into(),
        "go movetime 20".into(),
        "go wtime 1000 btime 1000 winc 10 binc 10 movestogo 20".into(),
        "go infinite".into(),
        "go ponder wtime 500 btime 500".into(),
        "go searchmoves e2e4 d2d4 depth 3".into(),
        "go mate 2".into(),
        "setoption name Hash value 8".into(),
        "setoption name Clear Hash".into(),
        "setoption name Move Overhead value 10".into(),
        "setoption name OwnBook value true".into(),
        format!("setoption name BookFile value {bin}"),
        "setoption name BookFile value no/such/book.bin".into(),
        "setoption name BookMode value weighted".into(),
        format!("setoption name WeightsFile value {toml}"),
        "setoption name WeightsFile value <empty>".into(),
        "setoption name pawn_mg value 90".into(),
        "quit".into(),
        String::new(),
    ][rng.random_range(0..29)]
    .clone();
    let mut words: Vec<String> = base.split(' ').map(str::to_string).collect();
    if words.is_empty() {
        words.push(String::new());
    }
    if rng.random_range(0..2) == 0 {
        for _ in 0..rng.random_range(1..=4) {
            let i = rng.random_range(0..=words.len());
            let w = UCI_WORDS[rng.random_range(0..UCI_WORDS.len())].to_string();
            match rng.random_range(0..4) {
                0 => words.insert(i, w),
                1 if i < words.len() => words[i] = w,
                2 if i < words.len() => {
                    words.remove(i);
                }
                _ if !words.is_empty() => {
                    let (a, b) = (
                        rng.random_range(0..words.len()),
                        rng.random_range(0..words.len()),
                    );
                    words.swap(a, b);
                }
                _ => {}
            }
        }
    }
    let mut line = words.join(" ").into_bytes();
    if rng.random_range(0..6) == 0 {
        line = mutate(rng, &line, &[], &[]);
    }
    // One line stays one line.
    for c in line.iter_mut() {
        if *c == b'\n' || *c == b'\r' {
            *c = b' ';
        }
    }
    cap_hash(line)
}

/// Asking for a hash table of gigabytes is a request for memory, not a
/// malformed line: the fuzzer keeps Hash at 256 MB or less.
fn cap_hash(line: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&line).to_ascii_lowercase();
    if !text.contains("hash") {
        return line;
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i].is_ascii_digit() {
            let end = line[i..]
                .iter()
                .position(|c| !c.is_ascii_digit())
                .map_or(line.len(), |e| i + e);
            let big = end - i > 3
                || std::str::from_utf8(&line[i..end])
                    .ok()
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_none_or(|n| n > 256);
            out.extend_from_slice(if big { b"16" } else { &line[i..end] });
            i = end;
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
    out
}

fn gen_uci(rng: &mut StdRng, bin: &str) -> Vec<Vec<u8>> {
    (0..rng.random_range(1..=12))
        .map(|_| uci_line(rng, bin))
        .collect()
}

fn run_uci(lines: Vec<Vec<u8>>) -> CaseResult {
    static LOCK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let captured = Captured::default();
    uci::capture_output(Some(Box::new(captured.clone())));
    // Each line is followed by isready: the readyok after it closes its answer.
    let mut input = Vec::new();
    for l in &lines {
        input.extend_from_slice(l);
        input.extend_from_slice(b"\nisready\n");
    }
    input.extend_from_slice(b"quit\n");
    let result = uci::run(std::io::Cursor::new(input), uci::Config::default());
    uci::capture_output(None);
    result.map_err(|e| format!("the engine loop failed: {e:#}"))?;
    let out = String::from_utf8_lossy(&captured.0.lock().expect("capture")).into_owned();
    if out.contains("search thread failed") {
        return Err(format!("the search thread panicked: {out}"));
    }
    // Split the output into each line's answer.
    let mut answers = out.split("readyok\n");
    let errors: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix("info string "))
        .filter(|l| *l != "book move" && !l.starts_with("static eval"))
        .map(str::to_string)
        .collect();
    for line in &lines {
        let text = String::from_utf8_lossy(line);
        let first = text.split_whitespace().next().unwrap_or("");
        if first == "quit" {
            return Ok(errors);
        }
        let Some(mut answer) = answers.next().map(str::to_string) else {
            return Err(format!(
                "no answer to {text:?} (and the lines after it): {out}"
            ));
        };
        if first == "isready" {
            answer.push_str(answers.next().unwrap_or(""));
        }
        if !first.is_empty()
            && !UCI_COMMANDS.contains(&first)
            && !answer.contains("unknown command")
        {
            return Err(format!(
                "the unknown command {text:?} was not answered: {answer:?}"
            ));
        }
    }
    check_bestmoves(&lines, &out, &errors)?;
    Ok(errors)
}

/// Every `go` that was not refused is answered with one `bestmove` (by
/// `quit` at the latest).
fn check_bestmoves(lines: &[Vec<u8>], out: &str, errors: &[String]) -> Result<(), String> {
    let gos = lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .take_while(|l| l.split_whitespace().next() != Some("quit"))
        .filter(|l| l.split_whitespace().next() == Some("go"))
        .count();
    let refused = errors.iter().filter(|e| e.contains("go ignored")).count();
    let answered = out.lines().filter(|l| l.starts_with("bestmove")).count();
    if answered + refused != gos {
        return Err(format!(
            "{gos} go commands, {refused} refused, {answered} bestmoves: {out}"
        ));
    }
    Ok(())
}

#[test]
fn uci_survives_random_and_mutated_command_lines() {
    let scratch = scratch();
    let bin = scratch.path().join("book.bin");
    std::fs::write(&bin, polyglot_seed()).expect("write the book");
    let bin = bin.display().to_string();
    fuzz(
        "uci",
        100,
        Duration::from_secs(60),
        move |rng| gen_uci(rng, &bin),
        run_uci,
    );
}

/// Found by the fuzzer: `value` before `name` sliced args[4..1] and the
/// engine died.
#[test]
fn setoption_with_value_before_name_is_answered_not_a_panic() {
    let lines = vec![
        b"setoption value 5 name Hash".to_vec(),
        b"setoption name Hash value 8 value".to_vec(),
        b"setoption value name".to_vec(),
        b"go depth 1".to_vec(),
    ];
    let answers = run_uci(lines).expect("every line answered");
    assert!(
        answers
            .iter()
            .any(|a| a.contains("Hash must be 1..65536 MB")),
        "{answers:?}"
    );
}

/// Found by the fuzzer: a line that is not UTF-8 ended the engine's loop
/// (`BufRead::lines` fails on it), so every later command went unanswered.
#[test]
fn a_line_that_is_not_utf8_is_answered_and_the_session_goes_on() {
    let lines = vec![
        b"setoption name BookFile value M\xfcller.bin".to_vec(),
        b"\xff\xfe junk".to_vec(),
        b"position startpos moves e2e4".to_vec(),
        b"go depth 1".to_vec(),
    ];
    let answers = run_uci(lines).expect("every line answered");
    assert!(
        answers.iter().any(|a| a.contains("cannot open book")),
        "{answers:?}"
    );
}
