//! How a string from a dump (a class or field name, a thread name, a key) is shown: a dump
//! is input from anyone, and a name in it may hold escape sequences, line breaks or bidi
//! overrides that would act on a terminal or a page instead of showing. [`shown`] writes
//! each such character as a visible `\u{…}`; [`clipped`] also cuts the string to a length,
//! so that no name can make an analysis large.

use std::borrow::Cow;
use std::fmt::Write;

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Characters that act rather than show: controls (`Cc`: escape, CR, LF, …), format
/// characters (`Cf`: bidi overrides and isolates, zero-width joiners, the BOM, …) and the
/// line and paragraph separators (`Zl`, `Zp`).
fn acts(c: char) -> bool {
    // ASCII (almost every character of a name) without the table look-up.
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    matches!(
        c.general_category(),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    )
}

/// `s` with every character that acts (see `acts`) written as `\u{1b}`: how every
/// output a person reads (text, HTML, `serve`'s pages) shows a string from a dump. The
/// result holds no such character, so showing it again changes nothing.
pub fn shown(s: &str) -> Cow<'_, str> {
    if !s.chars().any(acts) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_shown(&mut out, c);
    }
    Cow::Owned(out)
}

fn push_shown(out: &mut String, c: char) {
    if acts(c) {
        let _ = write!(out, "\\u{{{:x}}}", c as u32);
    } else {
        out.push(c);
    }
}

/// `s` as [`shown`], cut to at most `max` bytes (at a character boundary, never inside an
/// escape) followed by a mark that says how many characters of `s` were left out:
/// `com.example.Very…[+1200 chars]`. What an analysis keeps of a string from a dump.
pub fn clipped(s: &str, max: usize) -> String {
    clipped_more(s, max, 0)
}

/// [`clipped`] for the head of a longer string, of which `more` characters were not read.
pub fn clipped_more(s: &str, max: usize, more: u64) -> String {
    let mut out = String::with_capacity(s.len().min(max) + 16);
    let mut piece = String::new();
    for (at, c) in s.char_indices() {
        piece.clear();
        push_shown(&mut piece, c);
        if out.len() + piece.len() > max {
            let left = s[at..].chars().count() as u64 + more;
            let _ = write!(out, "…[+{left} chars]");
            return out;
        }
        out.push_str(&piece);
    }
    if more > 0 {
        let _ = write!(out, "…[+{more} chars]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_format_characters_are_escaped() {
        assert_eq!(shown("com.example.Plain$1"), "com.example.Plain$1");
        assert!(matches!(shown("com.example.Plain"), Cow::Borrowed(_)));
        assert_eq!(
            shown("a\u{1b}[2Jb\r\nc\u{7f}"),
            "a\\u{1b}[2Jb\\u{d}\\u{a}c\\u{7f}"
        );
        // C1 controls, bidi overrides and isolates, zero-width space, BOM, line separator.
        assert_eq!(
            shown("x\u{9b}\u{202e}\u{2066}\u{200b}\u{feff}\u{2028}y"),
            "x\\u{9b}\\u{202e}\\u{2066}\\u{200b}\\u{feff}\\u{2028}y"
        );
        // Letters of any script stay as they are.
        assert_eq!(shown("Ünïcödé.日本.Класс"), "Ünïcödé.日本.Класс");
    }

    #[test]
    fn showing_twice_changes_nothing() {
        let once = shown("a\u{1b}b\u{202e}c").into_owned();
        assert_eq!(shown(&once), once);
        let c = clipped(&"\u{202e}x".repeat(100), 50);
        assert_eq!(shown(&c), c);
    }

    #[test]
    fn clipped_cuts_at_the_bound_with_a_mark() {
        assert_eq!(clipped("short", 10), "short");
        assert_eq!(clipped("exactly10!", 10), "exactly10!");
        assert_eq!(clipped("abcdefghijkl", 10), "abcdefghij…[+2 chars]");
        // Never inside a character or an escape.
        assert_eq!(clipped("ééééé", 5), "éé…[+3 chars]");
        assert_eq!(clipped("ab\u{1b}cd", 6), "ab…[+3 chars]");
        assert_eq!(clipped_more("abc", 10, 7), "abc…[+7 chars]");
        assert_eq!(clipped_more("abcdef", 4, 7), "abcd…[+9 chars]");
        let long = "n".repeat(1 << 20);
        assert!(clipped(&long, 256).len() <= 256 + "…[+1048320 chars]".len());
    }
}
