//! The routes, thin over the model as lila-openingexplorer's are: parse
//! the request, read the book on the blocking pool, write JSON.
//!
//! * `GET /masters?fen=&play=&moves=&topGames=`: the position's moves,
//!   games and names ([`super::json`]); `since` and `until` are a 400
//!   ([`super::query`]);
//! * `GET /masters/pgn/{id}`: a game as PGN (`application/x-chess-pgn`);
//! * `/master` and `/master/pgn/{id}`: the same, the singular spelling
//!   lichess still answers (berserk's `get_otb_master_game` uses it);
//! * `GET /bench/constant`: a fixed small JSON body, the book untouched
//!   (the HTTP floor of `bench serve`);
//! * anything else: the page's files ([`super::assets`]), else 404.
//!
//! Every error is an HTTP status with a one-line JSON body
//! `{"error":"..."}` naming the problem; a request that finds no book
//! connection free within `--pool-timeout` is a 503 with `Retry-After`. A
//! last layer gives that body to the answers axum makes on its own (405),
//! adds `X-Content-Type-Options: nosniff` and the page's
//! Content-Security-Policy ([`CSP`]) to every answer, and
//! `Access-Control-Allow-Origin: *` with `--cors`.

use std::{sync::Arc, time::Duration};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{header, HeaderValue, Method, StatusCode, Uri},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
    Router,
};

use super::{
    assets,
    cache::{AnswerCache, AnswerKey},
    json,
    pool::{Pool, PoolError},
    query,
    watch::BookWatch,
};
use crate::book::view::explorer::{explore, game_id_text, game_pgn, parse_game_id};

/// The body of `/bench/constant`.
pub const CONSTANT_BODY: &str = r#"{"constant":true}"#;

/// The page's Content-Security-Policy, sent with every answer: its own
/// scripts, styles and requests only (no inline script or style attribute),
/// images from itself or `data:` (chessground's pieces, the empty icon).
pub const CSP: &str =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What the handlers share: the book's connections, its watcher, the
/// answers kept, and how long a request waits for a connection.
#[derive(Clone)]
pub struct Shared {
    pub pool: Arc<Pool>,
    pub watch: Arc<BookWatch>,
    pub cache: Arc<AnswerCache>,
    pub pool_timeout: Duration,
}

/// The application: routes, then the error, header and CORS layer.
pub fn router(shared: Shared, cors: bool) -> Router {
    Router::new()
        .route("/masters", get(masters))
        .route("/master", get(masters))
        .route("/masters/pgn/{id}", get(pgn))
        .route("/master/pgn/{id}", get(pgn))
        .route("/bench/constant", get(constant))
        .fallback(files)
        .with_state(shared)
        .layer(middleware::from_fn_with_state(cors, finish))
}

/// A JSON error answer: `{"error": message}` on one line.
pub fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = serde_json::json!({ "error": message.into() }).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn json_ok(body: impl Into<Body>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.into(),
    )
        .into_response()
}

/// The 503 of a request that found no connection free in time.
fn busy(timeout: Duration) -> Response {
    let mut res = error(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "the server is busy: no book connection came free within {:.1} s (serve --pool-timeout); try again",
            timeout.as_secs_f64()
        ),
    );
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res
}

fn read_failed(e: PoolError, what: &str, timeout: Duration) -> Response {
    match e {
        PoolError::Busy => busy(timeout),
        PoolError::Failed(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read {what}: {e:#}"),
        ),
    }
}

/// The book's state now ([`BookWatch::fresh`]), waited for until `deadline`.
async fn fresh(
    app: &Shared,
    deadline: tokio::time::Instant,
) -> Result<super::watch::Fresh, Response> {
    match tokio::time::timeout_at(deadline, app.watch.fresh()).await {
        Ok(Ok(f)) => Ok(f),
        Ok(Err(e)) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}"))),
        Err(_) => Err(busy(app.pool_timeout)),
    }
}

async fn masters(State(app): State<Shared>, uri: Uri) -> Response {
    let raw = uri.query().unwrap_or("");
    let q = match query::parse(raw.as_bytes()) {
        Ok(q) => q,
        Err(e) => {
            let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
            return error(status, e.message);
        }
    };
    let deadline = tokio::time::Instant::now() + app.pool_timeout;
    // The book's state first: the answer read after it is at least as new.
    let state = match fresh(&app, deadline).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    let key = (app.cache.enabled() && state.cacheable).then(|| AnswerKey::of(&q));
    if let Some(body) = key
        .as_ref()
        .and_then(|k| app.cache.get(k, state.generation))
    {
        return json_ok(body);
    }
    let read = app
        .pool
        .with_book(deadline, move |book| {
            let explored = explore(book, &q.pos)?;
            let mut body = serde_json::to_vec(&json::masters(&q, &explored))?;
            // Kept answers are counted by their length: no spare capacity.
            body.shrink_to_fit();
            Ok(Bytes::from(body))
        })
        .await;
    match read {
        Ok(body) => {
            if let Some(k) = key {
                app.cache.put(k, state.generation, body.clone());
            }
            json_ok(body)
        }
        Err(e) => read_failed(e, "the book", app.pool_timeout),
    }
}

async fn pgn(State(app): State<Shared>, uri: Uri) -> Response {
    // The raw last segment: a game id is 16 hex digits, nothing to decode.
    let raw = uri.path().rsplit('/').next().unwrap_or("");
    let Some(id) = parse_game_id(raw) else {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "invalid game id {}: expected 16 hex digits",
                query::quote(raw.as_bytes())
            ),
        );
    };
    let deadline = tokio::time::Instant::now() + app.pool_timeout;
    // A replaced book is noticed before the read.
    if let Err(res) = fresh(&app, deadline).await {
        return res;
    }
    match app
        .pool
        .with_book(deadline, move |book| game_pgn(book, id))
        .await
    {
        Ok(Some(text)) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/x-chess-pgn")],
            text,
        )
            .into_response(),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            format!("game not found: {}", game_id_text(id)),
        ),
        Err(e) => read_failed(e, &format!("game {}", game_id_text(id)), app.pool_timeout),
    }
}

async fn constant() -> Response {
    json_ok(CONSTANT_BODY.as_bytes().to_vec())
}

/// The page's files: `/` is index.html, `/static/PATH` and `/PATH` a file.
async fn files(method: Method, uri: Uri) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "method not allowed: {method} {}",
                query::quote(uri.path().as_bytes())
            ),
        );
    }
    let path = uri.path().trim_start_matches('/');
    let path = path.strip_prefix("static/").unwrap_or(path);
    match assets::get(path) {
        Ok(a) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, a.content_type)],
            Body::from(a.bytes),
        )
            .into_response(),
        Err(assets::AssetError::Bad(msg)) => error(StatusCode::BAD_REQUEST, msg),
        Err(assets::AssetError::Missing) => error(
            StatusCode::NOT_FOUND,
            format!("not found: {}", query::quote(uri.path().as_bytes())),
        ),
    }
}

/// Gives axum's own error answers (405...) a JSON body, and adds CORS.
async fn finish(State(cors): State<bool>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = query::quote(req.uri().path().as_bytes());
    let mut res = next.run(req).await;
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if (status.is_client_error() || status.is_server_error()) && !is_json {
        let reason = status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase();
        let allow = res.headers().get(header::ALLOW).cloned();
        res = error(status, format!("{reason}: {method} {path}"));
        if let Some(allow) = allow {
            res.headers_mut().insert(header::ALLOW, allow);
        }
    }
    let headers = res.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    if cors {
        res.headers_mut().insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
    }
    res
}
