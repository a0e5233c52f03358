//! docs/TOUR.md, run: every `$ ` command of its ```sh blocks, in order, in
//! a temporary directory laid out as the repository's root (`data/` copied,
//! `out/` empty), with the built `learnbook` first on the PATH; every line
//! the document shows under a command must appear in what it printed, in
//! the same order.
//!
//! Conventions of the document, which this test reads:
//! - a command starts with `$ ` and goes on over lines ending in `\`;
//! - the lines after it, up to the next command or the block's end, are
//!   lines it prints (standard output and standard error together); a line
//!   `...` stands for lines left out, and `...` inside a line for any text;
//! - a number followed by a unit of time, rate or memory (`0.06 s`,
//!   `25663 games/s`, `30 MB`) varies from run to run and is not compared;
//! - `learnbook serve` is started in the background (its first line is
//!   compared) and stopped at the end; `curl -s 'URL'` is a GET of the URL
//!   made by this test (no curl needed).
//!
//! Needs only the repository. `LEARNBOOK_TOUR_PRINT=1` prints what each
//! command printed, to update the document.

mod common;

use std::{
    io::{BufRead, BufReader, Read, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

/// Units after which a number is a measurement of this run.
const UNITS: [&str; 11] = [
    "expansions/s",
    "positions/s",
    "lookups/s",
    "games/s",
    "req/s",
    "ms",
    "us",
    "MB",
    "KB",
    "GB",
    "s",
];

/// `line` with every number followed by one of `UNITS` (after at most one
/// space) replaced by `#`.
fn mask(line: &str) -> String {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let starts_number = b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.'));
        if starts_number {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j + 1 < b.len() && b[j] == b'.' && b[j + 1].is_ascii_digit() {
                j += 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
            }
            let k = if j < b.len() && b[j] == b' ' {
                j + 1
            } else {
                j
            };
            let unit = UNITS.iter().find(|u| {
                line[k..].starts_with(**u)
                    && !line[k + u.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphanumeric())
            });
            match unit {
                Some(u) => {
                    out.push('#');
                    i = k + u.len();
                }
                None => {
                    out.push_str(&line[i..j]);
                    i = j;
                }
            }
        } else {
            let c = line[i..].chars().next().expect("char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out.trim_end().to_string()
}

/// Whether an output line is what the document shows, `...` standing for
/// any text.
fn matches(shown: &str, printed: &str) -> bool {
    let (shown, printed) = (mask(shown), mask(printed));
    let parts: Vec<&str> = shown.split("...").collect();
    if parts.len() == 1 {
        return shown == printed;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !printed.starts_with(first)
        || !printed.ends_with(last)
        || printed.len() < first.len() + last.len()
    {
        return false;
    }
    let mut rest = &printed[first.len()..printed.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    true
}

struct Step {
    command: String,
    shown: Vec<String>,
}

/// The commands of the document's ```sh blocks with the lines shown under
/// each.
fn steps(doc: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut in_sh = false;
    let mut continued = false;
    for line in doc.lines() {
        if !in_sh {
            in_sh = line.trim_end() == "```sh";
            continue;
        }
        if line.trim_end() == "```" {
            in_sh = false;
            continued = false;
            continue;
        }
        if continued {
            let step = steps.last_mut().expect("a command");
            let part = line.trim();
            continued = part.ends_with('\\');
            step.command.push(' ');
            step.command
                .push_str(part.trim_end_matches('\\').trim_end());
        } else if let Some(command) = line.strip_prefix("$ ") {
            continued = command.ends_with('\\');
            steps.push(Step {
                command: command.trim_end_matches('\\').trim_end().to_string(),
                shown: Vec::new(),
            });
        } else if let Some(step) = steps.last_mut() {
            if line.trim() != "..." {
                step.shown.push(line.to_string());
            }
        }
    }
    steps
}

/// Checks that the lines `shown` appear in `printed` in order.
fn check(step: &Step, printed: &str) {
    let lines: Vec<&str> = printed.lines().collect();
    let mut at = 0;
    for shown in &step.shown {
        match lines[at..].iter().position(|l| matches(shown, l)) {
            Some(i) => at += i + 1,
            None => panic!(
                "docs/TOUR.md: `$ {}` did not print, in this order,\n  {shown}\n(masked: {})\nIt printed:\n{printed}",
                step.command,
                mask(shown)
            ),
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A GET of `http://HOST:PORT/PATH` over HTTP/1.0: the body.
fn get(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = std::net::TcpStream::connect(host).expect("connect to the server");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").expect("request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    body.to_string()
}

struct Server(Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn the_tour_prints_what_it_shows() {
    let repo = common::repo();
    let doc = std::fs::read_to_string(repo.join("docs/TOUR.md")).expect("docs/TOUR.md");
    let steps = steps(&doc);
    assert!(
        steps.len() >= 20,
        "{} commands in docs/TOUR.md",
        steps.len()
    );
    assert!(steps.iter().all(|s| !s.command.is_empty()));

    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    copy_dir(&repo.join("data"), &root.join("data"));
    std::fs::create_dir(root.join("out")).expect("out/");
    let bin_dir = PathBuf::from(common::bin())
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let print = std::env::var_os("LEARNBOOK_TOUR_PRINT").is_some();

    let mut server = Server(None);
    for step in &steps {
        let command = &step.command;
        let printed = if command.starts_with("learnbook serve") {
            let mut child = Command::new("sh")
                .arg("-c")
                .arg(format!("exec {command}"))
                .current_dir(root)
                .env("PATH", &path)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start the server");
            let mut first = String::new();
            BufReader::new(child.stdout.take().expect("stdout"))
                .read_line(&mut first)
                .expect("the server's first line");
            server.0 = Some(child);
            first
        } else if let Some(url) = command.strip_prefix("curl -s ") {
            assert!(server.0.is_some(), "`$ {command}` with no server started");
            get(url.trim().trim_matches('\''))
        } else {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("{{ {command}\n}} 2>&1"))
                .current_dir(root)
                .env("PATH", &path)
                .stdin(Stdio::null())
                .output()
                .expect("run sh");
            let printed = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "docs/TOUR.md: `$ {command}` failed ({}):\n{printed}",
                out.status
            );
            printed
        };
        if print {
            println!("$ {command}\n{printed}");
        }
        check(step, &printed);
    }
}

#[test]
fn the_mask_hides_measurements_only() {
    assert_eq!(
        mask("games read: 1458, used: 1458, skipped: 0 (0.06 s, 25663 games/s)"),
        "games read: 1458, used: 1458, skipped: 0 (#, #)"
    );
    assert_eq!(
        mask("count 0.04 s, 30 MB; 391 searches"),
        "count #, #; 391 searches"
    );
    assert_eq!(
        mask("score 65.0%, 20 games, 83 engine moves/game"),
        "score 65.0%, 20 games, 83 engine moves/game"
    );
    assert!(matches("a ... c", "a b c"));
    assert!(matches("{\"x\":1, ...", "{\"x\":1, \"y\":2}"));
    assert!(!matches("a ... c", "a b d"));
    assert!(!matches("games 1458", "games 1459"));
    assert!(matches(
        "in 9.0 s, 47.8 positions/s",
        "in 35.6 s, 12.1 positions/s"
    ));
}
