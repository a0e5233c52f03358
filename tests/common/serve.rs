//! The serve tests' harness: a running `learnbook serve` on
//! `--bind 127.0.0.1:0` over a book of the sample's master games, a small
//! HTTP/1.1 client over plain TCP (so malformed requests can be sent as they
//! are), and the checks of a lichess-shaped answer. Used by `serve.rs`,
//! `serve_pages.rs` and `serve_limits.rs`.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::Value;
use shakmaty::{san::SanPlus, uci::UciMove, Chess, Position};
use tempfile::TempDir;

use super::{ok, s, sample, sample_text};

// ------------------------------------------------------------ the server

/// A running `learnbook serve`, killed when dropped.
pub struct Server {
    pub child: Option<Child>,
    pub addr: SocketAddr,
    pub stderr: PathBuf,
}

/// A book of the sample's 1,458 master games in a directory of its own.
pub fn sample_book() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = dir.path().join("book.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    (dir, book)
}

impl Server {
    /// Starts the server on `book` with `extra` arguments; waits for its
    /// line `listening on http://ADDR/`.
    pub fn start(book: &Path, extra: &[&str]) -> Server {
        let stderr = book.with_extension(format!("serve-{}.log", rand_suffix()));
        let log = std::fs::File::create(&stderr).expect("log file");
        let mut child = Command::new(super::bin())
            .args(["serve", "--book", s(book), "--bind", "127.0.0.1:0"])
            // Two threads unless the test says.
            .args(if extra.contains(&"--threads") {
                &[][..]
            } else {
                &["--threads", "2"][..]
            })
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("spawn learnbook serve");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the first line");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!(
                    "no URL in {line:?}; stderr: {}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                )
            });
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("host:port");
        Server {
            child: Some(child),
            addr,
            stderr,
        }
    }

    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).expect("connect");
        // Bounds a test that would otherwise hang; never a measured time.
        stream
            .set_read_timeout(Some(Duration::from_secs(300)))
            .expect("timeout");
        stream
    }

    /// Sends `raw` as it is and reads the answer up to the close.
    pub fn raw(&self, raw: &[u8]) -> Response {
        let mut stream = self.connect();
        // A server that refuses a request early may close before all of it
        // is sent: what it answered is read all the same.
        let _ = stream.write_all(raw);
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        Response::parse(&bytes)
    }

    pub fn get(&self, target: &str) -> Response {
        self.raw(
            format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
    }

    /// `GET target`, which must answer 200 with JSON.
    pub fn json(&self, target: &str) -> Value {
        let r = self.get(target);
        assert_eq!(r.status, 200, "{target}: {}", r.text());
        assert_eq!(
            r.header("content-type"),
            Some("application/json"),
            "{target}"
        );
        serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{target}: {e}: {}", r.text()))
    }

    /// The server still answers a good request.
    pub fn assert_serving(&self) {
        let v = self.json("/masters?play=e2e4&moves=2");
        assert_eq!(v["moves"].as_array().map(Vec::len), Some(2), "{v}");
    }

    /// Sends `sig` and returns the exit code.
    pub fn stop(mut self, sig: libc::c_int) -> Option<i32> {
        let mut child = self.child.take().expect("running");
        // SAFETY: a signal to our own child process.
        unsafe {
            libc::kill(child.id() as libc::pid_t, sig);
        }
        let status = child.wait().expect("wait");
        self.check_log();
        status.code()
    }

    pub fn check_log(&self) {
        let log = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        assert!(!log.contains("panicked"), "the server panicked: {log}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            if !std::thread::panicking() {
                self.check_log();
            }
        }
        let _ = std::fs::remove_file(&self.stderr);
    }
}

pub fn rand_suffix() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

// ------------------------------------------------------- a small client

