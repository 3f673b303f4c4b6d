//! The analysis written out: a leak trace a person reads at a terminal ([`text`]), the
//! JSON of [`super::model`] ([`json`]), Matrix's `result.json` with its pictures
//! ([`matrix`]), and one self-contained HTML page ([`html`]).

pub mod diff;
pub mod growth;
pub mod html;
pub mod matrix;
pub mod text;

use super::model::Analysis;

/// The analysis as pretty JSON (the schema is docs/analyze.md's).
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
        format!("{bytes} bytes")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `Holder.sLeaked`, `Object[].[3]`, `<Java Local>`: a reference as a trace shows it.
pub fn reference_text(class_name: &str, r: &super::model::Reference) -> String {
    let owner = r.declared_by.as_deref().unwrap_or(class_name);
    let simple = owner.rsplit('.').next().unwrap_or(owner);
    match r.kind.as_str() {
        "static" => format!("static {simple}.{}", r.name),
        "field" => format!("{simple}.{}", r.name),
        "array" => format!("{simple}{}", r.name),
        _ => r.name.clone(),
    }
}

/// `16.0 kB (16,017 bytes) in 2 objects`, `17 bytes in 1 object`.
pub fn retaining(bytes: u64, objects: u64) -> String {
    let size = if bytes < 1000 {
        human(bytes)
    } else {
        format!("{} ({} bytes)", human(bytes), grouped(bytes))
    };
    let plural = if objects == 1 { "" } else { "s" };
    format!("{size} in {} object{plural}", grouped(objects))
}
