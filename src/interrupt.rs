//! Ctrl-C for long runs (tuning, analysis): the first SIGINT asks the run to
//! stop at its next safe point; a second one ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // SAFETY: signal() is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// From now on SIGINT sets [`interrupted`] instead of ending the process.
pub fn stop_on_sigint() {
    // SAFETY: installs a handler that only stores to an atomic and resets itself.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// Whether SIGINT arrived since [`stop_on_sigint`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
