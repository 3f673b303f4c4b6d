//! Uploading packages: one zip ([`upload_file`], or an [`Uploader`] for many) or a whole
//! outbox directory ([`Outbox::drain`]).
//!
//! - [`client`]: the request of each protocol (multipart POST, raw PUT with Content-MD5),
//!   streamed from the file, with timeouts, redirects and retries;
//! - [`retry`]: when to try again and how long to wait (pure);
//! - [`outbox`]: the directory of zips waiting, with per-zip locks;
//! - [`redact`]: keeping tokens and signatures out of what is printed;
//! - [`http`]: the TLS provider and the streamed file body, shared with the server's S3 store;
//! - [`meter`]: where the bytes sent are reported (the caller's progress bar);
//! - [`mapping`]: where an app version's mapping is sent.

#![warn(missing_docs)]

pub mod client;
pub mod error;
pub mod http;
pub mod mapping;
pub mod meter;
pub mod outbox;
pub mod package;
pub mod redact;
pub mod retry;

pub use client::{
    default_timeout, upload_file, Log, Method, Token, UploadConfig, UploadOutcome, Uploader,
    TOKEN_ENV,
};
pub use error::UploadError;
pub use meter::{Meter, Transfer};
pub use outbox::{
    AfterUpload, DrainReport, Drained, Incoming, LeftBehind, Outbox, Recovered, Rejected, Sent,
    REJECTED_DIR, SENT_DIR,
};
/// The URL type of the configuration (reqwest's), so that callers need no reqwest of their own.
pub use reqwest::Url;
pub use retry::RetryPolicy;
