//! The font the PNG plots are drawn with, shipped with the program (a
//! subset of DejaVu Sans: ASCII and a few signs; `assets/fonts`), so that
//! plotting needs no system font library (fontconfig, freetype).

use std::sync::OnceLock;

use anyhow::{anyhow, Result};

static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans-subset.ttf");

/// The family name plots ask for; registered on first use.
pub const FAMILY: &str = "sans-serif";

/// Registers the shipped font as [`FAMILY`] (once per process).
pub fn font() -> Result<&'static str> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FAMILY, plotters::style::FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(FAMILY)
    } else {
        Err(anyhow!("the shipped plot font cannot be read"))
    }
}
