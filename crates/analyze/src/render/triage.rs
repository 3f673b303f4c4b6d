//! The triage (made in `report::triage`) as text and as a part of the HTML page.

use std::fmt::Write;

use maud::{html, Markup};

use super::{grouped, human, reference_text, with_native};
use crate::model::triage::{ClassRetained, Triage, TriageObject};
use crate::model::Trace;

/// `[system class] static Cache.sInstance → Cache.mEntries → LinkedHashMap`: a path on
/// one line, ending with the object's class.
pub fn one_line(t: &Trace) -> String {
    let mut parts = vec![format!("[{}]", t.root)];
    for s in &t.steps {
        match &s.reference {
            Some(r) => parts.push(reference_text(&s.class_name, r)),
            None => parts.push(s.class_name.clone()),
        }
    }
    parts.join(" → ")
}

fn share(part: u64, of: u64) -> String {
    if of == 0 {
        return "0%".into();
    }
    format!("{:.0}%", part as f64 * 100.0 / of as f64)
}

fn object_line(o: &TriageObject) -> String {
    format!(
        "{} {} ({:#x}) retains {}",
        o.class_name,
        o.kind,
        o.object_id,
        with_native(o.retained_bytes, o.retained_native_bytes)
    )
}

fn path_line(o: &TriageObject) -> String {
    o.path
        .as_ref()
        .map(one_line)
        .unwrap_or_else(|| "no path from a GC root".into())
}

fn more(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("  … and {} more", grouped(n))
    }
}

fn class_rows(o: &mut String, rows: &[ClassRetained], indent: &str) {
    for c in rows {
        let _ = writeln!(
            o,
            "{indent}{} × {}: {}",
            grouped(c.objects),
            c.class_name,
            with_native(c.retained_bytes, c.retained_native_bytes)
        );
    }
}

/// Appends the triage as text (from its `Triage:` line) to `o`.
pub fn text(o: &mut String, t: &Triage) {
    let heap = t.heap_bytes.saturating_add(t.heap_native_bytes);
    let _ = writeln!(
        o,
        "Triage: {} reachable.",
        with_native(t.heap_bytes, t.heap_native_bytes)
    );
    let _ = writeln!(o, "Top retainers (objects the GC roots dominate directly):");
    for (i, r) in t.top_retainers.iter().enumerate() {
        let all = r
            .object
            .retained_bytes
            .saturating_add(r.object.retained_native_bytes);
        let _ = writeln!(
            o,
            // Right-aligned, so that the lines under it line up past 9.
            "{:>3}. {}, {} of the heap{}",
            i + 1,
            object_line(&r.object),
            share(all, heap),
            if r.suspect { " — suspect" } else { "" }
        );
        let _ = writeln!(o, "     {}", path_line(&r.object));
        if let Some(a) = &r.accumulation {
            let _ = writeln!(
                o,
                "     Accumulates in {} ({:#x}), {}:",
                a.object.class_name,
                a.object.object_id,
                with_native(a.object.retained_bytes, a.object.retained_native_bytes)
            );
            let _ = writeln!(o, "       {}", path_line(&a.object));
            class_rows(o, &a.dominated_by_class, "       ");
            let left = more(a.dominated_by_class_left_out);
            if !left.is_empty() {
                let _ = writeln!(o, "     {left} classes");
            }
        }
    }
    if t.top_retainers_left_out > 0 {
        let _ = writeln!(o, "{}", more(t.top_retainers_left_out));
    }
    classes_and_arrays(o, t);
    counts(o, t);
    bitmaps(o, t);
    strings(o, t);
}

/// Retained by class and the largest arrays.
fn classes_and_arrays(o: &mut String, t: &Triage) {
    let _ = writeln!(
        o,
        "Retained by class (top retainers of each class together):"
    );
    class_rows(o, &t.retained_by_class, "  ");
    if t.retained_by_class_left_out > 0 {
        let _ = writeln!(o, "{} classes", more(t.retained_by_class_left_out));
    }
    for (title, list, left) in [
        (
            "Largest primitive arrays:",
            &t.largest_primitive_arrays,
            t.largest_primitive_arrays_left_out,
        ),
        (
            "Largest object arrays:",
            &t.largest_object_arrays,
            t.largest_object_arrays_left_out,
        ),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(o, "{title}");
        for a in list {
            let _ = writeln!(
                o,
                "  {} ({:#x}), {}: {}",
                a.class_name,
                a.object_id,
                human(a.shallow_bytes),
                path_line(a)
            );
        }
        if left > 0 {
            let _ = writeln!(o, "{}", more(left));
        }
    }
}

