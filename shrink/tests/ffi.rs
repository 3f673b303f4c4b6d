//! The C ABI called as C would call it: argument checking (NULL, malformed, contradictory),
//! status codes and messages, the report JSON, cancellation, re-entry, progress. The C
//! program in tests/c covers the same ground from C, across threads.
#![cfg(feature = "ffi")]

mod common;

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};

use hprof_shrink_core::ffi::*;

/// Owns the strings an `hprof_shrink_options` points at.
struct Opts {
    raw: hprof_shrink_options,
    _strings: Vec<CString>,
    _extra: Vec<hprof_shrink_property>,
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn path_c(p: &Path) -> CString {
    c(p.to_str().unwrap())
}

impl Opts {
    fn new(input: &Path, zip: Option<&Path>) -> Opts {
        let mut raw = std::mem::MaybeUninit::<hprof_shrink_options>::uninit();
        // SAFETY: writable memory for one struct, every field of which init writes.
        let raw = unsafe {
            assert_eq!(hprof_shrink_options_init(raw.as_mut_ptr()), HPROF_SHRINK_OK);
            raw.assume_init()
        };
        let mut o = Opts {
            raw,
            _strings: Vec::new(),
            _extra: Vec::new(),
        };
        o.raw.input_path = o.keep(path_c(input));
        if let Some(z) = zip {
            o.raw.zip_path = o.keep(path_c(z));
        }
        o
    }

    /// Keeps `s` alive as long as the options and returns its pointer.
    fn keep(&mut self, s: CString) -> *const c_char {
        let p = s.as_ptr();
        self._strings.push(s);
        p
    }

    fn extra(&mut self, pairs: &[(Option<CString>, Option<CString>)]) {
        let props: Vec<hprof_shrink_property> = pairs
            .iter()
            .map(|(k, v)| hprof_shrink_property {
                key: k.clone().map_or(null(), |k| self.keep(k)),
                value: v.clone().map_or(null(), |v| self.keep(v)),
            })
            .collect();
        self.raw.extra = props.as_ptr();
        self.raw.extra_count = props.len();
        self._extra = props;
    }
}

struct Job(*mut hprof_shrink_job);

impl Job {
    fn new() -> Job {
        let j = hprof_shrink_job_new();
        assert!(!j.is_null());
        Job(j)
    }

    fn run(&self, o: &Opts) -> i32 {
        // SAFETY: a live job; options initialized, their strings owned by `o`.
        unsafe { hprof_shrink_job_run(self.0, &o.raw, None, null_mut()) }
    }

    fn message(&self) -> Option<String> {
        // SAFETY: a live job, not running.
        let p = unsafe { hprof_shrink_job_error_message(self.0) };
        // SAFETY: non-NULL messages are NUL-terminated and owned by the job.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned())
    }

    fn report(&self) -> Option<serde_json::Value> {
        // SAFETY: as above.
        let p = unsafe { hprof_shrink_job_report_json(self.0) };
        // SAFETY: as above.
        (!p.is_null())
            .then(|| serde_json::from_str(unsafe { CStr::from_ptr(p) }.to_str().unwrap()).unwrap())
    }

