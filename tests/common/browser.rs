//! The browser test's harness: a small blocking WebDriver client (HTTP/1.1
//! over a `TcpStream`, JSON by serde_json) driving Debian's chromium through
//! `chromedriver`, and the processes it starts, reaped when dropped. Used by
//! `browser.rs`.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{json, Value};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long any one condition may take to hold (a generous bound, not a
/// measurement: the page normally answers in milliseconds; a browser
/// starting on a busy machine may take a minute).
pub const WAIT: Duration = Duration::from_secs(300);

// ------------------------------------------------------------------ HTTP

/// One HTTP/1.1 request on a fresh connection; the status and the body.
pub fn http(addr: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
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

pub fn get_json(addr: &str, path: &str) -> Value {
    let (status, body) = http(addr, "GET", path, None);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

pub fn encode(text: &str) -> String {
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
pub fn masters(addr: &str, fen: &str, play: &[&str]) -> Value {
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
pub struct Reaped {
    pub child: Child,
    pub group: bool,
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
pub fn own_group(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

/// Starts `cmd` (in a process group of its own if `group`) and returns it
/// with the first stdout line that contains `marker`, read within [`WAIT`].
pub fn start_and_read(mut cmd: Command, marker: &'static str, group: bool) -> (Reaped, String) {
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

pub const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    pub driver: String,
    pub session: String,
    pub _chromedriver: Reaped,
    pub _profile: tempfile::TempDir,
}

impl Browser {
    pub fn start(width: u32, height: u32) -> Browser {
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
    pub fn viewport(&self, width: u32, height: u32) {
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
    pub fn csp_violations(&self) -> Vec<String> {
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
    pub fn layout(&self, width: u32, height: u32) -> Value {
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

    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let full = format!("/session/{}{path}", self.session);
        let (status, text) = http(&self.driver, method, &full, body.as_ref());
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"));
        assert_eq!(status, 200, "{method} {path} {body:?}: {v}");
        v["value"].clone()
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }

    pub fn find(&self, css: &str) -> String {
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
    pub fn click(&self, css: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/clear"), Some(json!({})));
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Mouse clicks at viewport pixels, one after the other.
    pub fn click_points(&self, points: &[(f64, f64)]) {
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
    pub fn key(&self, key: &str) {
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
    pub fn park_mouse(&self) {
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
    pub fn wait_for(&self, what: &str, script: &str, args: Value) {
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
    pub fn wait_position(&self, fen: &str) {
        self.wait_for(
            &format!("the position {fen}"),
            "return document.body.dataset.ready === '1' \
             && document.getElementById('fen').value === arguments[0];",
            json!([fen]),
        );
    }

    /// What the page shows, for failure messages and checks.
    pub fn state(&self) -> Value {
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
    pub fn board_box(&self) -> (f64, f64, f64, f64) {
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
    pub fn square_point(&self, square: &str, white_down: bool) -> (f64, f64) {
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

    pub fn screenshot(&self, path: &Path) {
        self.js("window.scrollTo(0, 0); return true;", json!([]));
        let data = self.call("GET", "/screenshot", None);
        let png = base64_decode(data.as_str().expect("base64 screenshot"));
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        std::fs::write(path, png).expect("write the screenshot");
    }

    /// The browser's console messages at level SEVERE (script errors,
    /// failed loads).
    pub fn severe_logs(&self) -> Vec<String> {
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

pub fn base64_decode(text: &str) -> Vec<u8> {
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
