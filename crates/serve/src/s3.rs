//! Just enough of S3 for the package store: PUT (from a file, streamed, with Content-MD5),
//! GET (streamed), HEAD. The rusty-s3 crate signs each request (AWS Signature Version 4,
//! as a pre-signed URL with our headers signed too) and does nothing else: it is sans-IO,
//! so the requests go out on the reqwest client the upload already uses, with no second
//! HTTP stack and no SDK. quick-xml reads the `Code` of an S3 error body.
//!
//! Where and as whom, from the usual environment variables: `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` (optional), `AWS_REGION` or
//! `AWS_DEFAULT_REGION` (default `us-east-1`), and `AWS_ENDPOINT_URL_S3` or
//! `AWS_ENDPOINT_URL` for an S3-compatible server (MinIO, Ceph, moto), addressed by path
//! (`ENDPOINT/BUCKET/KEY`); without one, AWS itself, addressed by virtual host.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use reqwest::header::{CONTENT_LENGTH, ETAG};
use reqwest::{Client, Method, Response, StatusCode, Url};
use rusty_s3::{Credentials, S3Action, UrlStyle};

/// How long a signed URL is good for. Each is sent at once by this process, so this only
/// bounds the clock skew tolerated, as S3 does for signed headers: 15 minutes.
const SIGNED_FOR: Duration = Duration::from_secs(15 * 60);

/// A bucket and a key prefix: `s3://BUCKET/PREFIX`.
#[derive(Clone)]
pub struct Bucket {
    http: Client,
    /// Shared by the clones (every task has one): one copy of the secret, a small Bucket.
    signer: Arc<Signer>,
    prefix: String,
}

struct Signer {
    bucket: rusty_s3::Bucket,
    creds: Credentials,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.signer.bucket.name(), self.prefix)
    }
}

/// Why an S3 package store cannot be set up: its URL or the `AWS_*` environment.
#[derive(Debug, thiserror::Error)]
pub enum S3ConfigError {
    /// Not `s3://…`.
    #[error("{url}: a package store is s3://BUCKET[/PREFIX]")]
    NotS3Url {
        /// The URL given.
        url: String,
    },
    /// The bucket's name is not one S3 allows.
    #[error("{url}: {bucket:?} is not a bucket name (3 to 63 of a-z, 0-9, '-', '.')")]
    BadBucket {
        /// The URL given.
        url: String,
        /// The bucket's name in it.
        bucket: String,
    },
    /// A URL resolves these as a file system would: "../other" would reach another bucket.
    #[error("{url}: a prefix has no '.' or '..' segment")]
    DotSegment {
        /// The URL given.
        url: String,
    },
    /// `AWS_ENDPOINT_URL` is not an HTTP(S) URL of a host.
    #[error("AWS_ENDPOINT_URL {value:?}: an endpoint is http(s)://HOST[:PORT]")]
    BadEndpoint {
        /// `AWS_ENDPOINT_URL`'s value.
        value: String,
    },
    /// `AWS_ACCESS_KEY_ID` or `AWS_SECRET_ACCESS_KEY` is not set.
    #[error("{url}: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set for an S3 store")]
    NoCredentials {
        /// The URL given.
        url: String,
    },
    /// `AWS_REGION` makes no endpoint URL.
    #[error("AWS_REGION {region:?}: {source}")]
    BadRegion {
        /// `AWS_REGION`'s value.
        region: String,
        /// Why its endpoint URL does not parse.
        source: url::ParseError,
    },
    /// The bucket and endpoint make no URL.
    #[error("{url}: no URL for this bucket ({source})")]
    NoBucketUrl {
        /// The URL given.
        url: String,
        /// Why.
        source: rusty_s3::BucketError,
    },
    /// The HTTP client could not be made.
    #[error("the S3 client: {0}")]
    Client(reqwest::Error),
}

/// Splits `s3://BUCKET[/PREFIX]`; the error says what is wrong.
pub fn parse_url(url: &str) -> Result<(String, String), S3ConfigError> {
    let rest = url
        .strip_prefix("s3://")
        .ok_or_else(|| S3ConfigError::NotS3Url { url: url.into() })?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let valid = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if !valid {
        return Err(S3ConfigError::BadBucket {
            url: url.into(),
            bucket: bucket.into(),
        });
    }
    let prefix = prefix.trim_matches('/');
    if prefix.split('/').any(|s| s == "." || s == "..") {
        return Err(S3ConfigError::DotSegment { url: url.into() });
    }
    Ok((bucket.to_string(), prefix.to_string()))
}

