//! Checks over every help text, read from the clap definitions themselves (every command,
//! hidden ones too, every option and value): an option states its default once, and a text
//! that points to a document points to one that exists and says what is pointed at.

use std::path::Path;

use clap::CommandFactory;

use crate::cli::Cli;

/// Every command below `cmd` (itself first), with its full name.
fn commands(cmd: &clap::Command, name: String, out: &mut Vec<(String, clap::Command)>) {
    out.push((name.clone(), cmd.clone()));
    for sub in cmd.get_subcommands() {
        commands(sub, format!("{name} {}", sub.get_name()), out);
    }
}

fn all_commands() -> Vec<(String, clap::Command)> {
    let mut cmd = Cli::command();
    // Built, so that clap's own `help` command and help flags are there too.
    cmd.build();
    let mut out = Vec::new();
    commands(&cmd, "hprof-shrink".into(), &mut out);
    out
}

/// What `--help` shows of an option (its long help where it has one).
fn option_text(arg: &clap::Arg) -> String {
    arg.get_long_help()
        .or(arg.get_help())
        .map(|s| s.to_string())
        .unwrap_or_default()
}

/// Every text of a command and its options: (where, text).
fn texts(name: &str, cmd: &clap::Command) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = [
        cmd.get_about(),
        cmd.get_long_about(),
        cmd.get_before_help(),
        cmd.get_before_long_help(),
        cmd.get_after_help(),
        cmd.get_after_long_help(),
    ]
    .into_iter()
    .flatten()
    .map(|t| (name.to_string(), t.to_string()))
    .collect();
    for arg in cmd.get_arguments() {
        let at = format!("{name} {}", arg.get_id());
        out.push((at.clone(), option_text(arg)));
        for v in arg.get_possible_values() {
            if let Some(h) = v.get_help() {
                out.push((format!("{at}={}", v.get_name()), h.to_string()));
            }
        }
    }
    out
}

#[test]
fn each_option_states_its_default_at_most_once() {
    let mut twice = Vec::new();
    for (name, cmd) in all_commands() {
        for arg in cmd.get_arguments() {
            let said = option_text(arg).to_lowercase().matches("default").count();
            // clap adds `[default: X]` itself for a default value it is not told to hide.
            let shown = !arg.is_hide_default_value_set() && !arg.get_default_values().is_empty();
            if said + usize::from(shown) > 1 {
                twice.push(format!(
                    "{name} {}: {:?}{}",
                    arg.get_id(),
                    option_text(arg),
                    if shown {
                        " and clap's [default: ...]"
                    } else {
                        ""
                    }
                ));
            }
        }
    }
    assert!(
        twice.is_empty(),
        "defaults stated twice:\n{}",
        twice.join("\n")
    );
}

#[test]
fn every_document_a_help_text_points_to_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut wrong = Vec::new();
    for (name, cmd) in all_commands() {
        for (at, text) in texts(&name, &cmd) {
            // docs/NAME.md: the file is there.
            for (i, _) in text.match_indices("docs/") {
                let path: String = text[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "_-./".contains(*c))
                    .collect();
                let path = path.trim_end_matches('.');
                if !path.ends_with(".md") || !root.join(path).is_file() {
                    wrong.push(format!("{at}: {path:?} is no document"));
                }
            }
            // The README only by a section it has: "the README's Install section".
            for (i, _) in text.match_indices("README") {
                let section = text[i..]
                    .strip_prefix("README's ")
                    .and_then(|rest| rest.split_once(" section"))
                    .map(|(s, _)| s);
                match section {
                    Some(s) if readme.lines().any(|l| l == format!("## {s}")) => {}
                    _ => wrong.push(format!(
                        "{at}: points to the README, not to a section of it: {text:?}"
                    )),
                }
            }
            // A schema pointed to is in that document.
            if let Some((_, rest)) = text.split_once("schema in ") {
                let doc: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "_-./".contains(*c))
                    .collect();
                let doc = doc.trim_end_matches('.');
                let holds = std::fs::read_to_string(root.join(doc))
                    .is_ok_and(|d| d.to_lowercase().contains("schema"));
                if !holds {
                    wrong.push(format!("{at}: the schema is not in {doc:?}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
