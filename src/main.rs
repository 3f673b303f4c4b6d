//! hprof-shrink: shrink, package, inspect and verify heap dumps.

mod batch;
mod cli;
mod progress;
mod summary;

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use hprof_shrink_core::output::PendingFile;
use hprof_shrink_core::verify::verify_path;
use hprof_shrink_core::{inspect, Control, ManifestValues, Outputs, ShrinkOptions};

use cli::{Cli, Command, InspectArgs, ShrinkArgs, VerifyArgs};
use progress::Bar;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Inspect(a)) => inspect_cmd(a),
        Some(Command::Verify(a)) => verify_cmd(a),
        Some(Command::Batch(a)) => return batch_cmd(a),
        None => shrink_cmd(cli.shrink),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("hprof-shrink: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

type CmdResult = Result<(), String>;

fn batch_cmd(a: cli::BatchArgs) -> ExitCode {
    match batch::run(&a) {
        Ok(code) => ExitCode::from(code),
        Err(msg) => {
            eprintln!("hprof-shrink: error: batch: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// A cut-off dump can still be shrunk: say how.
pub(crate) fn salvage_hint(e: &hprof_shrink_core::Error, salvaging: bool) -> &'static str {
    if e.is_cut_off() && !salvaging {
        " (to shrink the part that is there, add --salvage)"
    } else {
        ""
    }
}

pub(crate) fn write_json(path: &Path, value: &impl serde::Serialize) -> CmdResult {
    let json = serde_json::to_string_pretty(value).map_err(|e| e.to_string())? + "\n";
    let mut f = PendingFile::create(path).map_err(|e| e.to_string())?;
    std::io::Write::write_all(f.file(), json.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.commit().map_err(|e| e.to_string())?;
    Ok(())
}

fn shrink_cmd(a: ShrinkArgs) -> CmdResult {
    let input = a.input.expect("clap requires the input");
    if a.output.is_none() && a.hprof_out.is_none() {
        return Err("give OUT.zip, --hprof-out FILE, or both".into());
    }
    let opts = ShrinkOptions {
        strip: a.mode.strip.into(),
        dropped: a.mode.dropped.into(),
        level: a.mode.level,
        manifest: ManifestValues {
            sdk_version: a.sdk_version,
            manufacturer: a.manufacturer,
            leaked_activity_key: a.leaked_activity_key,
        },
        extra: a.extra,
        hprof_entry: a.hprof_entry,
        threads: a.threads,
        salvage: a.mode.salvage,
    };
    let bar = Bar::new(!a.quiet);
    let progress = |p| bar.update(p);
    let control = Control {
        cancel: None,
        progress: Some(&progress),
    };
    let outputs = Outputs {
        zip: a.output.as_deref(),
        hprof: a.hprof_out.as_deref(),
    };
    let report = hprof_shrink_core::shrink_file(&input, outputs, &opts, &control);
    bar.finish();
    let report = report.map_err(|e| {
        format!(
            "{}: {e}{}",
            input.display(),
            salvage_hint(&e, a.mode.salvage)
        )
    })?;
    if let Some(path) = &a.report {
        write_json(path, &report)?;
    }
    if !a.quiet {
        eprint!("{}", summary::shrink(&report));
    }
    if a.delete_input {
        let checked = a
            .output
            .as_deref()
            .or(a.hprof_out.as_deref())
            .expect("an output");
        verify_path(checked, Some(&input), Some(opts.strip), &Control::default()).map_err(|e| {
            format!(
                "not deleting {}: the output does not verify: {e}",
                input.display()
            )
        })?;
        std::fs::remove_file(&input).map_err(|e| format!("deleting {}: {e}", input.display()))?;
        if !a.quiet {
            eprintln!(
                "deleted {} (the output verified against it)",
                input.display()
            );
        }
    }
    Ok(())
}

fn inspect_cmd(a: InspectArgs) -> CmdResult {
    let err = |e: hprof_shrink_core::Error| format!("{}: {e}", a.input.display());
    let map = hprof_shrink_core::hprof::MappedFile::open(&a.input).map_err(err)?;
    let hprof = map.hprof().map_err(err)?;
    let bar = Bar::new(true);
    let progress = |p| bar.update(p);
    let control = Control {
        cancel: None,
        progress: Some(&progress),
    };
    let result = inspect::inspect(&hprof, a.top, &control);
    bar.finish();
    let i = result.map_err(err)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&i).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", summary::inspect(&a.input.display().to_string(), &i));
    }
    Ok(())
}

fn verify_cmd(a: VerifyArgs) -> CmdResult {
    let bar = Bar::new(true);
    let progress = |p| bar.update(p);
    let control = Control {
        cancel: None,
        progress: Some(&progress),
    };
    let v = verify_path(
        &a.package,
        a.against.as_deref(),
        a.strip.map(Into::into),
        &control,
    );
    bar.finish();
    let v = v.map_err(|e| format!("verify {}: {e}", a.package.display()))?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", summary::verify(&a.package.display().to_string(), &v));
    }
    Ok(())
}
