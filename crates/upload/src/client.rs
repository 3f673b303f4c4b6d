//! One upload: the HTTP client (rustls, redirects followed here rather than by reqwest),
//! the request of each protocol streamed from the file, timeouts, and the retry loop.
//!
//! Every attempt sends the same bytes with the same MD5: the digest is computed once and
//! the file is reopened for each attempt, refusing to go on if its size changed. Redirects
//! are followed by hand because an upload must never silently become a GET (which a 301,
//! 302 or 303 does in a browser): 301, 302, 307 and 308 resend the same method and body;
//! credentials (the token, and `Authorization`, `Proxy-Authorization` and `Cookie`
//! headers) go only to the origin of the URL given; an https → http redirect is refused.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use reqwest::header::{
    HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, COOKIE, ETAG, LOCATION,
    PROXY_AUTHORIZATION, RETRY_AFTER,
};
use reqwest::{multipart, Body, Client, Response, Url};

use super::error::{RedirectError, ReopenError, UploadError};
use super::http::{install_crypto_provider, FileBody};
use super::meter::{Meter, Transfer};
use super::package::{self, Digested};
use super::redact;
use super::retry::{self, Clock, Failure, GiveUp, RetryPolicy, Step, SystemClock};

/// The environment variable holding the bearer token.
pub const TOKEN_ENV: &str = "HPROF_SHRINK_TOKEN";
/// Redirects followed within one attempt.
pub const MAX_REDIRECTS: usize = 5;
/// Characters of a failed response's body shown in the error.
pub const EXCERPT_CHARS: usize = 200;
/// The total-timeout default: this long, or the time the body takes at
/// [`MIN_RATE`] bytes per second if that is longer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The slowest transfer rate the default total timeout allows for, in bytes per second.
pub const MIN_RATE: u64 = 256 * 1024;
/// How long opening a connection may take, by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bodies smaller than this are not reported to the [`Meter`].
const PROGRESS_MIN: u64 = 1024 * 1024;

/// How the zip is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// `multipart/form-data`: a `file` part and a text part for each `result.info` key
    /// and `md5`.
    #[default]
    Post,
    /// The raw zip, with `Content-Type: application/zip` and `Content-MD5` (a pre-signed
    /// S3/OSS/COS URL).
    Put,
}

/// A bearer token. Its `Debug` hides it and it has no `Display`: it can only reach the
/// `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// `None` for an empty token.
    pub fn new(token: impl Into<String>) -> Option<Token> {
        let t = token.into();
        (!t.is_empty()).then_some(Token(t))
    }

    /// The token in [`TOKEN_ENV`], if set and not empty.
    pub fn from_env() -> Option<Token> {
        std::env::var_os(TOKEN_ENV).and_then(|v| Token::new(v.to_string_lossy()))
    }

    fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

/// Where informational lines go (retries, redirects, with `verbose` each request).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// Where and how zips are uploaded; [`UploadConfig::new`] gives the defaults for a URL.
#[derive(Clone)]
pub struct UploadConfig {
    /// Where the zips go: the server's upload endpoint, or a pre-signed URL for [`Method::Put`].
    pub url: Url,
    /// How each zip is sent.
    pub method: Method,
    /// Extra request headers, `(name, value)`.
    pub headers: Vec<(String, String)>,
    /// The bearer token (`Authorization: Bearer …`), sent only to the origin of `url`.
    pub token: Option<Token>,
    /// How long a connection may take to open.
    pub connect_timeout: Duration,
    /// Total time of one attempt; `None`: [`default_timeout`] of the file's size.
    pub timeout: Option<Duration>,
    /// When to try again, and how long to wait first.
    pub retry: RetryPolicy,
    /// Accept any certificate and host name. For testing only.
    pub insecure: bool,
    /// PEM files of extra trusted CA certificates.
    pub ca_certs: Vec<PathBuf>,
    /// Where the bytes of bodies of 1 MiB or more are reported (a progress bar); `None`:
    /// nowhere.
    pub meter: Option<Arc<dyn Meter>>,
    /// Log each request and response line (never header values).
    pub verbose: bool,
    /// Where informational lines go (retries, redirects, with `verbose` each request);
    /// `None`: nowhere.
    pub log: Option<Log>,
    /// Send the extra `headers` to another origin a redirect names too (never
    /// Authorization, Proxy-Authorization or Cookie, nor the token). Off: they go only to
    /// the origin of `url`.
    pub headers_follow_redirects: bool,
    /// Set (by a signal handler) to stop: no new attempt starts, a running one and a retry
    /// wait end within a tenth of a second, and the zip stays where it is.
    pub cancel: Option<&'static AtomicBool>,
}