/// The counts and the threads.
fn counts(o: &mut String, t: &Triage) {
    let c = &t.counts;
    let _ = writeln!(
        o,
        "Counts: {} Activities ({}), {} Fragments, {} Windows, {} Bitmaps, {} threads.",
        grouped(c.activities),
        destroyed(c),
        grouped(c.fragments),
        grouped(c.windows),
        grouped(c.bitmaps),
        grouped(c.threads)
    );
    if !t.threads.is_empty() {
        let names: Vec<String> = t
            .threads
            .iter()
            .map(|g| {
                if g.count == 1 {
                    g.name.clone()
                } else {
                    format!("{} × {}", g.count, g.name)
                }
            })
            .collect();
        let _ = writeln!(
            o,
            "Threads: {}{}",
            names.join(", "),
            more(t.threads_left_out)
        );
    }
}

/// How many Activities are destroyed, or that the heap cannot tell.
pub fn destroyed(c: &crate::model::triage::Counts) -> String {
    match c.destroyed_unknown {
        true => "destroyed not known: no field values in the heap".into(),
        false => format!("{} destroyed", grouped(c.destroyed_activities)),
    }
}

/// What the Bitmaps' sizes cannot say when the heap gives no width and height.
pub const NO_DIMENSIONS: &str = "large ones not known: no width and height in the heap";

/// The Bitmaps and the largest of them.
fn bitmaps(o: &mut String, t: &Triage) {
    let b = &t.bitmaps;
    if b.count > 0 && b.dimensions_unknown {
        let _ = writeln!(
            o,
            "Bitmaps: {}, {} Java + {} native; {NO_DIMENSIONS}.",
            grouped(b.count),
            human(b.java_bytes),
            human(b.native_bytes),
        );
    } else if b.count > 0 {
        let rule = match &b.screen {
            Some(s) => format!(
                "over {} pixels: the {}×{} screen ({}) × 1.1",
                grouped(b.large_threshold_pixels),
                s.width,
                s.height,
                s.source
            ),
            None => format!(
                "over {} pixels: KOOM's 768×1366, no screen known (--screen WxH)",
                grouped(b.large_threshold_pixels)
            ),
        };
        let _ = writeln!(
            o,
            "Bitmaps: {}, {} Java + {} native; {} large ({}), {}.",
            grouped(b.count),
            human(b.java_bytes),
            human(b.native_bytes),
            grouped(b.large_count),
            rule,
            human(b.large_bytes)
        );
        for x in &b.largest {
            let _ = writeln!(
                o,
                "  {}×{} {} ({:#x}){}{}: {} Java, {} native; {}",
                x.width,
                x.height,
                x.config,
                x.object_id,
                if x.large { ", large" } else { "" },
                if x.recycled { ", recycled" } else { "" },
                human(x.java_bytes),
                human(x.native_bytes),
                x.path
                    .as_ref()
                    .map(one_line)
                    .unwrap_or_else(|| "no path".into())
            );
        }
        if b.largest_left_out > 0 {
            let _ = writeln!(o, "{}", more(b.largest_left_out));
        }
    } else {
        let _ = writeln!(o, "Bitmaps: none.");
    }
}

/// The duplicate Strings.
fn strings(o: &mut String, t: &Triage) {
    if !t.duplicate_strings.is_empty() {
        let _ = writeln!(o, "Duplicate Strings, by bytes wasted:");
        for s in &t.duplicate_strings {
            let _ = writeln!(
                o,
                "  {} × {:?}{}: {} wasted",
                grouped(s.count),
                s.value,
                if s.length as usize > s.value.chars().count() {
                    "…"
                } else {
                    ""
                },
                human(s.wasted_bytes)
            );
        }
        if t.duplicate_strings_left_out > 0 {
            let _ = writeln!(o, "{}", more(t.duplicate_strings_left_out));
        }
    }
}