/// The server of `AWS_ENDPOINT_URL[_S3]`: `http(s)://HOST[:PORT]` and nothing more.
fn parse_endpoint(e: &str) -> Result<Url, S3ConfigError> {
    let bad = || S3ConfigError::BadEndpoint { value: e.into() };
    let url = Url::parse(e).map_err(|_| bad())?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some_and(|h| !h.is_empty())
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    if plain {
        Ok(url)
    } else {
        Err(bad())
    }
}

/// The code of an S3 error body (`<Error><Code>NoSuchKey</Code>…</Error>`), if it is one.
fn error_code(body: &str) -> Option<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(body);
    let mut path: Vec<String> = Vec::new();
    let mut code = String::new();
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) => path.push(e.local_name().as_ref().to_string()),
            Event::End(_) => {
                if path == ["Error", "Code"] {
                    // One line, and short: it ends up in a log line.
                    let code: String = code.trim().chars().take(100).collect();
                    return (!code.is_empty() && !code.contains(char::is_control)).then_some(code);
                }
                path.pop();
            }
            Event::Text(t) if path == ["Error", "Code"] => code.push_str(&t.xml10_content()),
            Event::Eof => return None,
            _ => {}
        }
    }
}

impl Bucket {
    /// The bucket of `s3://BUCKET/PREFIX`, with the endpoint and credentials from the
    /// environment. Nothing is sent yet.
    pub fn from_url(url: &str) -> Result<Bucket, S3ConfigError> {
        Bucket::from_url_and_env(url, |name| std::env::var(name).ok())
    }

    /// [`Bucket::from_url`] with the `AWS_*` variables read through `var` (tests, which
    /// cannot set the process's environment while other threads read it).
    pub fn from_url_and_env(
        url: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Bucket, S3ConfigError> {
        let env = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let (bucket, prefix) = parse_url(url)?;
        let key_id = env("AWS_ACCESS_KEY_ID");
        let secret = env("AWS_SECRET_ACCESS_KEY");
        let (Some(key_id), Some(secret)) = (key_id, secret) else {
            return Err(S3ConfigError::NoCredentials { url: url.into() });
        };
        let region = env("AWS_REGION")
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        // An S3-compatible server may have no DNS name per bucket (moto, an IP address):
        // addressed by path. AWS itself by virtual host, as it asks.
        let (endpoint, style) = match env("AWS_ENDPOINT_URL_S3").or_else(|| env("AWS_ENDPOINT_URL"))
        {
            Some(e) => (parse_endpoint(&e)?, UrlStyle::Path),
            None => (
                Url::parse(&format!("https://s3.{region}.amazonaws.com")).map_err(|source| {
                    S3ConfigError::BadRegion {
                        region: region.clone(),
                        source,
                    }
                })?,
                UrlStyle::VirtualHost,
            ),
        };
        let bucket = rusty_s3::Bucket::new(endpoint, style, bucket, region).map_err(|source| {
            S3ConfigError::NoBucketUrl {
                url: url.into(),
                source,
            }
        })?;
        let creds = match env("AWS_SESSION_TOKEN") {
            Some(token) => Credentials::new_with_token(key_id, secret, token),
            None => Credentials::new(key_id, secret),
        };
        hprof_shrink_upload::http::install_crypto_provider();
        let http = Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("hprof-shrink/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(S3ConfigError::Client)?;
        Ok(Bucket {
            http,
            signer: Arc::new(Signer { bucket, creds }),
            prefix,
        })
    }

    /// The object's key in the bucket: under the prefix.
    fn full_key(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix)
        }
    }

    /// The request of a signed action, to its pre-signed URL; the headers the action
    /// signed are the caller's to add, with the same values.
    fn request<'a, A: S3Action<'a>>(&self, action: &A) -> reqwest::RequestBuilder {
        let method = match A::METHOD {
            rusty_s3::Method::Head => Method::HEAD,
            rusty_s3::Method::Get => Method::GET,
            rusty_s3::Method::Post => Method::POST,
            rusty_s3::Method::Put => Method::PUT,
            rusty_s3::Method::Delete => Method::DELETE,
        };
        self.http.request(method, action.sign(SIGNED_FOR))
    }

