//! Other engines as processes: the UCI and xboard clients that start an
//! engine, speak its protocol and time its answers ([`protocol`]), and the
//! options a UCI engine declares ([`options`]). Below the parts that use
//! them (the match runner in `play`, the analysts of `analyze`, the
//! external-engine tuner in `tune`); it imports none of them. Not the
//! search core: that is `engine`, which plays in-process.

#![forbid(unsafe_code)]

pub mod options;
pub mod protocol;
