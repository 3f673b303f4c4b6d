//! What a trace says around its heap graphs: which processes they are of, and the app the
//! chosen process runs (its package name and version code), as `analyze` shows it and
//! `serve` records it to group dumps by app version.
//!
//! The app is found as Perfetto's trace processor finds it: the process tree
//! (`TracePacket.process_tree`, field 2) gives the dumped pid's uid and name, the packages
//! list (`TracePacket.packages_list`, field 47, as `packages.list` states it) the packages
//! of that uid. A uid several packages share (`sharedUserId`) names the one whose name is
//! the process's (less its `:suffix`); with none such, no package is named.
//!
//! Bounds: each walk reads the packets' framing and the few fields it needs in place,
//! decoding only one `Process` or `PackageInfo` message at a time, each of at most
//! [`MAX_ENTRY`] bytes (a longer one is passed over); what is kept is the chosen process's
//! entry, at most [`MAX_PIDS`] pids and one package. Three walks, none decoding a heap
//! graph's objects.

use std::collections::BTreeSet;

use super::wire::{self, Packets};
use crate::base::error::TraceError;
use crate::base::shown;

/// `TracePacket.process_tree`.
const PROCESS_TREE: u64 = 2;
/// `TracePacket.packages_list`.
const PACKAGES_LIST: u64 = 47;
/// `ProcessTree.processes` and `PackagesList.packages`.
const FIRST: u64 = 1;

/// The most bytes one `Process` or `PackageInfo` message may have to be read (a real one
/// has a few dozen).
pub const MAX_ENTRY: usize = 64 << 10;

/// The distinct pids kept of a trace's heap graphs (what an error lists).
pub const MAX_PIDS: usize = 1024;

/// The most bytes of a name kept (a package's, a process's).
pub const MAX_NAME: usize = 256;

/// `ProcessTree.Process`, for the fields read.
#[derive(Clone, PartialEq, prost::Message)]
struct Process {
    #[prost(int32, optional, tag = "1")]
    pid: Option<i32>,
    #[prost(string, repeated, tag = "3")]
    cmdline: Vec<String>,
    #[prost(int32, optional, tag = "5")]
    uid: Option<i32>,
}

/// `PackagesList.PackageInfo`, for the fields read.
#[derive(Clone, PartialEq, prost::Message)]
struct PackageInfo {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(uint64, optional, tag = "2")]
    uid: Option<u64>,
    #[prost(int64, optional, tag = "5")]
    version_code: Option<i64>,
}

/// The app whose heap a trace holds, as far as the trace says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct App {
    /// The process whose heap graph it is.
    pub pid: i32,
    /// Its name (the process tree's first `cmdline` word), cut to [`MAX_NAME`] bytes.
    pub process_name: Option<String>,
    /// Its package (`packages.list`), cut to [`MAX_NAME`] bytes.
    pub package_name: Option<String>,
    /// The package's `versionCode`.
    pub version_code: Option<i64>,
}

impl App {
    /// What the trace says of its app as `extra.info`-style pairs (`processName`,
    /// `packageName`, `versionCode`), those it says only.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut add = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                out.push((k.to_string(), v));
            }
        };
        add("processName", self.process_name.clone());
        add("packageName", self.package_name.clone());
        add("versionCode", self.version_code.map(|v| v.to_string()));
        out
    }

    /// `given` (a package's `extra.info`, an upload's fields), then [`App::pairs`] for the
    /// keys `given` does not name: what the caller says of its app wins over what the
    /// trace says, key by key, as a named version key (`appVersion`) wins over the
    /// trace's `versionCode` by the order version keys are read in. The caller made the
    /// package for its own app and knows its own version; the packages list's is the
    /// system's record, taken only where the caller is silent.
    pub fn under(&self, given: Vec<(String, String)>) -> Vec<(String, String)> {
        let mut out = given;
        for (k, v) in self.pairs() {
            if !out.iter().any(|(g, _)| *g == k) {
                out.push((k, v));
            }
        }
        out
    }
}

/// Checks that `bytes` is a trace holding the heap graph of one process (or of `pid`),
/// and says what it says of that process's app. An error where the framing breaks, where
/// no heap graph is found, or where several processes' are and none was chosen.
pub fn app_of(bytes: &[u8], pid: Option<i32>) -> Result<App, TraceError> {
    let pid = choose(bytes, pid)?;
    app(bytes, pid)
}

