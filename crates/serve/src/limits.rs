//! How much `serve` keeps and shows of what packages carry. A phone chooses every value in
//! its `result.info` and `extra.info` (up to 64 KiB and 1 MiB); without caps, a few hundred
//! small uploads would fill the database and make every page and every cached filter
//! hundreds of megabytes. So each value is cut where it is recorded (the package file
//! itself stays as it was sent), lists carry only the short columns, every list a page or
//! an answer shows has a stated length with a count of what was left out, and the groups
//! cache has a memory budget. docs/serve.md ("What packages carry") states each of these.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// What ends a value (or key) that was cut short.
pub const MARK: char = '…';

/// A key of `result.info` or `extra.info` as recorded, in bytes of its JSON text.
pub const KEY_BYTES: usize = 128;
/// A value as recorded, in bytes of its JSON text (a control character takes 6).
pub const VALUE_BYTES: usize = 4096;
/// Pairs recorded of one file; the rest are left out (and counted).
pub const PAIRS: usize = 64;
/// All pairs of one file together, as recorded (JSON text).
pub const PROPS_BYTES: usize = 16 * 1024;
/// The columns packages are filtered and grouped by (SDK, manufacturer, app version), in
/// bytes: what the lists, the groups' spreads and the menus show.
pub const COLUMN_BYTES: usize = 64;
/// A class name or a library leak's description as the groups show it, in bytes.
pub const NAME_BYTES: usize = 256;
/// A job's error as the lists show it, in bytes.
pub const ERROR_BYTES: usize = 1024;

/// Groups shown per list (app leaks, library leaks): the most frequent.
pub const GROUPS: usize = 200;
/// Values of a group's spread (SDK, manufacturer, app version): the most frequent.
pub const SPREAD: usize = 10;
/// Values of a filter menu: the most frequent.
pub const MENU: usize = 50;
/// Occurrences a group's page and answer list: the most recent.
pub const OCCURRENCES: usize = 500;
/// Duplicate-bitmap groups `/bitmaps` shows: the most wasteful.
pub const BITMAP_GROUPS: usize = 200;
/// Packages listed per duplicate-bitmap group.
pub const BITMAP_PACKAGES: usize = 50;
/// App versions the per-version view shows: the latest, by their first package's time.
pub const VERSIONS: usize = 20;
/// Groups the per-version view lists per version: the new ones first, then those back,
/// then those on the most packages; and as many of the groups gone since the version before.
pub const VERSION_GROUPS: usize = 50;
/// The most packages `GET /api/packages?limit=` lists.
pub const PACKAGES_API: i64 = 1000;
/// Packages the `/packages` page lists.
pub const PACKAGES_PAGE: i64 = 500;

/// The groups cache's memory budget for the filtered entries (estimated), and how many it
/// keeps at most; the unfiltered entry is kept apart, whatever the others cost.
pub const CACHE_BYTES: usize = 64 << 20;
pub(crate) const CACHE_ENTRIES: usize = 1024;
/// Groups a cached filter (or the per-app-version view) follows in memory, change by
/// change; past it, its groups are ranked by the database at each change and only those
/// shown are kept, so that memory does not grow with the number of groups.
pub const FOLD_GROUPS: usize = 5_000;

/// `s` whole if it is at most `max` bytes; otherwise its longest prefix (on a character
/// boundary) that fits with the [`MARK`], then the mark.
pub fn cut(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let room = max.saturating_sub(MARK.len_utf8());
    let end = (0..=room)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    Cow::Owned(format!("{}{MARK}", &s[..end]))
}

/// The bytes `c` takes inside a JSON string (serde_json's escapes).
fn json_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// `s` whole if its JSON text is at most `max` bytes, else cut to fit with the [`MARK`];
/// with the bytes of the JSON text of what is returned.
fn cut_json(s: &str, max: usize) -> (Cow<'_, str>, usize) {
    let room = max.saturating_sub(MARK.len_utf8());
    let mut len = 0;
    // The longest prefix that fits with the mark: its end and JSON length.
    let (mut fits, mut fits_len) = (0, 0);
    for (i, c) in s.char_indices() {
        if len <= room {
            (fits, fits_len) = (i, len);
        }
        len += json_len(c);
        if len > max {
            return (
                Cow::Owned(format!("{}{MARK}", &s[..fits])),
                fits_len + MARK.len_utf8(),
            );
        }
    }
    (Cow::Borrowed(s), len)
}

