//! Error type shared by the whole crate; the variant decides the process exit code.

use std::fmt;

#[derive(Debug)]
pub enum SimError {
    /// Bad input: case file, command line, checkpoint or mesh (exit code 2).
    Input(String),
    /// The run itself failed, e.g. a non-finite value appeared (exit code 1).
    Run(String),
    /// Stopped by a signal (SIGINT, SIGTERM, SIGHUP) after writing a checkpoint: exit code
    /// 128 + the signal number (130, 143, 129).
    Interrupted(String, i32),
}

pub type Result<T> = std::result::Result<T, SimError>;

impl SimError {
    pub fn exit_code(&self) -> i32 {
        match self {
            SimError::Input(_) => 2,
            SimError::Run(_) => 1,
            SimError::Interrupted(_, signal) => 128 + signal,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Input(m) | SimError::Run(m) | SimError::Interrupted(m, _) => f.write_str(m),
        }
    }
}

impl std::error::Error for SimError {}

/// Shorthand for a bad-input error.
pub fn input<T>(msg: impl Into<String>) -> Result<T> {
    Err(SimError::Input(msg.into()))
}

/// `text` as it may be quoted in a message: at most about 200 characters.
pub fn quote(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
        None => text.to_string(),
    }
}
