//! The floor beneath learnbook's two foundations (the book and the search
//! core) and the application above them: the operating system's calls
//! through libc ([`sys`], the only `unsafe` in the workspace), atomic file
//! replacement, the process's peak memory, the FNV-1a hash, `--shard I/N`
//! and Ctrl-C. It imports nothing of learnbook.

#![deny(unsafe_code)]

pub mod atomic_file;
pub mod fnv;
pub mod interrupt;
pub mod peak_memory;
pub mod shard;
#[allow(unsafe_code)]
pub mod sys;
