//! A `diff` report as text, JSON and one HTML page.

use std::fmt::Write;

use maud::html;

use super::{grouped, human};
use crate::compare::diff::{DiffReport, LeakGroup};

/// The report as pretty JSON (docs/diff.md's schema).
pub fn json(r: &DiffReport) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("the report serializes");
    s.push('\n');
    s
}

/// `+1,234`, `-56`, `0`.
pub fn signed(v: i64) -> String {
    match v {
        0 => "0".into(),
        v if v > 0 => format!("+{}", grouped(v as u64)),
        v => format!("-{}", grouped(v.unsigned_abs())),
    }
}

/// `+16.2 kB`, `-1.3 MB`.
pub fn signed_human(v: i64) -> String {
    match v {
        0 => "0".into(),
        v if v > 0 => format!("+{}", human(v as u64)),
        v => format!("-{}", human(v.unsigned_abs())),
    }
}

fn leaks_text(s: &mut String, title: &str, list: &[LeakGroup], omitted: u64) {
    if list.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n{title} ({}):", list.len() as u64 + omitted);
    for g in list {
        let _ = writeln!(
            s,
            "  {} × {}, retaining {}{}  [{}]",
            grouped(g.count),
            g.class_name,
            human(g.retained_bytes),
            if g.library_leak {
                " (library leak)"
            } else {
                ""
            },
            g.signature
        );
        let _ = writeln!(s, "      {}", g.reason);
    }
    if omitted > 0 {
        let _ = writeln!(s, "  and {} more", grouped(omitted));
    }
}

/// The report for a terminal.
pub fn text(r: &DiffReport) -> String {
    let mut s = String::new();
    summary_text(&mut s, r);
    leaks_text(&mut s, "New leaks", &r.new_leaks, r.omitted_new_leaks);
    leaks_text(&mut s, "Gone leaks", &r.gone_leaks, r.omitted_gone_leaks);
    retainers_text(&mut s, r);
    classes_text(&mut s, r);
    s
}

/// The two dumps, the reachable change, the leak counts and the notes.
fn summary_text(s: &mut String, r: &DiffReport) {
    let (b, n) = (&r.base, &r.new);
    let _ = writeln!(s, "Base: {} ({}, {})", b.path, b.kind, human(b.bytes));
    let _ = writeln!(s, "New:  {} ({}, {})", n.path, n.kind, human(n.bytes));
    let _ = writeln!(
        s,
        "Reachable: {} objects ({}), {} ({})",
        grouped(n.reachable_objects),
        signed(n.reachable_objects as i64 - b.reachable_objects as i64),
        human(n.reachable_bytes),
        signed_human(n.reachable_bytes as i64 - b.reachable_bytes as i64)
    );
    let _ = writeln!(
        s,
        "Leaks: {} in base, {} in new; {} new signature{}, {} gone, {} in both",
        b.leaks,
        n.leaks,
        r.new_leaks.len() as u64 + r.omitted_new_leaks,
        if r.new_leaks.len() as u64 + r.omitted_new_leaks == 1 {
            ""
        } else {
            "s"
        },
        r.gone_leaks.len() as u64 + r.omitted_gone_leaks,
        r.kept_leak_signatures
    );
    for note in &r.notes {
        let _ = writeln!(s, "Note: {note}");
    }
}

/// The retainers that grew past the threshold, each with its path.
fn retainers_text(s: &mut String, r: &DiffReport) {
    if r.retainers.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nRetainers that grew by {} or more:",
        human(r.retainer_threshold_bytes)
    );
    for x in &r.retainers {
        let _ = writeln!(
            s,
            "  {} {} (now {}{})",
            signed_human(x.change),
            x.class_name,
            human(x.retained_bytes),
            if x.base_retained_bytes.is_none() {
                ", new"
            } else {
                ""
            }
        );
        for step in &x.path {
            let _ = writeln!(s, "      {step}");
        }
    }
    if r.omitted_retainers > 0 {
        let _ = writeln!(s, "  and {} more", grouped(r.omitted_retainers));
    }
}

