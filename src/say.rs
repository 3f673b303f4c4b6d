//! Writing to the terminal without ever failing the work: a message to stderr that cannot
//! be written (a closed log pipe, `2>/dev/full`) is dropped, never a panic and never a
//! reason to stop (the work it reports on, and what comes after it, such as
//! `--delete-input` or an upload, goes on). Results on stdout are different: when the
//! reader has gone (`inspect --json | head -1`), the command ends quietly, as `cat` does.

use std::io::Write;

/// `eprintln!` that drops what cannot be written.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that drops what cannot be written.
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

pub(crate) use {say, say_raw};

/// Exit status when stdout's reader went away: what a shell shows for a command that
/// SIGPIPE ended (128 + 13), without the signal (which would also end work that only
/// writes to stderr).
pub const EXIT_STDOUT_CLOSED: u8 = 141;

/// Why writing a result to stdout failed.
#[derive(Debug, thiserror::Error)]
pub enum StdoutError {
    /// The reader closed the pipe: not an error to report.
    #[error("stdout was closed")]
    Closed,
    #[error("writing to stdout: {0}")]
    Io(std::io::Error),
}

/// Writes `text` to stdout and flushes it.
pub fn out(text: &str) -> Result<(), StdoutError> {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|()| o.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => StdoutError::Closed,
            _ => StdoutError::Io(e),
        })
}
