//! hprof-shrink: shrink, package, inspect, verify and upload heap dumps.

mod batch;
mod cli;
mod progress;
mod summary;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use hprof_shrink::upload::{
    AfterUpload, Drained, Outbox, UploadError, UploadOutcome, Uploader, SENT_DIR,
};
use hprof_shrink_core::output::PendingFile;
use hprof_shrink_core::verify::verify_path;
use hprof_shrink_core::{inspect, Control, ManifestValues, Outputs, ShrinkOptions};
use reqwest::Url;

use cli::{Cli, Command, InspectArgs, ShrinkArgs, UploadArgs, UploadOpts, VerifyArgs};
use progress::Bar;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Inspect(a)) => inspect_cmd(a),
        Some(Command::Verify(a)) => verify_cmd(a),
        Some(Command::Batch(a)) => return batch_cmd(a),
        Some(Command::Upload(a)) => upload_cmd(a),
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

/// The uploader for `url`; a bad option is a usage error (exit 2).
pub(crate) fn uploader(url: Url, opts: &UploadOpts, quiet: bool) -> Result<Uploader, String> {
    let usage = |msg: String| -> ! {
        Cli::command()
            .error(clap::error::ErrorKind::InvalidValue, msg)
            .exit()
    };
    let cfg = opts.config(url, quiet).unwrap_or_else(|msg| usage(msg));
    if cfg.insecure {
        eprintln!("hprof-shrink: {}", cli::INSECURE_WARNING);
    }
    match Uploader::new(cfg) {
        Ok(up) => Ok(up),
        Err(UploadError::Config(msg)) => usage(msg),
        Err(e) => Err(e.to_string()),
    }
}

pub(crate) fn uploaded(o: &UploadOutcome, moved_to: Option<&Path>, quiet: bool) {
    if quiet {
        return;
    }
    let attempts = match o.attempts {
        1 => String::new(),
        n => format!(" after {n} attempts"),
    };
    let moved = moved_to.map_or(String::new(), |p| format!("; moved to {}", p.display()));
    eprintln!(
        "hprof-shrink: uploaded {} ({} bytes, md5 {}) to {}: {}{attempts} in {:.1} s{moved}",
        o.path.display(),
        summary::n(o.bytes),
        o.md5,
        o.url,
        o.status,
        o.elapsed.as_secs_f64()
    );
}

/// Uploads everything waiting in `outbox`; fails naming the zips left there.
pub(crate) fn drain(outbox: &Outbox, up: &Uploader, after: AfterUpload, quiet: bool) -> CmdResult {
    let report = outbox
        .drain_with(up, after, &mut |d| match d {
            Drained::Sent(s) => uploaded(&s.outcome, s.moved_to.as_deref(), quiet),
            Drained::Failed(e) => eprintln!("hprof-shrink: error: {e}"),
            Drained::Busy(p) => eprintln!(
                "hprof-shrink: {}: being uploaded by another run; skipped",
                p.display()
            ),
        })
        .map_err(|e| format!("outbox {}: {e}", outbox.dir().display()))?;
    if report.failed.is_empty() {
        if !quiet && report.sent.is_empty() && report.busy.is_empty() {
            eprintln!(
                "hprof-shrink: outbox {}: nothing to upload",
                outbox.dir().display()
            );
        }
        return Ok(());
    }
    let names: Vec<String> = report
        .failed
        .iter()
        .map(|e| match e {
            UploadError::NotMoved { path, .. } => {
                format!("{} (uploaded, not moved to {SENT_DIR}/)", path.display())
            }
            e => failed_path(e),
        })
        .collect();
    Err(format!(
        "{} of {} zips not uploaded, left in {} for the next run: {}",
        report.failed.len(),
        report.failed.len() + report.sent.len() + report.busy.len(),
        outbox.dir().display(),
        names.join(", ")
    ))
}

fn failed_path(e: &UploadError) -> String {
    use UploadError::*;
    match e {
        Io { path, .. }
        | NotAPackage { path, .. }
        | Rejected { path, .. }
        | Exhausted { path, .. }
        | RetryAfterTooLong { path, .. }
        | NotMoved { path, .. } => path.display().to_string(),
        Config(_) | Setup(_) => "?".into(),
    }
}

