//! Command-line arguments: every subcommand's clap types (`serve`'s in [`serve`]).

pub mod serve;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::say::say;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use hprof_shrink_core::{DroppedMode, StripMode};
use hprof_shrink_upload::Url;
use hprof_shrink_upload::{self as upload, Method, RetryPolicy, Token, UploadConfig};

const ABOUT: &str =
    "Shrinks Java/Android heap dumps (HPROF) for upload, keeping what leak analysis needs";

const LONG_ABOUT: &str = "\
Shrinks a Java/Android heap dump (HPROF, from ART or HotSpot) and packages it as the zip \
Matrix's server-side analyzer reads: result.info, the shrunk hprof and optional extra.info.

The shrink drops primitive arrays that leak analysis never reads, keeping String values and \
Bitmap pixel buffers; identical Bitmap buffers (same length, same MD5, equal byte for byte) \
are kept once and the Bitmaps that named a copy are pointed at the kept one. Everything else \
comes out byte for byte. The output appears only when complete: it is written beside the \
destination under a temporary name and renamed into place.";

const EXAMPLES: &str = "\
Examples:
  hprof-shrink dump.hprof dump.zip                  shrink and package
  hprof-shrink dump.hprof --hprof-out small.hprof   shrunk hprof only, no zip
  hprof-shrink dump.hprof dump.zip --strip duplicates --dropped empty
  hprof-shrink inspect dump.hprof                   what a dump holds
  hprof-shrink verify dump.zip --against dump.hprof check a package against its input
  hprof-shrink dump.hprof dump.zip --upload https://host/upload     shrink, then upload
  hprof-shrink dump.hprof --outbox queue/           shrink into an outbox directory
  hprof-shrink upload --outbox queue/ --url https://host/upload     upload what waits there
  hprof-shrink upload dump.zip --method put --url 'https://bucket.../dump.zip?X-Amz-...'
  hprof-shrink upload --mapping mapping.txt --app-version 1.4.2 --url https://host/   a release's mapping

Exit status: 0 success (every zip uploaded, when uploading), 1 failure (bad input, I/O,
verification, a zip not uploaded), 2 bad usage.";

const UPLOAD_ABOUT: &str = "\
Uploads packages to a server: the zips given, or every finished zip waiting in an outbox \
directory (oldest first). A zip leaves the outbox (moved to DIR/sent/, or deleted with \
--delete-after-upload) only after the server answers 2xx; failures stay for the next run, \
except a zip the server refuses for good (413, 422): that one moves to DIR/rejected/, with \
the server's answer beside it (NAME.zip.txt), and the run exits 1. A Perfetto trace holding a Java heap graph (Android's ProfilingManager writes them) is sent as it is, told by its content: `serve` takes it as it takes a package.

With --mapping FILE --app-version V the file is an R8/ProGuard mapping.txt, PUT to \
/api/mappings/V on --url's server (the path of --url up to its /api/, if any, is the server's \
base): `serve` takes at most 256 MiB, checks that it reads, and shows that version's leaks \
with the names of the source.

Connection errors, timeouts, 408, 429 and 5xx are retried with exponential backoff and \
jitter, never sooner than a Retry-After; any other answer fails at once. Every attempt sends \
the same bytes with the same MD5. A bearer token is read from the environment variable \
HPROF_SHRINK_TOKEN and is never printed; neither are --header values. The token and the \
--header headers are not sent to another host a redirect points to (see \
--header-follows-redirects).";

const UPLOAD_AFTER: &str = "\
Exit status: 0 every zip uploaded (zips another run was uploading are skipped), 1 a zip \
not uploaded or another failure (each named on stderr), 2 bad usage.";