impl UploadConfig {
    /// A multipart POST to `url` with the defaults: no token or extra header, a 10 s
    /// connect timeout, the total timeout of [`default_timeout`], [`RetryPolicy::default`].
    pub fn new(url: Url) -> UploadConfig {
        UploadConfig {
            url,
            method: Method::Post,
            headers: Vec::new(),
            token: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            timeout: None,
            retry: RetryPolicy::default(),
            insecure: false,
            ca_certs: Vec::new(),
            meter: None,
            verbose: false,
            log: None,
            headers_follow_redirects: false,
            cancel: None,
        }
    }
}

impl fmt::Debug for UploadConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values and the URL's query may be credentials: names and the shown URL only.
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("UploadConfig")
            .field("url", &redact::url(&self.url))
            .field("method", &self.method)
            .field("headers", &header_names)
            .field("token", &self.token)
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("insecure", &self.insecure)
            .field("ca_certs", &self.ca_certs)
            .field("meter", &self.meter.is_some())
            .field("verbose", &self.verbose)
            .finish_non_exhaustive()
    }
}

/// The total timeout of one attempt for a body of `len` bytes when none is given: 300 s,
/// or the time the body takes at 256 KiB/s when that is longer.
pub fn default_timeout(len: u64) -> Duration {
    DEFAULT_TIMEOUT.max(Duration::from_secs(len / MIN_RATE))
}

/// A file the server took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadOutcome {
    /// The zip.
    pub path: PathBuf,
    /// Its size, all of which was sent.
    pub bytes: u64,
    /// Hex MD5 of what was sent.
    pub md5: String,
    /// The 2xx status.
    pub status: u16,
    /// Attempts made, the first included.
    pub attempts: u32,
    /// Where it went in the end (after redirects), as it may be shown.
    pub url: String,
    /// From the first attempt's start to the answer of the last.
    pub elapsed: Duration,
}

/// Uploads one file with a client built for the purpose. To send several files, build one
/// [`Uploader`] and reuse it (connections are kept alive between files).
pub fn upload_file(path: &Path, config: &UploadConfig) -> Result<UploadOutcome, UploadError> {
    Uploader::new(config.clone())?.upload(path)
}

/// A blocking uploader: it runs its HTTP client on a runtime of its own, so use (and drop)
/// it outside async code, or inside `spawn_blocking`.
pub struct Uploader {
    cfg: UploadConfig,
    client: Client,
    /// Drives the client; the calls of this type block on it.
    rt: tokio::runtime::Runtime,
    headers: Vec<(HeaderName, HeaderValue)>,
    user_content_type: bool,
}

/// What one attempt needs to know about the file.
struct Job<'a> {
    path: &'a Path,
    name: String,
    digest: Digested,
    fields: Vec<(String, String)>,
    timeout: Duration,
    transfer: Option<Arc<dyn Transfer>>,
    /// Whether the last failed attempt failed on the network (not with an HTTP status).
    last_unreachable: std::cell::Cell<bool>,
    /// The HTTP status the last failed attempt was answered with, if it was.
    last_status: std::cell::Cell<Option<u16>>,
}

impl Job<'_> {
    /// This attempt's time: the per-attempt timeout, cut short by the run's deadline.
    fn attempt_timeout(&self, deadline: Option<std::time::SystemTime>) -> Duration {
        let left = deadline.map(|d| {
            d.duration_since(std::time::SystemTime::now())
                .unwrap_or(Duration::ZERO)
        });
        match left {
            Some(left) => self.timeout.min(left).max(Duration::from_millis(1)),
            None => self.timeout,
        }
    }
}

/// The file opened again for an attempt, and checked to be the size it was when its MD5
/// was read.
fn reopen(job: &Job<'_>) -> Result<File, ReopenError> {
    let file = File::open(job.path)?;
    let now = file.metadata()?.len();
    if now != job.digest.len {
        return Err(ReopenError::Changed {
            now,
            was: job.digest.len,
        });
    }
    Ok(file)
}