/// The classes by change of retained bytes, as a table with right-aligned numbers.
fn classes_text(s: &mut String, r: &DiffReport) {
    if r.classes.is_empty() {
        let _ = writeln!(s, "\nNo class changed.");
        return;
    }
    let _ = writeln!(s, "\nClasses by change of retained bytes:");
    let rows: Vec<[String; 4]> = r
        .classes
        .iter()
        .map(|c| {
            [
                signed(c.instances),
                signed(c.shallow_bytes),
                signed(c.retained_bytes),
                c.class_name.clone(),
            ]
        })
        .collect();
    let head = ["instances", "shallow", "retained", "class"];
    let width: Vec<usize> = (0..3)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let _ = writeln!(
        s,
        "  {:>w0$}  {:>w1$}  {:>w2$}  {}",
        head[0],
        head[1],
        head[2],
        head[3],
        w0 = width[0],
        w1 = width[1],
        w2 = width[2]
    );
    for row in rows {
        let _ = writeln!(
            s,
            "  {:>w0$}  {:>w1$}  {:>w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = width[0],
            w1 = width[1],
            w2 = width[2]
        );
    }
    if r.omitted_classes > 0 {
        let _ = writeln!(
            s,
            "  and {} more classes changed",
            grouped(r.omitted_classes)
        );
    }
}

/// What this page adds to [`super::BASE_STYLE`].
const STYLE: &str = ".path{font-family:ui-monospace,monospace;font-size:12px;color:#555}
.sig{font-family:ui-monospace,monospace;font-size:12px;color:#555}
.note{background:#fff8e1;padding:.4em .8em}
";

fn leaks_html(title: &str, list: &[LeakGroup], omitted: u64) -> maud::Markup {
    html! {
        h2 { (title) " (" (list.len() as u64 + omitted) ")" }
        @if !list.is_empty() {
            table {
                tr { th { "count" } th { "class" } th { "retained" } th { "reason" } th { "signature" } }
                @for g in list {
                    tr { td.n { (grouped(g.count)) } td { (g.class_name) @if g.library_leak { " (library leak)" } }
                         td.n { (human(g.retained_bytes)) } td { (g.reason) } td.sig { (g.signature) } }
                }
            }
            @if omitted > 0 { p { "and " (omitted) " more" } }
        }
    }
}

/// The report as one self-contained HTML page, every name from the dumps escaped.
pub fn html(r: &DiffReport) -> String {
    let (b, n) = (&r.base, &r.new);
    let title = html! { "Heap diff: " (b.path) " → " (n.path) };
    let body = html! {
        h1 { "Heap diff" }
        @for note in &r.notes { p.note { (note) } }
        table {
            tr { th {} th { "base" } th { "new" } th { "change" } }
            tr { th { "dump" } td { code { (b.path) } } td { code { (n.path) } } td {} }
            tr { th { "size" } td.n { (human(b.bytes)) } td.n { (human(n.bytes)) } td {} }
            tr { th { "reachable objects" } td.n { (grouped(b.reachable_objects)) } td.n { (grouped(n.reachable_objects)) }
                 td.n { (signed(n.reachable_objects as i64 - b.reachable_objects as i64)) } }
            tr { th { "reachable bytes" } td.n { (human(b.reachable_bytes)) } td.n { (human(n.reachable_bytes)) }
                 td.n { (signed_human(n.reachable_bytes as i64 - b.reachable_bytes as i64)) } }
            tr { th { "leaks" } td.n { (b.leaks) } td.n { (n.leaks) } td.n { (signed(n.leaks as i64 - b.leaks as i64)) } }
        }
        (leaks_html("New leaks", &r.new_leaks, r.omitted_new_leaks))
        (leaks_html("Gone leaks", &r.gone_leaks, r.omitted_gone_leaks))
        h2 { "Retainers that grew by " (human(r.retainer_threshold_bytes)) " or more (" (r.retainers.len() as u64 + r.omitted_retainers) ")" }
        @if !r.retainers.is_empty() {
            table {
                tr { th { "change" } th { "retained now" } th { "retainer and its path" } }
                @for x in &r.retainers {
                    tr { td.n { (signed_human(x.change)) } td.n { (human(x.retained_bytes)) @if x.base_retained_bytes.is_none() { " (new)" } }
                         td { (x.class_name) @for step in &x.path { div.path { (step) } } } }
                }
            }
            @if r.omitted_retainers > 0 { p { "and " (r.omitted_retainers) " more" } }
        }
        h2 { "Classes by change of retained bytes (" (r.classes.len() as u64 + r.omitted_classes) ")" }
        table {
            tr { th { "class" } th { "instances" } th { "Δ" } th { "shallow" } th { "Δ" } th { "retained" } th { "Δ" } }
            @for c in &r.classes {
                tr { td { (c.class_name) }
                     td.n { (grouped(c.new.instances)) } td.n { (signed(c.instances)) }
                     td.n { (grouped(c.new.shallow_bytes)) } td.n { (signed(c.shallow_bytes)) }
                     td.n { (grouped(c.new.retained_bytes)) } td.n { (signed(c.retained_bytes)) } }
            }
        }
        @if r.omitted_classes > 0 { p { "and " (r.omitted_classes) " more classes changed" } }
    };
    super::page(title, STYLE, body)
}