#[derive(Debug, Parser)]
#[command(
    name = "hprof-shrink",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub shrink: ShrinkArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Shows what a dump holds: header, records and sub-records by tag, arrays by type,
    /// heaps, top classes.
    Inspect(InspectArgs),
    /// Finds why objects leak (leak traces from GC roots, signatures, retained sizes) and
    /// which bitmaps are duplicated, in a package, a .hprof, a .hprof.gz or a Perfetto
    /// heap-graph trace.
    Analyze(AnalyzeArgs),
    /// What changed between two dumps (or packages): classes by instances, shallow and
    /// retained bytes; leaks new and gone; retainers that grew.
    #[command(long_about = DIFF_ABOUT, after_help = DIFF_AFTER)]
    Diff(DiffArgs),
    /// What grows from dump to dump of a repeated scenario (LeakCanary's heap growth
    /// detection): object paths whose children grow in every step.
    #[command(long_about = GROWTH_ABOUT, after_help = GROWTH_AFTER)]
    Growth(GrowthArgs),
    /// Checks a package (or a shrunk hprof) and, with --against, compares it with the
    /// original dump.
    Verify(VerifyArgs),
    /// Shrinks many dumps (.hprof, .hprof.gz, Matrix zips) into packages, in parallel;
    /// resumable, one failure never stops the rest.
    #[command(after_help = BATCH_HELP)]
    Batch(BatchArgs),
    /// Uploads packages to a server, or everything waiting in an outbox directory.
    #[command(long_about = UPLOAD_ABOUT, after_help = UPLOAD_AFTER)]
    Upload(UploadArgs),
    /// Prints a completion script for a shell (how to install it: see its --help).
    #[command(after_help = COMPLETIONS_AFTER)]
    Completions(CompletionsArgs),
    /// Writes man pages (hprof-shrink.1 and one per subcommand) into a directory; what
    /// scripts/man.sh runs.
    #[command(hide = true)]
    Manpages(ManpagesArgs),
    /// Receives packages as `upload` sends them, analyzes them, groups leaks across
    /// devices and shows them in a browser and as JSON.
    #[command(long_about = serve::ABOUT, after_help = serve::AFTER)]
    Serve(serve::ServeArgs),
    /// Analyzes one package for `serve`, in a process of its own held to the server's
    /// budget.
    #[command(name = "__analyze-job", hide = true)]
    AnalyzeJob(serve::AnalyzeJobArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManpagesArgs {
    /// Where the pages go (made if missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// What `completions --help` adds: where the script goes.
const COMPLETIONS_AFTER: &str = "\
The script asks hprof-shrink itself at each Tab, so it completes what this version takes. \
Load it at each shell start, so that it follows upgrades:
  ~/.bashrc:                    source <(hprof-shrink completions bash)
  ~/.zshrc (after compinit):    source <(hprof-shrink completions zsh)
  ~/.config/fish/config.fish:   hprof-shrink completions fish | source

It calls the binary by the name `completions` was run as: `hprof-shrink` (looked up on the \
PATH at each Tab), or the path it was run by, made absolute.";

const BATCH_HELP: &str = "\
Inputs are files, directories (searched recursively) and glob patterns. Each file is told \
apart by its first bytes: HPROF, gzip (a gzipped dump) or zip (a package: its hprof entry is \
shrunk again and its result.info and extra.info are kept). Anything else is reported and \
skipped. Packages go to OUT-DIR, under the path the input had below the directory it was \
found in, with the extension .zip.

A package that already exists and verifies is kept (use --force to redo it). Packages are \
written under temporary names and renamed when complete, so an interrupted batch leaves \
nothing partial: run it again to finish. Temporary files a killed run left behind are \
removed.

--shard K/N (0 <= K < N) takes only the inputs whose path hashes to K, so N machines can \
split one archive without talking to each other, e.g. a Kubernetes indexed Job:
  hprof-shrink batch /archive --out-dir /out --shard $JOB_COMPLETION_INDEX/8
a Slurm array (sbatch --array=0-7):
  hprof-shrink batch /archive --out-dir /out --shard $SLURM_ARRAY_TASK_ID/8
or GNU parallel over ssh:
  parallel -S host1,host2 hprof-shrink batch /archive --out-dir /out --shard {}/4 ::: 0 1 2 3

--upload URL uploads each package made (or, with --outbox DIR, everything in the outbox at \
the end); --outbox DIR puts a copy of each package made there.

Exit status: 0 every dump done (or already there) and uploaded when asked, 3 some failed, \
4 nothing done (no dump found, or every one failed), 1 the batch could not run (bad input \
list, output directory), 2 bad usage.";

#[derive(Debug, Args)]
pub struct BatchArgs {
    /// Files, directories and glob patterns.
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<String>,

    /// Where the packages go.
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,

    /// Files in parallel (0: one per core; at most 256).
    #[arg(short = 'j', long = "jobs", default_value_t = 0, value_name = "N", value_parser = parse_threads)]
    pub jobs: usize,

    /// Redo packages that already exist.
    #[arg(long)]
    pub force: bool,

    /// Take only this shard of the inputs: K/N with 0 <= K < N.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,

    #[command(flatten)]
    pub mode: ShrinkMode,

    /// Largest dump accepted from a .gz or a zip entry, in bytes (a guard against bombs).
    /// By default, what fits in the free space beside the outputs, less an eighth kept
    /// for the packages.
    #[arg(long, value_name = "BYTES")]
    pub max_input_size: Option<u64>,

    /// Write the batch report as JSON to this file.
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,

    /// Analyze each package too: leak traces and duplicate bitmaps in NAME.analysis.json
    /// beside NAME.zip (see `hprof-shrink analyze`).
    #[arg(long)]
    pub analyze: bool,

    /// Print only errors.
    #[arg(short, long)]
    pub quiet: bool,

    /// Also put each package made into this outbox directory (for `upload --outbox`); with
    /// --upload, everything waiting there is uploaded at the end.
    #[arg(long, value_name = "DIR", help_heading = "Upload")]
    pub outbox: Option<PathBuf>,

    /// Upload each package made to this URL (with --outbox: drain the outbox at the end).
    /// A failed upload counts as a failure of its input; the package stays.
    #[arg(long, value_name = "URL", value_parser = parse_url, help_heading = "Upload")]
    pub upload: Option<Url>,

    #[command(flatten)]
    pub upload_opts: UploadOpts,
}

/// Parses `--strip` into the core's mode; `--help` lists each value with the core's own
/// description of it.
fn strip_parser() -> impl TypedValueParser<Value = StripMode> {
    modes(StripMode::ALL.map(|m| (m.name(), m.help()))).try_map(|s| s.parse::<StripMode>())
}

/// Parses `--dropped`, as [`strip_parser`] does `--strip`.
fn dropped_parser() -> impl TypedValueParser<Value = DroppedMode> {
    modes(DroppedMode::ALL.map(|m| (m.name(), m.help()))).try_map(|s| s.parse::<DroppedMode>())
}

fn modes<const N: usize>(all: [(&'static str, &'static str); N]) -> PossibleValuesParser {
    // Without the final period, as clap shows the doc comments of the other options.
    PossibleValuesParser::new(
        all.map(|(name, help)| PossibleValue::new(name).help(help.trim_end_matches('.'))),
    )
}

#[derive(Debug, Args)]
pub struct ShrinkArgs {
    /// The heap dump to shrink (a Perfetto heap-graph trace is packaged as it is).
    #[arg(value_name = "IN.hprof", required = true)]
    pub input: Option<PathBuf>,

    /// The package to write (zip). Optional when --hprof-out is given.
    #[arg(value_name = "OUT.zip")]
    pub output: Option<PathBuf>,

    /// Also (or, without OUT.zip, only) write the shrunk hprof to this file.
    #[arg(long, value_name = "FILE")]
    pub hprof_out: Option<PathBuf>,

    /// Replace OUT.zip or the --hprof-out file when it exists (without it, an existing
    /// output is an error and is left alone). A heap dump at OUT.zip is never replaced.
    #[arg(short, long)]
    pub force: bool,

    #[command(flatten)]
    pub mode: ShrinkMode,

    /// sdkVersion for result.info [default: android.os.Build$VERSION.SDK_INT from the dump].
    #[arg(long, value_name = "N")]
    pub sdk_version: Option<String>,

    /// manufacturer for result.info [default: android.os.Build.MANUFACTURER from the dump].
    #[arg(long, value_name = "NAME")]
    pub manufacturer: Option<String>,

    /// leakedActivityKey for result.info [default: the mKey of the dump's single
    /// DestroyedActivityInfo].
    #[arg(long, value_name = "KEY")]
    pub leaked_activity_key: Option<String>,

    /// A property for extra.info (repeatable).
    #[arg(long = "extra", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub extra: Vec<(String, String)>,

    /// Name of the hprof entry in the zip [default: INPUT-STEM_shrink.hprof].
    #[arg(long, value_name = "NAME", value_parser = parse_entry_name)]
    pub hprof_entry: Option<String>,

    /// Write the report as JSON to this file (schema in docs/usage.md).
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,

    /// Threads for compression (0: one per core; at most 256).
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = parse_threads)]
    pub threads: usize,

    /// Print no summary (errors still go to stderr).
    #[arg(short, long)]
    pub quiet: bool,

    /// Remove the input once the output is written and verifies against it.
    #[arg(long)]
    pub delete_input: bool,

    /// Write the package into this outbox directory (as INPUT-STEM.zip, or -2, -3... when
    /// taken) instead of OUT.zip; with --upload, then upload everything waiting there.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "output",
        help_heading = "Upload"
    )]
    pub outbox: Option<PathBuf>,

    /// Upload the package to this URL once written (OUT.zip stays whatever happens).
    #[arg(long, value_name = "URL", value_parser = parse_url, help_heading = "Upload")]
    pub upload: Option<Url>,

    /// With --outbox and --upload: delete each uploaded zip instead of moving it to sent/.
    #[arg(long, requires_all = ["outbox", "upload"], help_heading = "Upload")]
    pub delete_after_upload: bool,

    #[command(flatten)]
    pub upload_opts: UploadOpts,
}

