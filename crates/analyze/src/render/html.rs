//! One self-contained HTML page: the dump's summary, each leak trace, the duplicate-bitmap
//! groups with their pictures inline (data: URLs), and nothing fetched from anywhere, so
//! it opens offline. maud escapes every value for HTML, and every string from the dump or
//! the package also goes through [`shown`], so that no control or bidi character in a name
//! changes what the page shows.

use base64::Engine;
use maud::{html, Markup};

use super::{
    counted, grouped, human, omitted_steps_text, reference_text, retaining_with_native, shown,
};
use crate::base::limits::MAX_BITMAP_GROUPS;
use crate::model::{Analysis, Trace};

/// What this page adds to [`super::BASE_STYLE`].
const STYLE: &str = ".trace{font-family:ui-monospace,monospace;font-size:13px;border-left:3px solid #888;padding-left:1em}
.step{margin:.4em 0}.YES{color:#b00020;font-weight:bold}.NO{color:#1b5e20}.UNKNOWN{color:#777}
.suspect{text-decoration:underline wavy #b00020}
.sig{font-family:ui-monospace,monospace;font-size:12px;color:#555}
.bitmaps{display:flex;flex-wrap:wrap;gap:1.5em}.bitmap{border:1px solid #ddd;padding:.8em;max-width:22em}
.bitmap .placeholder{width:10em;height:6em;display:flex;align-items:center;justify-content:center;text-align:center;background:#eee;color:#666;font-size:.8em}
.bitmap img{min-width:8em;max-width:20em;max-height:20em;image-rendering:pixelated;background:repeating-conic-gradient(#eee 0 25%,#fff 0 50%) 0/16px 16px}
.note{background:#fff8e1;padding:.4em .8em}
.omitted{color:#777;font-style:italic}
";

/// The analysis as one HTML page, section by section.
pub fn render(a: &Analysis, pictures: &[(String, Vec<u8>)]) -> String {
    let d = &a.dump;
    let title = html! { "Heap analysis: " (shown(&a.input.path)) };
    let body = html! {
        h1 { "Heap analysis of " code { (shown(&a.input.path)) } }
        @for n in &a.notes { p.note { (shown(n)) } }
        @if a.omitted_notes > 0 { p.note { (counted(a.omitted_notes, "more note")) " not shown." } }
        (not_run(a))
        (dump(a))
        @if let (true, Some(t)) = (a.leaks.is_empty(), &a.triage) { (super::triage::html(t)) }
        (leaks(a))
        (unreachable(a))
        (duplicate_bitmaps(a, pictures))
        @if let (false, Some(t)) = (a.leaks.is_empty(), &a.triage) { (super::triage::html(t)) }
        h2 { "Largest classes" }
        table {
            tr { th { "class" } th { "instances" } th { "shallow bytes" } }
            @for c in &d.top_classes {
                tr { td { (shown(&c.class_name)) } td.n { (grouped(c.instances)) } td.n { (grouped(c.shallow_bytes)) } }
            }
        }
        p.sig { (shown(&a.tool)) ", schema " (a.schema) }
    };
    super::page(title, STYLE, body)
}

/// The leaks, each with its trace.
fn leaks(a: &Analysis) -> Markup {
    html! {
        h2 { (counted(a.leaks.len() as u64 + a.omitted_leaks, "leak")) }
        @if a.omitted_leaks > 0 { p.note { "The first " (a.leaks.len()) " found are listed." } }
        @if let Some(k) = &a.key { p { "Key: " code { (shown(k)) } } }
        @for (i, leak) in a.leaks.iter().enumerate() {
            h3 { "Leak " (i + 1) ": " (shown(&leak.class_name))
                @if leak.library_leak.is_some() { " (library leak)" } }
            p {
                "Retaining " b { (retaining_with_native(leak.retained_bytes, leak.retained_native_bytes, leak.retained_objects)) } ". "
                span.sig { "signature " (shown(&leak.signature)) }
                @if !leak.finders.is_empty() { br; span.sig { "found by " (shown(&leak.finders.join(", "))) } }
                @if leak.trace_count > 1 {
                    br; "Showing 1 trace of " (leak.trace_count) " with this signature, retaining "
                    (retaining_with_native(leak.total_retained_bytes, leak.total_retained_native_bytes, leak.total_retained_objects)) " together."
                }
            }
            @if let Some(lib) = &leak.library_leak {
                p.note { "Known framework leak " code { (shown(&lib.pattern)) } ": " (shown(&lib.description)) }
            }
            (trace(&leak.trace))
        }
    }
}

/// The leaking objects no strong path reaches.
fn unreachable(a: &Analysis) -> Markup {
    html! {
        @if !a.unreachable.is_empty() || a.omitted_unreachable > 0 {
            h2 { (counted(a.unreachable.len() as u64 + a.omitted_unreachable, "unreachable object")) }
            p { "Leaking, but no strong path from a GC root reaches them." }
            @if a.omitted_unreachable > 0 { p.note { "The first " (a.unreachable.len()) " found are listed." } }
            @for u in &a.unreachable {
                div.trace {
                    div.step {
                        (shown(&u.class_name)) " " (shown(&u.kind)) " "
                        span.YES { "Leaking: YES" } " (" (shown(&u.leaking_reason)) ")"
                        @for l in &u.labels { br; (shown(l)) }
                        @if u.omitted_labels > 0 { br; span.omitted { "… " (counted(u.omitted_labels, "more label")) } }
                        br; span.sig { "found by " (shown(&u.finders.join(", "))) }
                    }
                }
            }
        }
    }
}

/// The groups of duplicate bitmaps, with their pictures.
fn duplicate_bitmaps(a: &Analysis, pictures: &[(String, Vec<u8>)]) -> Markup {
    html! {
        h2 { (counted(a.duplicate_bitmaps.len() as u64 + a.omitted_duplicate_bitmaps, "group")) " of duplicate bitmaps" }
        @if a.omitted_duplicate_bitmaps > 0 {
            p.note { "The " (a.duplicate_bitmaps.len()) " groups that waste the most are listed." }
        }
        div.bitmaps {
            // An analysis stored before the groups were capped may have more.
            @for (i, g) in a.duplicate_bitmaps.iter().enumerate() {
                div.bitmap {
                    @if let Some(img) = g.image.as_ref().filter(|_| i < MAX_BITMAP_GROUPS).and_then(|n| picture(n, pictures)) {
                        img src=(img) alt=(format!("{}×{} bitmap", g.width, g.height));
                    } @else if a.input.private {
                        div.placeholder { (g.width) "×" (g.height) br; "private package: no pixels" }
                    }
                    p {
                        b { (g.count) " × " (g.width) "×" (g.height) } " " (shown(&g.format)) br;
                        (human(g.buffer_bytes)) " each, " (human(g.wasted_bytes)) " wasted" br;
                        span.sig { "md5 " (shown(&g.hash)) }
                    }
                    details {
                        summary { "paths" }
                        @for inst in &g.instances {
                            @if let Some(t) = &inst.trace { (trace(t)) }
                        }
                        @if g.omitted_instances > 0 {
                            p { "… and " (counted(g.omitted_instances, "more instance")) }
                        }
                    }
                }
            }
        }
    }
}

/// The rules and steps that could not run on this heap (`dump.notRun`), as a table, and
/// the parts left out on request.
fn not_run(a: &Analysis) -> Markup {
    let not_run = &a.dump.not_run;
    html! {
        @if let Some(line) = super::text::skipped_line(a) { p.note { (line) } }
        @if !not_run.is_empty() {
            p.note { "Not run: a " (shown(&a.dump.format)) " holds no field values, and each of these asked for a field the heap does not hold:" }
            table {
                tr { th { "kind" } th { "rule or step" } th { "objects" } th { "needs" } }
                @for n in not_run {
                    tr { td { (shown(&n.kind)) } td { (shown(&n.rule)) } td.n { (grouped(n.objects)) } td { code { (shown(&n.needs)) } } }
                }
            }
        }
    }
}

/// The dump's summary table.
fn dump(a: &Analysis) -> Markup {
    let d = &a.dump;
    html! {
        h2 { "Dump" }
        table {
            tr { th { "input" } td { (shown(&a.input.kind)) @if a.input.shrunk { " (shrunk)" } @if a.input.private { " (private)" } } }
            tr { th { "format" } td { (shown(&d.format)) ", " (d.id_size) "-byte ids" } }
            tr { th { "objects" } td.n { (grouped(d.instances + d.object_arrays + d.primitive_arrays + d.classes)) } }
            tr { th { "GC roots" } td.n { (grouped(d.gc_roots)) } }
            tr { th { "instances" } td.n { (grouped(d.instances)) } }
            tr { th { "object arrays" } td.n { (grouped(d.object_arrays)) } }
            tr { th { "primitive arrays" } td.n { (grouped(d.primitive_arrays)) } }
            tr { th { "classes" } td.n { (grouped(d.classes)) } }
            tr { th { "threads" } td.n { (grouped(d.threads)) } }
            tr { th { "heap" } td.n { (human(d.heap_bytes)) } }
            @if let Some(device) = super::text::device_line(&a.metadata) {
                tr { th { "from the heap" } td { (device) } }
            }
            tr { th { "strongly reachable" } td.n { (counted(d.reachable_objects, "object")) ", " (super::with_native(d.reachable_bytes, d.reachable_native_bytes)) } }
            @for (k, v) in &a.input.manifest { tr { th { (shown(k)) } td { (shown(v)) } } }
            @for (k, v) in &a.input.extra { tr { th { (shown(k)) } td { (shown(v)) } } }
        }
    }
}

/// A leak trace as HTML (the analysis page and `serve`'s pages show it alike).
pub fn trace(t: &Trace) -> Markup {
    html! {
        div.trace {
            div.step { "GC root: " b { (shown(&t.root)) } }
            @for s in t.shown_steps() {
                @if let Some(s) = s {
                    div.step {
                        (shown(&s.class_name)) " " (shown(&s.kind)) " "
                        span class=(shown(&s.leaking)) { "Leaking: " (shown(&s.leaking)) }
                        @if let Some(r) = &s.leaking_reason { " (" (shown(r)) ")" }
                        @for l in &s.labels { br; (shown(l)) }
                        @if s.omitted_labels > 0 { br; span.omitted { "… " (counted(s.omitted_labels, "more label")) } }
                        @if let Some(r) = &s.reference {
                            br;
                            "↓ "
                            @if r.suspect { span.suspect { (reference_text(&s.class_name, r)) } }
                            @else { (reference_text(&s.class_name, r)) }
                        }
                    }
                } @else {
                    div.step.omitted { (omitted_steps_text(t.omitted_steps)) }
                }
            }
        }
    }
}

/// A picture as a data: URL.
fn picture(name: &str, pictures: &[(String, Vec<u8>)]) -> Option<String> {
    let (_, bytes) = pictures.iter().find(|(n, _)| n == name)?;
    let mime = match name.rsplit('.').next() {
        Some("png") => "image/png",
        Some("jpg") => "image/jpeg",
        Some("webp") => "image/webp",
        _ => return None,
    };
    Some(format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}