    fn cancel(&self) {
        // SAFETY: a live job.
        unsafe { hprof_shrink_job_cancel(self.0) }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: made by hprof_shrink_job_new, freed once here.
        unsafe { hprof_shrink_job_free(self.0) }
    }
}

fn fixture(name: &str) -> PathBuf {
    common::repo_root().join("fixtures").join(name)
}

fn status_name(s: i32) -> String {
    // SAFETY: the function returns a static NUL-terminated string for every value.
    unsafe { CStr::from_ptr(hprof_shrink_status_name(s)) }
        .to_str()
        .unwrap()
        .to_owned()
}

#[test]
fn null_arguments_are_refused_not_dereferenced() {
    let job = Job::new();
    // SAFETY (every call below): NULL is allowed for each pointer argument.
    unsafe {
        assert_eq!(
            hprof_shrink_job_run(null_mut(), null(), None, null_mut()),
            HPROF_SHRINK_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            hprof_shrink_job_run(job.0, null(), None, null_mut()),
            HPROF_SHRINK_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            hprof_shrink_options_init(null_mut()),
            HPROF_SHRINK_ERR_INVALID_ARGUMENT
        );
        assert!(hprof_shrink_job_report_json(null()).is_null());
        assert!(hprof_shrink_job_error_message(null()).is_null());
        hprof_shrink_job_cancel(null());
        hprof_shrink_job_free(null_mut());
    }
    assert_eq!(job.message().as_deref(), Some("options is NULL"));
    assert!(job.report().is_none());
}

#[test]
fn malformed_options_are_invalid_arguments_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("art-api25.hprof");
    let zip = dir.path().join("out.zip");
    let job = Job::new();
    let invalid_utf8 = CString::new(vec![b'o', 0xFF, b'.', b'z']).unwrap();
    // The zip's path again, spelled another way.
    let zip_again = dir.path().join(".").join("out.zip");
    // A FIFO elsewhere, which a rename must never replace.
    let other = tempfile::tempdir().unwrap();
    let fifo = other.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());

    type Edit = Box<dyn Fn(&mut Opts)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("struct_size", Box::new(|o| o.raw.struct_size = 8)),
        (
            "input_path is NULL",
            Box::new(|o| o.raw.input_path = null()),
        ),
        (
            "input_path is empty",
            Box::new(|o| o.raw.input_path = o.keep(c(""))),
        ),
        (
            "zip_path is not valid UTF-8",
            Box::new(move |o| o.raw.zip_path = o.keep(invalid_utf8.clone())),
        ),
        ("strip is 4", Box::new(|o| o.raw.strip = 4)),
        ("dropped is -1", Box::new(|o| o.raw.dropped = -1)),
        ("level is 10", Box::new(|o| o.raw.level = 10)),
        ("level is -1", Box::new(|o| o.raw.level = -1)),
        ("threads is -2", Box::new(|o| o.raw.threads = -2)),
        ("threads is 100000", Box::new(|o| o.raw.threads = 100_000)),
        (
            "extra is NULL but options->extra_count is 2",
            Box::new(|o| o.raw.extra_count = 2),
        ),
        (
            "extra[1].key is NULL",
            Box::new(|o| o.extra(&[(Some(c("a")), Some(c("b"))), (None, Some(c("v")))])),
        ),
        (
            "extra[0].value is NULL",
            Box::new(|o| o.extra(&[(Some(c("a")), None)])),
        ),
        (
            "extra[0].key is empty",
            Box::new(|o| o.extra(&[(Some(c("")), Some(c("v")))])),
        ),
        (
            "manufacturer is empty",
            Box::new(|o| o.raw.manufacturer = o.keep(c(""))),
        ),
        ("no output", Box::new(|o| o.raw.zip_path = null())),
        (
            "is the input",
            Box::new(|o| o.raw.zip_path = o.keep(path_c(&fixture("art-api25.hprof")))),
        ),
        (
            "are the same file",
            Box::new(move |o| o.raw.hprof_path = o.keep(path_c(&zip_again))),
        ),
        (
            "not a regular file",
            Box::new(move |o| o.raw.hprof_path = o.keep(path_c(&fifo))),
        ),
    ];
    // The hprof entry must be a plain file name, not a manifest entry's.
    let mut cases = cases;
    for &bad in common::NOT_PLAIN_ENTRY_NAMES {
        cases.push((
            "hprof entry name",
            Box::new(move |o| o.raw.hprof_entry = o.keep(c(bad))),
        ));
    }
    for (expected, edit) in cases {
        let mut o = Opts::new(&input, Some(&zip));
        edit(&mut o);
        let status = job.run(&o);
        let msg = job.message().unwrap_or_default();
        assert_eq!(
            status,
            HPROF_SHRINK_ERR_INVALID_ARGUMENT,
            "{expected}: got {} ({msg})",
            status_name(status)
        );
        assert!(msg.contains(expected), "{expected:?} not in {msg:?}");
        assert!(job.report().is_none());
        assert!(
            common::files_in(dir.path()).is_empty(),
            "{expected}: a file was written"
        );
    }
}

