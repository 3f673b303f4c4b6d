//! One error type for every answer that is not a success: a request refused (400, 401,
//! 404, 408, 409, 413, 422, 503 when too busy) or a failure of the server's own ([`Fault`]:
//! 500, 503, 507). Each becomes the same `{"error": "…"}` body; a 401 says which token it
//! wants, a refusal that leaves the body unread closes the connection, and what the log
//! should see rides along with the answer ([`Why`]), never in it.

use std::io;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::fault::{Fault, Kind, Why};
use crate::guard::DatabaseGone;

/// Which token a 401 asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Realm {
    /// The upload token, as `Authorization: Bearer`.
    Upload,
    /// The read token: a browser asks the person for it (any user name, the token as
    /// password).
    Read,
}

impl Realm {
    fn challenge(self) -> HeaderValue {
        match self {
            Realm::Upload => HeaderValue::from_static("Bearer realm=\"hprof-shrink upload\""),
            Realm::Read => {
                HeaderValue::from_static("Basic realm=\"hprof-shrink\", charset=\"UTF-8\"")
            }
        }
    }
}

/// Why a request got no success: the status, a sentence for the client, the cause for the
/// log (a failure of the server's own), how long to wait before trying again.
#[derive(Debug)]
pub struct ApiError {
    /// The answer's status.
    pub status: StatusCode,
    /// What the client is told.
    pub message: String,
    /// The cause, for the log only: it may name the server's paths.
    detail: Option<String>,
    retry_after: Option<u32>,
    realm: Option<Realm>,
    /// Whether the log gets a line for the answer: refused uploads and the server's own
    /// failures do; a reader's 404 does not.
    logged: bool,
}

impl ApiError {
    /// `status` with `message`, not logged.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            detail: None,
            retry_after: None,
            realm: None,
            logged: false,
        }
    }

    /// The same answer, with a line in the log.
    pub fn logged(self) -> ApiError {
        ApiError {
            logged: true,
            ..self
        }
    }

    /// The same answer, with `Retry-After: secs`.
    pub fn retry_after(self, secs: u32) -> ApiError {
        ApiError {
            retry_after: Some(secs),
            ..self
        }
    }

    /// 404 with `message`.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    /// 401 asking for `realm`'s token.
    pub fn unauthorized(message: impl Into<String>, realm: Realm) -> ApiError {
        ApiError {
            realm: Some(realm),
            ..ApiError::new(StatusCode::UNAUTHORIZED, message)
        }
    }

    /// A fault of the server's own (500), `detail` for the log.
    pub fn internal(detail: impl Into<String>) -> ApiError {
        Fault::internal(detail).into()
    }

    /// The package store failed (503 or 507).
    pub fn store(e: &io::Error) -> ApiError {
        Fault::io("the package store", e).into()
    }

    /// The server's disk failed (503 or 507).
    pub fn disk(e: &io::Error) -> ApiError {
        Fault::io("the server's disk", e).into()
    }
}

impl From<Fault> for ApiError {
    fn from(f: Fault) -> ApiError {
        ApiError {
            status: f.status(),
            message: f.message(),
            retry_after: f.retry_after(),
            detail: Some(f.detail),
            realm: None,
            logged: true,
        }
    }
}

/// The database failed: 503 or 507, as [`Fault::db`] classifies it.
impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> ApiError {
        Fault::db(&e).into()
    }
}

/// The database file is not the one this server opened: 503, nothing recorded now would
/// outlive a restart. Why is logged once, when first seen (`App::database_intact`), not
/// with every refusal.
impl From<DatabaseGone> for ApiError {
    fn from(_: DatabaseGone) -> ApiError {
        Fault {
            kind: Kind::Unavailable,
            what: "the database",
            detail: "its file is not the one this server opened".into(),
        }
        .into()
    }
}

/// A blocking task of the handler panicked or was cancelled: 500.
impl From<tokio::task::JoinError> for ApiError {
    fn from(e: tokio::task::JoinError) -> ApiError {
        ApiError::internal(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, Json(json!({ "error": self.message }))).into_response();
        let h = r.headers_mut();
        if let Some(realm) = self.realm {
            h.insert(header::WWW_AUTHENTICATE, realm.challenge());
        }
        if let Some(s) = self.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if matches!(
            self.status,
            StatusCode::PAYLOAD_TOO_LARGE | StatusCode::REQUEST_TIMEOUT
        ) {
            // The rest of the body is not read: the client must not reuse the connection.
            h.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if self.logged {
            let why = match self.detail {
                Some(d) => format!("{}: {d}", self.message),
                None => self.message,
            };
            r.extensions_mut().insert(Why(why));
        }
        r
    }
}
