//! The explorer page in a real browser: Debian's chromium, headless, driven
//! through `chromedriver` over the W3C WebDriver protocol (a small blocking
//! client below: HTTP/1.1 over a `TcpStream`, JSON by serde_json). The
//! test builds and analyses a book from the sample games, starts
//! `learnbook serve` on a free port, loads the page and uses it as a
//! person would: clicks a row of the moves table, plays a move on the
//! board by clicking two squares, goes back with the button and the arrow
//! keys, flips the board, pastes a FEN and a PGN, opens a top game's PGN,
//! and reloads a linked position. Every check waits for the page's
//! `body[data-ready="1"]` (the current position's answer rendered) and
//! compares with what `/masters` answers.
//!
//! The page runs under the server's Content-Security-Policy: every
//! violation the browser reports (a `securitypolicyviolation` event,
//! recorded from before the page's first script) fails the test, and one
//! made on purpose at the end shows that they are seen. At 1280x800 and
//! 1200x800 the board and the moves table stand side by side (their boxes
//! compared), and a screenshot is taken.
//!
//! `LEARNBOOK_SCREENSHOTS=1` also writes `docs/explorer-start.png`,
//! `docs/explorer-deep.png` and `docs/explorer-1280.png`; `LEARNBOOK_EXPLORER_BOOK=PATH` serves that
//! book instead of building the sample's (the screenshots in `docs/` are
//! of the master games' book).

mod common;

use common::*;
use serde_json::{json, Value};
use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long any one condition may take to hold (a generous bound, not a
/// measurement: the page normally answers in milliseconds).
const WAIT: Duration = Duration::from_secs(60);
const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
const AFTER_E4: &str = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
const AFTER_C5: &str = "rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
const NAJDORF_PGN: &str = "1. e4 c5 2. Nf3 d6 3. d4 cxd4 4. Nxd4 Nf6 5. Nc3 a6";
const NAJDORF: &str = "rnbqkb1r/1p2pppp/p2p1n2/8/3NP3/2N5/PPP2PPP/R1BQKB1R w KQkq - 0 6";
/// A position pasted as a FEN: the Ruy Lopez's main line after 9.h3.
const PASTED: &str = "r1bq1rk1/2p1bppp/p1np1n2/1p2p3/4P3/1BP2N1P/PP1P1PP1/RNBQR1K1 b - - 0 9";

// ------------------------------------------------------------------ HTTP

/// One HTTP/1.1 request on a fresh connection; the status and the body.
fn http(addr: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("read timeout");
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send head");
    stream.write_all(body.as_bytes()).expect("send body");
    // Not every server closes the connection after its answer
    // (chromedriver does not): read the head, then the body its head
    // announces.
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).expect("read the answer's head");
        assert!(
            n > 0,
            "{method} {path}: the connection closed in the head: {head}"
        );
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {head}"));
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let mut payload = Vec::new();
    if let Some(n) = header("content-length") {
        let n: usize = n.parse().expect("content-length");
        payload.resize(n, 0);
        reader.read_exact(&mut payload).expect("read the body");
    } else if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("chunk size");
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .expect("chunk size");
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).expect("chunk");
            if size == 0 {
                break;
            }
            payload.extend_from_slice(&chunk[..size]);
        }
    } else {
        reader.read_to_end(&mut payload).expect("read the body");
    }
    (status, String::from_utf8(payload).expect("utf-8 body"))
}

