//! The operating system's calls through libc, each behind a safe function:
//! the only `unsafe` in the crate.

/// The machine's physical memory in bytes, if the system says.
pub fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf reads a system constant and has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && page > 0).then(|| pages as u64 * page as u64)
}

/// Gives the memory the allocator holds free back to the system (glibc
/// only; elsewhere nothing).
pub fn malloc_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// User and system CPU time of this process so far, in seconds (0 if the
/// system does not say).
pub fn cpu_seconds() -> f64 {
    // SAFETY: rusage is a plain C struct; all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own and pass by pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

/// How a child process ended: its exit code (`None`: killed by a signal)
/// and its peak resident memory in KB.
pub struct Exited {
    pub code: Option<i32>,
    pub max_rss_kb: i64,
}

/// Waits for our child `pid` (not yet waited for), with its resource use.
pub fn wait_with_usage(pid: u32) -> std::io::Result<Exited> {
    let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    let mut status = 0;
    // SAFETY: rusage is a plain C struct; all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child; status and usage are ours, by pointer.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Exited {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        max_rss_kb: usage.ru_maxrss,
    })
}

/// Whether process `pid` exists (it may belong to another user): signal 0
/// checks without sending anything. A pid that is not a positive `pid_t`
/// names no process (`kill` would read 0 and -1 as groups).
pub fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 sends nothing and has no memory preconditions.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends SIGINT to process `pid` (a child's graceful stop).
pub fn interrupt(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill has no memory preconditions; a gone pid is an error we ignore.
        unsafe {
            libc::kill(pid, libc::SIGINT);
        }
    }
}

/// Makes SIGINT call `handler` (which must only do what a signal handler
/// may: store to an atomic, call `default_sigint`).
pub fn on_sigint(handler: extern "C" fn(libc::c_int)) {
    // SAFETY: installs a handler; the contract above keeps it async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
    }
}

/// SIGINT's default again (the process ends). Async-signal-safe.
pub fn default_sigint() {
    // SAFETY: signal() is async-signal-safe and has no memory preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// Whether a process holds a POSIX lock on any of the `len` bytes of `file`
/// from `start` (how SQLite shows that a connection has a database open).
/// Linux asks as an open file description (`F_OFD_GETLK`), which also sees
/// this process's own locks; elsewhere `F_GETLK` sees other processes' only.
pub fn byte_range_locked(file: &std::fs::File, start: u64, len: u64) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let offset = |n: u64| libc::off_t::try_from(n).map_err(std::io::Error::other);
    // SAFETY: flock is a plain C struct; all zeroes is a valid value (and
    // F_OFD_GETLK requires l_pid to be 0).
    let mut query: libc::flock = unsafe { std::mem::zeroed() };
    // A write lock conflicts with any lock another owner holds.
    query.l_type = libc::F_WRLCK as libc::c_short;
    query.l_whence = libc::SEEK_SET as libc::c_short;
    query.l_start = offset(start)?;
    query.l_len = offset(len)?;
    #[cfg(target_os = "linux")]
    let command = libc::F_OFD_GETLK;
    #[cfg(not(target_os = "linux"))]
    let command = libc::F_GETLK;
    // SAFETY: a GETLK fcntl only reads and fills the struct we own, passed
    // by pointer, on a descriptor `file` keeps open for the call.
    if unsafe { libc::fcntl(file.as_raw_fd(), command, &mut query) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(query.l_type != libc::F_UNLCK as libc::c_short)
}