#[derive(Debug, Args)]
pub struct UploadArgs {
    /// The zips (or Perfetto heap-graph traces) to upload.
    #[arg(
        value_name = "ZIP",
        required_unless_present_any = ["outbox", "mapping"],
        conflicts_with_all = ["outbox", "mapping"]
    )]
    pub zips: Vec<PathBuf>,

    /// Upload this R8/ProGuard mapping.txt as --app-version's mapping instead: PUT to
    /// /api/mappings/VERSION on --url's server (`serve`), which analyzes that version's
    /// packages with it, those it already analyzed again.
    #[arg(
        long,
        value_name = "FILE",
        requires = "app_version",
        conflicts_with = "outbox"
    )]
    pub mapping: Option<PathBuf>,

    /// The app version --mapping is of (as packages' extra.info names it: appVersion).
    #[arg(long, value_name = "VERSION", requires = "mapping")]
    pub app_version: Option<String>,

    /// Where to upload: the endpoint (post) or the object's URL, e.g. pre-signed (put).
    // The id matches the shrink command's --upload, which the shared options require.
    #[arg(long = "url", id = "upload", value_name = "URL", value_parser = parse_url, required = true)]
    pub url: Url,

    /// Upload every finished zip in this directory, oldest first; each one the server
    /// takes moves to DIR/sent/, each one it refuses for good (413, 422) to DIR/rejected/.
    #[arg(long, value_name = "DIR")]
    pub outbox: Option<PathBuf>,

    /// Delete each uploaded zip instead of moving it to DIR/sent/.
    // Both: clap lets a conflict (ZIP vs --outbox) excuse a missing required argument.
    #[arg(long, requires = "outbox", conflicts_with = "zips")]
    pub delete_after_upload: bool,

    /// Print only errors and warnings.
    #[arg(short, long)]
    pub quiet: bool,

    #[command(flatten)]
    pub opts: UploadOpts,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MethodArg {
    /// multipart/form-data: part `file` (application/zip), a text part for each result.info
    /// key, and `md5` (hex).
    Post,
    /// The raw zip with Content-Type: application/zip and Content-MD5 (base64), as a
    /// pre-signed S3/OSS/COS URL takes it.
    Put,
}

