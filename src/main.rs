//! hprof-shrink: shrink, package, inspect, verify and upload heap dumps. Parses the command
//! line, runs the command (in `commands/`), reports a failure as one line and exits with
//! its code.

mod batch;
mod cli;
mod commands;
mod error;
mod json;
mod say;
mod signals;
mod suggest;
mod summary;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::say::say;
use cli::{Cli, Command};
use error::HostError;

fn main() -> ExitCode {
    // A file size limit (`ulimit -f`) is a write error (EFBIG) for the one file, reported
    // and cleaned up like any other, not a signal that kills the process mid-write.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to "ignore" before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    signals::install();
    // Before clap, which would take the slip for a dump's name or fail on the options
    // that follow it with a message of its own.
    if let Some(e) = slip(std::env::args_os().nth(1)) {
        say!("hprof-shrink: error: {e}");
        return ExitCode::from(e.exit_code());
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Inspect(a)) => commands::inspect::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Analyze(a)) => commands::analyze::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Diff(a)) => commands::compare::diff(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Growth(a)) => commands::compare::growth(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Verify(a)) => commands::verify::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Batch(a)) => commands::batch::run(a).map(ExitCode::from),
        Some(Command::Upload(a)) => commands::upload::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Completions(a)) => commands::docs::completions(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Manpages(a)) => commands::docs::manpages(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Serve(a)) => commands::serve::run(a).map(|()| ExitCode::SUCCESS),
        None => commands::shrink::run(cli.shrink).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        // Stopped by a signal: the work failed because of it, and cleaned up after itself.
        Err(_) if signals::received().is_some() => {
            let n = signals::received().unwrap_or(0);
            say!("hprof-shrink: cancelled");
            ExitCode::from(signals::exit_code(n))
        }
        // Bad usage looks like clap's own: the message, the usage line, exit 2.
        Err(HostError::Usage(msg)) => Cli::command()
            .error(clap::error::ErrorKind::InvalidValue, msg)
            .exit(),
        // The reader of stdout went away: end quietly, as `cat` does.
        Err(HostError::Stdout(say::StdoutError::Closed)) => ExitCode::from(say::EXIT_STDOUT_CLOSED),
        Err(e) => {
            say!("hprof-shrink: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// `hprof-shrink inspekt x.hprof`: a first argument that is no option and no file, but a
/// slip away from a subcommand's name.
fn slip(first: Option<std::ffi::OsString>) -> Option<HostError> {
    let first = first?;
    let word = first.to_str()?;
    if word.starts_with('-') || std::fs::symlink_metadata(word).is_ok() {
        return None;
    }
    let command = suggest::subcommand(word)?;
    Some(HostError::DidYouMean {
        word: word.to_string(),
        command,
    })
}