fn is_credential(name: &HeaderName) -> bool {
    name == AUTHORIZATION || name == PROXY_AUTHORIZATION || name == COOKIE
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

impl Uploader {
    /// Checks the configuration (the URL's scheme, the headers, the CA files) and builds the
    /// client and its runtime. Fails with [`UploadError::Config`] on a configuration that
    /// cannot work, [`UploadError::Setup`] when the client cannot be built.
    pub fn new(cfg: UploadConfig) -> Result<Uploader, UploadError> {
        let shown = redact::url(&cfg.url);
        if !matches!(cfg.url.scheme(), "http" | "https") || cfg.url.host_str().is_none() {
            return Err(UploadError::Config(format!(
                "{shown}: not an http or https URL"
            )));
        }
        let mut headers = Vec::new();
        let mut user_content_type = false;
        for (name, value) in &cfg.headers {
            let n = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| UploadError::Config(format!("{name:?} is not a header name")))?;
            // The value is not shown: it may be a credential.
            let mut v = HeaderValue::from_str(value.trim()).map_err(|_| {
                UploadError::Config(format!("the value of header {n} is not valid"))
            })?;
            match n.as_str() {
                "content-length" | "transfer-encoding" | "host" | "content-md5" => {
                    return Err(UploadError::Config(format!(
                        "header {n} is set by hprof-shrink and cannot be given"
                    )))
                }
                "content-type" if cfg.method == Method::Post => return Err(UploadError::Config(
                    "header content-type cannot be given with --method post (multipart sets it)"
                        .into(),
                )),
                "content-type" => user_content_type = true,
                _ => {}
            }
            if is_credential(&n) {
                v.set_sensitive(true);
            }
            headers.push((n, v));
        }
        if let Some(t) = &cfg.token {
            if headers.iter().any(|(n, _)| n == AUTHORIZATION) {
                return Err(UploadError::Config(format!(
                    "both {TOKEN_ENV} and an Authorization header are given; give one"
                )));
            }
            if HeaderValue::from_str(&format!("Bearer {}", t.secret())).is_err() {
                return Err(UploadError::Config(format!(
                    "{TOKEN_ENV} holds characters a header cannot carry"
                )));
            }
        }

        install_crypto_provider();
        let mut builder = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            // The total timeout is set per request, from the size of the file.
            .connect_timeout(cfg.connect_timeout)
            .user_agent(concat!("hprof-shrink/", env!("CARGO_PKG_VERSION")));
        for ca in &cfg.ca_certs {
            let pem = std::fs::read(ca).map_err(|e| UploadError::Io {
                path: ca.clone(),
                source: e,
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                UploadError::Config(format!("{}: not PEM certificates: {e}", ca.display()))
            })?;
            if certs.is_empty() {
                return Err(UploadError::Config(format!(
                    "{}: holds no PEM certificate",
                    ca.display()
                )));
            }
            builder = builder.tls_certs_merge(certs);
        }
        if cfg.insecure {
            builder = builder.tls_danger_accept_invalid_certs(true);
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| UploadError::Setup(format!("cannot start the HTTP runtime: {e}")))?;
        let client = {
            let _in_runtime = rt.enter();
            builder
                .build()
                .map_err(|e| UploadError::Config(format!("cannot set up HTTP: {}", describe(e))))?
        };
        Ok(Uploader {
            cfg,
            client,
            rt,
            headers,
            user_content_type,
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &UploadConfig {
        &self.cfg
    }

    /// True once the run was asked to stop.
    pub fn cancelled(&self) -> bool {
        self.cfg.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// True once the run's deadline (`RetryPolicy::deadline`) has passed.
    pub fn deadline_passed(&self) -> bool {
        self.cfg
            .retry
            .deadline
            .is_some_and(|d| std::time::SystemTime::now() >= d)
    }

    /// What must never be printed: the token and the value of every extra header (and,
    /// for a value with a scheme such as `Basic xyz`, the part after it), where at least
    /// 4 characters long (shorter ones are no secret, and cutting them out would mangle
    /// messages).
    fn secrets(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.cfg.token.iter().map(Token::secret).collect();
        for (name, value) in &self.cfg.headers {
            if name.trim().eq_ignore_ascii_case("content-type") {
                continue;
            }
            let value = value.trim();
            out.push(value);
            if let Some((_, rest)) = value.split_once(' ') {
                out.push(rest.trim());
            }
        }
        out.retain(|s| s.len() >= 4);
        // Longest first, so a value is cut out whole before a part of it is looked for.
        out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        out
    }

    /// Logs a line, with the job's progress display (if any) out of the way.
    fn log(&self, transfer: Option<&Arc<dyn Transfer>>, msg: &str) {
        if let Some(log) = &self.cfg.log {
            let line = redact::scrub(msg, &self.secrets());
            match transfer {
                Some(t) => t.suspend(&mut || log(&line)),
                None => log(&line),
            }
        }
    }

    fn verbose(&self, transfer: Option<&Arc<dyn Transfer>>, msg: impl FnOnce() -> String) {
        if self.cfg.verbose {
            self.log(transfer, &msg());
        }
    }

    /// Uploads `path`, retrying as the policy says. Succeeds only on a 2xx. Blocks: from
    /// async code, call it through `spawn_blocking` (inside a runtime it is refused).
    pub fn upload(&self, path: &Path) -> Result<UploadOutcome, UploadError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(UploadError::Config(
                "Uploader::upload blocks and cannot run inside an async runtime; use spawn_blocking"
                    .into(),
            ));
        }
        let started = Instant::now();
        let cancelled = || UploadError::Cancelled {
            path: path.to_path_buf(),
        };
        if self.cancelled() {
            return Err(cancelled());
        }
        if self.deadline_passed() {
            return Err(UploadError::Deadline {
                path: path.to_path_buf(),
                attempts: 0,
                last: None,
            });
        }
        let job = self.job(path)?;
        let result = retry::run(
            &self.cfg.retry,
            &mut CancellableClock(self.cfg.cancel),
            &mut fastrand::f64,
            &mut |error: &String, n, wait| {
                self.log(
                    job.transfer.as_ref(),
                    &format!(
                        "{}: attempt {n} failed: {error}; retrying in {:.1} s",
                        job.name,
                        wait.as_secs_f64()
                    ),
                )
            },
            &mut |n| self.attempt(&job, n),
        );
        if let Some(t) = &job.transfer {
            t.finish();
        }
        if result.is_err() && self.cancelled() {
            return Err(cancelled());
        }
        let path = path.to_path_buf();
        match result {
            Ok(((status, url), attempts)) => Ok(UploadOutcome {
                path,
                bytes: job.digest.len,
                md5: job.digest.md5_hex(),
                status,
                attempts,
                url,
                elapsed: started.elapsed(),
            }),
            Err(f) => Err(self.failed(path, f, &job)),
        }
    }

    /// What the attempts at `path` need to know: the file checked to be a regular file,
    /// its size, MD5 and kind read once, and (for a POST of a package) its `result.info`
    /// fields.
    fn job<'p>(&self, path: &'p Path) -> Result<Job<'p>, UploadError> {
        let io_err = |e| UploadError::Io {
            path: path.to_path_buf(),
            source: e,
        };
        // Looked at before it is opened: opening a FIFO would wait for a writer.
        if !std::fs::metadata(path).map_err(io_err)?.is_file() {
            return Err(UploadError::Rejected {
                path: path.to_path_buf(),
                detail: "not a regular file".into(),
                status: None,
            });
        }
        let mut file = File::open(path).map_err(io_err)?;
        if !file.metadata().map_err(io_err)?.is_file() {
            return Err(UploadError::Rejected {
                path: path.to_path_buf(),
                detail: "not a regular file".into(),
                status: None,
            });
        }
        let digest = package::digest(&mut file).map_err(io_err)?;
        drop(file);
        let fields = match self.cfg.method {
            // A trace has no result.info: the server reads what it says of its app.
            Method::Post if digest.is_trace() => Vec::new(),
            Method::Post => {
                package::result_info(path).map_err(|source| UploadError::NotAPackage {
                    path: path.to_path_buf(),
                    source,
                })?
            }
            Method::Put => Vec::new(),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "upload.zip".into());
        let transfer = match &self.cfg.meter {
            Some(m) if digest.len >= PROGRESS_MIN => m.start(&name, digest.len),
            _ => None,
        };
        Ok(Job {
            path,
            name,
            timeout: self
                .cfg
                .timeout
                .unwrap_or_else(|| default_timeout(digest.len)),
            digest,
            fields,
            transfer,
            last_unreachable: std::cell::Cell::new(false),
            last_status: std::cell::Cell::new(None),
        })
    }

    /// The error of an upload whose attempts ended without success.
    fn failed(&self, path: PathBuf, f: Failure<String>, job: &Job<'_>) -> UploadError {
        match f.gave_up {
            None => UploadError::Rejected {
                path,
                detail: f.error,
                status: job.last_status.get(),
            },
            Some(GiveUp::Exhausted) => UploadError::Exhausted {
                path,
                attempts: f.attempts,
                last: f.error,
                unreachable: job.last_unreachable.get(),
            },
            Some(GiveUp::Deadline) => UploadError::Deadline {
                path,
                attempts: f.attempts,
                last: Some(f.error),
            },
            Some(GiveUp::RetryAfterTooLong(wait)) => UploadError::RetryAfterTooLong {
                path,
                attempts: f.attempts,
                wait,
                max: self.cfg.retry.max_retry_after,
                last: f.error,
            },
        }
    }

    fn attempt(&self, job: &Job, n: u32) -> Step<(u16, String), String> {
        job.last_unreachable.set(false);
        job.last_status.set(None);
        let Some(cancel) = self.cfg.cancel else {
            return self.rt.block_on(self.attempt_async(job, n));
        };
        let stopped = || cancel.load(Ordering::Relaxed);
        if stopped() {
            return Step::Fatal("cancelled".into());
        }
        // The attempt, or "cancelled" within a tenth of a second of the flag being set:
        // a ticking interval wakes this future to look at the flag.
        self.rt.block_on(async {
            let mut attempt = std::pin::pin!(self.attempt_async(job, n));
            let mut tick = tokio::time::interval(CANCEL_POLL);
            std::future::poll_fn(|cx| {
                if let Poll::Ready(step) = std::future::Future::poll(attempt.as_mut(), cx) {
                    return Poll::Ready(step);
                }
                while tick.poll_tick(cx).is_ready() {}
                if stopped() {
                    return Poll::Ready(Step::Fatal("cancelled".into()));
                }
                Poll::Pending
            })
            .await
        })
    }

    /// One attempt, following redirects. The `Ok` value is the status and the final URL.
    async fn attempt_async(&self, job: &Job<'_>, n: u32) -> Step<(u16, String), String> {
        let mut url = self.cfg.url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let trusted = same_origin(&url, &self.cfg.url);
            let file = match reopen(job) {
                Ok(f) => f,
                Err(e) => return Step::Fatal(e.to_string()),
            };
            if let Some(t) = &job.transfer {
                t.restart();
            }
            let body = FileBody::reported(
                tokio::fs::File::from_std(file),
                job.digest.len,
                job.transfer.clone(),
            );
            let req = self.request(job, &url, trusted, body);
            self.verbose(job.transfer.as_ref(), || {
                self.request_line(job, n, &url, trusted)
            });
            let t = Instant::now();
            let resp = match req.send().await {
                Ok(r) => r,
                Err(e) => return self.network_error(e, job),
            };
            let status = resp.status();
            self.verbose(job.transfer.as_ref(), || {
                format!(
                    "{}: {} from {} in {:.2} s",
                    job.name,
                    status,
                    redact::url(&url),
                    t.elapsed().as_secs_f64()
                )
            });
            if status.is_success() {
                return self.succeeded(&resp, job, &url);
            }
            if matches!(status.as_u16(), 301 | 302 | 307 | 308) {
                match self.redirect_target(&resp, &url) {
                    Ok(next) => {
                        self.verbose(job.transfer.as_ref(), || {
                            format!(
                                "{}: {status}: following to {}{}",
                                job.name,
                                redact::url(&next),
                                if same_origin(&next, &self.cfg.url) {
                                    ""
                                } else {
                                    " (another origin: credentials not sent)"
                                }
                            )
                        });
                        url = next;
                        continue;
                    }
                    Err(e) => return Step::Fatal(e.to_string()),
                }
            }
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            job.last_status.set(Some(status.as_u16()));
            let msg = self.http_error(resp, &url).await;
            return if retry::retryable_status(status.as_u16()) {
                Step::Transient {
                    error: msg,
                    retry_after,
                }
            } else {
                Step::Fatal(msg)
            };
        }
        Step::Fatal(format!(
            "more than {MAX_REDIRECTS} redirects from {}",
            redact::url(&self.cfg.url)
        ))
    }

    /// What `verbose` says of a request: method, URL, size, MD5 and the names (never the
    /// values) of the extra headers sent.
    fn request_line(&self, job: &Job<'_>, n: u32, url: &Url, trusted: bool) -> String {
        let mut names: Vec<String> = self
            .headers
            .iter()
            .filter(|(k, _)| trusted || !is_credential(k))
            .map(|(k, _)| k.to_string())
            .collect();
        if trusted && self.cfg.token.is_some() {
            names.push(format!("authorization (from {TOKEN_ENV})"));
        }
        format!(
            "{}: attempt {n}: {} {} ({} bytes, md5 {}); extra headers: {}",
            job.name,
            match self.cfg.method {
                Method::Post => "POST multipart",
                Method::Put => "PUT",
            },
            redact::url(url),
            job.digest.len,
            job.digest.md5_hex(),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )
    }

    /// A 2xx: done, unless a PUT's ETag shows the stored bytes are not the file's.
    fn succeeded(&self, resp: &Response, job: &Job<'_>, url: &Url) -> Step<(u16, String), String> {
        let status = resp.status();
        if self.cfg.method == Method::Put {
            if let Some(etag) = etag_mismatch(resp, &job.digest.md5_hex()) {
                // The server did not check Content-MD5 and stored other bytes;
                // sending again overwrites them.
                return Step::Transient {
                    error: format!(
                        "{status} from {}, but its ETag {etag} is not the MD5 {} of the file: the bytes were damaged on the way",
                        redact::url(url),
                        job.digest.md5_hex()
                    ),
                    retry_after: None,
                };
            }
        }
        Step::Done((status.as_u16(), redact::url(url)))
    }

    fn request(
        &self,
        job: &Job,
        url: &Url,
        trusted: bool,
        body: FileBody,
    ) -> reqwest::RequestBuilder {
        let method = match self.cfg.method {
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
        };
        let mut req = self
            .client
            .request(method, url.clone())
            .timeout(job.attempt_timeout(self.cfg.retry.deadline));
        for (k, v) in &self.headers {
            // To another origin: only what the upload's format needs, unless asked.
            let follows =
                *k == CONTENT_TYPE || (self.cfg.headers_follow_redirects && !is_credential(k));
            if trusted || follows {
                req = req.header(k, v);
            }
        }
        if let (true, Some(t)) = (trusted, &self.cfg.token) {
            // Checked in `new`.
            if let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", t.secret())) {
                v.set_sensitive(true);
                req = req.header(AUTHORIZATION, v);
            }
        }
        let len = job.digest.len;
        match self.cfg.method {
            Method::Put => {
                if !self.user_content_type {
                    req = req.header(CONTENT_TYPE, job.digest.mime());
                }
                // The body's exact size makes the request carry Content-Length.
                req.header("content-md5", job.digest.md5_base64())
                    .body(Body::wrap(body))
            }
            Method::Post => {
                let mut form = multipart::Form::new();
                // Fields before the file, so a streaming server has them before the bytes.
                for (k, v) in &job.fields {
                    if k != "file" && k != "md5" {
                        form = form.text(k.clone(), v.clone());
                    }
                }
                let part = multipart::Part::stream_with_length(Body::wrap(body), len)
                    .file_name(job.name.clone())
                    .mime_str(job.digest.mime())
                    .expect("a valid MIME type");
                form = form.text("md5", job.digest.md5_hex()).part("file", part);
                req.multipart(form)
            }
        }
    }

    fn redirect_target(&self, resp: &Response, from: &Url) -> Result<Url, RedirectError> {
        let status = resp.status();
        let shown = || redact::url(from);
        let loc = resp
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| RedirectError::NoLocation {
                status,
                from: shown(),
            })?;
        let next = from
            .join(loc)
            .map_err(|source| RedirectError::BadLocation {
                status,
                from: shown(),
                source,
            })?;
        if !matches!(next.scheme(), "http" | "https") {
            return Err(RedirectError::Scheme {
                status,
                from: shown(),
                scheme: next.scheme().to_string(),
            });
        }
        if from.scheme() == "https" && next.scheme() == "http" {
            return Err(RedirectError::Downgrade {
                status,
                from: shown(),
                to: redact::url(&next),
            });
        }
        Ok(next)
    }

    /// "HTTP 400 Bad Request from URL: start of the body".
    async fn http_error(&self, mut resp: Response, url: &Url) -> String {
        let status = resp.status();
        let mut body = Vec::new();
        let mut ended = false;
        // A server that never finishes its body is cut off by the request timeout.
        while body.len() < 4096 {
            match resp.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => {
                    ended = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let secrets = self.secrets();
        // Read only so far (the limit, an error, a timeout): a secret cut in two there
        // cannot be matched whole.
        let read = if ended {
            &body[..]
        } else {
            redact::without_partial_secret(&body, &secrets)
        };
        let excerpt = redact::excerpt(read, EXCERPT_CHARS, &secrets);
        if excerpt.is_empty() {
            format!("HTTP {status} from {}", redact::url(url))
        } else {
            format!("HTTP {status} from {}: {excerpt}", redact::url(url))
        }
    }

    fn network_error(&self, e: reqwest::Error, job: &Job) -> Step<(u16, String), String> {
        let builder = e.is_builder();
        let timeout = e.is_timeout();
        let connect = e.is_connect();
        let tls = tls_rejected(&e);
        let detail = redact::scrub(&describe(e), &self.secrets());
        let url = redact::url(&self.cfg.url);
        job.last_unreachable.set(timeout || connect);
        if builder {
            Step::Fatal(format!("cannot build the request to {url}: {detail}"))
        } else if tls {
            Step::Fatal(format!(
                "TLS certificate of {url} not accepted: {detail} (not retried; --cacert FILE trusts a private CA)"
            ))
        } else if timeout && connect {
            Step::Transient {
                error: format!(
                    "cannot connect to {url} within {:.0} s (--connect-timeout)",
                    self.cfg.connect_timeout.as_secs_f64()
                ),
                retry_after: None,
            }
        } else if timeout {
            Step::Transient {
                error: format!(
                    "no complete answer from {url} within {:.0} s ({detail})",
                    job.timeout.as_secs_f64()
                ),
                retry_after: None,
            }
        } else if connect {
            Step::Transient {
                error: format!("cannot connect to {url}: {detail}"),
                retry_after: None,
            }
        } else {
            Step::Transient {
                error: format!("connection to {url} failed: {detail}"),
                retry_after: None,
            }
        }
    }
}

/// The next error in a chain. `io::Error::source` skips the error an `io::Error` wraps
/// (it returns that error's source), so an `io::Error` is looked into instead.
fn cause<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    match err.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
        Some(inner) => Some(inner),
        None => err.source(),
    }
}

