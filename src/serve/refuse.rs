//! Connections past `serve --max-connections`: answered at once with a 503
//! and a one-line JSON error, then closed. A client is told why rather than
//! left waiting, and the server's memory and descriptors stay bounded by
//! the cap (plus [`MAX_REFUSING`] connections being refused).
//!
//! The close lingers as [`super::conn`]'s does: the write side is shut
//! and what the client still sends is read and dropped, for at most
//! [`LINGER`] and [`LINGER_BYTES`], so that the answer is not destroyed by
//! a reset. Past [`MAX_REFUSING`] refusals under way, a connection is
//! closed without an answer.

use std::sync::Arc;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::Semaphore,
    time::{timeout, Duration},
};

/// Refusals under way at most.
pub const MAX_REFUSING: usize = 64;
/// The longest a refusal takes.
pub const LINGER: Duration = Duration::from_secs(1);
/// The most a refusal reads (and drops).
pub const LINGER_BYTES: usize = 64 << 10;

/// The answer: a 503 whose body names the cap.
pub fn answer(cap: usize, cors: bool) -> Vec<u8> {
    let body = serde_json::json!({
        "error": format!(
            "too many connections: the server serves at most {cap} at once (serve --max-connections); try again"
        )
    })
    .to_string();
    let mut head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\nretry-after: 1\r\nx-content-type-options: nosniff\r\n",
        body.len()
    );
    if cors {
        head.push_str("access-control-allow-origin: *\r\n");
    }
    head.push_str("\r\n");
    head.push_str(&body);
    head.into_bytes()
}

/// Refuses `stream` in a task of its own (or closes it, past
/// [`MAX_REFUSING`] refusals under way).
pub fn refuse(stream: TcpStream, refusing: &Arc<Semaphore>, answer: Arc<[u8]>) {
    let Ok(permit) = Arc::clone(refusing).try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let mut stream = stream;
        let _ = timeout(LINGER, async {
            stream.write_all(&answer).await?;
            stream.shutdown().await?;
            let mut scratch = [0u8; 4096];
            let mut read = 0;
            while read < LINGER_BYTES {
                match stream.read(&mut scratch).await? {
                    0 => break,
                    n => read += n,
                }
            }
            Ok::<_, std::io::Error>(())
        })
        .await;
    });
}
