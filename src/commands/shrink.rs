//! `hprof-shrink IN.hprof OUT.zip`: shrink one dump into a package (or an outbox, or a bare
//! hprof), then optionally delete the input and upload the package. A Perfetto trace is
//! packaged as it is ([`super::package_trace`]).

use std::path::{Path, PathBuf};

use crate::progress::Bar;
use hprof_shrink_core::output::{check_destination, same_file, PendingFile};
use hprof_shrink_core::verify::verify_path;
use hprof_shrink_core::{Control, ManifestValues, Outputs, ShrinkOptions};
use hprof_shrink_upload::{AfterUpload, Incoming, Outbox, Uploader};

use crate::cli::ShrinkArgs;
use crate::error::HostError;
use crate::say::{say, say_raw};
use crate::uploads::{drain, recover, uploaded, uploader};
use crate::{json, sniff, summary};

/// The outputs are files renamed into place when complete, never a stream: `-` would be
/// a file of that name, which nobody means.
fn no_dash(a: &ShrinkArgs) -> Result<(), HostError> {
    for (what, path) in [
        ("OUT.zip", &a.output),
        ("--hprof-out", &a.hprof_out),
        ("--report", &a.report),
    ] {
        if path.as_deref().is_some_and(crate::report_out::is_stdout) {
            return Err(HostError::Usage(format!(
                "{what} is written to a file, not to stdout: give a path, not -"
            )));
        }
    }
    Ok(())
}

/// Some output is named, and none is stdout.
fn check_outputs(a: &ShrinkArgs) -> Result<(), HostError> {
    if a.output.is_none() && a.hprof_out.is_none() && a.outbox.is_none() {
        return Err(HostError::NoOutput(
            "give OUT.zip, --outbox DIR, --hprof-out FILE, or a zip and --hprof-out",
        ));
    }
    if a.upload.is_some() && a.output.is_none() && a.outbox.is_none() {
        return Err(HostError::NoOutput(
            "--upload needs OUT.zip or --outbox DIR",
        ));
    }
    no_dash(a)
}

pub fn run(mut a: ShrinkArgs) -> Result<(), HostError> {
    let input = a.input.take().expect("clap requires the input");
    check_outputs(&a)?;
    if sniff::is_trace(&input) {
        return super::package_trace::run(a, input);
    }
    let opts = shrink_options(&mut a);
    // Every output is checked before any work (the core checks its own again): none is
    // the input or another output, and none is a device or FIFO a rename would replace.
    let named = Outputs {
        zip: a.output.as_deref(),
        hprof: a.hprof_out.as_deref(),
    };
    if named.zip.is_some() || named.hprof.is_some() {
        hprof_shrink_core::check_request(&input, named, &opts)?;
    }
    if let Some(report) = &a.report {
        check_report_path(report, &input, named)?;
    }
    check_existing(&input, named, a.force)?;
    // Made before the work, so that a report that cannot be written fails before the
    // outputs appear, not after.
    let report_file = match &a.report {
        Some(path) => Some(PendingFile::create(path)?),
        None => None,
    };
    // Set up before the shrink, so a bad upload option fails before the work.
    let Sending {
        up,
        outbox,
        incoming,
    } = sending(&a, &input)?;
    let zip_dest: Option<PathBuf> = match &incoming {
        Some(inc) => Some(inc.path().to_path_buf()),
        None => a.output.clone(),
    };
    let bar = Bar::new(!a.quiet);
    let progress = |p| bar.update(p);
    let control = Control {
        cancel: Some(crate::signals::flag()),
        progress: Some(&progress),
    };
    let outputs = Outputs {
        zip: zip_dest.as_deref(),
        hprof: a.hprof_out.as_deref(),
    };
    let report = hprof_shrink_core::shrink_file(&input, outputs, &opts, &control);
    bar.finish();
    let mut report = report.map_err(|source| match source {
        // An I/O error of the core's own names its file: an output, not the input.
        e @ hprof_shrink_core::Error::Io(_) => HostError::Core(e),
        source => HostError::Shrink {
            input: input.clone(),
            source,
            salvaging: a.mode.salvage,
        },
    })?;
    let zip = match (&outbox, incoming) {
        (Some(ob), Some(inc)) => {
            let placed = ob.admit(inc).map_err(outbox_err(ob))?;
            report.output.zip = Some(placed.display().to_string());
            Some(placed)
        }
        _ => a.output.clone(),
    };
    if let (Some(path), Some(file)) = (&a.report, report_file) {
        // The outputs are in place by now: say so, so that a failing report is not read
        // as a failed shrink.
        json::write_pending(file, path, &report).map_err(|e| HostError::ReportFailed {
            outputs: [zip.as_deref(), a.hprof_out.as_deref()]
                .into_iter()
                .flatten()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" and "),
            source: Box::new(e),
        })?;
    }
    if !a.quiet {
        say_raw!("{}", summary::shrink(&report));
    }
    if a.delete_input {
        let checked = zip
            .as_deref()
            .or(a.hprof_out.as_deref())
            .expect("an output");
        delete_verified(&input, checked, &opts, a.quiet)?;
    }
    let Some(up) = up else { return Ok(()) };
    hand_over(&a, &up, outbox.as_ref(), zip)
}