    /// Sends; a failure names the request and every cause (reqwest's own message is only
    /// "error sending request").
    async fn send(
        &self,
        what: &str,
        key: &str,
        rb: reqwest::RequestBuilder,
    ) -> io::Result<Response> {
        rb.send().await.map_err(|e| {
            let mut msg = format!("S3 {what} {}/{key}: {e}", self.signer.bucket.name());
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                let _ = write!(msg, ": {s}");
                source = s.source();
            }
            io::Error::other(msg)
        })
    }

    async fn refused(&self, what: &str, key: &str, r: Response) -> io::Error {
        let status = r.status();
        let body = r.text().await.unwrap_or_default();
        let code = error_code(&body).unwrap_or_default();
        io::Error::other(format!(
            "S3 {what} {}/{key}: {status} {code}",
            self.signer.bucket.name()
        ))
    }

    /// That the bucket exists and these credentials reach it: a HEAD of the bucket.
    pub async fn check(&self) -> io::Result<()> {
        let action = self.signer.bucket.head_bucket(Some(&self.signer.creds));
        let r = self.send("HEAD", "", self.request(&action)).await?;
        match r.status() {
            s if s.is_success() => Ok(()),
            StatusCode::NOT_FOUND => Err(io::Error::other(format!(
                "S3 HEAD {}: no such bucket",
                self.signer.bucket.name()
            ))),
            s => Err(io::Error::other(format!(
                "S3 HEAD {}: {s} (the credentials may not reach it)",
                self.signer.bucket.name()
            ))),
        }
    }

    /// Whether the object exists.
    pub async fn exists(&self, key: &str) -> io::Result<bool> {
        let full = self.full_key(key);
        let action = self
            .signer
            .bucket
            .head_object(Some(&self.signer.creds), &full);
        let r = self.send("HEAD", key, self.request(&action)).await?;
        match r.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self.refused("HEAD", key, r).await),
        }
    }

    /// Stores `len` bytes of the file at `key` in one PUT, with their MD5 for S3 to check.
    pub async fn put_file(
        &self,
        key: &str,
        file: &Path,
        md5: [u8; 16],
        len: u64,
    ) -> io::Result<()> {
        let f = tokio::fs::File::open(file).await?;
        let body = reqwest::Body::wrap(hprof_shrink_upload::http::FileBody::new(f, len));
        self.put(key, body, md5, len).await
    }

    /// Stores `bytes` under `key`, with their Content-MD5.
    pub async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> io::Result<()> {
        let md5: [u8; 16] = <md5::Md5 as md5::Digest>::digest(&bytes).into();
        let len = bytes.len() as u64;
        self.put(key, reqwest::Body::from(bytes), md5, len).await
    }

    async fn put(&self, key: &str, body: reqwest::Body, md5: [u8; 16], len: u64) -> io::Result<()> {
        let md5_b64 = base64::engine::general_purpose::STANDARD.encode(md5);
        let len_text = len.to_string();
        let full = self.full_key(key);
        let mut action = self
            .signer
            .bucket
            .put_object(Some(&self.signer.creds), &full);
        // Signed, so that nothing between here and S3 can drop the MD5 it checks the body
        // against; S3 refuses a PUT without a length, and a stream has none of its own.
        action.headers_mut().insert("content-md5", md5_b64.as_str());
        action
            .headers_mut()
            .insert("content-length", len_text.as_str());
        let rb = self
            .request(&action)
            .header("content-md5", &md5_b64)
            .header(CONTENT_LENGTH, &len_text)
            .body(body);
        let r = self.send("PUT", key, rb).await?;
        if !r.status().is_success() {
            return Err(self.refused("PUT", key, r).await);
        }
        // A server that does not check Content-MD5 (moto) still answers the MD5 it stored.
        let etag = r
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim_matches('"').to_ascii_lowercase());
        let want = hex::encode(md5);
        match etag {
            Some(e) if e.len() == 32 && e != want => Err(io::Error::other(format!(
                "S3 PUT {}/{key}: stored MD5 {e}, sent {want}: damaged on the way",
                self.signer.bucket.name()
            ))),
            _ => Ok(()),
        }
    }

    /// The object as a response whose body is read as it arrives; None if there is none.
    pub async fn get(&self, key: &str) -> io::Result<Option<Response>> {
        let full = self.full_key(key);
        let action = self
            .signer
            .bucket
            .get_object(Some(&self.signer.creds), &full);
        let r = self.send("GET", key, self.request(&action)).await?;
        match r.status() {
            s if s.is_success() => Ok(Some(r)),
            StatusCode::NOT_FOUND => Ok(None),
            _ => Err(self.refused("GET", key, r).await),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_bucket_and_a_prefix() {
        assert_eq!(
            parse_url("s3://heap-dumps/prod/eu/").unwrap(),
            ("heap-dumps".into(), "prod/eu".into())
        );
        assert_eq!(
            parse_url("s3://heap-dumps").unwrap(),
            ("heap-dumps".into(), String::new())
        );
        assert!(parse_url("s3://Bad_Bucket/x").is_err());
        assert!(parse_url("http://heap-dumps").is_err());
        assert!(parse_url("s3://").is_err());
        let e = parse_url("s3://heap-dumps/../other").unwrap_err();
        assert!(e.to_string().contains("'..'"), "{e}");
        assert!(parse_url("s3://heap-dumps/a/./b").is_err());
        assert!(parse_url("s3://heap-dumps/a..b/c.d").is_ok());
    }

    #[test]
    fn an_endpoint_is_a_server_and_nothing_more() {
        assert_eq!(
            parse_endpoint("http://127.0.0.1:5000").unwrap().as_str(),
            "http://127.0.0.1:5000/"
        );
        assert!(parse_endpoint("https://minio.internal/").is_ok());
        for bad in [
            "127.0.0.1:5000",
            "ftp://minio.internal",
            "http://minio.internal/s3",
            "http://minio.internal?x=1",
            "http://user:pw@minio.internal",
            "http://",
        ] {
            let e = parse_endpoint(bad).unwrap_err();
            assert!(
                e.to_string().contains("http(s)://HOST[:PORT]"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn error_codes_are_read_from_the_body() {
        let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>\n  \
                    <Code>NoSuchBucket</Code>\n  <Message>The specified bucket does not \
                    exist</Message>\n  <BucketName>heap-dumps</BucketName>\n</Error>";
        assert_eq!(error_code(body).as_deref(), Some("NoSuchBucket"));
        // A Code that is not the error's own, an empty one, no XML at all.
        assert_eq!(
            error_code("<Error><Detail><Code>X</Code></Detail></Error>"),
            None
        );
        assert_eq!(error_code("<Error><Code></Code></Error>"), None);
        assert_eq!(error_code(""), None);
        assert_eq!(error_code("502 Bad Gateway"), None);
        assert_eq!(error_code("<Error><Code>Slow"), None);
    }

    /// The requests go where the style says, signed by the crate with the token and the
    /// headers we add.
    #[test]
    fn objects_are_addressed_by_path_or_virtual_host() {
        let creds = Credentials::new_with_token("AKID", "secret", "tok");
        let by_path = rusty_s3::Bucket::new(
            parse_endpoint("http://127.0.0.1:5000").unwrap(),
            UrlStyle::Path,
            "heap-dumps",
            "us-east-1",
        )
        .unwrap();
        let mut put = by_path.put_object(Some(&creds), "prod/packages/ab cd.zip");
        put.headers_mut()
            .insert("content-md5", "1B2M2Y8AsgTpgAmY7PhCfg==");
        let url = put.sign(SIGNED_FOR);
        assert_eq!(url.path(), "/heap-dumps/prod/packages/ab%20cd.zip", "{url}");
        let query = url.query().unwrap();
        assert!(query.contains("X-Amz-Security-Token=tok"), "{query}");
        assert!(
            query.contains("X-Amz-SignedHeaders=content-md5%3Bhost"),
            "{query}"
        );
        let aws = rusty_s3::Bucket::new(
            Url::parse("https://s3.eu-west-1.amazonaws.com").unwrap(),
            UrlStyle::VirtualHost,
            "heap-dumps",
            "eu-west-1",
        )
        .unwrap();
        let url = aws.get_object(Some(&creds), "prod/x.json").sign(SIGNED_FOR);
        assert_eq!(
            url.host_str(),
            Some("heap-dumps.s3.eu-west-1.amazonaws.com")
        );
        assert_eq!(url.path(), "/prod/x.json");
    }
}
