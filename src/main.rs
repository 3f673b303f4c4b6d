//! hprof-shrink: shrink, package, inspect, verify and upload heap dumps. Parses the command
//! line, runs the command (in `commands/`), reports a failure as one line and exits with
//! its code.

mod batch;
mod cli;
mod commands;
mod error;
mod gate;
#[cfg(test)]
mod help_audit;
mod huge_pages;
mod json;
mod progress;
mod report_out;
mod say;
mod signals;
mod sniff;
mod suggest;
mod summary;
mod uploads;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::say::say;
use cli::{Cli, Command};
use error::HostError;

#[global_allocator]
static ALLOCATOR: huge_pages::HugePages = huge_pages::HugePages;

fn main() -> ExitCode {
    // A completion script calling back: answered, and exited, before anything else runs
    // or writes to stdout.
    commands::docs::complete_if_asked();
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
    let mut args: Vec<OsString> = std::env::args_os().collect();
    if let Some(e) = slip(args.get(1).cloned()) {
        say!("hprof-shrink: error: {e}");
        return ExitCode::from(e.exit_code());
    }
    help_flags_after_help(&mut args);
    let matches = Cli::command().get_matches_from(args);
    // Which command ran, for the usage line of its bad usage.
    let sub = matches.subcommand_name().map(str::to_string);
    let cli =
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut Cli::command()).exit());
    // The commands that analyze reach across large arrays at random; huge pages for them
    // only when asked (see huge_pages.rs: where free memory is short they cost more).
    if matches!(
        cli.command,
        Some(Command::Analyze(_) | Command::Diff(_) | Command::Growth(_) | Command::AnalyzeJob(_))
    ) && std::env::var_os(huge_pages::ASK).is_some_and(|v| v == "1")
    {
        huge_pages::enable();
    }
    let result = match cli.command {
        Some(Command::Inspect(a)) => commands::inspect::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Analyze(a)) => commands::analyze::run(a),
        Some(Command::Diff(a)) => commands::compare::diff(a),
        Some(Command::Growth(a)) => commands::compare::growth(a),
        Some(Command::Verify(a)) => commands::verify::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Batch(a)) => commands::batch::run(a).map(ExitCode::from),
        Some(Command::Upload(a)) => commands::upload::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Completions(a)) => commands::docs::completions(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Manpages(a)) => commands::docs::manpages(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Serve(a)) => commands::serve::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::AnalyzeJob(a)) => Ok(commands::serve::analyze_job(a)),
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
        // Bad usage looks like clap's own: the message, the command's usage line, exit 2.
        Err(e @ (HostError::Usage(_) | HostError::NoOutput(_))) => {
            let mut cmd = Cli::command();
            cmd.build();
            let cmd = match sub.as_deref().and_then(|s| cmd.find_subcommand_mut(s)) {
                Some(sub) => sub,
                None => &mut cmd,
            };
            cmd.error(clap::error::ErrorKind::InvalidValue, e).exit()
        }
        // The reader of stdout went away: end quietly, as `cat` does.
        Err(HostError::Stdout(say::StdoutError::Closed)) => ExitCode::from(say::EXIT_STDOUT_CLOSED),
        Err(e) => {
            say!("hprof-shrink: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// `hprof-shrink help --help` (or `-h`): clap's own `help` takes every word after it for a
/// command's name, the flag too, and fails. The flag is dropped: `help --help` becomes
/// `help help` (the help of `help`), `help analyze --help` becomes `help analyze`.
fn help_flags_after_help(args: &mut Vec<OsString>) {
    if args.get(1).is_none_or(|a| a != "help") {
        return;
    }
    let before = args.len();
    let mut i = 0;
    args.retain(|a| {
        i += 1;
        i <= 2 || (a != "--help" && a != "-h")
    });
    if args.len() < before && args.len() == 2 {
        args.push("help".into());
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
