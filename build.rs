//! Rebuilds the binary when a file of the explorer page is added or
//! removed: the page is embedded (rust-embed), and rustc alone tracks only
//! the files it already embedded.

fn main() {
    println!("cargo:rerun-if-changed=src/serve/web");
}
