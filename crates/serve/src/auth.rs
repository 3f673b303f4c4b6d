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
/// `Err(())`: an Authorization header that is neither.
fn credential(headers: &HeaderMap) -> Option<Result<String, ()>> {
    let v = headers.get(header::AUTHORIZATION)?;
    Some(v.to_str().ok().and_then(parse_credential).ok_or(()))
}

fn parse_credential(v: &str) -> Option<String> {
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

/// The token a request presents, if any.
pub fn presented(headers: &HeaderMap) -> Option<String> {
    credential(headers).and_then(Result::ok)
}

/// Why a request may not do what it asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// It presents no token.
    Missing,
    /// It presents one, and not the one needed.
    Wrong,
}

/// Which token a request presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presented {
    /// No token.
    None,
    /// One that is neither of this server's (or an Authorization header it cannot read).
    Wrong,
    /// The upload token.
    Upload,
    /// The read token.
    Read,
}

/// The access rules.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// None: anyone who reaches the server may upload.
    pub upload: Option<Secret>,
    /// None: only with `public_read` can anyone read.
    pub read: Option<Secret>,
    /// Anyone may read, without a token (`--public-read`).
    pub public_read: bool,
    /// Names (lowercase, without port or final dot) a request without a token may give as
    /// its `Host`, besides IP addresses and loopback names (`--public-host`).
    pub public_hosts: Vec<String>,
}

impl Access {
    fn check(secret: Option<&Secret>, headers: &HeaderMap) -> Result<(), Denied> {
        let Some(s) = secret else { return Ok(()) };
        match credential(headers) {
            None => Err(Denied::Missing),
            Some(Ok(p)) if s.matches(&p) => Ok(()),
            Some(_) => Err(Denied::Wrong),
        }
    }

    /// Whether the request may upload, and if not why.
    pub fn upload_check(&self, headers: &HeaderMap) -> Result<(), Denied> {
        Self::check(self.upload.as_ref(), headers)
    }

    /// Whether the request may read, and if not why.
    pub fn read_check(&self, headers: &HeaderMap) -> Result<(), Denied> {
        if self.public_read {
            return Ok(());
        }
        match &self.read {
            Some(s) => Self::check(Some(s), headers),
            None => Err(Denied::Missing),
        }
    }

    /// Whether the request may upload.
    pub fn may_upload(&self, headers: &HeaderMap) -> bool {
        self.upload_check(headers).is_ok()
    }

    /// Whether the request may read.
    pub fn may_read(&self, headers: &HeaderMap) -> bool {
        self.read_check(headers).is_ok()
    }

    /// Which of this server's tokens the request presents.
    pub fn presented_token(&self, headers: &HeaderMap) -> Presented {
        match credential(headers) {
            None => Presented::None,
            Some(Err(())) => Presented::Wrong,
            Some(Ok(p)) => {
                if self.upload.as_ref().is_some_and(|s| s.matches(&p)) {
                    Presented::Upload
                } else if self.read.as_ref().is_some_and(|s| s.matches(&p)) {
                    Presented::Read
                } else {
                    Presented::Wrong
                }
            }
        }
    }

    /// Whether a request that presents no valid token may be answered under the name it
    /// gives (the request target's authority, else `Host`): an IP address (a page cannot
    /// make a browser send one that is not the address it connected to), a loopback name
    /// (`localhost`, `*.localhost`) or a `--public-host` name. Any other name may be a DNS
    /// rebinding: a web page whose own name was made to resolve to this server, reading
    /// it from the browser of someone who can reach it. A request with no name at all is
    /// no browser's, and passes.
    pub fn host_allowed<B>(&self, req: &axum::http::Request<B>) -> Result<(), UnknownHost> {
        let given = match req.uri().authority() {
            Some(a) => a.as_str().to_string(),
            None => match req.headers().get(header::HOST) {
                None => return Ok(()),
                Some(v) => match v.to_str() {
                    Ok(v) => v.to_string(),
                    Err(_) => {
                        let name = String::from_utf8_lossy(v.as_bytes()).into_owned();
                        return Err(UnknownHost { name });
                    }
                },
            },
        };
        let name = host_name(&given);
        let allowed = name.parse::<std::net::IpAddr>().is_ok()
            || name == "localhost"
            || name.ends_with(".localhost")
            || self.public_hosts.contains(&name);
        if allowed {
            Ok(())
        } else {
            Err(UnknownHost { name })
        }
    }
}

/// A request without a token names a host this server does not answer to (421).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this server does not answer to the name {name:?} without a token: address it by IP \
     address, as localhost, or by a name given to it with --public-host"
)]
pub struct UnknownHost {
    /// The name the request gave, as compared.
    pub name: String,
}

/// The host of a `Host` value or authority, as compared: no user info, port, brackets
/// or final dot, lowercase.
pub fn host_name(given: &str) -> String {
    let s = given.rsplit('@').next().unwrap_or("");
    let host = if let Some(rest) = s.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        match s.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => s,
        }
    };
    host.trim_end_matches('.').to_ascii_lowercase()
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
            ..Access::default()
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
    fn a_wrong_token_is_told_apart_from_a_missing_one() {
        let a = Access {
            upload: Secret::new("up"),
            read: Secret::new("rd"),
            ..Access::default()
        };
        assert_eq!(a.upload_check(&HeaderMap::new()), Err(Denied::Missing));
        assert_eq!(a.upload_check(&with_auth("Bearer rd")), Err(Denied::Wrong));
        assert_eq!(a.upload_check(&with_auth("Token up")), Err(Denied::Wrong));
        assert_eq!(a.read_check(&HeaderMap::new()), Err(Denied::Missing));
        assert_eq!(a.read_check(&with_auth("Bearer up")), Err(Denied::Wrong));
        assert_eq!(
            a.presented_token(&with_auth("Bearer up")),
            Presented::Upload
        );
        assert_eq!(a.presented_token(&with_auth("Bearer rd")), Presented::Read);
        assert_eq!(a.presented_token(&with_auth("Bearer x")), Presented::Wrong);
        assert_eq!(a.presented_token(&HeaderMap::new()), Presented::None);
    }

    #[test]
    fn hosts_a_request_without_a_token_may_name() {
        let a = Access {
            public_read: true,
            public_hosts: vec!["heaps.example".into()],
            ..Access::default()
        };
        let req = |host: &str| {
            axum::http::Request::builder()
                .uri("/")
                .header(header::HOST, host)
                .body(())
                .unwrap()
        };
        for ok in [
            "127.0.0.1:8080",
            "10.1.2.3",
            "[::1]:8080",
            "[fe80::1]",
            "localhost:8080",
            "LOCALHOST.",
            "app.localhost",
            "heaps.example:8080",
            "Heaps.Example.",
        ] {
            assert_eq!(a.host_allowed(&req(ok)), Ok(()), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "heaps.example.evil",
            "2130706433",
        ] {
            assert!(a.host_allowed(&req(bad)).is_err(), "{bad}");
        }
        // The request target's authority is what a proxy-form request names.
        let absolute = axum::http::Request::builder()
            .uri("http://evil.example/")
            .header(header::HOST, "127.0.0.1")
            .body(())
            .unwrap();
        let name = "evil.example".to_string();
        assert_eq!(a.host_allowed(&absolute), Err(UnknownHost { name }));
        let none = axum::http::Request::builder().uri("/").body(()).unwrap();
        assert_eq!(a.host_allowed(&none), Ok(()));
    }

    #[test]
    fn a_secret_never_shows() {
        let s = Secret::new("hunter2").unwrap();
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(Secret::new("  ").is_none());
    }
}