/// What the trace says of the app of `pid` (whose heap graph it holds).
pub fn app(bytes: &[u8], pid: i32) -> Result<App, TraceError> {
    let mut app = App {
        pid,
        ..App::default()
    };
    let mut uid = None;
    each_entry(bytes, PROCESS_TREE, |p: Process| {
        if p.pid == Some(pid) && uid.is_none() && app.process_name.is_none() {
            uid = p.uid;
            app.process_name = p.cmdline.into_iter().next().map(cut);
        }
    })?;
    let base = app
        .process_name
        .as_deref()
        .map(|n| n.split(':').next().unwrap_or(n).to_string());
    // The packages of the uid (or, without one, of the process's name): the one named
    // as the process, else the only one.
    let mut named = None;
    let mut of_uid = Vec::new();
    each_entry(bytes, PACKAGES_LIST, |p: PackageInfo| {
        let name = p.name.clone().map(cut);
        let same_name = name.is_some() && name == base;
        let same_uid = uid.is_some_and(|u| p.uid.is_some() && u64::try_from(u).ok() == p.uid);
        if same_name && named.is_none() && (same_uid || uid.is_none()) {
            named = Some((name.clone(), p.version_code));
        }
        // Two are enough to know the uid is shared.
        if same_uid && of_uid.len() < 2 {
            of_uid.push((name, p.version_code));
        }
    })?;
    let chosen = named.or_else(|| (of_uid.len() == 1).then(|| of_uid.remove(0)));
    if let Some((name, version)) = chosen {
        app.package_name = name;
        app.version_code = version;
    }
    Ok(app)
}

/// The pid asked for, or the only one the trace holds a heap graph of.
pub fn choose(bytes: &[u8], asked: Option<i32>) -> Result<i32, TraceError> {
    chosen(bytes, asked).map(|c| c.pid)
}

/// The process [`chosen`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chosen {
    /// Its pid.
    pub pid: i32,
    /// Whether every heap graph of the trace is its (the common case: then a pass over
    /// them need not read each packet's pid again).
    pub only: bool,
}

/// [`choose`], and whether the chosen process is the only one the trace holds heap graphs
/// of. A packet's pid is read as every pass reads it ([`wire::GraphPacket::pid`]), so a
/// fault there is found here.
pub fn chosen(bytes: &[u8], asked: Option<i32>) -> Result<Chosen, TraceError> {
    let mut pids = BTreeSet::new();
    let mut asked_seen = false;
    for g in wire::heap_graphs(bytes) {
        let pid = g?.pid()?;
        asked_seen |= asked == Some(pid);
        if pids.len() < MAX_PIDS {
            pids.insert(pid);
        }
    }
    let list = || listed(bytes, &pids);
    let only = pids.len() == 1;
    let pid = match (asked, pids.len()) {
        (_, 0) => return Err(TraceError::NoHeapGraph),
        (Some(pid), _) if asked_seen => pid,
        (Some(pid), _) => return Err(TraceError::NoSuchProcess { pid, pids: list() }),
        (None, 1) => *pids.first().expect("one pid"),
        (None, _) => return Err(TraceError::SeveralProcesses { pids: list() }),
    };
    Ok(Chosen { pid, only })
}

/// Processes an error lists by pid (and name): more are counted.
pub const MAX_LISTED_PIDS: usize = 32;

/// Bytes of a process's name an error shows (escaped and cut as any name from the input).
const LISTED_NAME_BYTES: usize = 64;

/// The pids an error lists, each with its process's name when the process tree gives one
/// (read only then, one more walk), past [`MAX_LISTED_PIDS`] counted.
fn listed(bytes: &[u8], pids: &BTreeSet<i32>) -> String {
    let some: Vec<i32> = pids.iter().copied().take(MAX_LISTED_PIDS).collect();
    let mut names: Vec<Option<String>> = vec![None; some.len()];
    // A fault in the process tree leaves the names out, not the error.
    let _ = each_entry(bytes, PROCESS_TREE, |p: Process| {
        let (Some(pid), Some(first)) = (p.pid, p.cmdline.first()) else {
            return;
        };
        if let Ok(i) = some.binary_search(&pid) {
            names[i].get_or_insert_with(|| shown::clipped(first, LISTED_NAME_BYTES));
        }
    });
    let mut all: Vec<String> = some
        .iter()
        .zip(names)
        .map(|(pid, name)| match name {
            Some(name) => format!("{pid} {name}"),
            None => pid.to_string(),
        })
        .collect();
    if pids.len() > some.len() {
        all.push(format!("and {} more", pids.len() - some.len()));
    }
    all.join(", ")
}

/// Hands `each` every entry (field 1) of every `field` packet (a process tree's processes,
/// a packages list's packages), decoded; an entry over [`MAX_ENTRY`] bytes or that does
/// not decode is passed over (the facts are optional: the heap is read without them).
fn each_entry<M: prost::Message + Default>(
    bytes: &[u8],
    field: u64,
    mut each: impl FnMut(M),
) -> Result<(), TraceError> {
    for p in Packets::new(bytes) {
        let (offset, packet) = p?;
        for f in wire::fields(packet, offset) {
            let f = f?;
            if f.number != field || f.wire != 2 {
                continue;
            }
            // Inside an optional fact, a fault ends the fact's reading, not the trace's.
            for e in wire::fields(f.value, f.offset).map_while(Result::ok) {
                if e.number != FIRST || e.wire != 2 || e.value.len() > MAX_ENTRY {
                    continue;
                }
                if let Ok(m) = M::decode(e.value) {
                    each(m);
                }
            }
        }
    }
    Ok(())
}

/// `name`, at most [`MAX_NAME`] bytes of it (on a character boundary).
fn cut(mut name: String) -> String {
    if name.len() > MAX_NAME {
        let mut end = MAX_NAME;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    name
}
