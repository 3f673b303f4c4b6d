//! Keeping secrets out of what is printed: URLs lose their credentials and query (a
//! pre-signed URL's signature is a credential), the token is cut out of any text a server
//! sent back, and a response body is shown only as a short single-line excerpt.

use reqwest::Url;

/// The URL as it may be shown: scheme, host, port and path; user info dropped and a query
/// replaced by `?…`.
pub fn url(u: &Url) -> String {
    let mut shown = format!("{}://", u.scheme());
    if let Some(host) = u.host_str() {
        shown.push_str(host);
    }
    if let Some(port) = u.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(u.path());
    if u.query().is_some() {
        shown.push_str("?…");
    }
    shown
}

/// Replaces every occurrence of each (non-empty) secret in `text` with `***`.
pub fn scrub(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        if out.contains(s) {
            out = out.replace(s, "***");
        }
    }
    out
}

/// `body` without a trailing start of a secret: for a body read only up to a limit, where
/// the rest of that secret was never read and so cannot be matched whole.
pub fn without_partial_secret<'b>(body: &'b [u8], secrets: &[&str]) -> &'b [u8] {
    let mut end = body.len();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        let s = s.as_bytes();
        // The longest proper prefix of `s` that the body ends with.
        for k in (1..s.len()).rev() {
            if body[..end].ends_with(&s[..k]) {
                end -= k;
                break;
            }
        }
    }
    &body[..end]
}

/// The start of a response body as one line: invalid UTF-8 replaced, control characters
/// and runs of whitespace turned into single spaces, secrets cut out, then at most
/// `max_chars` characters (with `…` when cut).
pub fn excerpt(body: &[u8], max_chars: usize, secrets: &[&str]) -> String {
    // Scrub before cutting, so a cut cannot leave the first part of a secret behind.
    let text = scrub(&String::from_utf8_lossy(body), secrets);
    let mut one_line = String::with_capacity(text.len().min(max_chars * 4));
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            space = !one_line.is_empty();
        } else {
            if space {
                one_line.push(' ');
                space = false;
            }
            one_line.push(c);
        }
    }
    match one_line.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_credentials_and_query() {
        let u = Url::parse(
            "https://user:pw@bucket.example:8443/a/b.zip?X-Amz-Signature=abc&X-Amz-Credential=k",
        )
        .unwrap();
        assert_eq!(url(&u), "https://bucket.example:8443/a/b.zip?…");
        let plain = Url::parse("http://127.0.0.1:8080/upload").unwrap();
        assert_eq!(url(&plain), "http://127.0.0.1:8080/upload");
    }

    #[test]
    fn excerpt_is_one_short_line_without_secrets() {
        let body = b"<Error>\r\n  <Code>Bad</Code>\n\t<Token>Bearer s3cr3t-t0ken</Token>\x00 tail";
        let e = excerpt(body, 200, &["s3cr3t-t0ken"]);
        assert_eq!(e, "<Error> <Code>Bad</Code> <Token>Bearer ***</Token> tail");
        assert_eq!(excerpt(b"abcdef", 3, &[]), "abc…");
        assert_eq!(excerpt(b"\xff\xfeok", 10, &[]), "\u{FFFD}\u{FFFD}ok");
        // A secret that straddles the cut is still removed whole.
        let e = excerpt(b"xx s3cr3t-t0ken yy", 6, &["s3cr3t-t0ken"]);
        assert!(!e.contains("s3c"), "{e}");
        assert_eq!(excerpt(b"", 10, &["x"]), "");
    }

    #[test]
    fn a_secret_cut_off_at_the_end_of_what_was_read_is_dropped() {
        let secrets = ["s3cr3t-t0ken"];
        assert_eq!(without_partial_secret(b"abc s3cr", &secrets), b"abc ");
        assert_eq!(without_partial_secret(b"abc s", &secrets), b"abc ");
        assert_eq!(without_partial_secret(b"abc", &secrets), b"abc");
        // A whole secret is left for scrub to replace.
        assert_eq!(
            without_partial_secret(b"abc s3cr3t-t0ken", &secrets),
            b"abc s3cr3t-t0ken"
        );
    }

    #[test]
    fn scrub_ignores_empty_secrets() {
        assert_eq!(scrub("abc", &["", "b"]), "a***c");
    }
}
