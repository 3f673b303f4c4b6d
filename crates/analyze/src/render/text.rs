//! The text a person reads at a terminal: the dump in one line, each leak as a trace from
//! its GC root (LeakCanary's layout: each object, its leaking status and why, the
//! reference to the next, suspect references underlined), then the duplicate bitmaps.
//! Every string that comes from the dump or the package goes through [`shown`], so that
//! none can act on the terminal.

use std::fmt::Write;

use super::{counted, grouped, human, omitted_steps_text, reference_text, retaining, shown};
use crate::model::{Analysis, Trace};

pub fn render(a: &Analysis) -> String {
    let mut o = String::new();
    let d = &a.dump;
    let _ = writeln!(
        o,
        "{} ({}{}): {}, {}-byte ids, {}, {}; {} reachable ({})",
        shown(&a.input.path),
        shown(&a.input.kind),
        if a.input.shrunk { ", shrunk" } else { "" },
        shown(&d.format),
        d.id_size,
        counted(
            d.instances + d.object_arrays + d.primitive_arrays + d.classes,
            "object"
        ),
        counted(d.gc_roots, "GC root"),
        grouped(d.reachable_objects),
        human(d.reachable_bytes),
    );
    let _ = writeln!(
        o,
        "{} instances, {} object arrays, {} primitive arrays, {} classes ({}); {}",
        grouped(d.instances),
        grouped(d.object_arrays),
        grouped(d.primitive_arrays),
        grouped(d.classes),
        human(d.heap_bytes),
        counted(d.threads, "thread"),
    );
    if let Some(device) = device_line(&a.metadata) {
        let _ = writeln!(o, "{device}");
    }
    match &a.key {
        Some(k) => {
            let _ = writeln!(
                o,
                "Looking for the Activity of key {} (Matrix's DestroyedActivityInfo).",
                shown(k)
            );
        }
        None => {
            let _ = writeln!(o, "Looking for leaking objects LeakCanary's way: retained KeyedWeakReferences, and what its inspectors' finders flag.");
        }
    }
    for note in &a.notes {
        let _ = writeln!(o, "Note: {}", shown(note));
    }
    if a.omitted_notes > 0 {
        let _ = writeln!(
            o,
            "Note: {} more not shown.",
            counted(a.omitted_notes, "note")
        );
    }
    let _ = writeln!(o);
    let found = a.leaks.len() as u64 + a.omitted_leaks;
    match (found, a.omitted_leaks) {
        (0, _) => {
            let _ = writeln!(o, "No leak found.");
        }
        (n, 0) => {
            let _ = writeln!(o, "{} found.", counted(n, "leak"));
        }
        (n, _) => {
            let _ = writeln!(
                o,
                "{} found; {} listed.",
                counted(n, "leak"),
                grouped(a.leaks.len() as u64)
            );
        }
    }
    for (i, leak) in a.leaks.iter().enumerate() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Leak {}: {} ({:#x}){}",
            i + 1,
            shown(&leak.class_name),
            leak.object_id,
            if leak.library_leak.is_some() {
                " — library leak"
            } else {
                ""
            }
        );
        let _ = writeln!(o, "Signature: {}", shown(&leak.signature));
        if !leak.finders.is_empty() {
            let _ = writeln!(o, "Found by: {}", shown(&leak.finders.join(", ")));
        }
        let _ = writeln!(
            o,
            "Retaining {}",
            retaining(leak.retained_bytes, leak.retained_objects)
        );
        if let Some(lib) = &leak.library_leak {
            let _ = writeln!(
                o,
                "Known framework leak {}: {}",
                shown(&lib.pattern),
                shown(&lib.description)
            );
        }
        write_trace(
            &mut o,
            &leak.trace,
            Some((leak.retained_bytes, leak.retained_objects)),
        );
    }
    let unreachable = a.unreachable.len() as u64 + a.omitted_unreachable;
    if unreachable > 0 {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{} (leaking, but no strong path from a GC root){}:",
            counted(unreachable, "unreachable object"),
            if a.omitted_unreachable > 0 {
                format!("; {} listed", grouped(a.unreachable.len() as u64))
            } else {
                String::new()
            }
        );
        for u in &a.unreachable {
            let _ = writeln!(o);
            let _ = writeln!(
                o,
                "{} {} ({:#x})",
                shown(&u.class_name),
                shown(&u.kind),
                u.object_id
            );
            let _ = writeln!(o, "    Leaking: YES ({})", shown(&u.leaking_reason));
            for l in &u.labels {
                let _ = writeln!(o, "    {}", shown(l));
            }
            if u.omitted_labels > 0 {
                let _ = writeln!(o, "    … {}", counted(u.omitted_labels, "more label"));
            }
            let _ = writeln!(o, "    Found by: {}", shown(&u.finders.join(", ")));
        }
    }
    let _ = writeln!(o);
    let groups = a.duplicate_bitmaps.len() as u64 + a.omitted_duplicate_bitmaps;
    if groups == 0 {
        let _ = writeln!(o, "No duplicate bitmaps.");
    } else {
        let wasted: u64 = a.duplicate_bitmaps.iter().map(|g| g.wasted_bytes).sum();
        let _ = writeln!(
            o,
            "{} of duplicate bitmaps, {} wasted{}:",
            counted(groups, "group"),
            human(wasted),
            if a.omitted_duplicate_bitmaps > 0 {
                format!(
                    " by the {} listed (those that waste the most)",
                    grouped(a.duplicate_bitmaps.len() as u64)
                )
            } else {
                String::new()
            }
        );
        for g in &a.duplicate_bitmaps {
            let _ = writeln!(
                o,
                "  {} × {}×{} {} ({} each, {} wasted), md5 {}",
                g.count,
                g.width,
                g.height,
                shown(&g.format),
                human(g.buffer_bytes),
                human(g.wasted_bytes),
                shown(&g.hash)
            );
            for inst in &g.instances {
                let path = inst
                    .trace
                    .as_ref()
                    .map(short_path)
                    .unwrap_or_else(|| "no path".into());
                let _ = writeln!(o, "    {:#x}: {path}", inst.object_id);
            }
            if g.omitted_instances > 0 {
                let _ = writeln!(
                    o,
                    "    … and {} more",
                    counted(g.omitted_instances, "instance")
                );
            }
        }
    }
    o
}

