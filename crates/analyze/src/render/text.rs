//! The text a person reads at a terminal, in LeakCanary's layout so that an Android
//! developer reads it without relearning: the banner, APPLICATION LEAKS, LIBRARY LEAKS,
//! UNREACHABLE OBJECTS and METADATA sections as Shark prints them (each leak one trace with
//! its signature, a library leak with its pattern and description, the leaking object's
//! lines behind a zero-width space that keeps Markdown from reading them as code), then
//! this analysis's own sections: the input and finder, each leak's object ids, signature
//! version and retained size in ahat's model, and the duplicate bitmaps.
//!
//! Every string that comes from the dump or the package goes through [`shown`], so that
//! none can act on the terminal.

use std::fmt::Write;

use super::{
    counted, grouped, human, omitted_steps_text, reference_parts, retaining_with_native, shown,
    size_as_leakcanary, with_native,
};
use crate::model::{Analysis, HeapMetadata, Leak, Step, Trace, UnreachableObject};

/// LeakCanary's section separator.
const BAR: &str = "====================================";
/// Starts each line of the leaking object, as LeakCanary's do: a Markdown renderer would
/// take a line of spaces for code.
const ZWSP: char = '\u{200B}';

/// The analysis as text: LeakCanary's sections, then this analysis's (docs/analyze.md, *Text*).
pub fn render(a: &Analysis) -> String {
    let mut o = String::new();
    let (library, app): (Vec<&Leak>, Vec<&Leak>) =
        a.leaks.iter().partition(|l| l.library_leak.is_some());
    let _ = writeln!(o, "{BAR}\nHEAP ANALYSIS RESULT\n{BAR}");
    let _ = writeln!(o, "{} APPLICATION LEAKS\n", app.len());
    let _ = writeln!(
        o,
        "References underlined with \"~~~\" are likely causes.\nLearn more at https://squ.re/leaks."
    );
    if !app.is_empty() {
        let texts: Vec<String> = app.iter().map(|l| leak(l)).collect();
        let _ = writeln!(o, "\n{}", texts.join("\n\n"));
    }
    let _ = writeln!(o, "{BAR}\n{} LIBRARY LEAKS\n", library.len());
    let _ = writeln!(
        o,
        "A Library Leak is a leak caused by a known bug in 3rd party code that you do not have control over.\nSee https://square.github.io/leakcanary/fundamentals-how-leakcanary-works/#4-categorizing-leaks"
    );
    if !library.is_empty() {
        let texts: Vec<String> = library.iter().map(|l| leak(l)).collect();
        let _ = writeln!(o, "\n{}", texts.join("\n\n"));
    }
    let _ = writeln!(o, "{BAR}\n{} UNREACHABLE OBJECTS\n", a.unreachable.len());
    let _ = writeln!(
        o,
        "An unreachable object is still in memory but LeakCanary could not find a strong reference path\nfrom GC roots."
    );
    if !a.unreachable.is_empty() {
        let texts: Vec<String> = a.unreachable.iter().map(unreachable_text).collect();
        let _ = writeln!(o, "\n{}", texts.join("\n\n"));
    }
    let _ = writeln!(o, "{BAR}\nMETADATA\n");
    let _ = writeln!(
        o,
        "Please include this in bug reports and Stack Overflow questions.\n"
    );
    for (k, v) in metadata(a) {
        let _ = writeln!(o, "{k}: {}", shown(&v));
    }
    let _ = writeln!(o, "{BAR}");
    // The triage comes first when there is no leak to read.
    let triage_first = a.leaks.is_empty();
    if let (true, Some(t)) = (triage_first, &a.triage) {
        triage(&mut o, t);
    }
    ours(&mut o, a);
    ours_unreachable(&mut o, a);
    let _ = writeln!(o, "{BAR}");
    bitmaps(&mut o, a);
    let _ = writeln!(o, "{BAR}");
    if let (false, Some(t)) = (triage_first, &a.triage) {
        triage(&mut o, t);
    }
    o
}

