//! Ctrl-C for long runs (tuning, analysis): the first SIGINT asks the run to
//! stop at its next safe point; a second one ends the process at once. And
//! a reader of standard output that goes away (`learnbook ... | head`).

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    crate::sys::default_sigint();
}

/// From now on SIGINT sets [`interrupted`] instead of ending the process.
pub fn stop_on_sigint() {
    crate::sys::on_sigint(on_sigint);
}

/// Whether SIGINT arrived since [`stop_on_sigint`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// From now on a write to a standard output whose reader has gone (`|
/// head`) ends the process quietly with status 141, as SIGPIPE's default
/// would, instead of a panic. SIGPIPE itself stays ignored (Rust's
/// default): a dead engine's pipe is an error the match runner handles,
/// not the end of the match. A book being written is left as a kill
/// leaves it: its last committed game.
pub fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload_as_str().unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}
