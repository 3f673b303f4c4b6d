//! The text a person reads at a terminal: the dump in one line, each leak as a trace from
//! its GC root (LeakCanary's layout: each object, its leaking status and why, the
//! reference to the next, suspect references underlined), then the duplicate bitmaps.

use std::fmt::Write;

use super::{grouped, human, reference_text, retaining_with_native, with_native};
use crate::analyze::model::{Analysis, Trace};

pub fn render(a: &Analysis) -> String {
    let mut o = String::new();
    let d = &a.dump;
    let _ = writeln!(
        o,
        "{} ({}{}): {}, {}-byte ids, {} objects, {} GC roots; {} reachable ({})",
        a.input.path,
        a.input.kind,
        if a.input.shrunk { ", shrunk" } else { "" },
        d.format,
        d.id_size,
        grouped(d.instances + d.object_arrays + d.primitive_arrays + d.classes),
        grouped(d.gc_roots),
        grouped(d.reachable_objects),
        human(d.reachable_bytes),
    );
    match &a.key {
        Some(k) => {
            let _ = writeln!(
                o,
                "Looking for the Activity of key {k} (Matrix's DestroyedActivityInfo)."
            );
        }
        None => {
            let _ = writeln!(o, "Looking for retained KeyedWeakReferences and destroyed Activities (LeakCanary's way).");
        }
    }
    for note in &a.notes {
        let _ = writeln!(o, "Note: {note}");
    }
    let _ = writeln!(o);
    match a.leaks.len() {
        0 => {
            let _ = writeln!(o, "No leak found.");
            if let Some(t) = &a.triage {
                let _ = writeln!(o);
                super::triage::text(&mut o, t);
            }
        }
        n => {
            let _ = writeln!(o, "{n} leak{} found.", if n == 1 { "" } else { "s" });
        }
    }
    for (i, leak) in a.leaks.iter().enumerate() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Leak {}: {} ({:#x}){}",
            i + 1,
            leak.class_name,
            leak.object_id,
            if leak.library_leak.is_some() {
                " — library leak"
            } else {
                ""
            }
        );
        let _ = writeln!(o, "Signature: {}", leak.signature);
        let _ = writeln!(
            o,
            "Retaining {}",
            retaining_with_native(
                leak.retained_bytes,
                leak.retained_native_bytes,
                leak.retained_objects
            )
        );
        if let Some(lib) = &leak.library_leak {
            let _ = writeln!(
                o,
                "Known framework leak {}: {}",
                lib.pattern, lib.description
            );
        }
        write_trace(
            &mut o,
            &leak.trace,
            Some((
                leak.retained_bytes,
                leak.retained_native_bytes,
                leak.retained_objects,
            )),
        );
    }
    let _ = writeln!(o);
    if a.duplicate_bitmaps.is_empty() {
        let _ = writeln!(o, "No duplicate bitmaps.");
    } else {
        let wasted: u64 = a.duplicate_bitmaps.iter().map(|g| g.wasted_bytes).sum();
        let _ = writeln!(
            o,
            "{} group{} of duplicate bitmaps, {} wasted:",
            a.duplicate_bitmaps.len(),
            if a.duplicate_bitmaps.len() == 1 {
                ""
            } else {
                "s"
            },
            human(wasted)
        );
        for g in &a.duplicate_bitmaps {
            let _ = writeln!(
                o,
                "  {} × {}×{} {} ({} each, {} wasted), md5 {}",
                g.count,
                g.width,
                g.height,
                g.format,
                human(g.buffer_bytes),
                human(g.wasted_bytes),
                g.hash
            );
            for inst in &g.instances {
                let path = inst
                    .trace
                    .as_ref()
                    .map(short_path)
                    .unwrap_or_else(|| "no path".into());
                let _ = writeln!(o, "    {:#x}: {path}", inst.object_id);
            }
        }
    }
    if let (false, Some(t)) = (a.leaks.is_empty(), &a.triage) {
        let _ = writeln!(o);
        super::triage::text(&mut o, t);
    }
    o
}

fn write_trace(o: &mut String, t: &Trace, retained: Option<(u64, u64, u64)>) {
    let _ = writeln!(o, "┬───");
    let _ = writeln!(o, "│ GC Root: {}", t.root);
    let _ = writeln!(o, "│");
    let last = t.steps.len().saturating_sub(1);
    for (i, s) in t.steps.iter().enumerate() {
        let (head, bar) = if i == last {
            ("╰→", " ")
        } else {
            ("├─", "│")
        };
        let _ = writeln!(o, "{head} {} {}", s.class_name, s.kind);
        let why = s
            .leaking_reason
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let _ = writeln!(o, "{bar}    Leaking: {}{why}", s.leaking);
        for l in &s.labels {
            let _ = writeln!(o, "{bar}    {l}");
        }
        if i == last {
            if let Some((bytes, native, objects)) = retained {
                let _ = writeln!(
                    o,
                    "{bar}    Retaining {} in {} objects",
                    with_native(bytes, native),
                    grouped(objects)
                );
            }
        }
        if let Some(r) = &s.reference {
            let text = reference_text(&s.class_name, r);
            let _ = writeln!(o, "{bar}    ↓ {text}");
            if r.suspect {
                // Underline the name, as LeakCanary does.
                let pad = text.chars().count() - r.name.chars().count();
                let _ = writeln!(
                    o,
                    "{bar}      {}{}",
                    " ".repeat(pad),
                    "~".repeat(r.name.chars().count())
                );
            }
        }
    }
}

/// `Holder.sBitmaps → Object[].[2] → Bitmap`: a path on one line.
fn short_path(t: &Trace) -> String {
    let mut parts = vec![format!("[{}]", t.root)];
    for s in &t.steps {
        if let Some(r) = &s.reference {
            parts.push(reference_text(&s.class_name, r));
        }
    }
    parts.join(" → ")
}