/// The TRIAGE section, ending with a bar.
fn triage(o: &mut String, t: &crate::model::triage::Triage) {
    let _ = writeln!(o, "TRIAGE\n");
    super::triage::text(o, t);
    let _ = writeln!(o, "{BAR}");
}

/// METADATA's lines, LeakCanary's keys in its order: the device and app as the heap says
/// (else as the package's `result.info` does), the dump's counts, the file and its time.
fn metadata(a: &Analysis) -> Vec<(&'static str, String)> {
    let manifest = |key: &str| {
        a.input
            .manifest
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let m = &a.metadata;
    let mut out = Vec::new();
    if let Some(sdk) = m
        .sdk_int
        .map(|s| s.to_string())
        .or_else(|| manifest("sdkVersion"))
    {
        out.push(("Build.VERSION.SDK_INT", sdk));
    }
    if let Some(maker) = m.manufacturer.clone().or_else(|| manifest("manufacturer")) {
        out.push(("Build.MANUFACTURER", maker));
    }
    out.push((
        "LeakCanary version",
        m.leakcanary_version
            .clone()
            .unwrap_or_else(|| "Unknown".into()),
    ));
    if let Some(p) = &m.process_name {
        out.push(("App process name", p.clone()));
    }
    let d = &a.dump;
    out.push(("Class count", d.classes.to_string()));
    out.push(("Instance count", d.instances.to_string()));
    out.push(("Primitive array count", d.primitive_arrays.to_string()));
    out.push(("Object array count", d.object_arrays.to_string()));
    out.push(("Thread count", d.threads.to_string()));
    out.push(("Heap total bytes", d.heap_bytes.to_string()));
    out.push(("Heap dump file path", a.input.path.clone()));
    out.push(("Heap dump timestamp", d.timestamp_ms.to_string()));
    out
}

/// An object without a strong path, as LeakCanary's `LeakTraceObject.toString()` writes
/// it.
fn unreachable_text(u: &UnreachableObject) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{} {}", shown(&u.class_name), shown(&u.kind));
    let _ = write!(o, "{ZWSP}  Leaking: YES ({})", shown(&u.leaking_reason));
    for l in &u.labels {
        let _ = write!(o, "\n{ZWSP}  {}", shown(l));
    }
    o
}