fn object_row(o: &TriageObject) -> Markup {
    html! {
        td { (o.class_name) " " (o.kind) }
        td.n { (with_native(o.retained_bytes, o.retained_native_bytes)) }
        td { @if let Some(p) = &o.path { (one_line(p)) } @else { "no path" } }
    }
}

fn class_table(rows: &[ClassRetained], left: u64) -> Markup {
    html! {
        table {
            tr { th { "class" } th { "objects" } th { "retained" } }
            @for c in rows {
                tr { td { (c.class_name) } td.n { (grouped(c.objects)) } td.n { (with_native(c.retained_bytes, c.retained_native_bytes)) } }
            }
        }
        @if left > 0 { p { "… and " (grouped(left)) " more" } }
    }
}

/// The triage as a part of the HTML page.
pub fn html(t: &Triage) -> Markup {
    let heap = t.heap_bytes.saturating_add(t.heap_native_bytes);
    let c = &t.counts;
    let b = &t.bitmaps;
    html! {
        h2 { "Triage" }
        p { (with_native(t.heap_bytes, t.heap_native_bytes)) " reachable. "
            (grouped(c.activities)) " Activities (" (destroyed(c)) "), "
            (grouped(c.fragments)) " Fragments, " (grouped(c.windows)) " Windows, "
            (grouped(c.bitmaps)) " Bitmaps, " (grouped(c.threads)) " threads." }
        h3 { "Top retainers" }
        table {
            tr { th { "share" } th { "object" } th { "retained" } th { "path" } }
            @for r in &t.top_retainers {
                tr {
                    td.n { (share(r.object.retained_bytes.saturating_add(r.object.retained_native_bytes), heap)) @if r.suspect { " suspect" } }
                    (object_row(&r.object))
                }
                @if let Some(a) = &r.accumulation {
                    tr { td { "accumulates in" } (object_row(&a.object)) }
                    tr { td {} td colspan="3" { (class_table(&a.dominated_by_class, a.dominated_by_class_left_out)) } }
                }
            }
        }
        h3 { "Retained by class" }
        (class_table(&t.retained_by_class, t.retained_by_class_left_out))
        h3 { "Largest arrays" }
        table {
            tr { th { "array" } th { "shallow" } th { "path" } }
            @for a in t.largest_primitive_arrays.iter().chain(&t.largest_object_arrays) {
                tr { td { (a.class_name) } td.n { (human(a.shallow_bytes)) } td { @if let Some(p) = &a.path { (one_line(p)) } } }
            }
        }
        h3 { "Bitmaps" }
        p { (grouped(b.count)) " Bitmaps, " (human(b.java_bytes)) " Java + " (human(b.native_bytes)) " native; "
            @if b.dimensions_unknown { (NO_DIMENSIONS) "." } @else {
            (grouped(b.large_count)) " large (over " (grouped(b.large_threshold_pixels)) " pixels"
            @if let Some(s) = &b.screen { ", the " (s.width) "×" (s.height) " screen × 1.1" } @else { ", KOOM's 768×1366: no screen known" }
            ")." } }
        table {
            tr { th { "size" } th { "config" } th { "Java" } th { "native" } th { "path" } }
            @for x in &b.largest {
                tr { td { (x.width) "×" (x.height) @if x.large { " large" } @if x.recycled { " recycled" } }
                     td { (x.config) } td.n { (human(x.java_bytes)) } td.n { (human(x.native_bytes)) }
                     td { @if let Some(p) = &x.path { (one_line(p)) } } }
            }
        }
        @if !t.threads.is_empty() {
            h3 { "Threads" }
            p { @for g in &t.threads { (g.count) " × " (g.name) "; " } @if t.threads_left_out > 0 { "… and " (t.threads_left_out) " more" } }
        }
        @if !t.duplicate_strings.is_empty() {
            h3 { "Duplicate Strings" }
            table {
                tr { th { "value" } th { "copies" } th { "wasted" } }
                @for s in &t.duplicate_strings {
                    tr { td { code { (s.value) } } td.n { (grouped(s.count)) } td.n { (human(s.wasted_bytes)) } }
                }
            }
        }
    }
}
