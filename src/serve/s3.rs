//! Just enough of S3 for the package store: PUT (from a file, streamed, with Content-MD5),
//! GET (streamed), HEAD, signed with AWS Signature Version 4. On the reqwest client the
//! upload already uses, with HMAC-SHA256 from the crates sqlx's PostgreSQL driver already
//! brings: no second HTTP stack, no SDK.
//!
//! Where and as whom, from the usual environment variables: `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` (optional), `AWS_REGION` or
//! `AWS_DEFAULT_REGION` (default `us-east-1`), and `AWS_ENDPOINT_URL_S3` or
//! `AWS_ENDPOINT_URL` for an S3-compatible server (MinIO, Ceph, moto), addressed by path
//! (`ENDPOINT/BUCKET/KEY`); without one, AWS itself, addressed by virtual host.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::Duration;

use base64::Engine;
use hmac::{Hmac, Mac};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Method, Response, StatusCode};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// What `x-amz-content-sha256` says of a body not hashed: S3 checks Content-MD5 instead.
const UNSIGNED: &str = "UNSIGNED-PAYLOAD";

#[derive(Clone)]
struct Credentials {
    key_id: String,
    secret: String,
    token: Option<String>,
}

/// A bucket and a key prefix: `s3://BUCKET/PREFIX`.
#[derive(Clone)]
pub struct Bucket {
    http: Client,
    /// `scheme://host[:port]` of the server.
    origin: String,
    /// `/BUCKET` when addressed by path, "" by virtual host.
    path_base: String,
    bucket: String,
    prefix: String,
    region: String,
    creds: Credentials,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.prefix)
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Splits `s3://BUCKET[/PREFIX]`; the error says what is wrong.
pub fn parse_url(url: &str) -> Result<(String, String), String> {
    let rest = url
        .strip_prefix("s3://")
        .ok_or_else(|| format!("{url}: a package store is s3://BUCKET[/PREFIX]"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let valid = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if !valid {
        return Err(format!(
            "{url}: {bucket:?} is not a bucket name (3 to 63 of a-z, 0-9, '-', '.')"
        ));
    }
    Ok((bucket.to_string(), prefix.trim_matches('/').to_string()))
}

impl Bucket {
    /// The bucket of `s3://BUCKET/PREFIX`, with the endpoint and credentials from the
    /// environment. Nothing is sent yet.
    pub fn from_url(url: &str) -> Result<Bucket, String> {
        let (bucket, prefix) = parse_url(url)?;
        let key_id = env("AWS_ACCESS_KEY_ID");
        let secret = env("AWS_SECRET_ACCESS_KEY");
        let (Some(key_id), Some(secret)) = (key_id, secret) else {
            return Err(format!(
                "{url}: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set for an S3 store"
            ));
        };
        let region = env("AWS_REGION")
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        let (origin, path_base) =
            match env("AWS_ENDPOINT_URL_S3").or_else(|| env("AWS_ENDPOINT_URL")) {
                Some(e) => {
                    let e = e.trim_end_matches('/').to_string();
                    if !(e.starts_with("http://") || e.starts_with("https://"))
                        || e["https://".len().min(e.len())..].contains('/')
                    {
                        return Err(format!(
                            "AWS_ENDPOINT_URL {e:?}: an endpoint is http(s)://HOST[:PORT]"
                        ));
                    }
                    (e, format!("/{bucket}"))
                }
                None => (
                    format!("https://{bucket}.s3.{region}.amazonaws.com"),
                    String::new(),
                ),
            };
        crate::upload::client::install_crypto_provider();
        let http = Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("hprof-shrink/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("the S3 client: {e}"))?;
        Ok(Bucket {
            http,
            origin,
            path_base,
            bucket,
            prefix,
            region,
            creds: Credentials {
                key_id,
                secret,
                token: env("AWS_SESSION_TOKEN"),
            },
        })
    }

    /// The object's path on the server: every segment percent-encoded once; "" is the
    /// bucket itself.
    fn path(&self, key: &str) -> String {
        if key.is_empty() {
            return format!("{}/", self.path_base);
        }
        let full = if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix)
        };
        let mut p = self.path_base.clone();
        for seg in full.split('/') {
            p.push('/');
            p.push_str(&uri_encode(seg));
        }
        p
    }

    /// A signed request for `key`; `extra` headers are signed too.
    fn request(
        &self,
        method: Method,
        key: &str,
        extra: &[(&'static str, String)],
    ) -> io::Result<reqwest::RequestBuilder> {
        let path = self.path(key);
        let host = self
            .origin
            .split_once("://")
            .map_or(self.origin.as_str(), |(_, h)| h);
        // Default ports are not part of the Host header reqwest sends.
        let host = host
            .strip_suffix(":80")
            .filter(|_| self.origin.starts_with("http://"))
            .or_else(|| {
                host.strip_suffix(":443")
                    .filter(|_| self.origin.starts_with("https://"))
            })
            .unwrap_or(host);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let amz_date = amz_date(now);
        let mut headers: Vec<(String, String)> = vec![
            ("host".into(), host.to_string()),
            ("x-amz-content-sha256".into(), UNSIGNED.into()),
            ("x-amz-date".into(), amz_date.clone()),
        ];
        if let Some(t) = &self.creds.token {
            headers.push(("x-amz-security-token".into(), t.clone()));
        }
        for (k, v) in extra {
            headers.push((k.to_string(), v.clone()));
        }
        let auth = authorization(
            &self.creds,
            &self.region,
            method.as_str(),
            &path,
            &mut headers,
            &amz_date,
        );
        let mut h = HeaderMap::new();
        for (k, v) in &headers {
            if k == "host" {
                continue;
            }
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).map_err(io::Error::other)?,
                HeaderValue::from_str(v).map_err(io::Error::other)?,
            );
        }
        h.insert(
            reqwest::header::AUTHORIZATION,
            HeaderValue::from_str(&auth).map_err(io::Error::other)?,
        );
        Ok(self
            .http
            .request(method, format!("{}{path}", self.origin))
            .headers(h))
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
            let mut msg = format!("S3 {what} {}/{key}: {e}", self.bucket);
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
        let code = xml_field(&body, "Code").unwrap_or_default();
        io::Error::other(format!("S3 {what} {}/{key}: {status} {code}", self.bucket))
    }

    /// That the bucket exists and these credentials reach it: a HEAD of the bucket.
    pub async fn check(&self) -> io::Result<()> {
        let r = self
            .send("HEAD", "", self.request(Method::HEAD, "", &[])?)
            .await?;
        match r.status() {
            s if s.is_success() => Ok(()),
            StatusCode::NOT_FOUND => Err(io::Error::other(format!(
                "S3 HEAD {}: no such bucket",
                self.bucket
            ))),
            s => Err(io::Error::other(format!(
                "S3 HEAD {}: {s} (the credentials may not reach it)",
                self.bucket
            ))),
        }
    }

    /// Whether the object exists.
    pub async fn exists(&self, key: &str) -> io::Result<bool> {
        let r = self
            .send("HEAD", key, self.request(Method::HEAD, key, &[])?)
            .await?;
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
        let body = reqwest::Body::wrap(crate::upload::client::FileBody::new(f, len));
        self.put(key, body, md5, len).await
    }

    pub async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> io::Result<()> {
        let md5: [u8; 16] = <md5::Md5 as md5::Digest>::digest(&bytes).into();
        let len = bytes.len() as u64;
        self.put(key, reqwest::Body::from(bytes), md5, len).await
    }

    async fn put(&self, key: &str, body: reqwest::Body, md5: [u8; 16], len: u64) -> io::Result<()> {
        let md5_b64 = base64::engine::general_purpose::STANDARD.encode(md5);
        let rb = self
            .request(
                Method::PUT,
                key,
                &[
                    ("content-md5", md5_b64),
                    ("content-length", len.to_string()),
                ],
            )?
            .body(body);
        let r = self.send("PUT", key, rb).await?;
        if !r.status().is_success() {
            return Err(self.refused("PUT", key, r).await);
        }
        // A server that does not check Content-MD5 (moto) still answers the MD5 it stored.
        let etag = r
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim_matches('"').to_ascii_lowercase());
        let want: String = md5.iter().map(|b| format!("{b:02x}")).collect();
        match etag {
            Some(e) if e.len() == 32 && e != want => Err(io::Error::other(format!(
                "S3 PUT {}/{key}: stored MD5 {e}, sent {want}: damaged on the way",
                self.bucket
            ))),
            _ => Ok(()),
        }
    }

    /// The object as a response whose body is read as it arrives; None if there is none.
    pub async fn get(&self, key: &str) -> io::Result<Option<Response>> {
        let r = self
            .send("GET", key, self.request(Method::GET, key, &[])?)
            .await?;
        match r.status() {
            s if s.is_success() => Ok(Some(r)),
            StatusCode::NOT_FOUND => Ok(None),
            _ => Err(self.refused("GET", key, r).await),
        }
    }
}