/// Options of an upload, shared by `upload` and the shrink's `--upload`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Upload")]
pub struct UploadOpts {
    /// The protocol.
    #[arg(long, value_enum, default_value = "post", requires = "upload")]
    pub method: MethodArg,

    /// A request header, 'Name: value' (repeatable). Values are never printed (cut out
    /// of server answers too), and go only to the URL's own origin, not to another host a
    /// redirect names.
    #[arg(long = "header", value_name = "'NAME: VALUE'", requires = "upload")]
    pub headers: Vec<String>,

    /// Stop after this many seconds in all: no attempt or retry wait runs past it, and an
    /// outbox's remaining zips are left for the next run [default: no deadline].
    #[arg(long, value_name = "SECS", value_parser = parse_secs, requires = "upload")]
    pub deadline: Option<Duration>,

    /// Send the --header headers to another host a redirect names, too (never
    /// Authorization, Cookie or the token).
    #[arg(long, requires = "upload")]
    pub header_follows_redirects: bool,

    /// Retries after the first attempt (connection errors, timeouts, 408, 429, 5xx).
    #[arg(long, default_value_t = 5, value_name = "N", requires = "upload")]
    pub retries: u32,

    /// Seconds to wait for a connection.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs, requires = "upload")]
    pub connect_timeout: Duration,

    /// Seconds one attempt may take in all [default: 300, or longer for zips over 75 MiB:
    /// their size at 256 KiB/s].
    #[arg(long, value_name = "SECS", value_parser = parse_secs, requires = "upload")]
    pub timeout: Option<Duration>,

    /// The longest Retry-After waited for; a server asking for more leaves the zip for a
    /// later run.
    #[arg(long, value_name = "SECS", default_value = "120", value_parser = parse_secs, requires = "upload")]
    pub max_retry_wait: Duration,

    /// Also trust the CA certificates in this PEM file (repeatable).
    #[arg(long, value_name = "FILE.pem", requires = "upload")]
    pub cacert: Vec<PathBuf>,

    /// FOR TESTING ONLY: accept any TLS certificate and host name. Anyone on the network
    /// path can then read and change the upload. Warns on every run.
    #[arg(long, requires = "upload")]
    pub insecure: bool,

    /// Print each request and response (header names only, never values or the token).
    #[arg(short, long, requires = "upload")]
    pub verbose: bool,

    /// The first retry's backoff in milliseconds (doubles each retry); for tests.
    #[arg(long, hide = true, default_value_t = 1000, value_name = "MS")]
    pub backoff_ms: u64,
}

/// Why the upload options make no configuration: a usage error.
#[derive(Debug, thiserror::Error)]
pub enum UploadOptsError {
    /// A `--header` with no name or no colon. Its value is not shown: it may be a credential.
    #[error("--header takes 'Name: value'")]
    Header,
}

/// Printed on every run with --insecure, whatever -q says.
pub const INSECURE_WARNING: &str = "WARNING: --insecure: the server's TLS certificate and \
host name are NOT verified; anyone on the network path can read and change this upload. \
Use it only for testing.";

impl UploadOpts {
    /// The configuration for `url`; the token comes from the environment. The error is a
    /// usage error.
    pub fn config(&self, url: Url, quiet: bool) -> Result<UploadConfig, UploadOptsError> {
        let mut headers = Vec::new();
        for h in &self.headers {
            // The value may be a credential: errors name the header, never its value.
            match h.split_once(':') {
                Some((name, value)) if !name.trim().is_empty() => {
                    headers.push((name.trim().to_string(), value.trim().to_string()))
                }
                _ => return Err(UploadOptsError::Header),
            }
        }
        let mut cfg = UploadConfig::new(url);
        cfg.method = match self.method {
            MethodArg::Post => Method::Post,
            MethodArg::Put => Method::Put,
        };
        cfg.headers = headers;
        cfg.headers_follow_redirects = self.header_follows_redirects;
        cfg.token = Token::from_env();
        cfg.connect_timeout = self.connect_timeout;
        cfg.timeout = self.timeout;
        cfg.retry = RetryPolicy {
            retries: self.retries,
            base: Duration::from_millis(self.backoff_ms),
            max_retry_after: self.max_retry_wait,
            // A deadline past what the clock can say is no deadline.
            deadline: self
                .deadline
                .and_then(|d| std::time::SystemTime::now().checked_add(d)),
            ..RetryPolicy::default()
        };
        cfg.cancel = Some(crate::signals::flag());
        cfg.insecure = self.insecure;
        cfg.ca_certs = self.cacert.clone();
        if !quiet {
            cfg.meter = Some(Arc::new(crate::progress::UploadBars));
        }
        cfg.verbose = self.verbose;
        if !quiet || self.verbose {
            cfg.log = Some(Arc::new(|m: &str| say!("hprof-shrink: {m}")));
        }
        Ok(cfg)
    }
}