fn upload_cmd(a: UploadArgs) -> CmdResult {
    let up = uploader(a.url, &a.opts, a.quiet)?;
    if let Some(dir) = &a.outbox {
        let after = if a.delete_after_upload {
            AfterUpload::Delete
        } else {
            AfterUpload::MoveToSent
        };
        return drain(&Outbox::new(dir), &up, after, a.quiet);
    }
    let mut failed: Vec<PathBuf> = Vec::new();
    for zip in &a.zips {
        match up.upload(zip) {
            Ok(o) => uploaded(&o, None, a.quiet),
            Err(e) => {
                if a.zips.len() == 1 {
                    return Err(e.to_string());
                }
                eprintln!("hprof-shrink: error: {e}");
                failed.push(zip.clone());
            }
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = failed.iter().map(|p| p.display().to_string()).collect();
    Err(format!(
        "{} of {} zips not uploaded: {}",
        failed.len(),
        a.zips.len(),
        names.join(", ")
    ))
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
    if a.output.is_none() && a.hprof_out.is_none() && a.outbox.is_none() {
        return Err(
            "give OUT.zip, --outbox DIR, --hprof-out FILE, or a zip and --hprof-out".into(),
        );
    }
    if a.upload.is_some() && a.output.is_none() && a.outbox.is_none() {
        return Err("--upload needs OUT.zip or --outbox DIR".into());
    }
    // Set up before the shrink, so a bad upload option fails before the work.
    let up = match &a.upload {
        Some(url) => Some(uploader(url.clone(), &a.upload_opts, a.quiet)?),
        None => None,
    };
    let outbox = a.outbox.as_ref().map(Outbox::new);
    // In an outbox the zip is written under a hidden temporary name and admitted complete.
    let incoming = match &outbox {
        Some(ob) => Some(
            ob.incoming(&input)
                .map_err(|e| format!("outbox {}: {e}", ob.dir().display()))?,
        ),
        None => None,
    };
    let zip_dest: Option<PathBuf> = match &incoming {
        Some(inc) => Some(inc.path().to_path_buf()),
        None => a.output.clone(),
    };
    let opts = ShrinkOptions {
        strip: a.mode.strip,
        dropped: a.mode.dropped,
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
        zip: zip_dest.as_deref(),
        hprof: a.hprof_out.as_deref(),
    };
    let report = hprof_shrink_core::shrink_file(&input, outputs, &opts, &control);
    bar.finish();
    let mut report = report.map_err(|e| {
        format!(
            "{}: {e}{}",
            input.display(),
            salvage_hint(&e, a.mode.salvage)
        )
    })?;
    let zip = match (&outbox, incoming) {
        (Some(ob), Some(inc)) => {
            let placed = ob
                .admit(inc)
                .map_err(|e| format!("outbox {}: {e}", ob.dir().display()))?;
            report.output.zip = Some(placed.display().to_string());
            Some(placed)
        }
        _ => a.output.clone(),
    };
    if let Some(path) = &a.report {
        write_json(path, &report)?;
    }
    if !a.quiet {
        eprint!("{}", summary::shrink(&report));
    }
    if a.delete_input {
        let checked = zip
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
    let Some(up) = up else { return Ok(()) };
    match (&outbox, zip) {
        (Some(ob), _) => {
            let after = if a.delete_after_upload {
                AfterUpload::Delete
            } else {
                AfterUpload::MoveToSent
            };
            drain(ob, &up, after, a.quiet)
        }
        (None, Some(zip)) => {
            let o = up
                .upload(&zip)
                .map_err(|e| format!("{e} (the zip stays at {})", zip.display()))?;
            uploaded(&o, None, a.quiet);
            Ok(())
        }
        (None, None) => unreachable!("checked above: --upload needs a zip"),
    }
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
    let v = verify_path(&a.package, a.against.as_deref(), a.strip, &control);
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