#[test]
fn a_shrink_through_the_c_abi_reports_json_and_writes_the_package() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("art-api25.hprof");
    let zip = dir.path().join("out.zip");
    let raw = dir.path().join("out.hprof");
    let mut o = Opts::new(&input, Some(&zip));
    o.raw.hprof_path = o.keep(path_c(&raw));
    o.raw.strip = HPROF_SHRINK_STRIP_DUPLICATES;
    o.raw.dropped = HPROF_SHRINK_DROPPED_ZERO;
    o.raw.level = 1;
    o.raw.sdk_version = o.keep(c("33"));
    o.raw.hprof_entry = o.keep(c("dump.hprof"));
    o.extra(&[
        (Some(c("appVersion")), Some(c("1.2.3"))),
        (Some(c("empty")), Some(c(""))),
    ]);
    let job = Job::new();
    assert_eq!(job.run(&o), HPROF_SHRINK_OK, "{:?}", job.message());
    assert_eq!(job.message(), None);
    let r = job.report().expect("a report after success");
    assert_eq!(r["options"]["strip"], "duplicates");
    assert_eq!(r["options"]["dropped"], "zero");
    assert_eq!(r["options"]["level"], 1);
    let facts = common::facts(&input).unwrap();
    let m = &r["manifest"];
    assert_eq!(m["sdkVersion"], "33");
    assert_eq!(m["sources"]["sdkVersion"], "caller");
    assert_eq!(m["manufacturer"], facts["manufacturer"]);
    assert_eq!(m["sources"]["manufacturer"], "dump");
    assert_eq!(m["hprofEntry"], "dump.hprof");
    assert_eq!(
        r["output"]["zip_bytes"].as_u64().unwrap(),
        std::fs::metadata(&zip).unwrap().len()
    );
    assert_eq!(
        r["output"]["hprof_bytes"].as_u64().unwrap(),
        std::fs::metadata(&raw).unwrap().len()
    );
    let extra = String::from_utf8(common::zip_entry(&zip, "extra.info")).unwrap();
    assert_eq!(extra, "appVersion=1.2.3\nempty=\n");
    assert_eq!(
        common::zip_entry(&zip, "dump.hprof"),
        std::fs::read(&raw).unwrap()
    );
}

#[test]
fn a_private_package_through_the_c_abi_and_a_caller_of_the_earlier_struct() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("art-leaks.hprof");
    let zip = dir.path().join("private.zip");
    let mut o = Opts::new(&input, Some(&zip));
    o.raw.private_package = 1;
    let job = Job::new();
    assert_eq!(job.run(&o), HPROF_SHRINK_OK, "{:?}", job.message());
    let r = job.report().unwrap();
    assert_eq!(r["options"]["private"], true);
    assert!(r["private"]["strings_replaced"]["count"].as_u64().unwrap() > 0);
    let extra = String::from_utf8(common::zip_entry(&zip, "extra.info")).unwrap();
    assert!(extra.ends_with("private=true\n"), "{extra}");

    o.raw.strip = HPROF_SHRINK_STRIP_NONE;
    assert_eq!(job.run(&o), HPROF_SHRINK_ERR_INVALID_ARGUMENT);
    assert!(job.message().unwrap().contains("--private"));

    // A caller compiled against the header before private_package: its struct ends at
    // `salvage`, and what lies past it (here 1 and 7) is not read.
    let older = std::mem::offset_of!(hprof_shrink_options, private_package)
        .next_multiple_of(std::mem::align_of::<hprof_shrink_options>());
    let zip = dir.path().join("older.zip");
    let mut o = Opts::new(&input, Some(&zip));
    o.raw.struct_size = older;
    o.raw.private_package = 1;
    o.raw.reserved = 7;
    assert_eq!(job.run(&o), HPROF_SHRINK_OK, "{:?}", job.message());
    assert_eq!(job.report().unwrap()["options"]["private"], false);
}

