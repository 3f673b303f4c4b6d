//! `hprof-shrink completions SHELL` and the hidden `hprof-shrink manpages DIR`: shell
//! completion and man pages, both from the clap definitions, so they never drift from
//! `--help`.
//!
//! Completion is clap_complete's engine: the script `completions` prints only registers a
//! function that calls this binary back with [`COMPLETE_VAR`] set, and `main` answers that
//! call (with [`complete_if_asked`]) from the same definitions that parse the command line.
//! The engine completes each subcommand's options and the values of each option, and lists
//! no hidden command or option (it completes one only when what was typed matches nothing
//! else, e.g. `--backoff`). clap_complete's static scripts list hidden ones, and its bash
//! script completes no subcommand's options for a binary whose name has a hyphen.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManpagesArgs};
use crate::error::HostError;

/// The variable the completion scripts set when they call the binary back: one of our
/// own, so that a `COMPLETE` set for another tool never turns a run into a completion.
pub const COMPLETE_VAR: &str = "HPROF_SHRINK_COMPLETE";

/// Answers a completion script's call (and exits) when [`COMPLETE_VAR`] is set; returns
/// otherwise. First thing in `main`: nothing may be written to stdout before it.
pub fn complete_if_asked() {
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(COMPLETE_VAR)
        .complete();
}

pub fn completions(a: CompletionsArgs) -> Result<(), HostError> {
    let name = a.shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let shell = shells
        .completer(&name)
        .ok_or_else(|| HostError::Usage(format!("no completion for {name}")))?;
    let mut out = Vec::new();
    shell
        .write_registration(
            COMPLETE_VAR,
            "hprof-shrink",
            "hprof-shrink",
            &completer(),
            &mut out,
        )
        .expect("writing to a Vec cannot fail");
    let text = String::from_utf8(out).expect("clap_complete writes UTF-8");
    crate::say::out(&text)?;
    Ok(())
}

/// The binary the script calls: as clap_complete names it, by the name it was run as
/// (`hprof-shrink`, found on the PATH at each Tab) or, run by a path, that path made
/// absolute.
fn completer() -> String {
    let argv0 = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "hprof-shrink".into());
    let path = if argv0.components().count() > 1 {
        std::env::current_dir()
            .map(|d| d.join(&argv0))
            .unwrap_or(argv0)
    } else {
        argv0
    };
    path.to_string_lossy().into_owned()
}

/// Writes `hprof-shrink.1` and `hprof-shrink-SUB.1` for every visible subcommand.
pub fn manpages(a: ManpagesArgs) -> Result<(), HostError> {
    std::fs::create_dir_all(&a.dir).map_err(|e| HostError::io(&a.dir, e))?;
    let cmd = Cli::command();
    let mut pages = vec![("hprof-shrink".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        // clap takes a command's name as `&'static str` (without its `string` feature);
        // a handful of names for a command that then exits.
        let name: &'static str = format!("hprof-shrink-{}", sub.get_name()).leak();
        let usage: &'static str = format!("hprof-shrink {}", sub.get_name()).leak();
        pages.push((name.to_string(), sub.clone().name(name).bin_name(usage)));
    }
    for (name, page) in pages {
        let path = a.dir.join(format!("{name}.1"));
        let mut roff = Vec::new();
        clap_mangen::Man::new(page)
            .render(&mut roff)
            .map_err(|e| HostError::io(&path, e))?;
        std::fs::write(&path, roff).map_err(|e| HostError::io(&path, e))?;
    }
    Ok(())
}
