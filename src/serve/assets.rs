//! The explorer page's files: everything under `src/serve/web/`, embedded
//! in the binary (in every profile, so a test build serves what a release
//! serves), each with the content type its extension implies. They are
//! served at `/static/PATH` and, for relative links from the page at `/`,
//! at `/PATH`; `/` is `index.html`.
//!
//! Paths are looked up in the embedded table, never on the file system;
//! a path with a `..` or `.` segment, a backslash or a NUL (after
//! percent-decoding) is refused before the lookup all the same, so a
//! traversal attempt gets a clear 400 rather than a 404.
//!
//! rust-embed lists the folder when the crate compiles: a file added to
//! `web/` is served after the next rebuild of this crate (cargo does not
//! watch the folder for new files).

use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "src/serve/web/"]
struct Web;

/// A file to serve: its bytes and content type.
pub struct Asset {
    pub bytes: std::borrow::Cow<'static, [u8]>,
    pub content_type: String,
}

/// Why a path is not served.
#[derive(Debug, PartialEq, Eq)]
pub enum AssetError {
    /// Not a path this server reads (400): the message says why.
    Bad(String),
    /// No such file (404).
    Missing,
}

/// The embedded file at `path` (percent-encoded, without the leading `/`).
pub fn get(raw_path: &str) -> Result<Asset, AssetError> {
    // '+' is a space in a query, not in a path.
    let escaped = raw_path.replace('+', "%2B");
    let path = super::query::decode_component(escaped.as_bytes(), "the path")
        .map_err(|e| AssetError::Bad(e.message))?;
    let path = if path.is_empty() {
        "index.html".to_string()
    } else {
        path
    };
    if path.contains('\\') || path.contains('\0') {
        return Err(AssetError::Bad(format!(
            "bad path {}: backslashes and NUL are not allowed",
            super::query::quote(path.as_bytes())
        )));
    }
    if path.split('/').any(|seg| seg == "." || seg == "..") {
        return Err(AssetError::Bad(format!(
            "bad path {}: . and .. segments are not allowed",
            super::query::quote(path.as_bytes())
        )));
    }
    let file = Web::get(&path).ok_or(AssetError::Missing)?;
    Ok(Asset {
        content_type: file.metadata.mimetype().to_string(),
        bytes: file.data,
    })
}

/// Every embedded path (for tests and the start-up line).
pub fn paths() -> Vec<String> {
    Web::iter().map(|p| p.into_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_traversal() {
        let index = get("").expect("index.html");
        assert!(index.content_type.starts_with("text/html"));
        for bad in [
            "../Cargo.toml",
            "%2e%2e/Cargo.toml",
            "a/..%2f..%2fCargo.toml",
            "x%5c..",
            "%00",
        ] {
            assert!(matches!(get(bad), Err(AssetError::Bad(_))), "{bad}");
        }
        assert!(matches!(get("%zz"), Err(AssetError::Bad(_))));
        assert_eq!(get("no-such-file.js").err(), Some(AssetError::Missing));
        assert_eq!(get("a//b").err(), Some(AssetError::Missing));
    }
}
