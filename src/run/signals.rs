//! SIGINT (Ctrl-C), SIGTERM (sent by batch schedulers before they kill a job) and SIGHUP: the
//! first finishes the step, writes a checkpoint and exits with 128 + the signal number; a
//! second one exits at once.

use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

static RECEIVED: AtomicI32 = AtomicI32::new(0);

pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            // SAFETY: the action only swaps an atomic and calls _exit, both async-signal-safe.
            let registered = unsafe {
                signal_hook::low_level::register(signal, move || {
                    if RECEIVED.swap(signal, Ordering::SeqCst) != 0 {
                        signal_hook::low_level::exit(128 + signal);
                    }
                })
            };
            if let Err(e) = registered {
                crate::say!("warning: cannot handle signal {signal}: {e}");
            }
        }
    });
}

/// The first signal received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Take `signal` as the one received: the signal the ranks of a decomposed run agreed on (the
/// largest any of them received), so that every rank reports it and exits with its code.
pub fn agreed(signal: i32) {
    RECEIVED.store(signal, Ordering::SeqCst);
}

/// `SIGTERM` for 15, and so on.
pub fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT (Ctrl-C)",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}