fn write_trace(o: &mut String, t: &Trace, retained: Option<(u64, u64)>) {
    let _ = writeln!(o, "┬───");
    let _ = writeln!(o, "│ GC Root: {}", shown(&t.root));
    let _ = writeln!(o, "│");
    let shown_steps = t.shown_steps();
    let last = shown_steps.len().saturating_sub(1);
    for (i, s) in shown_steps.into_iter().enumerate() {
        let Some(s) = s else {
            let _ = writeln!(o, "┆  {}", omitted_steps_text(t.omitted_steps));
            continue;
        };
        let (head, bar) = if i == last {
            ("╰→", " ")
        } else {
            ("├─", "│")
        };
        let _ = writeln!(o, "{head} {} {}", shown(&s.class_name), shown(&s.kind));
        let why = s
            .leaking_reason
            .as_ref()
            .map(|r| format!(" ({})", shown(r)))
            .unwrap_or_default();
        let _ = writeln!(o, "{bar}    Leaking: {}{why}", shown(&s.leaking));
        for l in &s.labels {
            let _ = writeln!(o, "{bar}    {}", shown(l));
        }
        if s.omitted_labels > 0 {
            let _ = writeln!(o, "{bar}    … {}", counted(s.omitted_labels, "more label"));
        }
        if i == last {
            if let Some((bytes, objects)) = retained {
                let _ = writeln!(
                    o,
                    "{bar}    Retaining {} in {}",
                    human(bytes),
                    counted(objects, "object")
                );
            }
        }
        if let Some(r) = &s.reference {
            let text = reference_text(&s.class_name, r);
            let _ = writeln!(o, "{bar}    ↓ {text}");
            if r.suspect {
                // Underline the name, as LeakCanary does.
                let name = shown(&r.name).chars().count();
                let pad = text.chars().count().saturating_sub(name);
                let _ = writeln!(o, "{bar}      {}{}", " ".repeat(pad), "~".repeat(name));
            }
        }
    }
}

/// `Android SDK 30, Google (build RQ3A.211001.001); process com.example.app, package
/// com.example.app; LeakCanary 2.14`: what the heap says of the device, when it says
/// anything.
pub fn device_line(m: &crate::model::HeapMetadata) -> Option<String> {
    let mut device = Vec::new();
    if let Some(sdk) = m.sdk_int {
        device.push(format!("SDK {sdk}"));
    }
    if let Some(maker) = &m.manufacturer {
        device.push(shown(maker).into_owned());
    }
    if let Some(id) = &m.build_id {
        device.push(format!("build {}", shown(id)));
    }
    let mut parts = Vec::new();
    if !device.is_empty() {
        parts.push(format!("Android {}", device.join(", ")));
    }
    if let Some(p) = &m.process_name {
        parts.push(format!("process {}", shown(p)));
    }
    if let Some(p) = &m.package_name {
        parts.push(format!("package {}", shown(p)));
    }
    if let Some(v) = &m.leakcanary_version {
        parts.push(format!("LeakCanary {}", shown(v)));
    }
    (!parts.is_empty()).then(|| format!("Heap: {}.", parts.join("; ")))
}

/// `Holder.sBitmaps → Object[].[2] → Bitmap`: a path on one line.
fn short_path(t: &Trace) -> String {
    let mut parts = vec![format!("[{}]", shown(&t.root))];
    for s in t.shown_steps() {
        match s {
            Some(s) => {
                if let Some(r) = &s.reference {
                    parts.push(reference_text(&s.class_name, r));
                }
            }
            None => parts.push(omitted_steps_text(t.omitted_steps)),
        }
    }
    parts.join(" → ")
}
