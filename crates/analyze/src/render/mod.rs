//! The analysis written out: a leak trace a person reads at a terminal ([`text`]), the
//! JSON of [`crate::model`] ([`json`]), Matrix's `result.json` with its pictures
//! ([`matrix`]), one self-contained HTML page ([`html`]), the triage's, diff's and
//! growth's pages; and LeakCanary's own text read back ([`leakcanary_text`]). Uses
//! `model`, `compare`'s reports and `base`.

pub mod diff;
pub mod growth;
pub mod html;
pub mod leakcanary_text;
pub mod matrix;
pub mod text;
pub mod triage;

pub use crate::base::shown::shown;
use crate::model::Analysis;

/// The analysis as pretty JSON (the schema is docs/analyze.md's).
/// The look every HTML page shares (type, headings, tables, numbers); each page adds its
/// own rules after it.
pub const BASE_STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{padding:.2em .8em;text-align:left;border-bottom:1px solid #eee}
td.n{text-align:right;font-variant-numeric:tabular-nums}
";

/// One self-contained HTML page: its title, [`BASE_STYLE`] and `style`, and its body.
pub fn page(title: maud::Markup, style: &str, body: maud::Markup) -> String {
    use maud::{html, PreEscaped, DOCTYPE};
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(BASE_STYLE)) (PreEscaped(style)) }
            }
            body { (body) }
        }
    }
    .into_string()
}

/// The analysis as pretty-printed JSON (docs/analyze.md's schema), ending in a newline.
pub fn json(analysis: &Analysis) -> String {
    let mut s = serde_json::to_string_pretty(analysis).expect("the model serializes");
    s.push('\n');
    s
}

/// `12,345,678`.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `16.2 kB`, `1.3 MB`: bytes for a person.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "kB", "MB", "GB", "TB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1000.0 && u < UNITS.len() - 1 {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        counted(bytes, "byte")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `1 object`, `2 objects`, `12,345 objects`: a count and what it counts, in the plural
/// unless it is one.
pub fn counted(n: u64, one: &str) -> String {
    format!("{} {one}{}", grouped(n), if n == 1 { "" } else { "s" })
}

/// `static Holder.sLeaked`, `Holder.mField`, `Object[3]`, `ArrayList[2]`,
/// `HashMap["key"]`, `Thread<Java Local>`: a reference as LeakCanary shows it, in its
/// owning class's simple name (an array's without its `[]`). Shown (see [`shown`]).
pub fn reference_text(class_name: &str, r: &crate::model::Reference) -> String {
    let (prefix, name) = reference_parts(class_name, r);
    format!("{prefix}{name}")
}

/// [`reference_text`] in two: what comes before the name (`static Holder.`, `Object`,
/// `Thread`) and the name LeakCanary underlines (`sLeaked`, `[3]`, `<Java Local>`).
pub fn reference_parts(class_name: &str, r: &crate::model::Reference) -> (String, String) {
    let owner = r.owning_class_name().unwrap_or(class_name);
    let simple = owner.rsplit('.').next().unwrap_or(owner);
    let name = shown(&r.name).into_owned();
    let prefix = match r.kind.as_str() {
        "static" => format!("static {}.", shown(simple)),
        "field" => format!("{}.", shown(simple)),
        "array" => shown(simple.strip_suffix("[]").unwrap_or(simple)).into_owned(),
        "local" if r.owning_class.is_some() => shown(simple).into_owned(),
        _ => String::new(),
    };
    (prefix, name)
}

/// `914 B`, `1.4 kB`, `16.0 kB`, `1.3 MB`: a size as LeakCanary writes it (SI units, one
/// decimal rounded half up, as Java's `%.1f` rounds the quotient).
pub fn size_as_leakcanary(bytes: u64) -> String {
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    // LeakCanary's exponent: floor(ln(bytes) / ln(1000)).
    let e = ((bytes as f64).ln() / 1000f64.ln()).floor() as u32;
    let e = e.clamp(1, 6);
    let unit = 1000u128.pow(e);
    // Tenths, rounded half up on the exact quotient.
    let tenths = (bytes as u128 * 10 * 2 + unit) / (unit * 2);
    let prefix = ['k', 'M', 'G', 'T', 'P', 'E'][e as usize - 1];
    format!("{}.{} {prefix}B", tenths / 10, tenths % 10)
}

/// `… 999,940 steps left out …`: what stands for the steps a long trace leaves out.
pub fn omitted_steps_text(n: u64) -> String {
    format!("… {} left out …", counted(n, "step"))
}

/// `16.0 kB (16,017 bytes) in 2 objects`, `17 bytes in 1 object`: what a leak retains, as
/// every output shows it.
pub fn retaining(bytes: u64, objects: u64) -> String {
    retaining_with_native(bytes, 0, objects)
}

/// `16.0 kB (16,017 bytes) + 20.1 MB native in 2 objects`: registered native bytes apart.
pub fn retaining_with_native(bytes: u64, native: u64, objects: u64) -> String {
    let mut size = if bytes < 1000 {
        human(bytes)
    } else {
        format!("{} ({} bytes)", human(bytes), grouped(bytes))
    };
    if native > 0 {
        size = format!("{size} + {} native", human(native));
    }
    format!("{size} in {}", counted(objects, "object"))
}

/// `5.8 kB + 20.1 MB native`; the Java bytes alone when there are no native ones.
pub fn with_native(bytes: u64, native: u64) -> String {
    if native == 0 {
        human(bytes)
    } else {
        format!("{} + {} native", human(bytes), human(native))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_plural_unless_one() {
        assert_eq!(counted(0, "object"), "0 objects");
        assert_eq!(counted(1, "object"), "1 object");
        assert_eq!(counted(1234, "leak"), "1,234 leaks");
        assert_eq!(human(0), "0 bytes");
        assert_eq!(human(1), "1 byte");
        assert_eq!(human(999), "999 bytes");
        assert_eq!(retaining(1, 1), "1 byte in 1 object");
        assert_eq!(retaining(16017, 2), "16.0 kB (16,017 bytes) in 2 objects");
        assert_eq!(
            retaining_with_native(5800, 20_100_000, 3),
            "5.8 kB (5,800 bytes) + 20.1 MB native in 3 objects"
        );
        assert_eq!(with_native(5800, 0), "5.8 kB");
        assert_eq!(with_native(5800, 20_100_000), "5.8 kB + 20.1 MB native");
    }

    #[test]
    fn sizes_read_as_leakcanary_writes_them() {
        for (bytes, want) in [
            (0, "0 B"),
            (914, "914 B"),
            (999, "999 B"),
            (1000, "1.0 kB"),
            (1249, "1.2 kB"),
            (1250, "1.3 kB"),
            (1400, "1.4 kB"),
            (16017, "16.0 kB"),
            (999_949, "999.9 kB"),
            (999_950, "1000.0 kB"),
            (1_300_000, "1.3 MB"),
            (u64::MAX, "18.4 EB"),
        ] {
            assert_eq!(size_as_leakcanary(bytes), want, "{bytes}");
        }
    }
}
