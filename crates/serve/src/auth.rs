//! Who may upload and who may read. Tokens come from the environment or files, never the
//! command line; they are compared in constant time and never printed.

use std::fmt;

use axum::http::{header, HeaderMap};
use base64::Engine;
use sha1::{Digest, Sha1};
use subtle::ConstantTimeEq;

/// A token the server holds. No `Display`; its `Debug` hides it.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// An empty or blank token is no token.
    pub fn new(s: impl Into<String>) -> Option<Secret> {
        let s = s.into().trim().to_string();
        (!s.is_empty()).then_some(Secret(s))
    }

    /// Constant time in the content, and in its length too: both sides are hashed first,
    /// so a wrong guess's timing says nothing about how close it was.
    pub fn matches(&self, given: &str) -> bool {
        let a = Sha1::digest(self.0.as_bytes());
        let b = Sha1::digest(given.as_bytes());
        a.as_slice().ct_eq(b.as_slice()).into()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// What a request presents: a bearer token (what `upload` and API clients send) or the
/// password of HTTP Basic (what a browser asks a person for; the user name is ignored).
pub fn presented(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = v.split_once(' ')?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(rest.trim().to_string());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()?;
        let text = String::from_utf8(raw).ok()?;
        return text.split_once(':').map(|(_, p)| p.to_string());
    }
    None
}

/// The access rules.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// None: anyone who reaches the server may upload.
    pub upload: Option<Secret>,
    /// None: only with `public_read` can anyone read.
    pub read: Option<Secret>,
    pub public_read: bool,
}

impl Access {
    pub fn may_upload(&self, headers: &HeaderMap) -> bool {
        match &self.upload {
            None => true,
            Some(s) => presented(headers).is_some_and(|p| s.matches(&p)),
        }
    }

    pub fn may_read(&self, headers: &HeaderMap) -> bool {
        self.public_read
            || self
                .read
                .as_ref()
                .is_some_and(|s| presented(headers).is_some_and(|p| s.matches(&p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn bearer_and_basic_are_checked() {
        let a = Access {
            upload: Secret::new("up"),
            read: Secret::new("rd"),
            public_read: false,
        };
        assert!(a.may_upload(&with_auth("Bearer up")));
        assert!(!a.may_upload(&with_auth("Bearer rd")));
        assert!(!a.may_upload(&HeaderMap::new()));
        assert!(a.may_read(&with_auth("bearer rd")));
        // user:rd
        assert!(a.may_read(&with_auth("Basic dXNlcjpyZA==")));
        assert!(!a.may_read(&with_auth("Basic dXNlcjp1cA==")));
        assert!(!a.may_read(&HeaderMap::new()));
        let open = Access {
            public_read: true,
            ..Access::default()
        };
        assert!(open.may_read(&HeaderMap::new()) && open.may_upload(&HeaderMap::new()));
    }

    #[test]
    fn a_secret_never_shows() {
        let s = Secret::new("hunter2").unwrap();
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(Secret::new("  ").is_none());
    }
}
