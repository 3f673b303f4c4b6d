//! Hex text the server reads: an MD5 a client sends, a hash in a URL.

/// A 32-digit hex MD5 (surrounding blanks allowed), as a client sends it in a form field.
/// Only hex digits: a sign or any other character refuses it.
pub fn parse_md5(s: &str) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    hex::decode_to_slice(s.trim(), &mut out).ok()?;
    Some(out)
}

/// Whether `s` is a non-empty hex string of at most 128 digits (a buffer hash, a
/// signature) and so safe to use as a key or in a path.
pub fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_md5_is_32_hex_digits_and_nothing_else() {
        let m = parse_md5(" 9e107d9d372bb6826bd81d3542a419d6 ").unwrap();
        assert_eq!(hex::encode(m), "9e107d9d372bb6826bd81d3542a419d6");
        assert!(parse_md5("9e107d9d372bb6826bd81d3542a419").is_none());
        assert!(parse_md5("zz107d9d372bb6826bd81d3542a419d6").is_none());
        // u8::from_str_radix, which read each pair before, takes a leading sign.
        assert!(parse_md5("+e107d9d372bb6826bd81d3542a419d6").is_none());
        assert!(parse_md5("9e107d9d372bb6826bd81d3542a4+9d6").is_none());
    }
}