/// `Heap: Android SDK 30, Google, build RQ3A; process com.example.app; LeakCanary 2.14.`:
/// what the heap says of the device and the app, in one line.
pub fn device_line(m: &HeapMetadata) -> Option<String> {
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

/// One leak as LeakCanary's `Leak.toString()` writes it: a library leak's pattern and
/// description, the summed size, how many traces share the signature, the signature and
/// the first trace (a library leak's text ends with a newline, as LeakCanary's does).
pub fn leak(l: &Leak) -> String {
    let mut o = String::new();
    if let Some(lib) = &l.library_leak {
        let pattern = lib.leak_pattern.as_deref().unwrap_or(&lib.pattern);
        let _ = writeln!(o, "Leak pattern: {}", shown(pattern));
        let _ = writeln!(o, "Description: {}", shown(&lib.description));
    }
    // Shark's retained sizes count the registered native bytes (its
    // AndroidNativeSizeMapper), as its text shows them.
    let total = if l.trace_count > 1 || l.total_retained_bytes > 0 {
        l.total_retained_bytes
            .saturating_add(l.total_retained_native_bytes)
    } else {
        l.retained_bytes.saturating_add(l.retained_native_bytes)
    };
    let _ = writeln!(o, "{total} bytes retained by leaking objects");
    if l.trace_count > 1 {
        let _ = writeln!(
            o,
            "Displaying only 1 leak trace out of {} with the same signature",
            l.trace_count
        );
    }
    let _ = writeln!(o, "Signature: {}", shown(&l.signature));
    write_trace(
        &mut o,
        &l.trace,
        Some((
            l.retained_bytes.saturating_add(l.retained_native_bytes),
            l.retained_objects,
        )),
    );
    if l.library_leak.is_none() {
        // LeakCanary ends an application leak's text without a newline.
        o.pop();
    }
    o
}

fn write_trace(o: &mut String, t: &Trace, retained: Option<(u64, u64)>) {
    let _ = writeln!(o, "┬───");
    let _ = writeln!(o, "│ GC Root: {}", root_description(&t.root));
    let _ = writeln!(o, "│");
    let shown_steps = t.shown_steps();
    let last = shown_steps.len().saturating_sub(1);
    for (i, s) in shown_steps.into_iter().enumerate() {
        let Some(s) = s else {
            let _ = writeln!(o, "┆    {}", omitted_steps_text(t.omitted_steps));
            continue;
        };
        if i == last {
            let _ = writeln!(o, "╰→ {} {}", shown(&s.class_name), shown(&s.kind));
            let lead = format!("{ZWSP}     ");
            step_lines(o, s, &lead, retained);
        } else {
            let _ = writeln!(o, "├─ {} {}", shown(&s.class_name), shown(&s.kind));
            step_lines(o, s, "│    ", None);
        }
    }
}

/// An object's lines under its name: `Leaking:`, its retained size where known, its
/// labels (a known-leak match first, as Shark puts it), the reference to the next object
/// and, under a suspect one, the `~~~` line.
fn step_lines(o: &mut String, s: &Step, lead: &str, retained: Option<(u64, u64)>) {
    let status = match (s.leaking.as_str(), &s.leaking_reason) {
        ("UNKNOWN", _) => "UNKNOWN".to_string(),
        (word, Some(why)) => format!("{} ({})", shown(word), shown(why)),
        (word, None) => shown(word).into_owned(),
    };
    let _ = writeln!(o, "{lead}Leaking: {status}");
    if let Some((bytes, objects)) = retained {
        let _ = writeln!(
            o,
            "{lead}Retaining {} in {objects} objects",
            size_as_leakcanary(bytes)
        );
    }
    if let Some(pattern) = s.reference.as_ref().and_then(|r| r.library_match.as_ref()) {
        let _ = writeln!(o, "{lead}Library leak match: {}", shown(pattern));
    }
    for l in &s.labels {
        let _ = writeln!(o, "{lead}{}", shown(l));
    }
    if s.omitted_labels > 0 {
        let _ = writeln!(o, "{lead}… {}", counted(s.omitted_labels, "more label"));
    }
    if let Some(r) = &s.reference {
        let (prefix, name) = reference_parts(&s.class_name, r);
        let arrow = format!("    ↓ {prefix}");
        let _ = writeln!(o, "│{arrow}{name}");
        if r.suspect {
            // Under the name only, counted in UTF-16 units as LeakCanary counts them.
            let _ = writeln!(
                o,
                "│{}{}",
                " ".repeat(arrow.encode_utf16().count()),
                "~".repeat(name.encode_utf16().count())
            );
        }
    }
}

/// This analyzer's words for each GC root type (as the analysis stores them) and
/// LeakCanary's description of it (`GcRootType.description`): what the text shows, and
/// what reading LeakCanary's text back takes ([`crate::render::leakcanary_text`]).
pub(crate) const GC_ROOTS: &[(&str, &str)] = &[
    ("JNI global", "Global variable in native code"),
    ("JNI local", "Local variable in native code"),
    ("Java local variable", "Java local variable"),
    ("native stack", "Input or output parameters in native code"),
    ("system class", "System class"),
    ("thread block", "Thread block"),
    (
        "monitor used",
        "Monitor (anything that called the wait() or notify() methods, or that is synchronized.)",
    ),
    ("thread object", "Thread object"),
    ("JNI monitor", "Root JNI monitor"),
    ("VM internal", "VM internal reference"),
    ("reference cleanup", "Reference cleanup"),
    ("interned string", "Interned string"),
    ("finalizing", "Object awaiting finalization"),
    ("debugger", "Debugger reference"),
    ("unreachable", "Unreachable object"),
    ("unknown", "Unknown GC root type"),
];

/// LeakCanary's description of a GC root type, from the words the analysis stores.
fn root_description(root: &str) -> String {
    GC_ROOTS
        .iter()
        .find(|(w, _)| *w == root)
        .map_or_else(|| shown(root).into_owned(), |(_, d)| d.to_string())
}

/// This analysis's own section: what was read and how, notes, and per leak what
/// LeakCanary's text has no place for.
fn ours(o: &mut String, a: &Analysis) {
    ours_header(o, a);
    ours_leaks(o, a);
}

/// What was read and how, and the notes.
fn ours_header(o: &mut String, a: &Analysis) {
    let _ = writeln!(o, "HPROF-SHRINK ANALYSIS\n");
    let d = &a.dump;
    let _ = writeln!(
        o,
        "{} ({}{}): {}, {}-byte ids, {}, {}; {} reachable ({})",
        shown(&a.input.path),
        shown(&a.input.kind),
        match (a.input.shrunk, a.input.private) {
            (_, true) => ", shrunk, private",
            (true, false) => ", shrunk",
            (false, false) => "",
        },
        shown(&d.format),
        d.id_size,
        counted(
            d.instances + d.object_arrays + d.primitive_arrays + d.classes,
            "object"
        ),
        counted(d.gc_roots, "GC root"),
        grouped(d.reachable_objects),
        with_native(d.reachable_bytes, d.reachable_native_bytes),
    );
    match &a.key {
        Some(k) => {
            let _ = writeln!(
                o,
                "Looking for the Activity of key {} (Matrix's DestroyedActivityInfo).",
                shown(k)
            );
        }
        None => {
            let _ = writeln!(o, "{}", finder_line(&a.finder));
        }
    }
    if let Some(device) = device_line(&a.metadata) {
        let _ = writeln!(o, "{device}");
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
    for line in not_run_lines(a) {
        let _ = writeln!(o, "{line}");
    }
    if let Some(line) = skipped_line(a) {
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(o);
}

/// The parts of the analysis left out on request (`dump.skipped`), in one line; `None`
/// when none was.
pub fn skipped_line(a: &Analysis) -> Option<String> {
    let parts: Vec<&str> = a
        .dump
        .skipped
        .iter()
        .map(|p| match p.as_str() {
            "triage" => "the triage",
            "duplicateStrings" => "the duplicate Strings",
            other => other,
        })
        .collect();
    (!parts.is_empty()).then(|| format!("Skipped on request (--skip): {}.", parts.join(", ")))
}

/// The rules and steps that could not run on this heap (`dump.notRun`), a line each after
/// a heading: none for a heap that holds what they read.
pub fn not_run_lines(a: &Analysis) -> Vec<String> {
    let not_run = &a.dump.not_run;
    if not_run.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "Not run: a {} holds no field values, and each of these asked for a field the heap does not hold:",
        shown(&a.dump.format),
    )];
    for n in not_run {
        let on = match n.objects {
            0 => String::new(),
            k => format!(" (on {})", counted(k, "object")),
        };
        lines.push(format!(
            "  {} {}{on}: needs {}",
            shown(&n.kind),
            shown(&n.rule),
            shown(&n.needs)
        ));
    }
    lines
}

/// Which finders ran, and why (`finder`, see [`crate::knowledge::finders::Mode`]).
fn finder_line(finder: &str) -> String {
    match finder {
        "keyed-weak-references" => "Looking for leaking objects as LeakCanary does on the phone: the dump holds objects its KeyedWeakReferences watched and found retained, and those are the leaks (the inspectors only decide statuses; --all-leaks adds what their finders flag).".into(),
        "inspectors" => "Looking for leaking objects as Shark does in a raw dump: no object LeakCanary watched is retained here, so the leaks are what its inspectors' finders flag.".into(),
        "all-leaks" => "Looking for every leaking object: the objects LeakCanary's KeyedWeakReferences watched and found retained, and what its inspectors' finders flag.".into(),
        // Written before the finders had modes: every finder ran.
        "leakcanary" => "Looking for leaking objects LeakCanary's way: retained KeyedWeakReferences, and what its inspectors' finders flag.".into(),
        other => format!("Looking for leaking objects by the finder {}.", shown(other)),
    }
}

/// How many leaks, and per leak what LeakCanary's text has no place for.
fn ours_leaks(o: &mut String, a: &Analysis) {
    // Leaks are signatures; what is left out is leaking objects not traced.
    match (a.leaks.len() as u64, a.omitted_leaks) {
        (0, 0) => {
            let _ = writeln!(o, "No leak found.");
        }
        (n, 0) => {
            let _ = writeln!(o, "{} found.", counted(n, "leak"));
        }
        (n, more) => {
            let _ = writeln!(
                o,
                "{} found; {} not traced.",
                counted(n, "leak"),
                counted(more, "more leaking object")
            );
        }
    }
    if !a.leaks.is_empty() {
        let _ = writeln!(
            o,
            "Signatures are LeakCanary's leak fingerprints (signature version {}).",
            a.signature_version
        );
    }
    for (i, leak) in a.leaks.iter().enumerate() {
        leak_lines(o, i + 1, leak);
    }
}

/// Leak number `n` in this analysis's words: its signatures, who found it, what it
/// retains.
fn leak_lines(o: &mut String, n: usize, leak: &Leak) {
    let _ = writeln!(
        o,
        "Leak {}: {} ({:#x}){}",
        n,
        shown(&leak.class_name),
        leak.object_id,
        if leak.library_leak.is_some() {
            " — library leak"
        } else {
            ""
        }
    );
    let _ = writeln!(o, "  signature {}", shown(&leak.signature));
    if !leak.finders.is_empty() {
        let _ = writeln!(o, "  found by {}", shown(&leak.finders.join(", ")));
    }
    if let Some(ts) = &leak.trace_signature {
        if *ts != leak.signature {
            let _ = writeln!(o, "  trace signature {}", shown(ts));
        }
    }
    let _ = writeln!(
        o,
        "  Retaining {} (dominators, as ahat)",
        retaining_with_native(
            leak.retained_bytes,
            leak.retained_native_bytes,
            leak.retained_objects
        )
    );
    if leak.trace_count > 1 {
        let ids: Vec<String> = leak
            .object_ids
            .iter()
            .map(|id| format!("{id:#x}"))
            .collect();
        let _ = writeln!(
            o,
            "  {} with this signature ({}), retaining {} together",
            counted(leak.trace_count, "leaking object"),
            ids.join(", "),
            retaining_with_native(
                leak.total_retained_bytes,
                leak.total_retained_native_bytes,
                leak.total_retained_objects
            )
        );
    }
}

/// The unreachable objects in this analysis's words: how many, and who found each.
fn ours_unreachable(o: &mut String, a: &Analysis) {
    let unreachable = a.unreachable.len() as u64 + a.omitted_unreachable;
    if unreachable == 0 {
        return;
    }
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
        let _ = writeln!(
            o,
            "  {} {} ({:#x}), found by {}",
            shown(&u.class_name),
            shown(&u.kind),
            u.object_id,
            shown(&u.finders.join(", "))
        );
    }
}

fn bitmaps(o: &mut String, a: &Analysis) {
    let _ = writeln!(o, "DUPLICATE BITMAPS\n");
    let groups = a.duplicate_bitmaps.len() as u64 + a.omitted_duplicate_bitmaps;
    if groups == 0 {
        let _ = writeln!(o, "No duplicate bitmaps.");
        return;
    }
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

/// `Holder.sBitmaps → Object[2] → Bitmap`: a path on one line.
fn short_path(t: &Trace) -> String {
    let mut parts = vec![format!("[{}]", shown(&t.root))];
    for s in t.shown_steps() {
        match s {
            Some(s) => {
                if let Some(r) = &s.reference {
                    let (prefix, name) = reference_parts(&s.class_name, r);
                    parts.push(format!("{prefix}{name}"));
                }
            }
            None => parts.push(omitted_steps_text(t.omitted_steps)),
        }
    }
    parts.join(" → ")
}
