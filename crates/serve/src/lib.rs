//! `serve`: receive packages as `upload` sends them, analyze them in the background, group
//! leaks by signature across devices, show them in a browser and as JSON.
//!
//! - [`receive`]: the two upload protocols, streamed to disk, checked, verified, stored,
//!   recorded (a package, or a Perfetto heap-graph trace: `heap_graph`); [`mappings`]: an app version's R8/ProGuard mapping, taken likewise;
//!   [`leakcanary`]: LeakCanary's own analysis text, recorded as an analyzed package;
//! - [`store`]: the metadata in SQLite or PostgreSQL (sqlx), with the analysis queue;
//! - [`blobs`]: packages, analyses and pictures in a directory or an S3 bucket ([`s3`]);
//! - [`jobs`]: the workers that claim queued packages under a lease and analyze them,
//!   each in a child process held to the server's [`Budget`] ([`background`]);
//! - [`guard`]: the data directory's lock, and the database file's identity;
//! - [`groups`]: leaks by signature, bitmaps by buffer hash; [`cache`]: the groups kept
//!   per filter, change by change, within a memory budget; [`triage`]: what is kept of an
//!   analysis's triage, and the no-leak groups' path signature;
//! - [`limits`]: how much is kept and shown of what packages carry;
//! - [`views`] and [`pages`]: what readers get, as JSON and HTML; [`versions`]: leak groups
//!   per app version, new ones and how they move; [`no_leak`]: packages without a leak
//!   grouped by their top retainer's path;
//! - [`auth`]: the upload and read tokens, and the names a request without one may use;
//! - [`conn`], [`body`] and [`conn_limits`]: the accept loop, each connection's timeouts and the
//!   caps on connections and uploads; [`fault`]: failures of the server's own as 503/507.
//!
//! The data directory: `meta.sqlite` (and its WAL), `packages/<md5>.zip`,
//! `analyses/<id>.json`, `pictures/<hash>.png`, `mappings/<md5>.txt`, `reports/<md5>.txt`,
//! `tmp/` for bodies on their way in, `work/` for analyses under way, `serve.lock` (held while a server runs). With
//! `--database postgres://…` and `--store s3://…` only `tmp/` and `work/` are used, and several
//! processes (each with a data directory of its own) share the database and the bucket.

#![warn(missing_docs)]

mod api_error;
mod app;
pub mod auth;
pub mod background;
pub mod blobs;
pub mod body;
pub mod budget;
pub mod cache;
mod config;
pub mod conn;
pub mod conn_limits;
mod error;
pub mod fault;
pub mod groups;
pub mod guard;
mod heap_graph;
mod hex;
pub mod jobs;
pub mod leakcanary;
pub mod limits;
pub mod mappings;
pub mod no_leak;
pub mod pages;
pub mod receive;
mod rows;
pub mod s3;
mod server;
pub mod store;
#[cfg(test)]
mod test_rows;
pub mod title;
mod top_n;
pub mod triage;
pub mod versions;
pub mod views;

pub use app::{App, Dirs};
pub use auth::{Access, Secret};
pub use budget::Budget;
pub use config::{Config, DEFAULT_LEASE, DEFAULT_MAX_BYTES};
pub use conn_limits::Limits;
pub use error::ServeError;
/// Where informational lines go: the upload client's type, shared.
pub use hprof_shrink_upload::Log;
pub use server::{requeue_failed, router, run, start, Running};