#[test]
fn input_errors_have_their_own_codes_and_leave_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("out.zip");
    let job = Job::new();

    let missing = dir.path().join("missing.hprof");
    assert_eq!(
        job.run(&Opts::new(&missing, Some(&zip))),
        HPROF_SHRINK_ERR_IO
    );
    let msg = job.message().unwrap();
    assert!(msg.contains("missing.hprof"), "{msg}");

    let not_hprof = dir.path().join("notes.txt");
    std::fs::write(&not_hprof, b"these are not the bytes of a heap dump").unwrap();
    assert_eq!(
        job.run(&Opts::new(&not_hprof, Some(&zip))),
        HPROF_SHRINK_ERR_BAD_INPUT
    );
    let msg = job.message().unwrap();
    assert!(
        msg.contains("notes.txt") && msg.contains("not an HPROF file"),
        "{msg}"
    );

    let bytes = std::fs::read(fixture("art-api25.hprof")).unwrap();
    let truncated = dir.path().join("truncated.hprof");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(
        job.run(&Opts::new(&truncated, Some(&zip))),
        HPROF_SHRINK_ERR_BAD_INPUT
    );
    let msg = job.message().unwrap();
    assert!(msg.contains("offset"), "{msg}");

    // Asked to, the library salvages the same cut-off dump and says so in extra.info.
    let mut o = Opts::new(&truncated, Some(&zip));
    o.raw.salvage = 1;
    assert_eq!(job.run(&o), HPROF_SHRINK_OK, "{:?}", job.message());
    let extra = String::from_utf8(common::zip_entry(&zip, "extra.info")).unwrap();
    assert!(extra.contains("truncated=true"), "{extra}");
    std::fs::remove_file(&zip).unwrap();

    assert_eq!(
        common::files_in(dir.path()),
        ["notes.txt", "truncated.hprof"]
    );
}

#[test]
fn a_cancelled_job_writes_nothing_and_stays_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("out.zip");
    let o = Opts::new(&fixture("art-api25.hprof"), Some(&zip));
    let job = Job::new();
    job.cancel();
    for _ in 0..2 {
        assert_eq!(job.run(&o), HPROF_SHRINK_ERR_CANCELLED);
        assert_eq!(job.message().as_deref(), Some("cancelled"));
        assert!(job.report().is_none());
    }
    assert!(common::files_in(dir.path()).is_empty());
    // A new job is not cancelled.
    assert_eq!(Job::new().run(&o), HPROF_SHRINK_OK);
}

/// What the progress callback below sees and does.
struct Probe {
    /// The thread that runs the shrink: every report must come on it.
    caller: std::thread::ThreadId,
    on_other_threads: usize,
    job: *mut hprof_shrink_job,
    options: *const hprof_shrink_options,
    reports: Vec<(i32, u64, u64)>,
    reentry: Option<i32>,
    cancel_at_write: bool,
}

impl Probe {
    /// A probe for a run of `job` with `o` on this thread; `try_reentry`: run the job
    /// again from inside the first callback.
    fn new(job: &Job, o: &Opts, try_reentry: bool, cancel_at_write: bool) -> Probe {
        Probe {
            caller: std::thread::current().id(),
            on_other_threads: 0,
            job: job.0,
            options: &o.raw,
            reports: Vec::new(),
            reentry: if try_reentry { None } else { Some(0) },
            cancel_at_write,
        }
    }

    /// Runs the job with this probe as its progress callback; returns the status.
    fn run(&mut self) -> i32 {
        // SAFETY: live job, valid options (both outlive the probe), `probe` takes the
        // `Probe` passed.
        unsafe {
            hprof_shrink_job_run(
                self.job,
                self.options,
                Some(probe),
                (self as *mut Probe).cast(),
            )
        }
    }
}

unsafe extern "C" fn probe(user_data: *mut c_void, stage: i32, done: u64, total: u64) {
    // SAFETY: the tests pass a `Probe` that outlives the run, used only on this thread.
    let p = unsafe { &mut *user_data.cast::<Probe>() };
    if std::thread::current().id() != p.caller {
        p.on_other_threads += 1;
    }
    p.reports.push((stage, done, total));
    if p.reentry.is_none() {
        // SAFETY: the job is live (running); the options outlive the run.
        p.reentry = Some(unsafe { hprof_shrink_job_run(p.job, p.options, None, null_mut()) });
    }
    if p.cancel_at_write && stage == HPROF_SHRINK_STAGE_WRITE {
        // SAFETY: the job is live.
        unsafe { hprof_shrink_job_cancel(p.job) };
    }
}

