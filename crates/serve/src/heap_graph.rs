//! A Perfetto heap-graph trace as an upload: taken as it is (the trace file
//! `ProfilingManager` writes, not zipped), told from a package by its first byte
//! ([`FileKind::Trace`]) and checked by the analyzer's trace reader before it is stored:
//! one process's Java heap graph, its packets framed to the end. What the trace says of
//! its app (package, version code) is recorded as a package's `extra.info` would be, so
//! that its analysis groups by app version as a package's does.
//!
//! [`FileKind::Trace`]: hprof_shrink_core::kind::FileKind::Trace

use std::path::Path;

use hprof_shrink_analyze::perfetto::about::{self, App};
use hprof_shrink_core::hprof::MappedFile;
use hprof_shrink_core::package::trace::TracePackage;

use super::rows::APP_VERSION_KEYS;

/// Why a trace is not taken: its own fault (the message), or the server's (reading it).
pub(crate) enum Refused {
    /// Not one process's heap graph: what is wrong, by the trace reader.
    Bad(String),
    /// The server could not read the file it wrote.
    Io(std::io::Error),
}

/// What a trace's page says it is.
pub(crate) const SAID_ON_ITS_PAGE: &str = "a Perfetto heap graph: the Java heap's objects, \
    their types, sizes and references, without field values; the rules that read values \
    (a destroyed Activity's flag, a watched reference's key, String contents, pixels) could \
    not run on it";

/// The names a trace is offered for download under end so; others get `.perfetto-trace`.
const TRACE_SUFFIXES: &[&str] = &[".pftrace", ".perfetto-trace", ".trace"];

/// Checks the trace at `path`: every packet framed to the file's end, one process's heap
/// graph in it; what it says of that process's app. Costs three walks over the packets'
/// framing, in place (mapped), and memory for one small message at a time.
pub(crate) fn check(path: &Path) -> Result<App, Refused> {
    let map = MappedFile::open(path).map_err(|e| match e {
        hprof_shrink_core::hprof::FormatError::Io(f) => Refused::Io(f.source),
        other => Refused::Io(std::io::Error::other(other.to_string())),
    })?;
    about::app_of(map.bytes(), None)
        .map_err(|e| Refused::Bad(format!("not one process's Java heap graph: {e}")))
}

/// What is recorded of an upload's properties.
pub(crate) struct Info {
    /// `result.info`'s pairs.
    pub manifest: Vec<(String, String)>,
    /// `extra.info`'s pairs.
    pub extra: Vec<(String, String)>,
}

/// What is recorded of a trace: `result.info`'s part (the multipart text fields, which
/// stand for it: a trace has none) and `extra.info`'s (the fields' app version, else
/// the trace's version code; the trace's package and process names).
pub(crate) fn info(app: &App, fields: &[(String, String)]) -> Info {
    let (extra, manifest): (Vec<_>, Vec<_>) = fields
        .iter()
        .cloned()
        .partition(|(k, _)| APP_VERSION_KEYS.contains(&k.as_str()));
    Info {
        manifest,
        extra: app.under(extra),
    }
}

/// What is recorded of a package holding a trace, once its trace is checked as a trace
/// sent as it is ([`check`]): its `result.info`, and its `extra.info` before what the
/// trace says of its app (the package's word wins, key by key, as the fields' does). The
/// error is why the package is refused.
pub(crate) fn check_packaged(package: &TracePackage) -> Result<Info, String> {
    let app = about::app_of(package.trace(), None).map_err(|e| {
        format!(
            "the package's trace {}: not one process's Java heap graph: {e}",
            package.entry
        )
    })?;
    Ok(Info {
        manifest: package.manifest.clone(),
        extra: app.under(package.extra.clone()),
    })
}

/// The name a trace is recorded under: the one it was sent with, a `.zip` ending
/// replaced, so that its download (and its page) says what it is. A package sent under a
/// trace's name gets `.zip` after it ([`package_name`]): the name tells them apart.
pub(crate) fn name(sent: &str) -> String {
    if TRACE_SUFFIXES.iter().any(|s| sent.ends_with(s)) {
        return sent.to_string();
    }
    let stem = sent.strip_suffix(".zip").unwrap_or(sent);
    format!("{stem}.perfetto-trace")
}

/// The name a package is recorded under: the one it was sent with, `.zip` added after a
/// trace's ending.
pub(crate) fn package_name(sent: String) -> String {
    if is_trace_name(&sent) {
        return format!("{sent}.zip");
    }
    sent
}

/// Whether a recorded name is a trace's (its download is not a zip).
pub(crate) fn is_trace_name(name: &str) -> bool {
    TRACE_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Whether a PUT may name its body so: a package's `.zip`, or a trace's name.
pub(crate) fn put_name_allowed(name: &str) -> bool {
    name.ends_with(".zip") || is_trace_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traces_name_says_it_is_one() {
        assert_eq!(name("heap.pftrace"), "heap.pftrace");
        assert_eq!(name("package.zip"), "package.perfetto-trace");
        assert_eq!(name("oom"), "oom.perfetto-trace");
        assert!(is_trace_name("a.trace") && !is_trace_name("a.zip"));
        assert!(put_name_allowed("a.zip") && put_name_allowed("a.perfetto-trace"));
        assert!(!put_name_allowed("a.hprof"));
        assert_eq!(package_name("a.pftrace".into()), "a.pftrace.zip");
        assert_eq!(package_name("a.zip".into()), "a.zip");
    }

    #[test]
    fn the_fields_app_version_comes_before_the_traces() {
        let app = App {
            pid: 1,
            process_name: None,
            package_name: Some("com.a".into()),
            version_code: Some(42),
        };
        let fields = vec![
            ("sdkVersion".to_string(), "35".to_string()),
            ("appVersion".to_string(), "1.4".to_string()),
        ];
        let Info { manifest, extra } = info(&app, &fields);
        assert_eq!(manifest, vec![("sdkVersion".into(), "35".into())]);
        assert_eq!(
            crate::rows::prop(&extra, APP_VERSION_KEYS),
            "1.4",
            "{extra:?}"
        );
        let extra = info(&app, &fields[..1]).extra;
        assert_eq!(crate::rows::prop(&extra, APP_VERSION_KEYS), "42");
    }
}