fn parse_url(s: &str) -> Result<Url, String> {
    let u = Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
    match u.scheme() {
        "http" | "https" if u.host_str().is_some() => Ok(u),
        _ => Err(format!(
            "not an http or https URL: {}",
            upload::redact::url(&u)
        )),
    }
}

/// A thread or job count: 0 (one per core) up to the core's limit.
fn parse_threads(s: &str) -> Result<usize, String> {
    let max = hprof_shrink_core::MAX_THREADS;
    match s.trim().parse::<usize>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!(
            "{s:?} is not a number from 0 (one per core) to {max}"
        )),
    }
}

/// `--dump N`: a heap dump's place in its file, from 1.
fn parse_dump(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{s:?} is not a dump number (the first is 1)")),
    }
}

/// `1080x2400`: a screen's width and height in pixels, each 1 to 100000.
fn parse_screen(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("{s:?} is not a screen size in pixels, WIDTHxHEIGHT (e.g. 1080x2400)");
    let (w, h) = s.trim().split_once(['x', 'X', '×']).ok_or_else(bad)?;
    let w: u64 = w.trim().parse().map_err(|_| bad())?;
    let h: u64 = h.trim().parse().map_err(|_| bad())?;
    if !(1..=100_000).contains(&w) || !(1..=100_000).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if v.is_nan() || v <= 0.0 {
        return Err("must be more than 0".into());
    }
    Duration::try_from_secs_f64(v).map_err(|e| e.to_string())
}

/// How to shrink: the options a single shrink and a batch share.
#[derive(Debug, Args)]
pub struct ShrinkMode {
    /// What to keep.
    #[arg(long, value_parser = strip_parser(), default_value = "bitmaps")]
    pub strip: StripMode,

    /// How a dropped array disappears.
    #[arg(long, value_parser = dropped_parser(), default_value = "remove")]
    pub dropped: DroppedMode,

    /// Deflate level of the zip: 0 stores, 1 is fastest, 9 the smallest (about 10% smaller
    /// than 6, and some 15 times slower).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub level: u32,

    /// Shrink a dump that was cut off while being written (the process died, the disk
    /// filled) up to its last complete record; extra.info then says truncated=true.
    #[arg(long)]
    pub salvage: bool,

    /// A private package: every String value is replaced (same length, a keyed
    /// permutation below 12 bytes, a keyed tag and `*`s from 12 on: equal values stay
    /// equal, distinct ones distinct) but those the analysis reads (LeakCanary's
    /// keys and descriptions, Build fields, thread names, framework labels: listed in
    /// docs/usage.md), and every Bitmap's pixels by a pattern from their digest (duplicates
    /// stay duplicates). The analysis finds the same leaks, sizes and duplicates. result.info
    /// and extra.info say private=true. Not with --strip none.
    #[arg(long)]
    pub private: bool,
}

/// `--hprof-entry`: the core's rule for the name, checked as clap checks any value.
fn parse_entry_name(s: &str) -> Result<String, hprof_shrink_core::package::manifest::BadEntryName> {
    hprof_shrink_core::package::manifest::check_entry_name(s)?;
    Ok(s.to_string())
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The heap dump to inspect.
    #[arg(value_name = "FILE.hprof")]
    pub input: PathBuf,

    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,

    /// How many classes to list by instance count.
    #[arg(long, default_value_t = 15, value_name = "N")]
    pub top: usize,
}

const ANALYZE_AFTER: &str = "\
Leaking objects: with a key (--key, or the package's leakedActivityKey), Matrix's way: the \
DestroyedActivityInfo whose mKey is the key and the Activity it weakly references. Without \
one, LeakCanary's way: on a dump holding objects LeakCanary's KeyedWeakReferences (1.x or \
2.x) watched and found retained, those objects alone, as LeakCanary on the phone (finder \
keyed-weak-references; the inspectors only decide statuses); on a dump without, what the \
inspectors' finders flag, as Shark on a raw dump: destroyed Activities, detached root Views, \
... (finder inspectors); so too with the placeholder key `unknown` a package gets when no \
key was known. --all-leaks: both (finder all-leaks). The text and the JSON (`finder`) say \
which ran.