/// The error and its causes, each once, without the URL (it is shown redacted by the
/// caller).
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(err) = cur {
        let s = err.to_string();
        if !s.is_empty() && !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = cause(err);
    }
    parts.join(": ")
}

/// True when the chain holds rustls refusing the server's certificate: retrying cannot help.
fn tls_rejected(e: &reqwest::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return matches!(
                r,
                rustls::Error::InvalidCertificate(_)
                    | rustls::Error::NoCertificatesPresented
                    | rustls::Error::UnsupportedNameType
            );
        }
        cur = cause(err);
    }
    false
}

/// The ETag of a PUT response when it is an MD5 (32 hex digits, the rule for single-part
/// uploads on S3, OSS, COS and MinIO) and differs from the file's. Not for SSE-KMS or SSE-C
/// objects, whose ETag is not the MD5 of the content.
fn etag_mismatch(resp: &Response, md5_hex: &str) -> Option<String> {
    let h = resp.headers();
    let kms = h
        .get("x-amz-server-side-encryption")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("aws:kms"));
    if kms || h.contains_key("x-amz-server-side-encryption-customer-algorithm") {
        return None;
    }
    let etag = h.get(ETAG)?.to_str().ok()?.trim();
    let etag = etag.strip_prefix("W/").unwrap_or(etag).trim_matches('"');
    let is_md5 = etag.len() == 32 && etag.bytes().all(|b| b.is_ascii_hexdigit());
    (is_md5 && !etag.eq_ignore_ascii_case(md5_hex)).then(|| etag.to_string())
}