pub struct Response {
    /// 0: no answer (the connection was closed).
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn parse(bytes: &[u8]) -> Response {
        let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
            assert!(
                bytes.is_empty(),
                "not an HTTP answer: {:?}",
                String::from_utf8_lossy(bytes)
            );
            return Response {
                status: 0,
                headers: Vec::new(),
                body: Vec::new(),
            };
        };
        let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {head:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let mut body = bytes[end + 4..].to_vec();
        if let Some(n) = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
        {
            assert!(body.len() >= n, "a body cut short: {head}");
            body.truncate(n);
        }
        Response {
            status,
            headers,
            body,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A JSON error of one line, `{"error": "..."}` with `words` in it,
    /// with one of `statuses`. Returns the message.
    pub fn assert_error(&self, statuses: &[u16], words: &[&str]) -> String {
        assert!(
            statuses.contains(&self.status),
            "status {} (expected one of {statuses:?}): {}",
            self.status,
            self.text()
        );
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{}",
            self.text()
        );
        let text = self.text();
        assert_eq!(text.lines().count(), 1, "not one line: {text:?}");
        let v: Value = serde_json::from_str(&text).expect("a JSON error");
        let obj = v.as_object().expect("an object");
        assert_eq!(obj.len(), 1, "{text}");
        let msg = obj["error"]
            .as_str()
            .expect("error is a string")
            .to_string();
        for w in words {
            assert!(
                msg.to_lowercase().contains(&w.to_lowercase()),
                "{msg:?} does not name {w:?}"
            );
        }
        msg
    }
}

// ------------------------------------------------------------- helpers

pub fn counts(v: &Value) -> (u64, u64, u64) {
    let n = |k: &str| {
        v[k].as_u64()
            .unwrap_or_else(|| panic!("{k} is not a non-negative integer in {v}"))
    };
    (n("white"), n("draws"), n("black"))
}

/// The position after UCI moves from the start.
pub fn after(ucis: &[&str]) -> Chess {
    let mut pos = Chess::default();
    for u in ucis {
        let m: UciMove = u.parse().expect("uci");
        let mv = m.to_move(&pos).expect("legal");
        pos.play_unchecked(mv);
    }
    pos
}

/// Checks one `OpeningExplorerMastersGame` (and a top game's `uci`).
pub fn check_game(g: &Value, top: bool) {
    let o = g.as_object().expect("a game is an object");
    let id = o["id"].as_str().expect("id");
    assert!(
        id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    assert!(
        matches!(o["winner"].as_str(), Some("white" | "black")) || o["winner"].is_null(),
        "{g}"
    );
    for side in ["white", "black"] {
        assert!(o[side]["name"].is_string(), "{g}");
        assert!(o[side]["rating"].is_u64(), "{g}");
    }
    assert!(o["year"].is_u64(), "{g}");
    if let Some(m) = o.get("month") {
        let m = m.as_str().expect("month is a string");
        assert!(m.len() == 7 && &m[4..5] == "-", "{m}");
    }
    if top {
        assert!(o["uci"].is_string(), "{g}");
    }
}

/// Checks a `/masters` answer: lichess's fields with their types, and
/// learnbook's; the moves' SAN against `pos`.
pub fn check_masters(v: &Value, pos: &Chess) {
    let (w, d, b) = counts(v);
    assert!(
        v["opening"].is_null() || v["opening"]["name"].is_string(),
        "{v}"
    );
    let moves = v["moves"].as_array().expect("moves");
    let mut last = u64::MAX;
    for m in moves {
        let uci = m["uci"].as_str().expect("uci");
        let mv = uci
            .parse::<UciMove>()
            .ok()
            .and_then(|u| u.to_move(pos).ok())
            .unwrap_or_else(|| panic!("{uci} is not legal here"));
        // SAN with its check suffix, as lichess writes it.
        assert_eq!(
            m["san"].as_str(),
            Some(SanPlus::from_move(pos.clone(), mv).to_string().as_str())
        );
        assert!(m["averageRating"].is_u64(), "{m}");
        let (mw, md, mb) = counts(m);
        let total = mw + md + mb;
        assert!(total > 0 && total <= last, "moves by games: {v}");
        last = total;
        assert!(m["game"].is_null() || m["game"].is_object(), "{m}");
        if m["game"].is_object() {
            check_game(&m["game"], false);
            assert_eq!(total, 1, "a game only on a move played once: {m}");
        }
        assert!(
            m["opening"].is_null()
                || (m["opening"]["eco"].is_string() && m["opening"]["name"].is_string()),
            "{m}"
        );
        assert!(m["value"].is_null() || m["value"].is_f64(), "{m}");
        let p = m["weighted"].as_f64().expect("weighted");
        assert!((0.0..=1.0 + 1e-9).contains(&p), "{m}");
        assert!(m["choice"].is_boolean(), "{m}");
        assert!(
            m["analysis"].is_null() || m["analysis"]["score"].is_i64(),
            "{m}"
        );
    }
    for g in v["topGames"].as_array().expect("topGames") {
        check_game(g, true);
    }
    assert!(v["topGames"].as_array().map_or(0, Vec::len) <= 15);
    // learnbook's own
    assert_eq!(
        v["fen"].as_str(),
        Some(
            shakmaty::fen::Fen::from_position(pos, shakmaty::EnPassantMode::PseudoLegal)
                .to_string()
                .as_str()
        )
    );
    assert!(v["inBook"].is_boolean());
    let (gw, gd, gb) = counts(&v["games"]);
    assert!(
        gw >= w && gd >= d && gb >= b,
        "games >= the moves' sum: {v}"
    );
    assert!(v["value"].is_null() || v["value"].is_f64());
    assert!(v["choice"].is_null() || v["choice"].is_string());
    assert!(v["leaveWeight"].is_f64());
    assert!(v["analysis"].is_null() || v["analysis"]["depth"].is_u64());
    assert!(v["deviation"].is_null() || v["deviation"]["uci"].is_string());
    assert!(v["leaveScore"].is_null() || v["leaveScore"].is_f64());
    // The score is what the choice ranks by: the chosen move has the
    // highest of the moves and of leaving the book, whatever the values say.
    let moves = v["moves"].as_array().expect("moves");
    if let Some(choice) = v["choice"].as_str() {
        let score_of = |uci: &str| {
            moves
                .iter()
                .find(|m| m["uci"] == uci)
                .and_then(|m| m["score"].as_f64())
        };
        let chosen = score_of(choice).unwrap_or_else(|| panic!("the choice has a score: {v}"));
        for m in moves {
            assert!(m["score"].is_null() || m["score"].is_f64(), "{m}");
            if let Some(s) = m["score"].as_f64() {
                assert!(
                    s <= chosen + 1e-12,
                    "{} scores above the choice: {v}",
                    m["uci"]
                );
            }
        }
        if let Some(leave) = v["leaveScore"].as_f64() {
            assert!(
                leave <= chosen + 1e-12,
                "leaving scores above the choice: {v}"
            );
        }
    }
}

/// Game ids of the book: from the answers' games where the book has them,
/// else from the book itself.
pub fn some_game_ids(server: &Server, book: &Path) -> Vec<String> {
    let mut ids = Vec::new();
    for play in ["", "e2e4", "d2d4", "e2e4,c7c5", "g1f3"] {
        let v = server.json(&format!("/masters?play={play}&moves=100"));
        for g in v["topGames"].as_array().into_iter().flatten() {
            ids.extend(g["id"].as_str().map(str::to_string));
        }
        for m in v["moves"].as_array().into_iter().flatten() {
            ids.extend(m["game"]["id"].as_str().map(str::to_string));
        }
    }
    if ids.len() < 5 {
        let b = learnbook::book::Book::open_read_only(book).expect("open");
        let mut hashes: Vec<u64> = b.game_hashes().expect("hashes").into_iter().collect();
        hashes.sort_unstable();
        ids.extend(
            hashes
                .iter()
                .step_by(hashes.len() / 20 + 1)
                .map(|h| learnbook::book::view::explorer::game_id_text(*h)),
        );
    }
    ids.sort();
    ids.dedup();
    ids
}

/// The sample split in two PGN files at a game boundary.
pub fn sample_halves(dir: &Path) -> (PathBuf, PathBuf) {
    let text = sample_text();
    let starts: Vec<usize> = text
        .windows(7)
        .enumerate()
        .filter(|(i, w)| *w == b"[Event " && (*i == 0 || text[i - 1] == b'\n'))
        .map(|(i, _)| i)
        .collect();
    let mid = starts[starts.len() / 2];
    let (a, b) = (dir.join("first.pgn"), dir.join("second.pgn"));
    std::fs::write(&a, &text[..mid]).expect("write");
    std::fs::write(&b, &text[mid..]).expect("write");
    (a, b)
}
