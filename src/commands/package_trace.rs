//! `hprof-shrink heap.pftrace OUT.zip`: a Perfetto heap-graph trace packaged as it is
//! (nothing to shrink: a heap graph has no field values or array contents), with
//! `result.info` and `extra.info`, into OUT.zip or an outbox, then optionally uploaded.
//! The trace is checked first by the analyzer's trace reader, as `serve` checks it: one
//! process's Java heap graph, framed to its end; a package of anything else is refused.

use std::path::{Path, PathBuf};

use hprof_shrink_analyze::perfetto::about;
use hprof_shrink_core::hprof::MappedFile;
use hprof_shrink_core::package::trace;
use hprof_shrink_core::Outputs;

use crate::cli::ShrinkArgs;
use crate::error::HostError;
use crate::say::say;

/// What makes no sense for a trace, refused before any work (the core refuses the modes
/// that would change a dump's content).
fn refuse_dump_options(a: &ShrinkArgs) -> Result<(), HostError> {
    let refused = [
        (
            a.hprof_out.is_some(),
            "--hprof-out (a trace holds no HPROF to write)",
        ),
        (
            a.report.is_some(),
            "--report (nothing is shrunk: there is no shrink report)",
        ),
        (
            a.delete_input,
            "--delete-input (`verify` checks HPROF packages, not the trace against its package)",
        ),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, what)) => Err(HostError::Usage(format!(
            "{what}: a Perfetto trace is packaged as it is"
        ))),
        None => Ok(()),
    }
}

/// Packages the trace at `input` (the arguments as for a dump).
pub fn run(mut a: ShrinkArgs, input: PathBuf) -> Result<(), HostError> {
    refuse_dump_options(&a)?;
    let opts = super::shrink::shrink_options(&mut a);
    let named = Outputs {
        zip: a.output.as_deref(),
        hprof: None,
    };
    super::shrink::check_existing(&input, named, a.force)?;
    let app = check_trace(&input)?;
    let super::shrink::Sending {
        up,
        outbox,
        incoming,
    } = super::shrink::sending(&a, &input)?;
    let dest = match &incoming {
        Some(inc) => inc.path().to_path_buf(),
        None => a.output.clone().ok_or_else(|| {
            HostError::Usage("name the package to write (OUT.zip) or an --outbox".into())
        })?,
    };
    let packaged = trace::write(&input, &dest, &opts).map_err(|source| HostError::CoreOn {
        what: input.display().to_string(),
        source,
    })?;
    let zip = match (&outbox, incoming) {
        (Some(ob), Some(inc)) => ob.admit(inc).map_err(super::shrink::outbox_err(ob))?,
        _ => dest,
    };
    if !a.quiet {
        for w in &packaged.warnings {
            say!("warning: {w}");
        }
        say!(
            "{}: a Perfetto heap graph of pid {}{}, {} bytes, packaged as it is into {} ({} bytes)",
            input.display(),
            app.pid,
            app.package_name
                .as_deref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default(),
            packaged.trace_bytes,
            zip.display(),
            packaged.zip_bytes
        );
    }
    let Some(up) = up else { return Ok(()) };
    super::shrink::hand_over(&a, &up, outbox.as_ref(), Some(zip))
}

/// The trace at `path` checked as `serve` checks one: one process's heap graph.
fn check_trace(path: &Path) -> Result<about::App, HostError> {
    let map = MappedFile::open(path).map_err(|e| HostError::Core(e.into()))?;
    about::app_of(map.bytes(), None)
        .map_err(|e| HostError::Analyze(hprof_shrink_analyze::AnalyzeError::from(e).in_file(path)))
}
