//! The process's peak resident memory so far, read from Linux's
//! `/proc/self/status` (`VmHWM`, what `time -v` reports at the end); never
//! reset, so outside tools still see the true peak. Elsewhere the figures
//! are absent rather than wrong.

/// Peak resident set size since the start, in bytes.
pub fn peak_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// With `LEARNBOOK_TRACE_MEMORY` set, prints the resident and peak memory
/// at `label` to stderr, with the seconds since the first trace (for
/// finding what a long run holds, and where its time goes).
pub fn trace(label: &str) {
    static FIRST: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    if std::env::var_os("LEARNBOOK_TRACE_MEMORY").is_none() {
        return;
    }
    let since = FIRST.get_or_init(std::time::Instant::now).elapsed();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .map_or("?".to_string(), |l| l[name.len()..].trim().to_string())
    };
    eprintln!(
        "memory at {label}: resident {}, peak {} ({:.2} s)",
        field("VmRSS:"),
        field("VmHWM:"),
        since.as_secs_f64()
    );
}

/// Gives the memory the allocator holds free back to the system (glibc
/// keeps what a phase freed, in every thread's arena, and it would count
/// as the process's until reused).
pub fn release_free() {
    crate::sys::malloc_trim();
}