#[test]
fn progress_comes_on_the_calling_thread_stage_by_stage_and_reentry_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Opts::new(
        &fixture("hotspot-android.hprof"),
        Some(&dir.path().join("o.zip")),
    );
    // Several threads walk the dump; reports still come only on this one.
    o.raw.threads = 4;
    let job = Job::new();
    let mut p = Probe::new(&job, &o, true, false);
    let status = p.run();
    assert_eq!(status, HPROF_SHRINK_OK, "{:?}", job.message());
    assert_eq!(p.reentry, Some(HPROF_SHRINK_ERR_BUSY));
    // The refused re-entry did not touch the running job's outcome.
    assert!(job.report().is_some());
    assert_eq!(job.message(), None);
    let stages: Vec<i32> = p.reports.iter().map(|r| r.0).collect();
    let mut order = stages.clone();
    order.dedup();
    for s in [
        HPROF_SHRINK_STAGE_INFO,
        HPROF_SHRINK_STAGE_COLLECT,
        HPROF_SHRINK_STAGE_WRITE,
    ] {
        assert!(order.contains(&s), "stage {s} missing from {order:?}");
    }
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    assert!(p.reports.iter().all(|&(_, done, total)| done <= total));
    assert_eq!(p.on_other_threads, 0, "reports on other threads");
    let last = p.reports.last().unwrap();
    assert_eq!((last.0, last.1), (HPROF_SHRINK_STAGE_WRITE, last.2));
}

#[test]
fn cancelling_from_the_callback_mid_write_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("o.zip");
    let o = Opts::new(&fixture("hotspot-android.hprof"), Some(&zip));
    let job = Job::new();
    let mut p = Probe::new(&job, &o, false, true);
    let status = p.run();
    assert_eq!(status, HPROF_SHRINK_ERR_CANCELLED, "{:?}", job.message());
    assert!(p.reports.iter().any(|r| r.0 == HPROF_SHRINK_STAGE_WRITE));
    assert!(common::files_in(dir.path()).is_empty());
}

#[test]
fn every_status_has_a_name() {
    for s in [
        HPROF_SHRINK_OK,
        HPROF_SHRINK_ERR_CANCELLED,
        HPROF_SHRINK_ERR_INVALID_ARGUMENT,
        HPROF_SHRINK_ERR_IO,
        HPROF_SHRINK_ERR_BAD_INPUT,
        HPROF_SHRINK_ERR_INTERNAL,
        HPROF_SHRINK_ERR_BUSY,
    ] {
        assert!(status_name(s).starts_with("HPROF_SHRINK_"), "{s}");
    }
    assert_eq!(status_name(99), "unknown status");
    // SAFETY: a static NUL-terminated string.
    let version = unsafe { CStr::from_ptr(hprof_shrink_version()) };
    assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}

/// Truncates the input at the first report of pass 3, as an app dumping again to the same
/// path would.
unsafe extern "C" fn truncate_in_write(user_data: *mut c_void, stage: i32, done: u64, _: u64) {
    // SAFETY: the test passes an `Option<File>` that outlives the run.
    let f = unsafe { &mut *user_data.cast::<Option<std::fs::File>>() };
    if stage == HPROF_SHRINK_STAGE_WRITE && done > 0 {
        if let Some(f) = f.take() {
            f.set_len(4096).unwrap();
        }
    }
}

#[test]
fn a_dump_truncated_under_the_c_abi_is_an_io_error_not_a_crash_of_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.hprof");
    // 48 MiB of arrays: pass 3 reports progress while most of the file is ahead.
    let mut b = hprof_fixtures::ArtBuilder::new(hprof_fixtures::Options::default());
    for i in 0..48u8 {
        b.byte_array(hprof_fixtures::Heap::App, &vec![i; 1 << 20]);
    }
    std::fs::write(&input, b.finish()).unwrap();
    let zip = dir.path().join("o.zip");
    let o = Opts::new(&input, Some(&zip));
    let job = Job::new();
    let mut writer = Some(std::fs::File::options().write(true).open(&input).unwrap());
    // SAFETY: live job, valid options, `writer` outlives the run and is what the callback
    // expects.
    let status = unsafe {
        hprof_shrink_job_run(
            job.0,
            &o.raw,
            Some(truncate_in_write),
            (&mut writer as *mut Option<std::fs::File>).cast(),
        )
    };
    assert!(writer.is_none(), "the input was never truncated");
    assert_eq!(status, HPROF_SHRINK_ERR_IO, "{:?}", job.message());
    let message = job.message().unwrap();
    assert!(message.contains("shrank"), "{message}");
    assert_eq!(common::files_in(dir.path()), ["in.hprof"]);
}
