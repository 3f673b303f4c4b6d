//! What a Perfetto trace says of the app whose heap it holds (`perfetto::about`): the
//! dumped pid's uid in the process tree, that uid's package in the packages list.
//! Perfetto's own trace (`heap_graph_deobfuscate_pkg`, encoded by `protoc` where it is
//! here) names the package the trace processor finds; hand-built traces hold the rest.

use std::path::Path;

use hprof_shrink_analyze::perfetto::about::{self, App, MAX_ENTRY};
use hprof_shrink_analyze::perfetto::TraceError;
use hprof_shrink_analyze::{analyze_path, Options};
use hprof_shrink_core::Control;
use hprof_shrink_test_support::trace;

/// `name`.textproto of tests/perfetto encoded by protoc; `None` (said) without one.
fn encoded(name: &str) -> Option<Vec<u8>> {
    trace::encoded(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto"),
        name,
    )
}

fn app(process: Option<&str>, package: Option<&str>, version: Option<i64>) -> App {
    App {
        pid: 7,
        process_name: process.map(str::to_string),
        package_name: package.map(str::to_string),
        version_code: version,
    }
}

#[test]
fn perfettos_trace_names_the_package_the_trace_processor_finds() {
    let Some(bytes) = encoded("heap_graph_deobfuscate_pkg") else {
        return;
    };
    let found = about::app_of(&bytes, None).unwrap();
    assert_eq!(found.pid, 2);
    assert_eq!(found.package_name.as_deref(), Some("com.google.android.gm"));
    assert_eq!(found.process_name.as_deref(), Some("<ignored>"));
    assert_eq!(found.version_code, None);
    // The analysis says it where a package's extra.info stands.
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, &bytes).unwrap();
    let a = analyze_path(f.path(), &Options::default(), &Control::default()).unwrap();
    assert_eq!(
        a.analysis.input.extra,
        vec![
            ("processName".to_string(), "<ignored>".to_string()),
            (
                "packageName".to_string(),
                "com.google.android.gm".to_string()
            ),
        ]
    );
}

#[test]
fn the_version_code_is_the_dumped_processs_packages() {
    // The packages list before the process tree, other processes and packages around.
    let mut t = trace::packages_packet(&[
        ("com.other", 10002, Some(9)),
        ("com.example.app", 10001, Some(42)),
    ]);
    t.extend(trace::process_packet(8, Some(10002), "com.other"));
    t.extend(trace::process_packet(
        7,
        Some(10001),
        "com.example.app:remote",
    ));
    t.extend(trace::chain(7, "Node", 3, 16));
    assert_eq!(
        about::app_of(&t, None).unwrap(),
        app(
            Some("com.example.app:remote"),
            Some("com.example.app"),
            Some(42)
        )
    );
    assert_eq!(
        about::app_of(&t, None).unwrap().pairs(),
        vec![
            ("processName".into(), "com.example.app:remote".into()),
            ("packageName".into(), "com.example.app".into()),
            ("versionCode".into(), "42".into()),
        ]
    );
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, &t).unwrap();
    let a = analyze_path(f.path(), &Options::default(), &Control::default()).unwrap();
    assert!(a
        .analysis
        .input
        .extra
        .contains(&("versionCode".into(), "42".into())));
}

#[test]
fn a_shared_uid_names_only_the_package_named_as_the_process() {
    let shared = trace::packages_packet(&[("com.a", 10001, Some(1)), ("com.b", 10001, Some(2))]);
    let mut t = shared.clone();
    t.extend(trace::process_packet(7, Some(10001), "com.b"));
    t.extend(trace::chain(7, "Node", 1, 16));
    assert_eq!(
        about::app_of(&t, None).unwrap(),
        app(Some("com.b"), Some("com.b"), Some(2))
    );
    // Named as neither: no guess.
    let mut t = shared;
    t.extend(trace::process_packet(7, Some(10001), "com.c"));
    t.extend(trace::chain(7, "Node", 1, 16));
    assert_eq!(
        about::app_of(&t, None).unwrap(),
        app(Some("com.c"), None, None)
    );
}

#[test]
fn without_a_uid_the_process_name_picks_the_package_and_without_a_tree_nothing_does() {
    let list = trace::packages_packet(&[("com.a", 10001, Some(5))]);
    let mut t = list.clone();
    t.extend(trace::process_packet(7, None, "com.a"));
    t.extend(trace::chain(7, "Node", 1, 16));
    assert_eq!(
        about::app_of(&t, None).unwrap(),
        app(Some("com.a"), Some("com.a"), Some(5))
    );
    // A uid that differs from the package's of that name: not its package.
    let mut t = list.clone();
    t.extend(trace::process_packet(7, Some(10009), "com.a"));
    t.extend(trace::chain(7, "Node", 1, 16));
    assert_eq!(
        about::app_of(&t, None).unwrap(),
        app(Some("com.a"), None, None)
    );
    let mut t = list;
    t.extend(trace::chain(7, "Node", 1, 16));
    assert_eq!(about::app_of(&t, None).unwrap(), app(None, None, None));
    assert!(about::app_of(&t, None).unwrap().pairs().is_empty());
}

#[test]
fn an_oversized_or_broken_entry_is_passed_over_and_names_are_cut() {
    let huge = "x".repeat(MAX_ENTRY);
    let long = format!("com.{}", "é".repeat(200));
    let mut t = trace::packages_packet(&[(&huge, 10001, Some(1)), (&long, 10001, Some(3))]);
    // A packages list whose entry's length runs past it: the fact unread, the trace fine.
    let mut broken = Vec::new();
    trace::bytes(47, &[0x0a, 0x7f, 0x0a], &mut broken);
    t.extend(trace::framed(&broken));
    t.extend(trace::process_packet(7, Some(10001), &long));
    t.extend(trace::chain(7, "Node", 1, 16));
    let found = about::app_of(&t, None).unwrap();
    let cut = found.package_name.clone().unwrap();
    assert!(
        cut.len() <= about::MAX_NAME && long.starts_with(&cut),
        "{cut}"
    );
    assert_eq!(found.version_code, Some(3));
}

#[test]
fn a_trace_of_other_packets_or_garbage_is_no_heap_graph() {
    let mut only_other = trace::other_packet();
    only_other.extend(trace::process_packet(7, Some(10001), "com.a"));
    assert!(matches!(
        about::app_of(&only_other, None),
        Err(TraceError::NoHeapGraph)
    ));
    // 0x0a, then a length past the end.
    assert!(matches!(
        about::app_of(b"\x0a\x7fgarbage", None),
        Err(TraceError::PacketPastEnd { offset: 0, .. })
    ));
    let mut two = trace::chain(7, "Node", 1, 16);
    two.extend(trace::chain(3, "Node", 1, 16));
    assert!(matches!(
        about::app_of(&two, None),
        Err(TraceError::SeveralProcesses { ref pids }) if pids == "3, 7"
    ));
    assert_eq!(about::app_of(&two, Some(3)).unwrap().pid, 3);
}
