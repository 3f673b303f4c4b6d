//! `hprof-shrink completions SHELL` and the hidden `hprof-shrink manpages DIR`: shell
//! completion scripts and man pages, both generated from the clap definitions, so they
//! never drift from `--help`.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManpagesArgs};
use crate::error::HostError;

pub fn completions(a: CompletionsArgs) -> Result<(), HostError> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "hprof-shrink", &mut out);
    let text = String::from_utf8(out).expect("clap_complete writes UTF-8");
    crate::say::out(&text)?;
    Ok(())
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