/// RFC 3986 unreserved characters stay, every other byte is %XX (upper case), as SigV4's
/// canonical form wants.
fn uri_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `YYYYMMDDTHHMMSSZ` of seconds since the epoch (UTC).
fn amz_date(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = hprof_shrink_core::package::records::civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `Authorization` header of a request with no query string, whose `headers` (names
/// in lower case, the host included) are all signed. Sorts `headers`.
fn authorization(
    creds: &Credentials,
    region: &str,
    method: &str,
    path: &str,
    headers: &mut [(String, String)],
    amz_date: &str,
) -> String {
    headers.sort();
    let payload = headers
        .iter()
        .find(|(k, _)| k == "x-amz-content-sha256")
        .map_or(UNSIGNED.to_string(), |(_, v)| v.clone());
    let mut canonical_headers = String::new();
    for (k, v) in headers.iter() {
        let _ = writeln!(canonical_headers, "{k}:{}", v.trim());
    }
    let signed: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    let signed = signed.join(";");
    let canonical = format!("{method}\n{path}\n\n{canonical_headers}\n{signed}\n{payload}");
    let date = &amz_date[..8];
    let scope = format!("{date}/{region}/s3/aws4_request");
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let k = hmac(format!("AWS4{}", creds.secret).as_bytes(), date.as_bytes());
    let k = hmac(&k, region.as_bytes());
    let k = hmac(&k, b"s3");
    let k = hmac(&k, b"aws4_request");
    let signature = hex(&hmac(&k, to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
        creds.key_id
    )
}

/// The text of the first `<name>` element of an S3 error body.
fn xml_field(body: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = body.find(&open)? + open.len();
    let end = body[start..].find('<')? + start;
    Some(body[start..end].chars().take(100).collect())
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
    }

    #[test]
    fn dates_and_encoding_are_sigv4s() {
        // 2013-05-24 00:00:00 UTC.
        assert_eq!(amz_date(1_369_353_600), "20130524T000000Z");
        assert_eq!(amz_date(1_369_353_600 + 3723), "20130524T010203Z");
        assert_eq!(uri_encode("a b/c~"), "a%20b%2Fc~");
    }

    /// The GET example of Amazon's S3 SigV4 documentation ("GET Object", a Range header,
    /// the documentation's example credentials), whose published signature is
    /// f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41.
    #[test]
    fn the_documented_get_example_signs_as_published() {
        let creds = Credentials {
            key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            token: None,
        };
        let empty_sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let mut headers = vec![
            (
                "host".to_string(),
                "examplebucket.s3.amazonaws.com".to_string(),
            ),
            ("range".to_string(), "bytes=0-9".to_string()),
            ("x-amz-content-sha256".to_string(), empty_sha.to_string()),
            ("x-amz-date".to_string(), "20130524T000000Z".to_string()),
        ];
        let auth = authorization(
            &creds,
            "us-east-1",
            "GET",
            "/test.txt",
            &mut headers,
            "20130524T000000Z",
        );
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn error_codes_are_read_from_the_body() {
        let body = "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code></Error>";
        assert_eq!(xml_field(body, "Code").as_deref(), Some("NoSuchBucket"));
        assert_eq!(xml_field(body, "Message"), None);
    }
}