Paths as LeakCanary's Shark finds them: known framework leaks (library_leaks.json: \
LeakCanary's 90 patterns by SDK and manufacturer, read from android.os.Build in the dump) \
and Java locals visited last, ignored references never followed, collections and queues \
read as one step (ArrayList[2], HashMap[\"key\"], MessageQueue[4]), a leaking object never \
on another's path (named on it as \"Also retains\" instead).

Limits: a trace longer than 60 steps keeps its first 30 and last 30 and says how many it \
left out (its signature is still the whole path's); at most 50 leaks, 50 duplicate-bitmap \
groups with 2 paths each, 50 keys, 20 notes; names from the dump cut to 256 bytes. Control \
and format (bidi) characters in names are shown escaped, as \\u{1b}. Every analysis stays \
under 32 MiB of JSON (docs/analyze.md).

Signatures are LeakCanary's leak fingerprints (signatureVersion 2): a known framework \
leak's is its pattern's, and leaking objects that share one are one leak with a count.

Outputs: text (LeakCanary's layout: APPLICATION LEAKS, LIBRARY LEAKS, UNREACHABLE \
OBJECTS, METADATA; then this analysis's own section and the duplicate bitmaps) or json (the schema in \
docs/analyze.md) on stdout unless -o; html writes one self-contained page (default \
NAME.html in the current directory; -o - for stdout); matrix writes Matrix's result.json and \
buffer_contents/ into a directory (default NAME.matrix/). An existing file at -o is \
replaced only with -f, and never when it is a heap dump or package; a directory for matrix \
keeps everything but those two entries, and one holding other files needs -f; devices \
(-o /dev/null) are written through.

A file holding several heap dumps (the old -agentlib:hprof wrote them one after another) \
is analyzed one dump at a time: the last, or the one --dump N names; the result says how \
many the file holds. Classes whose instances' references cannot be read (a superclass \
missing from the dump, a superclass cycle) are named in the result's notes, which then say \
that a \"no leak\" may be wrong.

A Perfetto trace holding several processes' heap graphs is analyzed one process at a time: \
--pid PID picks it (without, the error lists the pids and their names). A heap graph holds \
references, not field values: the rules that read values (an Activity's mDestroyed, a \
String's text, a Bitmap's pixels) are not run on it, and the result names each with the \
field it needed (\"Not run\" in the text, dump.notRun in the JSON; docs/analyze.md).

Cost: no step is worse than O(n log n) in the dump's objects, references and classes \
(docs/analyze.md); memory peaks at about 20 bytes an object. -v prints each step's \
time and memory.

CI: --fail-on any|new (with --baseline FILE, written by --write-baseline) exits 5 on an \
application leak (a new one); --format junit writes the JUnit XML CI servers show.

Exit status: 0 analyzed (leaks or not, and the gate open), 1 failure (bad input, I/O, no \
such --dump), 2 bad usage, 5 --fail-on found what it fails on.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnalyzeFormat {
    Text,
    Json,
    Matrix,
    Html,
    /// JUnit XML for CI: a test case per leak signature, failed where --fail-on says.
    Junit,
}

/// What fails a CI gate (`--fail-on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOnArg {
    /// Never: exit 0 whatever is found.
    None,
    /// A finding whose signature --baseline does not hold (all, without one).
    New,
    /// Any finding.
    Any,
}

/// The CI gate of analyze, diff and growth.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// Exit 5 (the report written all the same) when it holds findings: application
    /// leaks for analyze; new application leaks and new or grown retainers for diff;
    /// growing paths for growth. `new`: only those whose signature --baseline lacks.
    /// Library leaks never fail it.
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = FailOnArg::None)]
    pub fail_on: FailOnArg,

    /// Signatures known already, one a line, `#` for comments (what --write-baseline
    /// writes; a retainer's or growing path's `path:…` signature from the JUnit report).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = ANALYZE_AFTER)]
pub struct AnalyzeArgs {
    /// A package zip, a heap dump (.hprof), a gzipped one (.hprof.gz) or a Perfetto trace
    /// holding a Java heap graph (one process's).
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,

    /// The key of the leaked Activity (Matrix's leakedActivityKey); default: the
    /// package's.
    #[arg(long, value_name = "K")]
    pub key: Option<String>,

    /// Ignore the package's key and find every leaking object: the objects LeakCanary
    /// watched and found retained, and what its inspectors' finders flag.
    #[arg(long, conflicts_with = "key")]
    pub all_leaks: bool,

    /// What to write (see Outputs below).
    #[arg(long, value_enum, default_value_t = AnalyzeFormat::Text)]
    pub format: AnalyzeFormat,

    /// Where to write: a file (text, json, html; `-` for stdout) or a directory (matrix).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,

    /// Replace an existing output file. A heap dump or package is never replaced by a
    /// report; for --format matrix, a directory holding other files gets result.json and
    /// buffer_contents/ written into it, the rest left as it is.
    #[arg(short, long)]
    pub force: bool,

    #[command(flatten)]
    pub gate: GateArgs,

    /// Write the application leaks' signatures to FILE, a baseline for --fail-on new
    /// (replaced only with --force).
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,

    /// Smallest bitmap buffer, in bytes, reported as a duplicate.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub min_bitmap_bytes: u64,

    /// An R8/ProGuard mapping.txt (a regular file of at most 1 GiB): class and field
    /// names are shown deobfuscated, and signatures are computed on them.
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,

