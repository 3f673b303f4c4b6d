//! A `growth` report as text (LeakCanary's shape: each growing node's path from its GC
//! root, its retained size, its growing children), JSON and one HTML page.

use std::fmt::Write;

use maud::html;

use super::{grouped, human};
use crate::compare::growth::{GrowingNode, GrowthReport, PATH_HEAD_STEPS};

/// The report as pretty JSON (docs/diff.md's schema).
pub fn json(r: &GrowthReport) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("the report serializes");
    s.push('\n');
    s
}

fn signed_bytes(v: i64) -> String {
    if v < 0 {
        format!("- {}", human(v.unsigned_abs()))
    } else {
        format!("+ {}", human(v as u64))
    }
}

fn retained_line(n: &GrowingNode) -> Option<(String, String)> {
    let bytes = n.retained_bytes?;
    let objects = n.retained_objects.unwrap_or(0);
    let (b, o) = match (n.retained_increase_bytes, n.retained_increase_objects) {
        (Some(db), Some(dobj)) => (
            format!(" ({})", signed_bytes(db)),
            format!(
                " ({}{})",
                if dobj < 0 { "- " } else { "+ " },
                grouped(dobj.unsigned_abs())
            ),
        ),
        _ => (String::new(), String::new()),
    };
    Some((
        format!("Retained size: {}{b}", human(bytes)),
        format!("Retained objects: {}{o}", grouped(objects)),
    ))
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", grouped(n), if n == 1 { one } else { many })
}

/// The report for a terminal, LeakCanary's shape.
pub fn text(r: &GrowthReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Heap growth over {} ({} scenario loop{} per dump), in this order:",
        plural(r.dumps_given as u64, "dump", "dumps"),
        r.scenario_loops,
        if r.scenario_loops == 1 { "" } else { "s" }
    );
    for (i, d) in r.dumps.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {}. {} ({}, {} reachable, {})",
            i + 1,
            d.path,
            human(d.bytes),
            plural(d.reachable_objects, "object", "objects"),
            plural(d.path_nodes, "path", "paths")
        );
    }
    if let Some(k) = r.stopped_at {
        let _ = writeln!(
            s,
            "\nNot growing: nothing grew by {} or more in every step up to dump {k}{}.",
            plural(r.scenario_loops, "object", "objects"),
            if k < r.dumps_given {
                format!(
                    " ({} after it not read)",
                    plural((r.dumps_given - k) as u64, "dump", "dumps")
                )
            } else {
                String::new()
            }
        );
        return s;
    }
    if !r.growing {
        let _ = writeln!(s, "\nNot growing: one dump has nothing to compare with.");
        return s;
    }
    let total = r.nodes.len() as u64 + r.omitted_nodes;
    let _ = writeln!(
        s,
        "\nGrowing: {} grew in every step.",
        plural(total, "object path", "object paths")
    );
    for n in &r.nodes {
        node_text(&mut s, n);
    }
    if r.omitted_nodes > 0 {
        let _ = writeln!(
            s,
            "\nand {} more (the smallest by retained size)",
            plural(r.omitted_nodes, "growing path", "growing paths")
        );
    }
    s
}