/// How often a running attempt or a retry wait looks at the cancellation flag.
const CANCEL_POLL: Duration = Duration::from_millis(100);

/// The system clock, whose waits end early once the cancellation flag is set.
struct CancellableClock(Option<&'static AtomicBool>);

impl Clock for CancellableClock {
    fn now(&self) -> std::time::SystemTime {
        SystemClock.now()
    }
    fn sleep(&mut self, d: Duration) {
        let Some(cancel) = self.0 else {
            return SystemClock.sleep(d);
        };
        let end = Instant::now() + d;
        while !cancel.load(Ordering::Relaxed) {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(CANCEL_POLL));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_of_a_config_shows_no_secret() {
        let mut cfg = UploadConfig::new(
            Url::parse("https://h.example/up?X-Amz-Signature=presigned-secret").unwrap(),
        );
        cfg.token = Token::new("tok-secret-123");
        cfg.headers = vec![("X-Api-Key".into(), "header-secret".into())];
        let shown = format!("{cfg:?}");
        for secret in ["tok-secret-123", "header-secret", "presigned-secret"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(
            shown.contains("X-Api-Key") && shown.contains("Token(***)"),
            "{shown}"
        );
    }

    #[test]
    fn default_timeout_grows_with_size() {
        assert_eq!(default_timeout(0), Duration::from_secs(300));
        assert_eq!(default_timeout(75 * 1024 * 1024), Duration::from_secs(300));
        assert_eq!(
            default_timeout(1024 * 1024 * 1024),
            Duration::from_secs(4096)
        );
    }

    #[test]
    fn origins() {
        let u = |s| Url::parse(s).unwrap();
        assert!(same_origin(&u("http://a:80/x"), &u("http://a/y?z")));
        assert!(!same_origin(&u("http://a/x"), &u("https://a/x")));
        assert!(!same_origin(&u("http://a:1/x"), &u("http://a:2/x")));
        assert!(!same_origin(
            &u("http://127.0.0.1/x"),
            &u("http://localhost/x")
        ));
    }

    #[test]
    fn bad_configurations_are_refused_without_showing_values() {
        let base = UploadConfig::new(Url::parse("http://127.0.0.1:9/").unwrap());
        let refused = |cfg: UploadConfig| match Uploader::new(cfg) {
            Err(UploadError::Config(msg)) => msg,
            Err(e) => panic!("unexpected {e}"),
            Ok(_) => panic!("accepted"),
        };
        let mut c = base.clone();
        c.url = Url::parse("ftp://h/x").unwrap();
        assert!(refused(c).contains("not an http or https URL"));
        let mut c = base.clone();
        c.headers = vec![("X-Key".into(), "sec\u{1}ret".into())];
        let msg = refused(c);
        assert!(msg.contains("x-key") && !msg.contains("sec"), "{msg}");
        let mut c = base.clone();
        c.headers = vec![("Content-MD5".into(), "x".into())];
        assert!(refused(c).contains("set by hprof-shrink"));
        let mut c = base.clone();
        c.headers = vec![("Content-Type".into(), "text/plain".into())];
        assert!(refused(c).contains("multipart"));
        let mut c = base.clone();
        c.token = Token::new("tok");
        c.headers = vec![("Authorization".into(), "Basic x".into())];
        assert!(refused(c).contains("give one"));
        let mut c = base.clone();
        c.token = Token::new("tok\nen");
        let msg = refused(c);
        assert!(msg.contains(TOKEN_ENV) && !msg.contains("tok"), "{msg}");
        let mut c = base;
        c.method = Method::Put;
        c.headers = vec![("Content-Type".into(), "application/octet-stream".into())];
        assert!(Uploader::new(c).is_ok());
    }

    #[test]
    fn refused_inside_an_async_runtime_rather_than_panicking() {
        let up = Uploader::new(UploadConfig::new(
            Url::parse("http://127.0.0.1:9/").unwrap(),
        ))
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = rt.block_on(async { up.upload(Path::new("whatever.zip")) });
        assert!(matches!(r, Err(UploadError::Config(m)) if m.contains("spawn_blocking")));
    }

    #[test]
    fn empty_token_is_no_token() {
        assert!(Token::new("").is_none());
        assert_eq!(format!("{:?}", Token::new("abc").unwrap()), "Token(***)");
    }
}
