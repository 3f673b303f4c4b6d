//! `hprof-shrink diff BASE NEW`: two dumps made here that differ by N leaked objects of
//! one class (and one leaking Activity), compared by the library and by the command.

mod common;

use std::path::{Path, PathBuf};

use common::{run, s};
use hprof_fixtures::android::{Android, BitmapKind};
use hprof_fixtures::{Heap, Options as BuildOptions, Ty, Val};
use hprof_shrink_analyze::diff::{diff_paths, DiffOptions, DiffReport};
use hprof_shrink_core::Control;

/// Bytes of a `com.example.Leaked` instance: java.lang.Object's two fields (ART's
/// `shadow$_klass_` and `shadow$_monitor_`), then one int and one reference (4-byte ids).
const LEAKED_BYTES: u64 = 8 + 8;
/// Each Leaked's payload: a long[] of this many (no other long[] in these dumps).
const PAYLOAD: usize = 12;

/// A dump whose `com.example.Cache.sItems` holds `items` instances of
/// `com.example.Leaked`, each with its own long[] payload; with `leaking_activity`, a
/// destroyed Activity is also held by a static.
fn dump(items: usize, leaking_activity: bool) -> Vec<u8> {
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let activity = a.activity;
    a.b.dump_class(activity, Heap::Image);
    let leaked = a.b.declare_class(
        "com.example.Leaked",
        a.object,
        &[("id", Ty::Int), ("payload", Ty::Object)],
        &[],
    );
    a.b.dump_class(leaked, Heap::App);
    let mut elements = Vec::new();
    for i in 0..items {
        let payload = a.b.long_array(Heap::App, &[i as i64; PAYLOAD]);
        elements.push(a.b.instance(
            leaked,
            Heap::App,
            &[("id", Val::Int(i as i32)), ("payload", Val::Obj(payload))],
        ));
    }
    let array = a.b.object_array(Heap::App, a.object_array, &elements);
    let cache = a.b.declare_class("com.example.Cache", a.object, &[], &[]);
    a.b.set_static(cache, "sItems", Val::Obj(array));
    if leaking_activity {
        let leaky =
            a.b.declare_class("com.example.LeakyActivity", activity, &[], &[]);
        a.b.dump_class(leaky, Heap::App);
        let title = a.b.string("Leaky", Heap::App);
        let instance = a.b.instance(
            leaky,
            Heap::App,
            &[("mDestroyed", Val::Bool(true)), ("mTitle", Val::Obj(title))],
        );
        a.b.set_static(cache, "sActivity", Val::Obj(instance));
    }
    a.b.dump_class(cache, Heap::App);
    a.b.root_simple(0x05, cache);
    a.b.finish()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn diff(base: &Path, new: &Path) -> DiffReport {
    diff_paths(
        base,
        new,
        &DiffOptions::default(),
        &Control::default(),
        &mut |_, _, _| {},
    )
    .unwrap_or_else(|e| panic!("diff: {e}"))
}

const BASE_ITEMS: usize = 20;
const N: usize = 37;

#[test]
fn diff_counts_the_leaked_objects_of_one_class_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.hprof", &dump(BASE_ITEMS, false));
    let new = write(dir.path(), "new.hprof", &dump(BASE_ITEMS + N, true));
    let r = diff(&base, &new);

    let class = |name: &str| {
        r.classes
            .iter()
            .find(|c| c.class_name == name)
            .unwrap_or_else(|| panic!("{name} not in {:#?}", r.classes))
    };
    let leaked = class("com.example.Leaked");
    assert_eq!(leaked.base.instances, BASE_ITEMS as u64);
    assert_eq!(leaked.new.instances, (BASE_ITEMS + N) as u64);
    assert_eq!(leaked.instances, N as i64);
    assert_eq!(leaked.shallow_bytes, (N as u64 * LEAKED_BYTES) as i64);
    // Each retains itself and its payload, whose size is the same in both dumps.
    let payload = class("long[]");
    assert_eq!(payload.instances, N as i64);
    let payload_bytes = payload.shallow_bytes as u64 / N as u64;
    assert_eq!(payload.shallow_bytes as u64, N as u64 * payload_bytes);
    assert!(payload_bytes >= 8 * PAYLOAD as u64, "{payload_bytes}");
    assert_eq!(
        leaked.retained_bytes,
        (N as u64 * (LEAKED_BYTES + payload_bytes)) as i64
    );
    // Largest change of retained bytes first: the Leaked before their payloads (the
    // class object of the cache, which retains them all, before both).
    let at = |name: &str| r.classes.iter().position(|c| c.class_name == name).unwrap();
    assert!(at("java.lang.Class") < at("com.example.Leaked"));
    assert!(at("com.example.Leaked") < at("long[]"));

    // The Activity leaks in the new dump only.
    assert_eq!(r.new_leaks.len(), 1, "{:#?}", r.new_leaks);
    assert_eq!(r.new_leaks[0].class_name, "com.example.LeakyActivity");
    assert!(r.gone_leaks.is_empty());

    // The cache's class retains the items: a retainer that grew, named by its path.
    let cache = r
        .retainers
        .iter()
        .find(|x| x.path.iter().any(|p| p.contains("com.example.Cache")))
        .unwrap_or_else(|| panic!("no Cache retainer in {:#?}", r.retainers));
    assert!(cache.base_retained_bytes.is_some());
    assert!(
        cache.change >= (N as u64 * (LEAKED_BYTES + payload_bytes)) as i64,
        "{cache:#?}"
    );
}

#[test]
fn diff_of_a_dump_with_itself_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "a.hprof", &dump(BASE_ITEMS, true));
    let r = diff(&base, &base);
    assert!(r.classes.is_empty(), "{:#?}", r.classes);
    assert!(r.new_leaks.is_empty() && r.gone_leaks.is_empty());
    assert_eq!(r.kept_leak_signatures, 1);
    assert!(r.retainers.is_empty(), "{:#?}", r.retainers);
}

#[test]
fn diff_command_writes_text_json_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.hprof", &dump(BASE_ITEMS, false));
    let new = write(dir.path(), "new.hprof", &dump(BASE_ITEMS + N, true));
    let (b, n) = (s(&base), s(&new));

    let out = run(&["diff", b, n]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("New leaks (1)"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("com.example.Leaked") && l.contains(&format!("+{N}"))),
        "{text}"
    );

    let json_path = dir.path().join("diff.json");
    let out = run(&["diff", b, n, "--format", "json", "-o", s(&json_path)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(v["schema"], 1);
    let leaked = v["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["className"] == "com.example.Leaked")
        .unwrap();
    assert_eq!(leaked["instances"], N as i64);
    assert_eq!(v["newLeaks"][0]["className"], "com.example.LeakyActivity");

    let html = dir.path().join("diff.html");
    let out = run(&["diff", b, n, "--format", "html", "-o", s(&html)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("com.example.Leaked") && page.contains("New leaks (1)"));

    // A missing input is one clear line and exit 1; a missing argument is usage, 2.
    let out = run(&["diff", b, s(&dir.path().join("nope.hprof"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.hprof"));
    let out = run(&["diff", b]);
    assert_eq!(out.status.code(), Some(2));
}