/// What was cut of one file's pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cut {
    /// Positions, among the pairs kept, of those whose key or value was cut short.
    #[serde(default)]
    pub cut: Vec<usize>,
    /// Pairs not kept at all: past [`PAIRS`] or [`PROPS_BYTES`].
    #[serde(default)]
    pub left_out: usize,
}

impl Cut {
    fn merge(self, other: Cut) -> Option<Cut> {
        let mut cut = self.cut;
        cut.extend(other.cut);
        cut.sort_unstable();
        cut.dedup();
        let c = Cut {
            cut,
            left_out: self.left_out + other.left_out,
        };
        (c != Cut::default()).then_some(c)
    }
}

/// One file's pairs as recorded: within the caps, and what was cut.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Props {
    /// The pairs kept, in the file's order.
    pub pairs: Vec<(String, String)>,
    /// What was cut, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
}

/// The pairs' JSON overhead besides their strings: `["",""],`.
const PAIR_OVERHEAD: usize = 8;

impl Props {
    /// `pairs` within [`KEY_BYTES`], [`VALUE_BYTES`], [`PAIRS`] and [`PROPS_BYTES`], in
    /// order; a pair that does not fit whole in what is left of the total is cut to fit
    /// (when its key and a few bytes do), and every pair after the first that does not
    /// fit is left out.
    pub fn capped(pairs: &[(String, String)]) -> Props {
        let mut kept = Vec::with_capacity(pairs.len().min(PAIRS));
        let mut cut = Cut::default();
        let mut total = 2; // []
        for (i, (k, v)) in pairs.iter().enumerate() {
            let (key, key_len) = cut_json(k, KEY_BYTES);
            let left = PROPS_BYTES.saturating_sub(total + key_len + PAIR_OVERHEAD);
            // A value cut to nothing says nothing: leave the pair out rather.
            if kept.len() == PAIRS || left < 16 {
                cut.left_out = pairs.len() - i;
                break;
            }
            let (value, value_len) = cut_json(v, VALUE_BYTES.min(left));
            if matches!(key, Cow::Owned(_)) || matches!(value, Cow::Owned(_)) {
                cut.cut.push(kept.len());
            }
            total += key_len + value_len + PAIR_OVERHEAD;
            kept.push((key.into_owned(), value.into_owned()));
        }
        Props {
            pairs: kept,
            cut: (cut != Cut::default()).then_some(cut),
        }
    }

    /// The JSON a package row holds.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A package row's JSON: this form, or the bare `[[key, value]]` of rows recorded
    /// before the caps (cut now, as they are read).
    pub fn from_json(text: &str) -> serde_json::Result<Props> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            // First: a struct also reads from an array.
            Bare(Vec<(String, String)>),
            Props(Props),
        }
        let (pairs, stored_cut) = match serde_json::from_str(text)? {
            Stored::Props(p) => (p.pairs, p.cut),
            Stored::Bare(pairs) => (pairs, None),
        };
        let now = Props::capped(&pairs);
        Ok(Props {
            pairs: now.pairs,
            cut: match (stored_cut, now.cut) {
                (Some(a), Some(b)) => a.merge(b),
                (a, b) => a.or(b),
            },
        })
    }
}

/// An analysis as `serve` stores and shows it: its `result.info` and `extra.info` cut as
/// the package's row is (the package's answer says what was cut; this one has no place
/// for it). True when something was cut.
pub fn cap_analysis(a: &mut hprof_shrink_analyze::Analysis) -> bool {
    let mut cut = false;
    for props in [&mut a.input.manifest, &mut a.input.extra] {
        let capped = Props::capped(props);
        if capped.cut.is_some() {
            *props = capped.pairs;
            cut = true;
        }
    }
    cut
}

/// A column value (SDK, manufacturer, app version) as recorded and shown: [`text`], cut.
pub fn column(s: &str) -> Cow<'_, str> {
    match text(s) {
        Cow::Borrowed(s) => cut(s, COLUMN_BYTES),
        Cow::Owned(s) => Cow::Owned(cut(&s, COLUMN_BYTES).into_owned()),
    }
}

