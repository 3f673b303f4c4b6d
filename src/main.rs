//! hprof-shrink: shrink, package, inspect, verify and upload heap dumps. Parses the command
//! line, runs the command (in `commands/`), reports a failure as one line and exits with
//! its code.

mod batch;
mod cli;
mod commands;
mod error;
mod json;
mod summary;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use cli::{Cli, Command};
use error::HostError;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Inspect(a)) => commands::inspect::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Verify(a)) => commands::verify::run(a).map(|()| ExitCode::SUCCESS),
        Some(Command::Batch(a)) => commands::batch::run(a).map(ExitCode::from),
        Some(Command::Upload(a)) => commands::upload::run(a).map(|()| ExitCode::SUCCESS),
        None => commands::shrink::run(cli.shrink).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        // Bad usage looks like clap's own: the message, the usage line, exit 2.
        Err(HostError::Usage(msg)) => Cli::command()
            .error(clap::error::ErrorKind::InvalidValue, msg)
            .exit(),
        Err(e) => {
            eprintln!("hprof-shrink: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
