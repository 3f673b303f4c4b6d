//! What `analyze` makes of hostile dumps: a leak at the end of a very long chain, more
//! leaks, bitmap groups and keys than any output should list, names of any length holding
//! control and bidi characters. Every list is capped with the count of what it left out,
//! every name is escaped and cut, and the analysis stays under its stated size.

mod common;

use std::path::Path;

use common::{failed_with, run, s, stdout};
use hprof_fixtures::android::{Android, BitmapKind};
use hprof_fixtures::{Heap, Options as Art, Ty, Val};
use hprof_shrink_analyze::limits::{
    MAX_ANALYSIS_BYTES, MAX_BITMAP_GROUPS, MAX_BITMAP_INSTANCES, MAX_KEYS_FOUND, MAX_LEAKS,
    MAX_NAME_BYTES, MAX_STEP_LABELS, MAX_STEP_LABEL_BYTES, MAX_TEXT_BYTES, MAX_TOP_CLASSES,
    MAX_TRACE_STEPS, TRACE_HEAD_STEPS,
};
use hprof_shrink_analyze::{analyze_path, render, Analysis, Options};
use hprof_shrink_core::Control;
use sha1::Digest;

const STICKY: u8 = 0x05;

fn analyze(path: &Path, key: Option<&str>) -> Analysis {
    let options = Options {
        key: key.map(str::to_string),
        all_leaks: true,
        pictures: false,
        ..Options::default()
    };
    analyze_path(path, &options, &Control::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .analysis
}

fn sha1_hex(text: &str) -> String {
    sha1::Sha1::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `len` instances of `class`, each referencing the next through `field`, the last one
/// `target`: returns the first.
fn chain(a: &mut Android, class: u64, field: &str, len: usize, target: u64) -> u64 {
    let mut next = target;
    for _ in 0..len {
        next = a.b.instance(class, Heap::App, &[(field, Val::Obj(next))]);
    }
    next
}

/// A destroyed `com.example.LeakyActivity` at the end of a chain of `len`
/// `com.example.Node`s held by the static `Holder.sHead`: a path of `len + 2` steps.
fn chain_dump(len: usize) -> Vec<u8> {
    let mut a = Android::new(Art::default(), BitmapKind::NativePixels);
    let node =
        a.b.declare_class("com.example.Node", a.object, &[("next", Ty::Object)], &[]);
    let leaky =
        a.b.declare_class("com.example.LeakyActivity", a.activity, &[], &[]);
    let holder = a.b.declare_class("com.example.Holder", a.object, &[], &[]);
    a.b.dump_class(a.activity, Heap::Image);
    a.b.dump_class(node, Heap::App);
    a.b.dump_class(leaky, Heap::App);
    let activity =
        a.b.instance(leaky, Heap::App, &[("mDestroyed", Val::Bool(true))]);
    let head = chain(&mut a, node, "next", len, activity);
    a.b.set_static(holder, "sHead", Val::Obj(head));
    a.b.dump_class(holder, Heap::App);
    a.b.root_simple(STICKY, holder);
    a.b.finish()
}

/// The signature of [`chain_dump`]'s leak, from its definition: every reference of the
/// path is suspect (the Holder class is the last object not leaking, the Activity the
/// first leaking one).
fn chain_signature(len: usize) -> String {
    let mut text = String::from("com.example.HoldersHead");
    for _ in 0..len {
        text.push_str("com.example.Nodenext");
    }
    sha1_hex(&text)
}

#[test]
fn a_long_trace_keeps_its_first_and_last_steps_and_the_signature_of_its_whole_path() {
    let len = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.hprof");
    std::fs::write(&path, chain_dump(len)).unwrap();
    let a = analyze(&path, None);
    assert_eq!(a.leaks.len(), 1);
    let leak = &a.leaks[0];
    let t = &leak.trace;
    let steps = len as u64 + 2;
    assert_eq!(t.steps.len(), MAX_TRACE_STEPS);
    assert_eq!(t.omitted_steps, steps - MAX_TRACE_STEPS as u64);
    assert_eq!(t.omitted_after, Some(TRACE_HEAD_STEPS as u64));
    assert_eq!(t.steps[0].class_name, "com.example.Holder");
    assert_eq!(t.steps[0].leaking, "NO");
    let last = t.steps.last().unwrap();
    assert_eq!(last.class_name, "com.example.LeakyActivity");
    assert_eq!(last.leaking, "YES");
    assert!(last.reference.is_none());
    // The steps on both sides of the gap keep their suspect references.
    assert!(t.steps[..MAX_TRACE_STEPS - 1]
        .iter()
        .all(|s| s.reference.as_ref().is_some_and(|r| r.suspect)));
    assert_eq!(leak.signature, chain_signature(len));

    // Every output says what it left out, and stays small.
    let gap = format!("… {} steps left out …", grouped(t.omitted_steps));
    let json = render::json(&a);
    assert!(json.len() < 100_000, "{} bytes of JSON", json.len());
    assert!(json.contains(&format!("\"omittedSteps\": {}", t.omitted_steps)));
    let text = render::text::render(&a);
    assert!(text.len() < 20_000, "{} bytes of text", text.len());
    assert!(text.contains(&gap), "{text}");
    let html = render::html::render(&a, &[]);
    assert!(html.len() < 100_000, "{} bytes of HTML", html.len());
    assert!(html.contains(&gap));
    let matrix = render::matrix::result_json(&a, 0);
    let chain = matrix["activityLeakResult"]["referenceChain"]
        .as_array()
        .unwrap();
    assert_eq!(chain.len(), MAX_TRACE_STEPS + 1);
    assert_eq!(chain[TRACE_HEAD_STEPS], gap.as_str());
}

fn grouped(n: u64) -> String {
    render::grouped(n)
}

#[test]
fn a_trace_within_the_bound_is_whole_and_signed_as_before() {
    let dir = tempfile::tempdir().unwrap();
    // Paths of MAX_TRACE_STEPS steps (whole) and one more (one step left out).
    for (len, omitted) in [(MAX_TRACE_STEPS - 2, 0), (MAX_TRACE_STEPS - 1, 1)] {
        let path = dir.path().join(format!("chain{len}.hprof"));
        std::fs::write(&path, chain_dump(len)).unwrap();
        let a = analyze(&path, None);
        let leak = &a.leaks[0];
        assert_eq!(leak.trace.omitted_steps, omitted, "{len}");
        assert_eq!(
            leak.trace.steps.len() as u64 + omitted,
            len as u64 + 2,
            "{len}"
        );
        assert_eq!(leak.trace.omitted_after.is_some(), omitted > 0);
        assert_eq!(leak.signature, chain_signature(len), "{len}");
        let text = render::text::render(&a);
        assert_eq!(text.contains("left out"), omitted > 0, "{text}");
    }
}

/// A name of `bytes` bytes that JSON must escape all of (quotes), with control and bidi
/// characters among them.
fn hostile(base: &str, bytes: usize) -> String {
    let mut s = format!("{base}\u{1b}[2J\r\n\u{202e}");
    while s.len() < bytes {
        s.push('"');
    }
    s
}

#[test]
#[allow(clippy::too_many_lines)] // a scenario, step by step
fn every_list_is_capped_and_a_hostile_dump_stays_under_the_bound() {
    let extra = 10;
    let (leaks, groups, per_group, classes, keys) = (
        MAX_LEAKS + extra,
        MAX_BITMAP_GROUPS + extra,
        MAX_BITMAP_INSTANCES + 2,
        MAX_TOP_CLASSES + extra,
        MAX_KEYS_FOUND + extra,
    );
    // Every step of every trace as large as a step can be: a Thread (labelled with its
    // name) of a long class name, before an Activity that is not destroyed (so it is not
    // leaking, with a reason naming the next class), through a field of a long name.
    let steps = MAX_TRACE_STEPS + 20;
    let mut a = Android::new(Art::default(), BitmapKind::JavaPixels);
    let long = |base: &str| hostile(base, 4 * MAX_NAME_BYTES);
    let next = long("next");
    let thread =
        a.b.declare_class("java.lang.Thread", a.object, &[("name", Ty::Object)], &[]);
    let node = a.b.declare_class(
        &long("com.example.Node"),
        thread,
        &[(&next, Ty::Object)],
        &[],
    );
    let alive = a.b.declare_class(
        &long("com.example.Alive"),
        a.activity,
        &[(&next, Ty::Object)],
        &[],
    );
    let leaky =
        a.b.declare_class(&long("com.example.Leaky"), a.activity, &[], &[]);
    let holder =
        a.b.declare_class(&long("com.example.Holder"), a.object, &[], &[]);
    for c in [a.activity, a.bitmap, thread] {
        a.b.dump_class(c, Heap::Image);
    }
    for c in [node, alive, leaky, a.destroyed_info] {
        a.b.dump_class(c, Heap::App);
    }
    let thread_name = a.b.string(&long("thread"), Heap::App);
    // Each leak's own class not leaking before it, so that each has a signature of its
    // own and is listed on its own.
    let chain = |a: &mut Android, alive: u64, target: u64| {
        let mut next_id = a.b.instance(
            alive,
            Heap::App,
            &[("mDestroyed", Val::Bool(false)), (&next, Val::Obj(target))],
        );
        for _ in 0..steps {
            next_id = a.b.instance(
                node,
                Heap::App,
                &[("name", Val::Obj(thread_name)), (&next, Val::Obj(next_id))],
            );
        }
        next_id
    };
    let mut statics = Vec::new();
    for i in 0..leaks {
        let activity =
            a.b.instance(leaky, Heap::App, &[("mDestroyed", Val::Bool(true))]);
        let own = a.b.declare_class(
            &long(&format!("com.example.Alive{i}")),
            a.activity,
            &[(&next, Ty::Object)],
            &[],
        );
        a.b.dump_class(own, Heap::App);
        statics.push((format!("leak{i}"), chain(&mut a, own, activity)));
    }
    // Groups of identical 25×50 ARGB_8888 buffers (5,000 bytes), each bitmap at the end of
    // a chain of its own.
    for gi in 0..groups {
        let pixels: Vec<u8> = (0..5000).map(|p| (p * 7 + gi * 13) as u8).collect();
        for j in 0..per_group {
            let buffer = a.b.byte_array(Heap::App, &pixels);
            let bitmap = a.java_bitmap(25, 50, Some(buffer), false);
            statics.push((format!("bitmap{gi}_{j}"), chain(&mut a, alive, bitmap)));
        }
    }
    for i in 0..classes {
        let c =
            a.b.declare_class(&long(&format!("com.example.C{i}")), a.object, &[], &[]);
        a.b.dump_class(c, Heap::App);
        let o = a.b.instance(c, Heap::App, &[]);
        statics.push((format!("c{i}"), o));
    }
    for i in 0..keys {
        let key = a.b.string(&long(&format!("key{i}")), Heap::App);
        let info =
            a.b.instance(a.destroyed_info, Heap::App, &[("mKey", Val::Obj(key))]);
        statics.push((format!("info{i}"), info));
    }
    for (name, value) in &statics {
        a.b.set_static(holder, &long(name), Val::Obj(*value));
    }
    a.b.dump_class(holder, Heap::App);
    a.b.root_simple(STICKY, holder);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.hprof");
    std::fs::write(&path, a.b.finish()).unwrap();

    let a = analyze(&path, None);
    assert_eq!(a.finder, "all-leaks");
    assert_eq!(a.leaks.len(), MAX_LEAKS);
    assert_eq!(a.omitted_leaks, extra as u64);
    assert_eq!(a.duplicate_bitmaps.len(), MAX_BITMAP_GROUPS);
    assert_eq!(a.omitted_duplicate_bitmaps, extra as u64);
    for g in &a.duplicate_bitmaps {
        assert_eq!(g.count, per_group as u64);
        assert_eq!(g.instances.len(), MAX_BITMAP_INSTANCES);
        assert_eq!(
            g.omitted_instances,
            (per_group - MAX_BITMAP_INSTANCES) as u64
        );
    }
    assert_eq!(a.dump.top_classes.len(), MAX_TOP_CLASSES);
    assert!(a.dump.omitted_top_classes >= extra as u64);
    let traces = a.leaks.iter().map(|l| &l.trace).chain(
        a.duplicate_bitmaps
            .iter()
            .flat_map(|g| g.instances.iter().filter_map(|i| i.trace.as_ref())),
    );
    let mut names = 0;
    for t in traces {
        assert_eq!(t.steps.len(), MAX_TRACE_STEPS);
        assert_eq!(t.omitted_steps, (steps + 3 - MAX_TRACE_STEPS) as u64);
        assert!(t.steps[1].leaking_reason.is_some() && !t.steps[1].labels.is_empty());
        for s in &t.steps {
            let r = s.reference.as_ref();
            for name in [Some(&s.class_name), r.map(|r| &r.name)]
                .into_iter()
                .chain([
                    r.and_then(|r| r.declared_by.as_ref()),
                    r.and_then(|r| r.owning_class.as_ref()),
                ])
                .flatten()
            {
                names += 1;
                assert!(name.len() <= MAX_NAME_BYTES + 20, "{} bytes", name.len());
                assert!(!name.contains(['\u{1b}', '\r', '\n', '\u{202e}']), "{name}");
            }
            if let Some(reason) = &s.leaking_reason {
                assert!(reason.len() <= MAX_TEXT_BYTES + 20);
            }
            for label in &s.labels {
                assert!(label.len() <= MAX_TEXT_BYTES + 20, "{} bytes", label.len());
                assert!(
                    !label.contains(['\u{1b}', '\r', '\n', '\u{202e}']),
                    "{label}"
                );
            }
            assert!(s.labels.len() <= MAX_STEP_LABELS);
            let bytes: usize = s.labels.iter().map(String::len).sum();
            assert!(bytes <= MAX_STEP_LABEL_BYTES, "{bytes} bytes of labels");
        }
    }
    assert!(names > 10_000);
    let json = render::json(&a);
    eprintln!("the hostile dump's analysis: {} bytes of JSON", json.len());
    assert!(
        json.len() as u64 <= MAX_ANALYSIS_BYTES,
        "{} bytes",
        json.len()
    );

    // Key mode: the keys found are listed up to their cap, and the note names a few.
    let a = analyze(&path, Some("absent"));
    assert_eq!(a.keys_found.len(), MAX_KEYS_FOUND);
    assert_eq!(a.omitted_keys_found, extra as u64);
    assert!(a.keys_found.iter().all(|k| k.len() <= MAX_NAME_BYTES + 20));
    let note = a.notes.iter().find(|n| n.contains("keys found")).unwrap();
    assert!(
        note.ends_with(&format!("and {} more)", keys - 10)),
        "{note}"
    );
    assert!(
        note.len() <= 12 * (MAX_NAME_BYTES + 20),
        "{} bytes",
        note.len()
    );
}

/// Characters that act on a terminal or a page: escape sequences, bell, CR, LF, bidi
/// overrides and isolates.
const ACTING: [char; 6] = ['\u{1b}', '\u{7}', '\r', '\u{202e}', '\u{2066}', '\u{200b}'];

#[test]
fn text_and_html_show_control_and_bidi_characters_escaped() {
    let class = "com.evil.\u{1b}[2J\u{1b}]0;title\u{7}Name\r\nFake line\u{202e}gnp.exe";
    let field = "f\u{1b}[31m\u{2066}x\u{200b}";
    let mut a = Android::new(Art::default(), BitmapKind::NativePixels);
    let leaky = a.b.declare_class(class, a.activity, &[], &[]);
    let holder = a.b.declare_class("com.example.Holder", a.object, &[], &[]);
    a.b.dump_class(a.activity, Heap::Image);
    a.b.dump_class(leaky, Heap::App);
    let activity =
        a.b.instance(leaky, Heap::App, &[("mDestroyed", Val::Bool(true))]);
    a.b.set_static(holder, field, Val::Obj(activity));
    a.b.dump_class(holder, Heap::App);
    a.b.root_simple(STICKY, holder);
    let dir = tempfile::tempdir().unwrap();
    // The file's own name is shown too.
    let path = dir.path().join("dump\u{1b}[1m\u{202e}.hprof");
    std::fs::write(&path, a.b.finish()).unwrap();

    let o = run(&["analyze", s(&path)]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    // The only raw zero-width spaces are those LeakCanary's layout puts at the start of
    // the leaking object's lines.
    let unlead: String = text
        .lines()
        .map(|l| l.strip_prefix('\u{200b}').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!unlead.contains(ACTING), "{text:?}");
    assert!(text.contains("com.evil.\\u{1b}[2J\\u{1b}]0;title\\u{7}Name\\u{d}\\u{a}Fake line\\u{202e}gnp.exe instance"), "{text}");
    assert!(
        text.contains("static Holder.f\\u{1b}[31m\\u{2066}x\\u{200b}"),
        "{text}"
    );
    assert!(text.contains("dump\\u{1b}[1m\\u{202e}.hprof"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("Fake line")), "{text}");

    let page = dir.path().join("page.html");
    let o = run(&["analyze", s(&path), "--format", "html", "-o", s(&page)]);
    assert_eq!(o.status.code(), Some(0));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(ACTING));
    assert!(html.contains("com.evil.\\u{1b}[2J"));

    // JSON escapes control characters by itself (the input's path is kept as given);
    // the names from the dump it holds are as shown.
    let o = run(&["analyze", s(&path), "--format", "json"]);
    let json = stdout(&o);
    assert!(!json.contains(|c: char| c.is_ascii_control() && c != '\n'));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let name = v["leaks"][0]["className"].as_str().unwrap();
    assert!(name.starts_with("com.evil.\\u{1b}[2J"), "{name}");

    // The other commands that print names from a dump or a package: inspect, verify.
    let o = run(&["inspect", s(&path), "--top", "100"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    // The only raw zero-width spaces are those LeakCanary's layout puts at the start of
    // the leaking object's lines.
    let unlead: String = text
        .lines()
        .map(|l| l.strip_prefix('\u{200b}').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!unlead.contains(ACTING), "{text:?}");
    assert!(text.contains("com.evil.\\u{1b}[2J"), "{text}");
    let package = dir.path().join("evil.zip");
    let o = run(&[
        s(&path),
        s(&package),
        "--manufacturer",
        "Evil\u{1b}[2J\u{202e}",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let o = run(&["verify", s(&package)]);
    let text = stdout(&o) + &common::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(!text.contains(ACTING), "{text:?}");
    assert!(
        text.contains("manufacturer=Evil\\u{1b}[2J\\u{202e}"),
        "{text}"
    );
}

/// Runs `hprof-shrink` with `args`, killing it if it has not ended within `secs`.
fn run_within(args: &[&str], secs: u64) -> std::process::Output {
    let mut child = common::bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed().as_secs() >= secs {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{args:?} still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_mapping_that_is_not_a_regular_file_or_too_large_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let dump = common::fixture("art-api25.hprof");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let o = run_within(&["analyze", s(&dump), "--mapping", s(&fifo)], 30);
    failed_with(&o, 1, &["fifo", "not a regular file (a FIFO)"]);
    let o = run_within(&["analyze", s(&dump), "--mapping", "/dev/zero"], 30);
    failed_with(
        &o,
        1,
        &["/dev/zero", "not a regular file (a character device)"],
    );
    let o = run_within(&["analyze", s(&dump), "--mapping", s(dir.path())], 30);
    failed_with(&o, 1, &["is a directory"]);
    // A sparse file one byte over the cap: refused by its size, before a byte is read.
    let big = dir.path().join("mapping.txt");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(hprof_shrink_analyze::mapping::MAX_MAPPING_BYTES + 1)
        .unwrap();
    let o = run_within(&["analyze", s(&dump), "--mapping", s(&big)], 30);
    let err = failed_with(&o, 1, &["mapping.txt", "over the limit of 1073741824"]);
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A destroyed Activity that references nothing (a leaf: it retains itself alone), held
/// by a static; `instance_size` overrides what its class dump declares.
fn one_object_leak(instance_size: Option<u32>) -> Vec<u8> {
    use hprof_fixtures::ArtBuilder;
    let mut b = ArtBuilder::new(Art::default());
    let object = b.declare_class("java.lang.Object", 0, &[], &[]);
    let activity = b.declare_class(
        "android.app.Activity",
        object,
        &[("mDestroyed", Ty::Boolean)],
        &[],
    );
    let leaky = b.declare_class("com.example.LeakyActivity", activity, &[], &[]);
    let holder = b.declare_class("com.example.Holder", object, &[], &[]);
    for c in [object, activity, leaky] {
        b.dump_class(c, Heap::App);
        b.root_simple(STICKY, c);
    }
    let leak = b.instance(leaky, Heap::App, &[("mDestroyed", Val::Bool(true))]);
    b.set_static(holder, "sLeak", Val::Obj(leak));
    b.dump_class(holder, Heap::App);
    b.root_simple(STICKY, holder);
    let mut dump = b.finish();
    if let Some(size) = instance_size {
        // The class dump: tag, class id, serial, superclass, five ids, then the size.
        let mut head = vec![0x20];
        head.extend_from_slice(&(leaky as u32).to_be_bytes());
        head.extend_from_slice(&0u32.to_be_bytes());
        head.extend_from_slice(&(activity as u32).to_be_bytes());
        let at = dump
            .windows(head.len())
            .position(|w| w == head)
            .expect("the class dump")
            + head.len()
            + 5 * 4;
        dump[at..at + 4].copy_from_slice(&size.to_be_bytes());
    }
    dump
}

#[test]
fn a_one_object_leak_is_sized_and_counted_in_the_singular() {
    let dir = tempfile::tempdir().unwrap();
    // As the dump sizes it (its one boolean field), then with a class dump that declares
    // no size: the object still counts its own field bytes.
    for (name, size) in [("sized.hprof", None), ("unsized.hprof", Some(0))] {
        let path = dir.path().join(name);
        std::fs::write(&path, one_object_leak(size)).unwrap();
        let a = analyze(&path, None);
        assert_eq!(a.leaks.len(), 1, "{name}");
        assert_eq!(
            (a.leaks[0].retained_bytes, a.leaks[0].retained_objects),
            (1, 1),
            "{name}"
        );
        let o = run(&["analyze", s(&path)]);
        let text = stdout(&o);
        // This analysis's own line in the singular; the trace as LeakCanary writes it.
        assert_eq!(
            text.matches("  Retaining 1 byte in 1 object (").count(),
            1,
            "{name}: {text}"
        );
        assert_eq!(
            text.matches("\u{200b}     Retaining 1 B in 1 objects\n")
                .count(),
            1,
            "{name}: {text}"
        );
        // LeakCanary's plain total, as it writes it.
        assert!(
            text.contains("\n1 bytes retained by leaking objects\n"),
            "{text}"
        );
        let html = render::html::render(&a, &[]);
        assert!(html.contains("1 byte in 1 object<"), "{name}");
    }
}

#[test]
fn a_package_whose_key_is_the_placeholder_is_searched_as_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("chain.hprof");
    std::fs::write(&dump, chain_dump(3)).unwrap();
    let package = dir.path().join("chain.zip");
    // No key given, and no DestroyedActivityInfo in the dump to read one from: the
    // package carries the placeholder.
    let o = run(&[s(&dump), s(&package)]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let o = run(&["analyze", s(&package), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let a: Analysis = serde_json::from_str(&stdout(&o)).unwrap();
    let manifest_key = a
        .input
        .manifest
        .iter()
        .find(|(k, _)| k == "leakedActivityKey")
        .map(|(_, v)| v.as_str());
    assert_eq!(manifest_key, Some("unknown"));
    // No watched object in the dump: the inspectors' finders.
    assert_eq!(a.finder, "inspectors");
    assert_eq!(a.key, None);
    assert_eq!(a.leaks.len(), 1);
    assert_eq!(a.leaks[0].class_name, "com.example.LeakyActivity");
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("placeholder \"unknown\"") && n.contains("without a key")),
        "{:?}",
        a.notes
    );
    let text = stdout(&run(&["analyze", s(&package)]));
    assert!(text.contains("1 leak found."), "{text}");
    // A key given on the command line is still looked for as it is.
    let a = analyze(&package, Some("unknown"));
    assert_eq!(a.finder, "matrix-key");
    assert!(a.leaks.is_empty());
}