/// One growing node: its path from a root (LeakCanary's shape), its retained size and its
/// growing children.
fn node_text(s: &mut String, n: &GrowingNode) {
    s.push('\n');
    s.push_str("┬───\n");
    for (i, step) in n.path.iter().enumerate() {
        let lead = if i == 0 { "│ " } else { "├─" };
        let _ = writeln!(
            s,
            "{lead}{} ({})",
            step.name,
            plural(step.objects, "object", "objects")
        );
        s.push_str("│ \n");
        if i + 1 == PATH_HEAD_STEPS && n.omitted_steps > 0 {
            let _ = writeln!(s, "│ ... {} ...", plural(n.omitted_steps, "step", "steps"));
            s.push_str("│ \n");
        }
    }
    let _ = writeln!(
        s,
        "╰→{} ({})",
        n.name,
        plural(n.objects, "object", "objects")
    );
    if let Some((bytes, objects)) = retained_line(n) {
        let _ = writeln!(s, "    {bytes}");
        let _ = writeln!(s, "    {objects}");
    }
    s.push_str("    Children:\n");
    for c in &n.children {
        let last = c.increases.last().copied().unwrap_or(0);
        let steps: Vec<String> = c
            .increases
            .iter()
            .map(|i| format!("+{}", grouped(*i)))
            .collect();
        let _ = writeln!(
            s,
            "    {} ({} new; per step {}): {}",
            plural(c.objects, "object", "objects"),
            grouped(last),
            steps.join(", "),
            c.name
        );
    }
    if n.omitted_children > 0 {
        let _ = writeln!(
            s,
            "    and {} more",
            plural(n.omitted_children, "growing child", "growing children")
        );
    }
}

/// What this page adds to [`super::BASE_STYLE`].
const STYLE: &str = ".path{font-family:ui-monospace,monospace;font-size:13px;border-left:3px solid #888;padding-left:1em}
.step{margin:.3em 0}.grow{color:#b00020;font-weight:bold}
.note{background:#fff8e1;padding:.4em .8em}
";

/// The report as one self-contained HTML page, every name from the dumps escaped.
pub fn html(r: &GrowthReport) -> String {
    let title = html! { "Heap growth" };
    let body = html! {
        h1 { "Heap growth over " (r.dumps_given) " dumps" }
        p { (r.scenario_loops) " scenario loop" @if r.scenario_loops != 1 { "s" } " per dump: a child grows when it gains at least that many objects in every step." }
        h2 { "Dumps" }
        table {
            tr { th { "#" } th { "dump" } th { "size" } th { "reachable objects" } th { "paths" } th { "growing" } }
            @for (i, d) in r.dumps.iter().enumerate() {
                tr { td.n { (i + 1) } td { code { (d.path) } } td.n { (human(d.bytes)) }
                     td.n { (grouped(d.reachable_objects)) } td.n { (grouped(d.path_nodes)) }
                     td.n { @if i == 0 { "-" } @else { (grouped(d.growing_nodes)) } } }
            }
        }
        @if let Some(k) = r.stopped_at {
            p.note { "Not growing: nothing grew in every step up to dump " (k) "." }
        } @else if !r.growing {
            p.note { "Not growing: one dump has nothing to compare with." }
        } @else {
            h2 { (r.nodes.len() as u64 + r.omitted_nodes) " growing object path" @if r.nodes.len() as u64 + r.omitted_nodes != 1 { "s" } }
            @for n in &r.nodes {
                h3 { code { (n.name) } }
                @if let Some((bytes, objects)) = retained_line(n) { p { (bytes) br; (objects) } }
                div.path {
                    @for step in &n.path { div.step { (step.name) " (" (grouped(step.objects)) ")" } }
                    @if n.omitted_steps > 0 { div.step { "… " (n.omitted_steps) " steps left out …" } }
                    div.step.grow { (n.name) " (" (grouped(n.objects)) ")" }
                }
                table {
                    tr { th { "growing child" } th { "objects" } th { "per step" } th { "per loop" } }
                    @for c in &n.children {
                        tr { td { code { (c.name) } } td.n { (grouped(c.objects)) }
                             td.n { (c.increases.iter().map(|i| format!("+{}", grouped(*i))).collect::<Vec<_>>().join(", ")) }
                             td.n { (format!("{:.1}", c.increase_per_loop)) } }
                    }
                }
                @if n.omitted_children > 0 { p { "and " (n.omitted_children) " more growing children" } }
            }
            @if r.omitted_nodes > 0 { p { "and " (r.omitted_nodes) " more growing paths (the smallest)" } }
        }
    };
    super::page(title, STYLE, body)
}
