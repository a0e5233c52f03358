//! The routes, thin over the model as lila-openingexplorer's are: parse
//! the request, read the book on the blocking pool, write JSON.
//!
//! * `GET /masters?fen=&play=&moves=&topGames=&since=&until=`: the
//!   position's moves, games and names ([`super::json`]);
//! * `GET /masters/pgn/{id}`: a game as PGN (`application/x-chess-pgn`);
//! * `/master` and `/master/pgn/{id}`: the same, the singular spelling
//!   lichess still answers (berserk's `get_otb_master_game` uses it);
//! * `GET /bench/constant`: a fixed small JSON body, the book untouched
//!   (the HTTP floor of `bench serve`);
//! * anything else: the page's files ([`super::assets`]), else 404.
//!
//! Every error is an HTTP status with a one-line JSON body
//! `{"error":"..."}` naming the problem; a last layer gives that body to
//! the answers axum makes on its own (405), and adds
//! `Access-Control-Allow-Origin: *` with `--cors`.

use std::sync::Arc;

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{header, HeaderValue, Method, StatusCode, Uri},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
    Router,
};

use super::{assets, cache::AnswerCache, json, pool::Pool, query};
use crate::book::explore::{game_id_text, game_pgn, parse_game_id};

/// The body of `/bench/constant`.
pub const CONSTANT_BODY: &str = r#"{"constant":true}"#;

/// What the handlers share: the book's connections and the answers kept.
#[derive(Clone)]
pub struct Shared {
    pub pool: Arc<Pool>,
    pub cache: Arc<AnswerCache>,
}

/// The application: routes, then the error and CORS layer.
pub fn router(pool: Arc<Pool>, cache: Arc<AnswerCache>, cors: bool) -> Router {
    Router::new()
        .route("/masters", get(masters))
        .route("/master", get(masters))
        .route("/masters/pgn/{id}", get(pgn))
        .route("/master/pgn/{id}", get(pgn))
        .route("/bench/constant", get(constant))
        .fallback(files)
        .with_state(Shared { pool, cache })
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

async fn masters(State(app): State<Shared>, uri: Uri) -> Response {
    let raw = uri.query().unwrap_or("");
    // The book's version first: the answer read after it is at least as new.
    let version = if app.cache.enabled() {
        app.cache.version().ok()
    } else {
        None
    };
    if let Some(body) = version.and_then(|v| app.cache.get(raw, v)) {
        return json_ok(body);
    }
    let q = match query::parse(raw.as_bytes()) {
        Ok(q) => q,
        Err(e) => {
            let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
            return error(status, e.message);
        }
    };
    let pos = q.pos.clone();
    match app.pool.with_book(move |book| book.explore(&pos)).await {
        Ok(explored) => match serde_json::to_vec(&json::masters(&q, &explored)) {
            Ok(body) => {
                let body = Bytes::from(body);
                if let Some(v) = version {
                    app.cache.put(raw, v, body.clone());
                }
                json_ok(body)
            }
            Err(e) => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot write the answer: {e}"),
            ),
        },
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read the book: {e:#}"),
        ),
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
    match app.pool.with_book(move |book| game_pgn(book, id)).await {
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
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read game {}: {e:#}", game_id_text(id)),
        ),
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
    if cors {
        res.headers_mut().insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
    }
    res
}