/// `s` as a database's text column can hold it: each NUL, which PostgreSQL's text refuses
/// (a phone can send one as `\u0000` in its `result.info`), as U+FFFD. Recorded so on
/// SQLite too, so that both databases hold the same.
pub fn text(s: &str) -> Cow<'_, str> {
    if s.contains('\0') {
        Cow::Owned(s.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(s)
    }
}

/// The first `n` of `v` and how many were left out.
pub fn first<T>(mut v: Vec<T>, n: usize) -> (Vec<T>, usize) {
    let left_out = v.len().saturating_sub(n);
    v.truncate(n);
    (v, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_column_holds_no_nul_and_stays_within_its_bytes() {
        assert!(matches!(column("Pixel"), Cow::Borrowed("Pixel")));
        assert_eq!(column("a\0b"), "a\u{FFFD}b");
        // Each NUL grows by two bytes as U+FFFD: still cut to the column's bytes.
        let nuls = "\0".repeat(COLUMN_BYTES);
        let c = column(&nuls);
        assert!(c.len() <= COLUMN_BYTES && !c.contains('\0'), "{c:?}");
    }

    #[test]
    fn cut_keeps_short_values_and_marks_long_ones_on_a_char_boundary() {
        assert!(matches!(cut("abc", 3), Cow::Borrowed("abc")));
        assert_eq!(cut("abcdef", 5), "ab…");
        // 'é' is 2 bytes: never split.
        let c = cut("ééééé", 6);
        assert_eq!(c, "é…");
        assert!(c.len() <= 6);
    }

    #[test]
    fn json_lengths_bound_what_is_stored() {
        for s in [
            "\"\"\"\"\"\"\"\"",
            "\u{1}\u{1}\u{1}\u{1}\u{1}",
            "ab\\cd",
            "ééééééé",
        ] {
            for max in 3..20 {
                let (c, len) = cut_json(s, max);
                let text = serde_json::to_string(c.as_ref()).unwrap();
                assert_eq!(text.len() - 2, len, "{s:?} {max}");
                assert!(len <= max.max(MARK.len_utf8()), "{s:?} {max}: {len}");
            }
        }
    }

    #[test]
    fn props_are_capped_per_value_key_count_and_total() {
        let big = "\"".repeat(1 << 20);
        let p = Props::capped(&pairs(&[("appVersion", &big), ("a", "1")]));
        assert_eq!(p.pairs[0].0, "appVersion");
        assert!(p.pairs[0].1.ends_with(MARK));
        assert_eq!(p.pairs[1], ("a".into(), "1".into()));
        assert_eq!(
            p.cut,
            Some(Cut {
                cut: vec![0],
                left_out: 0
            })
        );
        assert!(p.to_json().len() < PROPS_BYTES);

        let many: Vec<(String, String)> = (0..1000)
            .map(|i| (format!("k{i}"), "v".repeat(i % 7)))
            .collect();
        let p = Props::capped(&many);
        assert_eq!(p.pairs.len(), PAIRS);
        assert_eq!(p.cut.as_ref().unwrap().left_out, 1000 - PAIRS);

        let wide: Vec<(String, String)> = (0..60)
            .map(|i| ("k".repeat(1000) + &i.to_string(), "\u{1}".repeat(5000)))
            .collect();
        let p = Props::capped(&wide);
        let json = p.to_json();
        assert!(json.len() <= PROPS_BYTES + 400, "{}", json.len());
        let c = p.cut.unwrap();
        assert!(c.left_out > 0 && c.cut.len() == p.pairs.len());
        assert!(p.pairs.iter().all(|(k, _)| k.len() <= KEY_BYTES));
    }

    #[test]
    fn small_props_are_kept_whole_and_read_back_from_either_form() {
        let small = pairs(&[("sdkVersion", "25"), ("manufacturer", "samsung")]);
        let p = Props::capped(&small);
        assert_eq!((p.pairs.clone(), p.cut.clone()), (small.clone(), None));
        assert_eq!(Props::from_json(&p.to_json()).unwrap(), p);
        let bare = serde_json::to_string(&small).unwrap();
        assert_eq!(Props::from_json(&bare).unwrap(), p);
        // A row recorded before the caps is cut as it is read.
        let old = serde_json::to_string(&pairs(&[("x", &"y".repeat(10_000))])).unwrap();
        let read = Props::from_json(&old).unwrap();
        assert!(read.pairs[0].1.len() <= VALUE_BYTES);
        assert_eq!(read.cut.unwrap().cut, [0]);
    }
}