    /// Which heap dump to analyze when the file holds several (the old -agentlib:hprof
    /// wrote them one after another), counting from 1 [default: the last].
    #[arg(long, value_name = "N", value_parser = parse_dump)]
    pub dump: Option<usize>,

    /// For a Perfetto trace holding several processes' heap graphs: the process to
    /// read, by pid (the error without it lists them). Refused for an HPROF dump or package,
    /// which holds one process's heap.
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,

    /// The device's screen, WIDTHxHEIGHT in pixels, for the triage's large Bitmaps (more
    /// pixels than the screen's × 1.1) when the heap holds no android.util.DisplayMetrics;
    /// without either, KOOM's 768x1366 is the bound.
    #[arg(long, value_name = "WxH", value_parser = parse_screen)]
    pub screen: Option<(u64, u64)>,

    /// Leave parts of the analysis out to save their time, comma-separated: `triage` (top
    /// retainers, accumulation points, retained by class, largest arrays, counts and
    /// duplicate Strings) or `duplicate-strings` (no String value is hashed). On a heap of
    /// millions of small objects and Strings the triage is about a seventh of the
    /// analysis, its duplicate Strings a fifteenth (docs/performance.md). The output
    /// names what was skipped; leaks and their retained sizes are the same.
    #[arg(long, value_enum, value_name = "PART", value_delimiter = ',')]
    pub skip: Vec<SkipPart>,

    /// Print on stderr every step of the analysis with the time it took and the memory
    /// after it.
    #[arg(short, long)]
    pub verbose: bool,
}

/// A part of the analysis `analyze --skip` leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SkipPart {
    /// The triage, its duplicate Strings included.
    Triage,
    /// The triage's duplicate Strings.
    DuplicateStrings,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The package (zip) to check, or a shrunk hprof.
    #[arg(value_name = "OUT.zip")]
    pub package: PathBuf,

    /// The original dump to compare the shrunk hprof with.
    #[arg(long, value_name = "IN.hprof")]
    pub against: Option<PathBuf>,

    /// The strip mode the package was made with [default: read from the zip comment].
    #[arg(long, value_parser = strip_parser())]
    pub strip: Option<StripMode>,

    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

const DIFF_ABOUT: &str = "\
Compares two heap dumps (or packages, .hprof.gz, Perfetto heap-graph traces, as analyze reads \
them; both HPROF or both traces, a mix is refused): BASE, then NEW. \
Each is analyzed in turn and only what the comparison needs is kept of it, so the two \
graphs are never in memory together: it costs the time of two analyses and their censuses \
(a census is three more passes over the objects; neither side makes a triage) and the memory of one analysis \
(its census holds about 17 bytes per object more than analyze at the dominators' step).

It reports, per class (by name), the change in reachable instances, shallow bytes and \
retained bytes (the retained sizes of its instances that no instance of the same class \
dominates); the leaks whose signature is in one dump and not the other; and the largest \
objects under the GC roots (those nothing else dominates), matched by their path from the \
root (class and field names, no ids), that are new or grew by 2 % of BASE's reachable \
bytes or more. Lists are capped and say how many they left out: --max-classes classes, \
50 new and 50 gone leak signatures, 20 retainers (of the 1000 largest paths each dump \
keeps); a retainer's path keeps its first 20 and last 20 steps; class names are cut to \
256 bytes and path steps to 512 (docs/diff.md).";

const DIFF_AFTER: &str = "\
Examples:
  hprof-shrink diff before.hprof after.hprof
  hprof-shrink diff v1.zip v2.zip --format json -o diff.json

Exit status: 0 compared (whatever changed, the gate open), 1 failure (bad input, I/O), \
2 bad usage, 5 --fail-on found a new leak or a new or grown retainer.";

const GROWTH_ABOUT: &str = "\
Finds what grows across dumps of one repeated scenario, as LeakCanary 3's heap growth \
detection does: run the scenario, dump, repeat (three dumps or more is best). Each dump \
becomes a tree of paths from the GC roots keyed by class and field names, not object ids \
(ARRAY_ENTRY Object[].[x] -> instance of com.example.Item); a path is reported when one of \
its children gained at least N objects (--scenario-loops) in every step, with its \
children's growth per step, its retained size and that size's change, and its path.

The dumps are read one at a time, in the order given or, for a directory, by the time in \
their HPROF headers (Perfetto traces: by name); all HPROF or all heap-graph traces. Only the small path trees are kept between them. Reading stops at the \
first step in which nothing grew. Each dump costs about one analysis; a dump's tree holds \
at most --max-paths nodes (about 40 bytes each).";

const GROWTH_AFTER: &str = "\
Examples:
  hprof-shrink growth run1.hprof run2.hprof run3.hprof
  hprof-shrink growth dumps/ --scenario-loops 5 --format html -o growth.html