/// The core's options, from the arguments (the manifest values and extra properties
/// taken out of them).
pub(super) fn shrink_options(a: &mut ShrinkArgs) -> ShrinkOptions {
    let mut opts = ShrinkOptions::new()
        .with_strip(a.mode.strip)
        .with_dropped(a.mode.dropped)
        .with_level(a.mode.level)
        .with_manifest(ManifestValues {
            sdk_version: a.sdk_version.take(),
            manufacturer: a.manufacturer.take(),
            leaked_activity_key: a.leaked_activity_key.take(),
        })
        .with_threads(a.threads)
        .with_salvage(a.mode.salvage)
        .with_private(a.mode.private);
    opts.extra = std::mem::take(&mut a.extra);
    opts.hprof_entry = a.hprof_entry.take();
    opts
}

/// `--delete-input`: the input goes only once the output verifies against it.
fn delete_verified(
    input: &Path,
    checked: &Path,
    opts: &ShrinkOptions,
    quiet: bool,
) -> Result<(), HostError> {
    verify_path(checked, Some(input), Some(opts.strip), &Control::default()).map_err(|source| {
        HostError::CoreOn {
            what: format!(
                "not deleting {}: the output does not verify",
                input.display()
            ),
            source,
        }
    })?;
    std::fs::remove_file(input).map_err(|source| HostError::Delete {
        path: input.to_path_buf(),
        source,
    })?;
    if !quiet {
        say!(
            "deleted {} (the output verified against it)",
            input.display()
        );
    }
    Ok(())
}

/// Where a package goes besides `OUT.zip`: the uploader (`--upload`), the outbox
/// (`--outbox`) and the zip's place in it. In an outbox the zip is written under a hidden
/// temporary name and admitted complete; what a killed run left there is taken up first.
/// Set up before the work, so that a bad upload option or outbox fails before it.
pub(super) struct Sending {
    pub up: Option<Uploader>,
    pub outbox: Option<Outbox>,
    pub incoming: Option<Incoming>,
}

/// [`Sending`] for the package of `input`.
pub(super) fn sending(a: &ShrinkArgs, input: &Path) -> Result<Sending, HostError> {
    let up = match &a.upload {
        Some(url) => Some(uploader(url.clone(), &a.upload_opts, a.quiet)?),
        None => None,
    };
    let outbox = a.outbox.as_ref().map(Outbox::new);
    let incoming = match &outbox {
        Some(ob) => {
            std::fs::create_dir_all(ob.dir()).map_err(outbox_err(ob))?;
            recover(ob, a.quiet)?;
            Some(ob.incoming(input).map_err(outbox_err(ob))?)
        }
        None => None,
    };
    Ok(Sending {
        up,
        outbox,
        incoming,
    })
}

/// An outbox's I/O error, naming its directory.
pub(super) fn outbox_err(ob: &Outbox) -> impl FnOnce(std::io::Error) -> HostError {
    let dir = ob.dir().to_path_buf();
    move |source| HostError::Outbox { dir, source }
}

/// `--upload`: the outbox drained, or the zip sent.
pub(super) fn hand_over(
    a: &ShrinkArgs,
    up: &hprof_shrink_upload::Uploader,
    outbox: Option<&Outbox>,
    zip: Option<PathBuf>,
) -> Result<(), HostError> {
    match (outbox, zip) {
        (Some(ob), _) => drain(
            ob,
            up,
            AfterUpload::from_delete(a.delete_after_upload),
            a.quiet,
        ),
        (None, Some(zip)) => {
            let o = up.upload(&zip).map_err(|source| HostError::UploadKept {
                zip: zip.clone(),
                source,
            })?;
            uploaded(&o, None, a.quiet);
            Ok(())
        }
        (None, None) => unreachable!("checked above: --upload needs a zip"),
    }
}

/// An existing output is replaced only when asked to, as gzip and zstd do, and a heap dump
/// is never put at risk by a hint: a heap dump where the package goes is refused even with
/// `--force` (with a zip as the input, the arguments were swapped: `hprof-shrink out.zip
/// leak.hprof`); a heap dump at `--hprof-out` is replaced only with `--force`, and the
/// error without it does not suggest the flag.
pub(super) fn check_existing(
    input: &Path,
    named: Outputs<'_>,
    force: bool,
) -> Result<(), HostError> {
    if let Some(zip) = named.zip.filter(|z| sniff::is_heap_dump(z)) {
        if sniff::is_zip(input) {
            return Err(HostError::Swapped {
                input: input.to_path_buf(),
                output: zip.to_path_buf(),
            });
        }
        return Err(HostError::HeapDumpInTheWay(zip.to_path_buf()));
    }
    if force {
        return Ok(());
    }
    if let Some(zip) = named.zip.filter(|z| std::fs::symlink_metadata(z).is_ok()) {
        return Err(HostError::Exists(zip.to_path_buf()));
    }
    match named.hprof {
        Some(h) if sniff::is_heap_dump(h) => Err(HostError::ExistsHeapDump(h.to_path_buf())),
        Some(h) if std::fs::symlink_metadata(h).is_ok() => Err(HostError::Exists(h.to_path_buf())),
        _ => Ok(()),
    }
}

/// `--report` may be neither the input nor an output (it would replace them with JSON),
/// nor a device or FIFO a rename would replace.
fn check_report_path(
    report: &std::path::Path,
    input: &std::path::Path,
    outputs: Outputs<'_>,
) -> Result<(), HostError> {
    let clash = |what: &str| {
        HostError::Core(hprof_shrink_core::Error::Invalid(format!(
            "--report {} is the {what}: it would be overwritten",
            report.display()
        )))
    };
    if same_file(report, input) {
        return Err(clash("input"));
    }
    if outputs.zip.is_some_and(|z| same_file(report, z)) {
        return Err(clash("zip"));
    }
    if outputs.hprof.is_some_and(|h| same_file(report, h)) {
        return Err(clash("--hprof-out file"));
    }
    check_destination(report)?;
    Ok(())
}
