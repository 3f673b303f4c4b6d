//! The small part of Java's `.properties` format that `result.info` and `extra.info` use:
//! `key=value` lines and `#` comments, with backslash escapes. Written here rather than
//! taken from the java-properties crate, which would pull regex and encoding_rs into the
//! library a phone links.

/// Escapes a key or value as `Properties.store(OutputStream)` does, so that
/// `Properties.load(InputStream)`, which reads ISO-8859-1, gets it back unchanged: the
/// text is pure ASCII, everything outside printable ASCII a `\uXXXX` escape of its UTF-16
/// code units (a surrogate pair for what lies past U+FFFF), and `\`, `=`, `:`, `#`, `!`,
/// tab, line breaks, form feed, a leading space (any space in a key) backslash-escaped.
fn escape(s: &str, is_key: bool, out: &mut String) {
    let mut units = [0u16; 2];
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{c}' => out.push_str("\\f"),
            ' ' if is_key || i == 0 => out.push_str("\\ "),
            '=' | ':' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c => {
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{:04X}", u));
                }
            }
        }
    }
}

/// Renders a comment line and `key=value` lines, in the order given.
pub fn render(comment: Option<&str>, pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    if let Some(c) = comment {
        out.push_str("# ");
        out.push_str(c);
        out.push('\n');
    }
    for (k, v) in pairs {
        escape(k, true, &mut out);
        out.push('=');
        escape(v, false, &mut out);
        out.push('\n');
    }
    out
}

/// Parses properties text into (key, value) pairs in file order: comments, blank lines,
/// `=`, `:` or whitespace separators, backslash escapes and line continuations.
pub fn parse(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut logical = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        // An odd number of trailing backslashes continues the line.
        let trailing = line.chars().rev().take_while(|&c| c == '\\').count();
        if trailing % 2 == 1 && lines.peek().is_some() {
            logical.push_str(&line[..line.len() - 1]);
            continue;
        }
        logical.push_str(line);
        out.push(split(&logical));
        logical.clear();
    }
    if !logical.is_empty() {
        out.push(split(&logical));
    }
    out
}

fn split(line: &str) -> (String, String) {
    // Collected as UTF-16 code units: a `\uXXXX` pair of surrogates makes one character.
    let mut key = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => unescape(&mut chars, &mut key),
            '=' | ':' => break,
            c if c.is_whitespace() => {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('=') | Some(':')) {
                    chars.next();
                }
                break;
            }
            c => push(c, &mut key),
        }
    }
    while chars.peek().is_some_and(|c| c.is_whitespace()) {
        chars.next();
    }
    let mut value = Vec::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' => unescape(&mut chars, &mut value),
            c => push(c, &mut value),
        }
    }
    (
        String::from_utf16_lossy(&key),
        String::from_utf16_lossy(&value),
    )
}

fn push(c: char, out: &mut Vec<u16>) {
    let mut units = [0u16; 2];
    out.extend_from_slice(c.encode_utf16(&mut units));
}

/// The character after a backslash, as Java's `Properties.load` reads it.
fn unescape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut Vec<u16>) {
    let c = match chars.next() {
        Some('n') => '\n',
        Some('r') => '\r',
        Some('t') => '\t',
        Some('f') => '\u{c}',
        Some('u') => {
            let hex: String = chars.by_ref().take(4).collect();
            match u16::from_str_radix(&hex, 16) {
                Ok(unit) if hex.len() == 4 => out.push(unit),
                _ => push('\u{FFFD}', out),
            }
            return;
        }
        Some(c) => c,
        None => '\\',
    };
    push(c, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_then_parse_gives_the_pairs_back() {
        let pairs = [
            ("sdkVersion", "25"),
            ("manufacturer", " Lead space, 中文 and a \\ backslash"),
            ("odd key=:", "line\nbreak\ttab"),
            ("empty", ""),
            ("clé 😀", "emoji 🎉 past U+FFFF, é, a=b:c #! and \r\n"),
        ];
        let text = render(Some("comment"), &pairs);
        assert!(text.is_ascii(), "{text}");
        assert!(text.contains("\\uD83C\\uDF89"), "a surrogate pair: {text}");
        assert!(text.starts_with("# comment\nsdkVersion=25\n"));
        let back = parse(&text);
        let want: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(back, want);
    }

    #[test]
    fn parses_java_forms() {
        let text = "! bang comment\n  a : 1\nb 2\nc=x\\\n    y\nd=\\u0041\n";
        assert_eq!(
            parse(text),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "2".into()),
                ("c".into(), "xy".into()),
                ("d".into(), "A".into()),
            ]
        );
    }
}