Exit status: 0 compared (growing or not, the gate open), 1 failure (bad input, I/O, too \
many paths), 2 bad usage (fewer than two dumps, a bad option), 5 --fail-on found a growing \
path.";

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The dump before: a package zip, a heap dump (.hprof), a gzipped one (.hprof.gz) or a
    /// Perfetto trace holding a Java heap graph.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,

    /// The dump after: HPROF (in any of its forms) when BASE is, a trace when BASE is one.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,

    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,

    /// Where to write, `-` for stdout (default: stdout; for html, NEW's name with
    /// .diff.html).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,

    /// Replace an existing output file (never a heap dump or package).
    #[arg(short, long)]
    pub force: bool,

    #[command(flatten)]
    pub gate: GateArgs,

    /// Classes listed, largest change first (the rest are counted).
    #[arg(long, value_name = "N", default_value_t = hprof_shrink_analyze::diff::DEFAULT_MAX_CLASSES)]
    pub max_classes: usize,

    /// An R8/ProGuard mapping.txt for both dumps.
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,

    /// For a Perfetto trace holding several processes' heap graphs: the process to
    /// read in each, by pid (the error without it lists them). Refused for an HPROF dump or package,
    /// which holds one process's heap.
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,

    /// Print on stderr each analysis's steps with their times.
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Text,
    Json,
    Html,
    /// JUnit XML for CI: a test case per finding, failed where --fail-on says.
    Junit,
}

#[derive(Debug, Args)]
pub struct GrowthArgs {
    /// Two dumps or more, in the order they were taken, or one directory of them (its
    /// .hprof, .hprof.gz and .zip files, ordered by the time in their HPROF headers, then
    /// by name with numbers in order; or its Perfetto traces, .pftrace and .perfetto-trace,
    /// gzip'd or not, by name, a trace's clock counting from the device's boot). All HPROF
    /// or all traces: a mix is refused.
    #[arg(value_name = "DUMP", required = true)]
    pub dumps: Vec<PathBuf>,

    /// How many times the scenario ran between two dumps: a child grows when it gains
    /// at least this many objects in a step (growth per loop is the gain divided by it).
    #[arg(short = 'l', long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub scenario_loops: u64,

    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,

    /// Where to write, `-` for stdout (default: stdout; for html, growth.html).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,

    /// Replace an existing output file (never a heap dump or package).
    #[arg(short, long)]
    pub force: bool,

    #[command(flatten)]
    pub gate: GateArgs,

    /// Nodes one dump's path tree may hold before the dump is refused.
    #[arg(long, value_name = "N", default_value_t = hprof_shrink_analyze::growth::DEFAULT_MAX_PATHS)]
    pub max_paths: usize,

    /// An R8/ProGuard mapping.txt for every dump.
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,

    /// For a Perfetto trace holding several processes' heap graphs: the process to
    /// read in each, by pid (the error without it lists them). Refused for an HPROF dump or package,
    /// which holds one process's heap.
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,

    /// Print on stderr each dump as it is done, with its time.
    #[arg(short, long)]
    pub verbose: bool,
}

#[cfg(test)]
mod tests {
    use hprof_shrink_analyze::limits::*;
    use hprof_shrink_analyze::mapping::MAX_MAPPING_BYTES;

    /// The help states the limits as numbers; they must be the ones in force.
    #[test]
    fn analyze_help_states_the_limits_in_force() {
        let help = super::ANALYZE_AFTER;
        for want in [
            format!("longer than {MAX_TRACE_STEPS} steps keeps its first {TRACE_HEAD_STEPS} and last {TRACE_TAIL_STEPS}"),
            format!("at most {MAX_LEAKS} leaks, {MAX_BITMAP_GROUPS} duplicate-bitmap groups with {MAX_BITMAP_INSTANCES} paths each, {MAX_KEYS_FOUND} keys, {MAX_NOTES} notes"),
            format!("cut to {MAX_NAME_BYTES} bytes"),
            format!("under {} MiB of JSON", MAX_ANALYSIS_BYTES >> 20),
        ] {
            assert!(help.contains(&want), "{want:?} not in the help");
        }
        assert_eq!(MAX_MAPPING_BYTES, 1 << 30, "the --mapping help says 1 GiB");
    }

    /// diff's help states its caps; they must be the ones in force.
    #[test]
    fn diff_help_states_the_caps_in_force() {
        use hprof_shrink_analyze::{census, diff, growth};
        let help = super::DIFF_ABOUT.replace("\n", " ");
        for want in [
            format!(
                "{} new and {} gone leak signatures",
                diff::MAX_LEAK_GROUPS,
                diff::MAX_LEAK_GROUPS
            ),
            format!(
                "{} retainers (of the {} largest paths",
                diff::MAX_RETAINERS,
                census::MAX_CENSUS_RETAINERS
            ),
            format!(
                "first {} and last {} steps",
                census::PATH_HEAD,
                census::PATH_TAIL
            ),
            format!(
                "class names are cut to {} bytes and path steps to {}",
                hprof_shrink_analyze::limits::MAX_NAME_BYTES,
                growth::MAX_NAME_BYTES
            ),
            format!("grew by {} %", diff::RETAINER_GROWTH_PERCENT),
        ] {
            assert!(help.contains(&want), "{want:?} not in the help");
        }
    }
}