fn get_json(addr: &str, path: &str) -> Value {
    let (status, body) = http(addr, "GET", path, None);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `/masters` for `fen` + `play`, as the page asks for it.
fn masters(addr: &str, fen: &str, play: &[&str]) -> Value {
    get_json(
        addr,
        &format!(
            "/masters?fen={}&play={}&moves=12&topGames=15",
            encode(fen),
            play.join(",")
        ),
    )
}

// ------------------------------------------------------------------ processes

/// A child process killed (by its own id) and reaped when dropped; with
/// `group`, it leads a process group of its own (see [`own_group`]) and
/// the whole group is killed: chromedriver's chromium too, which would
/// outlive chromedriver otherwise.
struct Reaped {
    child: Child,
    group: bool,
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if self.group {
            if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
                // SAFETY: kill(2) with a negative pid signals the process
                // group that the child leads; it touches no memory.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cmd` will start in a process group of its own (led by it), which its
/// own children join.
fn own_group(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

/// Starts `cmd` (in a process group of its own if `group`) and returns it
/// with the first stdout line that contains `marker`, read within [`WAIT`].
fn start_and_read(mut cmd: Command, marker: &'static str, group: bool) -> (Reaped, String) {
    if group {
        own_group(&mut cmd);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
    let stdout = child.stdout.take().expect("stdout");
    let child = Reaped { child, group };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent && line.contains(marker) {
                let _ = tx.send(line);
                sent = true;
            }
            // Keep draining, so the child never blocks on a full pipe.
        }
    });
    let line = rx
        .recv_timeout(WAIT)
        .unwrap_or_else(|_| panic!("{cmd:?} printed no line with {marker:?}"));
    (child, line)
}

// ------------------------------------------------------------------ WebDriver

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

struct Browser {
    driver: String,
    session: String,
    _chromedriver: Reaped,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start(width: u32, height: u32) -> Browser {
        let mut cmd = Command::new(CHROMEDRIVER);
        cmd.arg("--port=0");
        let (chromedriver, line) = start_and_read(cmd, "started successfully on port", true);
        let port: u16 = line
            .trim_end_matches('.')
            .rsplit(' ')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        let driver = format!("127.0.0.1:{port}");
        let profile = tempfile::tempdir().expect("profile dir");
        let args = vec![
            "--headless".to_string(),
            "--no-sandbox".to_string(),
            "--disable-gpu".to_string(),
            "--disable-quic".to_string(),
            "--no-first-run".to_string(),
            "--disable-background-networking".to_string(),
            "--disable-component-update".to_string(),
            "--disable-sync".to_string(),
            "--disable-dev-shm-usage".to_string(),
            "--hide-scrollbars".to_string(),
            "--force-device-scale-factor=1".to_string(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let caps = json!({
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
                    "goog:loggingPrefs": { "browser": "ALL" },
                }
            }
        });
        let deadline = Instant::now() + WAIT;
        let answer = loop {
            let (status, body) = http(&driver, "POST", "/session", Some(&caps));
            if status == 200 {
                break serde_json::from_str::<Value>(&body).expect("session JSON");
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver could not start chromium: {body}"
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session in {answer}"))
            .to_string();
        let browser = Browser {
            driver,
            session,
            _chromedriver: chromedriver,
            _profile: profile,
        };
        browser.viewport(width, height);
        // Every page loaded from now on records the Content-Security-Policy
        // violations it meets, from before its own scripts run.
        browser.call(
            "POST",
            "/goog/cdp/execute",
            Some(json!({
                "cmd": "Page.addScriptToEvaluateOnNewDocument",
                "params": { "source": "window.__cspViolations = [];
                    document.addEventListener('securitypolicyviolation', (e) =>
                      window.__cspViolations.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' ' + e.sourceFile + ':' + e.lineNumber));" },
            })),
        );
        browser
    }

    /// Sets the viewport itself (the window's size is not the page's;
    /// through chromedriver's DevTools bridge), so screenshots are exactly
    /// width x height.
    fn viewport(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/goog/cdp/execute",
            Some(json!({
                "cmd": "Emulation.setDeviceMetricsOverride",
                "params": { "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false },
            })),
        );
    }

    /// The Content-Security-Policy violations the page has met.
    fn csp_violations(&self) -> Vec<String> {
        let v = self.js("return window.__cspViolations ?? null;", json!([]));
        let list = v
            .as_array()
            .unwrap_or_else(|| panic!("the page does not record CSP violations: {v}"));
        list.iter()
            .map(|e| e.as_str().unwrap_or("").to_string())
            .collect()
    }

    /// The page at `width` x `height`, scrolled to the top: the board's and
    /// the moves table's boxes (left, top, right, bottom) and the page's
    /// width.
    fn layout(&self, width: u32, height: u32) -> Value {
        self.viewport(width, height);
        self.js(
            "window.scrollTo(0, 0);
             const box = (css) => { const r = document.querySelector(css).getBoundingClientRect();
                                    return [r.left, r.top, r.right, r.bottom]; };
             return { board: box('#board'), moves: box('#moves-box'),
                      scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth };",
            json!([]),
        )
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let full = format!("/session/{}{path}", self.session);
        let (status, text) = http(&self.driver, method, &full, body.as_ref());
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"));
        assert_eq!(status, 200, "{method} {path} {body:?}: {v}");
        v["value"].clone()
    }

    fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    fn js(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }

    fn find(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            "/element",
            Some(json!({ "using": "css selector", "value": css })),
        );
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// A real click at the element's centre (chromedriver scrolls to it).
    fn click(&self, css: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/clear"), Some(json!({})));
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Mouse clicks at viewport pixels, one after the other.
    fn click_points(&self, points: &[(f64, f64)]) {
        let mut actions = Vec::new();
        for &(x, y) in points {
            actions.push(
                json!({ "type": "pointerMove", "duration": 0, "origin": "viewport",
                                 "x": x.round() as i64, "y": y.round() as i64 }),
            );
            actions.push(json!({ "type": "pointerDown", "button": 0 }));
            actions.push(json!({ "type": "pointerUp", "button": 0 }));
            actions.push(json!({ "type": "pause", "duration": 100 }));
        }
        self.call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{
                "type": "pointer", "id": "mouse",
                "parameters": { "pointerType": "mouse" },
                "actions": actions,
            }]})),
        );
        self.call("DELETE", "/actions", None);
    }

    /// Presses and releases one key (a WebDriver key code such as `\u{E012}`).
    fn key(&self, key: &str) {
        self.call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{
                "type": "key", "id": "keyboard",
                "actions": [{ "type": "keyDown", "value": key }, { "type": "keyUp", "value": key }],
            }]})),
        );
        self.call("DELETE", "/actions", None);
    }

    /// Moves the mouse out of the way (no hover highlight in screenshots).
    fn park_mouse(&self) {
        self.call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{
                "type": "pointer", "id": "mouse",
                "parameters": { "pointerType": "mouse" },
                "actions": [{ "type": "pointerMove", "duration": 0, "origin": "viewport", "x": 1, "y": 1 }],
            }]})),
        );
        self.call("DELETE", "/actions", None);
    }

    /// Waits until `script` returns true.
    fn wait_for(&self, what: &str, script: &str, args: Value) {
        let deadline = Instant::now() + WAIT;
        loop {
            if self.js(script, args.clone()) == Value::Bool(true) {
                return;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; page state: {}", self.state());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the page shows `fen` with its answer rendered.
    fn wait_position(&self, fen: &str) {
        self.wait_for(
            &format!("the position {fen}"),
            "return document.body.dataset.ready === '1' \
             && document.getElementById('fen').value === arguments[0];",
            json!([fen]),
        );
    }

    /// What the page shows, for failure messages and checks.
    fn state(&self) -> Value {
        self.js(
            "const t = (id) => document.getElementById(id)?.textContent.trim();
             return {
               ready: document.body.dataset.ready,
               fen: document.getElementById('fen').value,
               board: document.getElementById('board').dataset.fen,
               orientation: document.querySelector('#board').classList.contains('orientation-black') ? 'black' : 'white',
               opening: t('opening'),
               status: t('status'),
               pasteError: t('paste-error'),
               hash: location.hash,
               line: [...document.querySelectorAll('#line .mv')].map(e => e.textContent),
               current: document.querySelector('#line .mv.current')?.dataset.ply ?? null,
               rows: [...document.querySelectorAll('#moves tbody tr[data-uci]')].map(tr => ({
                 uci: tr.dataset.uci,
                 san: tr.cells[0].textContent,
                 games: tr.cells[1].textContent,
                 choice: tr.classList.contains('choice'),
                 value: tr.cells[5].textContent,
                 score: tr.cells[6].textContent,
                 book: tr.cells[7].textContent,
                 eval: tr.cells[8].textContent,
               })),
               analysis: t('s-analysis'),
               total: document.querySelector('#moves tfoot td:nth-child(2)')?.textContent,
               games: [...document.querySelectorAll('#top-games tr[data-id]')].map(tr => tr.dataset.id),
             };",
            json!([]),
        )
    }

    /// The board's box in viewport pixels (scrolled into view first):
    /// left, top, width, height.
    fn board_box(&self) -> (f64, f64, f64, f64) {
        let r = self.js(
            "document.getElementById('board').scrollIntoView({ block: 'nearest' });
             const r = document.querySelector('#board cg-board').getBoundingClientRect();
             return [r.left, r.top, r.width, r.height];",
            json!([]),
        );
        let n = |i: usize| r[i].as_f64().expect("number");
        (n(0), n(1), n(2), n(3))
    }

    /// The viewport pixel at the centre of `square` (`e4`), for the
    /// orientation shown.
    fn square_point(&self, square: &str, white_down: bool) -> (f64, f64) {
        let (left, top, w, h) = self.board_box();
        let b = square.as_bytes();
        let file = f64::from(b[0] - b'a');
        let rank = f64::from(b[1] - b'1');
        let (col, row) = if white_down {
            (file, 7.0 - rank)
        } else {
            (7.0 - file, rank)
        };
        (left + (col + 0.5) * w / 8.0, top + (row + 0.5) * h / 8.0)
    }

    fn screenshot(&self, path: &Path) {
        self.js("window.scrollTo(0, 0); return true;", json!([]));
        let data = self.call("GET", "/screenshot", None);
        let png = base64_decode(data.as_str().expect("base64 screenshot"));
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        std::fs::write(path, png).expect("write the screenshot");
    }

    /// The browser's console messages at level SEVERE (script errors,
    /// failed loads).
    fn severe_logs(&self) -> Vec<String> {
        let full = format!("/session/{}/se/log", self.session);
        let (status, text) = http(
            &self.driver,
            "POST",
            &full,
            Some(&json!({ "type": "browser" })),
        );
        if status != 200 {
            return Vec::new(); // a chromedriver without the log endpoint
        }
        let v: Value = serde_json::from_str(&text).expect("log JSON");
        v["value"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].as_str().unwrap_or("").to_string())
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let full = format!("/session/{}", self.session);
        if let Ok(mut s) = TcpStream::connect(&self.driver) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
            let _ = write!(
                s,
                "DELETE {full} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                self.driver
            );
            // chromedriver answers once chromium has quit (and keeps the
            // connection open): one read is enough.
            let _ = s.read(&mut [0u8; 512]);
        }
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    out
}

// ------------------------------------------------------------------ the test

/// The moves table shows exactly `/masters`'s moves with their games, and
/// its total row their sum.
/// A book value as the page writes it: sign (− for minus, ± for 0) and
/// three decimals, or – for none.
fn value_text(v: &Value) -> String {
    match v.as_f64() {
        None => "–".to_string(),
        Some(x) => {
            let sign = if x > 0.0 {
                "+"
            } else if x < 0.0 {
                "−"
            } else {
                "±"
            };
            format!("{sign}{:.3}", x.abs())
        }
    }
}

fn assert_table(page: &Value, api: &Value) {
    let rows = page["rows"].as_array().expect("rows");
    let moves = api["moves"].as_array().expect("moves");
    let digits = |v: &Value| -> u64 {
        v.as_str()
            .expect("text")
            .chars()
            .filter(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or(0)
    };
    let games = |m: &Value| {
        ["white", "draws", "black"]
            .map(|k| m[k].as_u64().expect(k))
            .iter()
            .sum::<u64>()
    };
    assert_eq!(rows.len(), moves.len(), "rows {page} against {api}");
    for (row, m) in rows.iter().zip(moves) {
        assert_eq!(row["uci"], m["uci"], "row order: {page}");
        assert_eq!(row["san"], m["san"]);
        assert_eq!(digits(&row["games"]), games(m), "games of {}", m["uci"]);
        assert_eq!(row["choice"], m["choice"], "choice mark of {}", m["uci"]);
        assert_eq!(
            row["value"] == "–",
            m["value"].is_null(),
            "value of {}",
            m["uci"]
        );
        // The score the choice ranks by, beside the value: as the API has it.
        assert_eq!(
            row["score"].as_str().expect("score"),
            value_text(&m["score"]),
            "score of {}",
            m["uci"]
        );
        let weighted = m["weighted"].as_f64().expect("weighted");
        assert_eq!(
            row["book"].as_str().expect("book").ends_with('%'),
            weighted > 0.0,
            "probability of {}: {row}",
            m["uci"]
        );
        assert_eq!(
            row["eval"],
            score_text(&m["analysis"]),
            "eval of {}",
            m["uci"]
        );
    }
    if !api["analysis"].is_null() {
        let summary = page["analysis"].as_str().expect("analysis");
        assert!(
            summary.starts_with(&score_text(&api["analysis"])),
            "{summary} against {}",
            api["analysis"]
        );
    }
    assert_eq!(digits(&page["total"]), games(api), "total row");
    let top = api["topGames"].as_array().expect("topGames");
    let ids: Vec<&Value> = top.iter().map(|g| &g["id"]).collect();
    let shown: Vec<&Value> = page["games"].as_array().expect("games").iter().collect();
    assert_eq!(shown, ids, "top games");
}

/// A search score as the page writes it: pawns with two decimals and a
/// sign (`+0.31`, `−0.05`, `±0.00`), mate as `#3` or `#−3`, or `–` for
/// none.
fn score_text(analysis: &Value) -> String {
    let Some(cp) = analysis["score"].as_i64() else {
        return "–".to_string();
    };
    if cp.abs() >= 29_000 {
        // Mate in n moves: (30000 - plies) centipawns.
        let moves = (30_000 - cp.abs() + 1) / 2;
        return format!("{}{moves}", if cp > 0 { "#" } else { "#−" });
    }
    let sign = match cp.signum() {
        1 => "+",
        -1 => "−",
        _ => "±",
    };
    format!("{sign}{}.{:02}", cp.abs() / 100, cp.abs() % 100)
}

fn has_row(page: &Value, uci: &str) -> bool {
    page["rows"]
        .as_array()
        .is_some_and(|r| r.iter().any(|row| row["uci"] == uci))
}

#[test]
fn explorer_page_in_chromium() {
    if !have("chromium", Path::new(CHROMIUM).is_file())
        || !have("chromedriver", Path::new(CHROMEDRIVER).is_file())
    {
        return;
    }
    let screenshots = std::env::var("LEARNBOOK_SCREENSHOTS").is_ok_and(|v| v == "1");
    let dir = tempfile::tempdir().expect("tempdir");
    let book: PathBuf = match std::env::var_os("LEARNBOOK_EXPLORER_BOOK") {
        Some(p) => PathBuf::from(p),
        None => {
            let book = dir.path().join("sample.sqlite");
            ok(&["build", "--book", s(&book), s(&sample())]);
            // The positions with the most games (and their children):
            // enough for the page's analysis columns, in a few seconds.
            ok(&["analyze", "--book", s(&book), "--min-games", "150"]);
            book
        }
    };

    let mut serve = Command::new(bin());
    serve.args(["serve", "--book", s(&book), "--bind", "127.0.0.1:0"]);
    let (_server, line) = start_and_read(serve, "listening on http://", false);
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the URL")
        .to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();

    let browser = Browser::start(1360, 900);

    // The start position: e4 and d4 rows, games as /masters counts them.
    browser.goto(&url);
    browser.wait_position(START);
    let api = masters(&addr, START, &[]);
    assert!(!api["analysis"].is_null(), "the start is analysed: {api}");
    let page = browser.state();
    assert!(has_row(&page, "e2e4") && has_row(&page, "d2d4"), "{page}");
    assert_table(&page, &api);
    if screenshots {
        browser.park_mouse();
        browser.screenshot(&repo().join("docs/explorer-start.png"));
    }

    // A click on the e4 row plays it.
    browser.click("#moves tbody tr[data-uci='e2e4']");
    browser.wait_position(AFTER_E4);
    let page = browser.state();
    assert_eq!(page["board"], AFTER_E4.split(' ').next().unwrap(), "{page}");
    assert_eq!(page["line"], json!(["e4"]));
    let api = masters(&addr, START, &["e2e4"]);
    assert_eq!(api["fen"], AFTER_E4);
    assert_table(&page, &api);
    assert!(has_row(&page, "c7c5"), "{page}");

    // ...c5 on the board: a click on c7, then one on c5.
    let c7 = browser.square_point("c7", true);
    let c5 = browser.square_point("c5", true);
    browser.click_points(&[c7, c5]);
    browser.wait_position(AFTER_C5);
    let page = browser.state();
    assert_eq!(page["board"], AFTER_C5.split(' ').next().unwrap(), "{page}");
    assert_eq!(page["line"], json!(["e4", "c5"]));
    let opening = page["opening"].as_str().unwrap_or("");
    assert!(
        opening.contains("Sicilian"),
        "opening after 1.e4 c5: {page}"
    );
    assert_table(&page, &masters(&addr, START, &["e2e4", "c7c5"]));

    // Back with the button, forward and back with the arrow keys; the
    // line keeps its moves and marks the current one.
    browser.click("#back");
    browser.wait_position(AFTER_E4);
    assert_eq!(browser.state()["current"], "1");
    browser.key("\u{E014}"); // ArrowRight
    browser.wait_position(AFTER_C5);
    browser.key("\u{E012}"); // ArrowLeft
    browser.wait_position(AFTER_E4);
    let page = browser.state();
    assert_eq!(page["line"], json!(["e4", "c5"]), "{page}");
    assert_eq!(page["current"], "1");
    assert_table(&page, &masters(&addr, START, &["e2e4"]));

    // A click on the line's c5 goes there.
    browser.click("#line .mv[data-ply='2']");
    browser.wait_position(AFTER_C5);

    // Flip: Black at the bottom, and a move played there by clicks.
    browser.click("#flip");
    browser.wait_for(
        "the flipped board",
        "return document.querySelector('#board').classList.contains('orientation-black');",
        json!([]),
    );
    let g1 = browser.square_point("g1", false);
    let f3 = browser.square_point("f3", false);
    browser.click_points(&[g1, f3]);
    browser.wait_position("rnbqkbnr/pp1ppppp/8/2p5/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2");
    assert!(browser.state()["hash"]
        .as_str()
        .is_some_and(|h| h.contains("o=black")));
    browser.click("#flip");
    browser.wait_for(
        "the board back to White",
        "return document.querySelector('#board').classList.contains('orientation-white');",
        json!([]),
    );

    // A FEN pasted: the board shows it, its king where the FEN puts it.
    browser.type_into("#paste", PASTED);
    browser.click("#paste-go");
    browser.wait_position(PASTED);
    let page = browser.state();
    assert_eq!(page["board"], PASTED.split(' ').next().unwrap(), "{page}");
    assert_eq!(page["line"], json!([]));
    assert_eq!(page["pasteError"], "");
    // (once chessground's animation of the king from e1 has ended)
    let (x, y) = browser.square_point("g1", true);
    let (_, _, w, _) = browser.board_box();
    browser.wait_for(
        "the white king drawn on g1",
        "const r = document.querySelector('#board piece.king.white').getBoundingClientRect();
         return Math.abs(r.left + r.width / 2 - arguments[0]) < arguments[2]
             && Math.abs(r.top + r.height / 2 - arguments[1]) < arguments[2];",
        json!([x, y, w / 32.0]),
    );
    assert_table(&page, &masters(&addr, PASTED, &[]));

    // A bad FEN: an inline error, no alert, the position kept.
    browser.type_into(
        "#paste",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1",
    );
    browser.click("#paste-go");
    browser.wait_for(
        "the paste error",
        "return document.getElementById('paste-error').textContent.length > 0;",
        json!([]),
    );
    assert_eq!(browser.state()["fen"], PASTED);

    // A promotion on the board asks for the piece.
    browser.type_into("#paste", "8/P7/8/8/8/8/8/k6K w - - 0 1");
    browser.click("#paste-go");
    browser.wait_position("8/P7/8/8/8/8/8/k6K w - - 0 1");
    let a7 = browser.square_point("a7", true);
    let a8 = browser.square_point("a8", true);
    browser.click_points(&[a7, a8]);
    browser.wait_for(
        "the promotion choice",
        "return !document.getElementById('promotion').hidden;",
        json!([]),
    );
    browser.click("#promotion button[data-role='n']");
    browser.wait_position("N7/8/8/8/8/8/8/k6K b - - 0 1");
    assert_eq!(browser.state()["line"], json!(["a8=N"]));

    // A PGN pasted: the line becomes its moves, at its end.
    browser.type_into("#paste", NAJDORF_PGN);
    browser.click("#paste-go");
    browser.wait_position(NAJDORF);
    let page = browser.state();
    assert_eq!(
        page["line"],
        json!(["e4", "c5", "Nf3", "d6", "d4", "cxd4", "Nxd4", "Nf6", "Nc3", "a6"]),
        "{page}"
    );
    assert_eq!(page["current"], "10");
    let opening = page["opening"].as_str().unwrap_or("");
    assert!(opening.contains("Najdorf"), "{page}");
    let play = [
        "e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6",
    ];
    let api = masters(&addr, START, &play);
    assert_eq!(api["fen"], NAJDORF);
    assert_table(&page, &api);
    if screenshots {
        browser.park_mouse();
        browser.screenshot(&repo().join("docs/explorer-deep.png"));
    }

    // The link reloads the same position.
    let hash = page["hash"].as_str().expect("hash").to_string();
    assert!(hash.contains("play=e2e4,c7c5,"), "{hash}");
    browser.goto("about:blank");
    browser.goto(&format!("{url}{hash}"));
    browser.wait_position(NAJDORF);
    assert_eq!(browser.state()["line"], page["line"]);

    // A top game after 1.e4 c5 opens its PGN in the panel, and replays
    // on the board.
    browser.goto(&format!("{url}#play=e2e4,c7c5"));
    browser.wait_position(AFTER_C5);
    let top = browser.state()["games"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let id = top
        .first()
        .and_then(|v| v.as_str())
        .expect("top games after 1.e4 c5")
        .to_string();
    browser.click(&format!("#top-games tr[data-id='{id}']"));
    browser.wait_for(
        "the game's PGN",
        "return document.getElementById('pgn-panel').open \
         && document.getElementById('pgn-text').textContent.includes('[White ');",
        json!([]),
    );
    let (status, pgn) = http(&addr, "GET", &format!("/masters/pgn/{id}"), None);
    assert_eq!(status, 200);
    let shown = browser.js(
        "return document.getElementById('pgn-text').textContent;",
        json!([]),
    );
    assert_eq!(shown, Value::String(pgn));
    browser.click("#pgn-load");
    browser.wait_for(
        "the game replayed",
        "return !document.getElementById('pgn-panel').open \
         && document.querySelectorAll('#line .mv').length > 2 \
         && document.body.dataset.ready === '1';",
        json!([]),
    );
    let page = browser.state();
    assert_eq!(page["line"][0], "e4", "{page}");
    assert_eq!(page["line"][1], "c5", "{page}");
    assert_eq!(page["pasteError"], "");

    let severe = browser.severe_logs();
    assert!(severe.is_empty(), "browser errors: {severe:?}");
    let violations = browser.csp_violations();
    assert!(violations.is_empty(), "CSP violations: {violations:?}");

    // Board and moves side by side from 1,200 px of width (laid out again
    // at each size, the page reloaded at the first).
    browser.goto(&format!("{url}#play=e2e4,c7c5"));
    browser.wait_position(AFTER_C5);
    for (width, height) in [(1280, 800), (1200, 800)] {
        let l = browser.layout(width, height);
        let n = |part: &str, i: usize| l[part][i].as_f64().expect("number");
        let (board, moves) = ("board", "moves");
        assert!(
            n(board, 2) <= n(moves, 0),
            "{width}x{height}: the moves table is not right of the board: {l}"
        );
        assert!(
            n(moves, 1) < n(board, 3) && n(board, 1) < n(moves, 3),
            "{width}x{height}: board and moves table are not side by side: {l}"
        );
        assert!(
            n(moves, 2) <= f64::from(width),
            "{width}x{height}: the moves table runs past the window: {l}"
        );
        assert!(
            l["scrollWidth"].as_f64().expect("number") <= l["innerWidth"].as_f64().expect("number"),
            "{width}x{height}: the page scrolls sideways: {l}"
        );
        if width == 1280 {
            browser.park_mouse();
            let shot = dir.path().join("explorer-1280.png");
            browser.screenshot(&shot);
            if screenshots {
                std::fs::copy(&shot, repo().join("docs/explorer-1280.png")).expect("copy");
            }
        }
    }
    // Narrower, one column: the table below the board.
    let l = browser.layout(1100, 800);
    assert!(
        l["moves"][1].as_f64() >= l["board"][3].as_f64(),
        "1100x800: the moves table is not below the board: {l}"
    );

    // A violation made on purpose is seen: the policy is in force and
    // the check above could fail.
    browser.js(
        "document.body.insertAdjacentHTML('beforeend', '<div style=\"color: red\"></div>'); return true;",
        json!([]),
    );
    browser.wait_for(
        "the violation reported",
        "return window.__cspViolations.length > 0;",
        json!([]),
    );
    assert!(
        browser.csp_violations()[0].contains("style-src"),
        "{:?}",
        browser.csp_violations()
    );
}
