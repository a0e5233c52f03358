//! A connection's socket as hyper sees it, with one change: the answers
//! hyper writes on its own to a request it cannot parse (400 malformed,
//! 414 URI too long, 431 head too large: the request never reaches the
//! router) get the one-line JSON error body every other error has, instead
//! of an empty one.
//!
//! Hyper writes such an answer as one head, `content-length: 0` and
//! nothing after it, then closes the connection; the router never answers
//! a 4xx without a body, so such a head is hyper's. Writes are not
//! vectored, so a head arrives in one `poll_write`; the rewritten bytes
//! are queued and sent before anything else (flush and shutdown drain
//! them first).
//!
//! After such an answer the client may still be sending (a 1 MB request
//! line is refused after the first 400 KB): closing then would reset the
//! connection and could destroy the answer in the client's buffers, so the
//! close lingers as nginx's does: the write side is shut, and what the
//! client still sends is read and dropped until it closes too, for at most
//! [`LINGER`] and [`LINGER_BYTES`].

use std::{
    future::Future,
    io,
    pin::Pin,
    task::{ready, Context, Poll},
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    time::{sleep, Duration, Sleep},
};

/// The longest a close after a refused request lingers.
pub const LINGER: Duration = Duration::from_secs(2);
/// The most it reads (and drops) meanwhile.
pub const LINGER_BYTES: usize = 4 << 20;

pub struct JsonErrors<S> {
    inner: S,
    /// Bytes hyper believes written that the socket has not taken yet.
    pending: Vec<u8>,
    sent: usize,
    cors: bool,
    /// Set once an answer was rewritten: the close lingers.
    linger: Option<Linger>,
}

struct Linger {
    shut: bool,
    read: usize,
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> JsonErrors<S> {
    pub fn new(inner: S, cors: bool) -> JsonErrors<S> {
        JsonErrors {
            inner,
            pending: Vec::new(),
            sent: 0,
            cors,
            linger: None,
        }
    }
}

/// The message of hyper's own answers, by status.
fn message(status: &[u8]) -> Option<&'static str> {
    Some(match status {
        b"400" => "malformed HTTP request (a request line or header that is not valid HTTP/1.1, e.g. bytes that are not ASCII in the target)",
        b"414" => "URI too long: the request target is longer than the server reads",
        b"431" => "request too large: the request line and headers are longer than the server reads (about 400 KB)",
        _ => return None,
    })
}

/// `buf` rewritten with a JSON body, if it is one of hyper's bodiless
/// error heads.
fn rewrite(buf: &[u8], cors: bool) -> Option<Vec<u8>> {
    let rest = buf
        .strip_prefix(b"HTTP/1.1 ")
        .or_else(|| buf.strip_prefix(b"HTTP/1.0 "))?;
    let msg = message(rest.get(..3)?)?;
    // Exactly one head, ending the buffer.
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    if end + 4 != buf.len() {
        return None;
    }
    const EMPTY: &[u8] = b"\r\ncontent-length: 0\r\n";
    let at = buf.windows(EMPTY.len()).position(|w| w == EMPTY)?;
    let body = serde_json::json!({ "error": msg }).to_string();
    let mut out = Vec::with_capacity(buf.len() + body.len() + 64);
    out.extend_from_slice(&buf[..at]);
    out.extend_from_slice(b"\r\ncontent-type: application/json\r\nx-content-type-options: nosniff");
    if cors {
        out.extend_from_slice(b"\r\naccess-control-allow-origin: *");
    }
    out.extend_from_slice(format!("\r\ncontent-length: {}\r\n", body.len()).as_bytes());
    out.extend_from_slice(&buf[at + EMPTY.len()..]);
    out.extend_from_slice(body.as_bytes());
    Some(out)
}

impl<S: AsyncWrite + Unpin> JsonErrors<S> {
    /// Sends what is queued; ready once nothing is.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.pending.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonErrors<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for JsonErrors<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        if let Some(out) = rewrite(buf, this.cors) {
            this.pending = out;
            this.linger = Some(Linger {
                shut: false,
                read: 0,
                deadline: None,
            });
            // Started now; the rest goes with the next write, flush or shutdown.
            if let Poll::Ready(Err(e)) = this.poll_drain(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        let Some(linger) = this.linger.as_mut() else {
            return Pin::new(&mut this.inner).poll_shutdown(cx);
        };
        if !linger.shut {
            ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
            linger.shut = true;
        }
        let deadline = linger
            .deadline
            .get_or_insert_with(|| Box::pin(sleep(LINGER)));
        if deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ok(()));
        }
        let mut scratch = [0u8; 16 << 10];
        while linger.read < LINGER_BYTES {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => linger.read += buf.filled().len(),
                // The client is gone: nothing left to protect.
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Not vectored: hyper then hands a response head over in one buffer.
    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypers_bodiless_error_gets_a_json_body() {
        let head = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(rewrite(head, true).expect("rewritten")).expect("utf-8");
        let (h, body) = out.split_once("\r\n\r\n").expect("head");
        assert!(h.contains("content-type: application/json"), "{h}");
        assert!(h.contains("x-content-type-options: nosniff"), "{h}");
        assert!(h.contains("access-control-allow-origin: *"), "{h}");
        assert!(
            h.contains(&format!("content-length: {}", body.len())),
            "{h}"
        );
        assert!(h.ends_with("date: x"), "{h}");
        let v: serde_json::Value = serde_json::from_str(body).expect("json");
        assert!(v["error"].as_str().expect("error").contains("URI too long"));
        assert_eq!(body.lines().count(), 1);
    }

    #[test]
    fn other_writes_pass_unchanged() {
        for buf in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 20\r\n\r\n{\"error\":\"x\"}",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nextra",
            b"{\"a\":1}",
        ] {
            assert!(
                rewrite(buf, false).is_none(),
                "{}",
                String::from_utf8_lossy(buf)
            );
        }
    }
}
