//! Issue 31: one bug, one signature. Pairs of scenario dumps (made at test time by the Java
//! generator and the ART builder, `hprof_fixtures::scenarios`) hold the same bug in
//! different incidental shapes; each pair must give one signature, equal to LeakCanary's
//! leak fingerprint computed here from the expected path (SHA-1 over the suspect
//! references' origin class + generic name; a library leak's over its pattern's text),
//! and equal to the one Shark 2.14 gave on the same dumps (committed in
//! `fixtures/scenarios/NAME.shark.json`).
//!
//! Without a JDK the HotSpot scenarios are skipped, saying so.

use hprof_shrink_analyze::{analyze_path, Analysis, Leak, Options};
use hprof_shrink_core::Control;
use serde_json::Value;
use sha1::{Digest, Sha1};

/// The scenario's dump analyzed LeakCanary's way (every watched and destroyed object),
/// and Shark's answer on it; `None` when this machine cannot make the dump.
fn analyzed(name: &str) -> Option<(Analysis, Value)> {
    let s = super::scenario(name)?;
    let answer = super::committed_shark(name);
    let dump = s.dump(answer["dump"]["file"].as_str().unwrap());
    let options = Options {
        all_leaks: true,
        pictures: false,
        ..Options::default()
    };
    let got = analyze_path(&dump, &options, &Control::default())
        .unwrap()
        .analysis;
    Some((got, answer))
}

fn sha1_hex(text: &str) -> String {
    Sha1::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// LeakCanary's fingerprint of an application leak: the suspect references, each as
/// (origin object's class, generic name), concatenated without separator.
fn fingerprint(suspects: &[(&str, &str)]) -> String {
    sha1_hex(
        &suspects
            .iter()
            .map(|(class, name)| format!("{class}{name}"))
            .collect::<String>(),
    )
}

fn leaks_of<'a>(a: &'a Analysis, class: &str) -> Vec<&'a Leak> {
    a.leaks.iter().filter(|l| l.class_name == class).collect()
}

/// Shark's leak signatures in its answer (either finder).
fn sharks_signatures(answer: &Value) -> Vec<String> {
    let mut out: Vec<String> = ["kwr", "filter"]
        .iter()
        .flat_map(|m| answer[m]["leaks"].as_array().cloned().unwrap_or_default())
        .map(|l| l["signature"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Each dump of `pair` has one leak of `class`, and all have the signature `want`, which
/// is also Shark's on those dumps.
fn one_signature(pair: &[&str], class: &str, want: &str) {
    let mut seen = 0;
    for name in pair {
        let Some((got, answer)) = analyzed(name) else {
            continue;
        };
        seen += 1;
        assert_eq!(
            sharks_signatures(&answer),
            [want],
            "{name}: the test's expected path is not the one Shark hashed"
        );
        let leaks = leaks_of(&got, class);
        assert_eq!(leaks.len(), 1, "{name}: one leak of {class}");
        assert_eq!(leaks[0].signature, want, "{name}: signature of {class}");
        assert_eq!(got.signature_version, 2, "{name}");
    }
    assert!(seen == 0 || seen == pair.len(), "made {seen} of {pair:?}");
}

/// A listener in an ArrayList: `elementData` (OpenJDK, Android 7+) or `array` (Apache
/// Harmony, Android 6 and before); the list is one step, `[x]` in the signature.
#[test]
fn an_arraylist_listener_has_one_signature_on_both_layouts() {
    let want = fingerprint(&[
        ("com.example.app.EventBus", "sListeners"),
        ("java.util.ArrayList", "[x]"),
        ("com.example.app.ListenerActivity$1", "this$0"),
    ]);
    one_signature(
        &[
            "arraylist-openjdk",
            "arraylist-harmony",
            "arraylist-openjdk-art",
        ],
        "com.example.app.ListenerActivity",
        &want,
    );
}

/// A HashMap value alone in its bucket, and behind colliding entries in the same bucket.
#[test]
fn a_hashmap_value_has_one_signature_with_and_without_collisions() {
    let want = fingerprint(&[
        ("com.example.app.Callbacks", "sByName"),
        ("java.util.HashMap", "[x]"),
        ("com.example.app.ProfileActivity$1", "this$0"),
    ]);
    one_signature(
        &["hashmap", "hashmap-collision", "hashmap-harmony"],
        "com.example.app.ProfileActivity",
        &want,
    );
}

/// A Handler's message at position 1 and at position 4 of its queue: the queue is one
/// step, so both give one signature (whatever the statuses decide).
#[test]
fn a_handler_message_has_one_signature_at_any_queue_position() {
    let mut signatures = Vec::new();
    for name in ["handler-message-pos1", "handler-message-pos4"] {
        let Some((got, _)) = analyzed(name) else {
            return;
        };
        let leaks = leaks_of(&got, "com.example.app.PlayerActivity");
        assert_eq!(leaks.len(), 1, "{name}");
        let r = leaks[0].trace.steps[2].reference.as_ref().unwrap();
        assert_eq!(r.generic(), "[x]", "{name}");
        signatures.push(leaks[0].signature.clone());
    }
    assert_eq!(signatures[0], signatures[1]);
}

/// The same signature is LeakCanary's: the MessageQueue is the last object not leaking
/// (Shark's MessageQueue inspector: `mQuitting` is false), so the suspect references
/// start at its entry.
#[test]
fn a_handler_messages_signature_is_leakcanarys() {
    let want = fingerprint(&[
        ("android.os.MessageQueue", "[x]"),
        ("android.os.Message", "target"),
        ("com.example.app.PlayerActivity$UiHandler", "this$0"),
    ]);
    one_signature(
        &["handler-message-pos1", "handler-message-pos4"],
        "com.example.app.PlayerActivity",
        &want,
    );
}

/// One framework leak (`Message.obj`) reached from two screens by two different paths:
/// one signature, the pattern's, and one leak counting both traces.
#[test]
fn a_framework_leak_from_two_screens_is_one_leak_signed_by_its_pattern() {
    let pattern = "instance field android.os.Message#obj";
    let want = sha1_hex(pattern);
    let Some((got, answer)) = analyzed("library-two-screens") else {
        return;
    };
    assert_eq!(sharks_signatures(&answer), std::slice::from_ref(&want));
    assert_eq!(got.leaks.len(), 1, "{:#?}", got.leaks);
    let leak = &got.leaks[0];
    assert_eq!(leak.signature, want);
    let lib = leak.library_leak.as_ref().unwrap();
    assert_eq!(lib.leak_pattern.as_deref(), Some(pattern));
    assert_eq!(leak.trace_count, 2);
    assert_eq!(leak.object_ids.len(), 2);
    // The trace's own fingerprint is still there, for whoever wants it; it is not the
    // leak's.
    let trace_signature = leak.trace_signature.as_deref().unwrap();
    assert_eq!(trace_signature.len(), 40);
    assert_ne!(trace_signature, want);
    // One trace shown, the sizes of both summed.
    assert_eq!(
        leak.total_retained_bytes,
        2 * leak.retained_bytes,
        "two screens of one shape"
    );
}

// ---------------------------------------------------------------------------------------
// The text trace as LeakCanary prints it (issue 31 item 4), against Shark's own text on
// the same dumps (`fixtures/scenarios/NAME.shark.txt`).

const ZWSP: char = '\u{200B}';

/// Shark's text for one finder (`kwr` or `filter`), without the oracle's own label lines.
fn sharks_text(name: &str, mode: &str) -> String {
    let path = super::repo()
        .join("fixtures/scenarios")
        .join(format!("{name}.shark.txt"));
    let all = std::fs::read_to_string(path).unwrap();
    let start = all.find(&format!("==== {mode} ====\n")).unwrap() + mode.len() + 11;
    let rest = &all[start..];
    let end = rest.find("\n==== ").map_or(rest.len(), |e| e + 1);
    rest[..end]
        .lines()
        .filter(|l| !l.contains("oracle.objectId="))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The lines that carry LeakCanary's layout and do not depend on an inspector: section
/// bars and titles, the fixed sentences, a leak's pattern, count and signature lines, the
/// GC root, each object's line and each reference's, (with `underlines`) the `~~~`
/// lines, and METADATA's keys. The leaking object's lines are checked to start with a zero-width space.
fn layout(text: &str, underlines: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_leaking = false;
    for l in text.lines() {
        if l.starts_with("╰→ ") {
            in_leaking = true;
            out.push(l.to_string());
            continue;
        }
        if in_leaking {
            if l.is_empty() || l.starts_with("====") {
                in_leaking = false;
            } else {
                assert!(l.starts_with(&format!("{ZWSP}     ")), "{l:?}");
                continue;
            }
        }
        let keep = l.starts_with("====")
            || l.ends_with(" LEAKS")
            || l.ends_with(" UNREACHABLE OBJECTS")
            || l == "METADATA"
            || l.starts_with("References underlined")
            || l.starts_with("Learn more at")
            || l.starts_with("A Library Leak is")
            || l.starts_with("See https://")
            || l.starts_with("Please include this")
            || l.starts_with("Leak pattern: ")
            || l.starts_with("Displaying only 1 leak trace")
            || l.starts_with("Signature: ")
            || l == "┬───"
            || l.starts_with("│ GC Root: ")
            || l.starts_with("├─ ")
            || l.starts_with("│    ↓ ")
            || (underlines && l.starts_with('│') && l.ends_with('~'));
        if keep {
            out.push(l.to_string());
        }
        // METADATA: the device and app as the heap says, whole; the counts by name (a
        // dump made again differs from the one Shark read in a few JVM objects).
        const WHOLE: [&str; 4] = [
            "Build.VERSION.SDK_INT: ",
            "Build.MANUFACTURER: ",
            "LeakCanary version: ",
            "App process name: ",
        ];
        const NAMED: [&str; 6] = [
            "Class count: ",
            "Instance count: ",
            "Primitive array count: ",
            "Object array count: ",
            "Thread count: ",
            "Heap total bytes: ",
        ];
        if WHOLE.iter().any(|k| l.starts_with(k)) {
            out.push(l.to_string());
        }
        if let Some(k) = NAMED.iter().find(|k| l.starts_with(*k)) {
            out.push(k.to_string());
        }
    }
    out
}

/// Section by section, leak by leak, object by object and reference by reference, the
/// text reads as Shark's (the underlines too where the statuses are the same).
#[test]
fn the_text_is_laid_out_as_leakcanary_prints_it() {
    for (name, underlines) in [
        ("arraylist-openjdk", true),
        ("hashmap-collision", true),
        ("library-imm-next-served-view", true),
        ("library-static-field", true),
        ("library-two-screens", true),
        ("handler-message-pos4", true),
        ("new-activities", true),
        ("activity-destroyed", true),
        ("static-beats-local", true),
    ] {
        let Some((got, _)) = analyzed(name) else {
            continue;
        };
        let ours = hprof_shrink_analyze::render::text::render(&got);
        let theirs = sharks_text(name, "filter");
        let (a, b) = (layout(&ours, underlines), layout(&theirs, underlines));
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(
                x, y,
                "{name}: line {i} of the layout\nours:\n{ours}\nShark's:\n{theirs}"
            );
        }
        // Ours goes on with its own sections after METADATA's.
        assert!(
            a.len() >= b.len(),
            "{name}:\nours:\n{ours}\nShark's:\n{theirs}"
        );
        let ours_after = &a[b.len()..];
        assert!(
            ours_after.iter().all(|l| l.starts_with("====")),
            "{name}: {ours_after:?}"
        );
        assert!(ours.contains("\nHPROF-SHRINK ANALYSIS\n"), "{name}");
        assert!(ours.contains("\nDUPLICATE BITMAPS\n"), "{name}");
    }
}

/// On a dump LeakCanary watched, the text is Shark's with LeakCanary's finder (`kwr`, as on
/// the phone): one leak each, application or library as Shark says, no "N leak traces"
/// line; with `--all-leaks`, the two traces of one library leak are shown as one, as
/// Shark's filter finder shows them ("Displaying only 1 leak trace out of 2").
#[test]
fn a_watched_dumps_text_is_leakcanarys_on_the_phone() {
    if let Some((all, _)) = analyzed("imm-themed-edit-text") {
        let ours = hprof_shrink_analyze::render::text::render(&all);
        let theirs = sharks_text("imm-themed-edit-text", "filter");
        for line in [
            "Displaying only 1 leak trace out of 2 with the same signature\n",
            "Signature: 1e770c85b3c9035e9a766255b35fef682ab30414\n",
        ] {
            assert!(
                ours.contains(line) && theirs.contains(line),
                "{line}\n{ours}"
            );
        }
    }
    for name in [
        "toast-showing-watched",
        "toast-hidden-watched",
        "imm-themed-edit-text",
    ] {
        let Some(s) = super::scenario(name) else {
            continue;
        };
        let options = Options {
            pictures: false,
            ..Options::default()
        };
        let got = analyze_path(&s.dump(&s.truth.dumps[0]), &options, &Control::default())
            .unwrap()
            .analysis;
        let ours = hprof_shrink_analyze::render::text::render(&got);
        let theirs = sharks_text(name, "kwr");
        // The leaks' sections; not METADATA's (an ART dump without ActivityThread has no
        // process name, which Shark prints as Unknown).
        let leaks = |text: &str| {
            let mut l = layout(text, true);
            l.truncate(l.iter().position(|x| x == "METADATA").unwrap());
            l
        };
        assert_eq!(
            leaks(&ours),
            leaks(&theirs),
            "{name}:\nours:\n{ours}\nShark's:\n{theirs}"
        );
    }
}

/// `fixtures/hotspot-leaks.hprof.gz`'s five leaks, each signed by LeakCanary's formula on
/// its expected path (Shark cannot read this dump: it has no `android.os.Build`). Before
/// this change the library leak and the ArrayList listener hashed their paths.
#[test]
fn the_fixtures_leaks_are_signed_as_leakcanary_signs_them() {
    let dump = super::repo().join("fixtures/hotspot-leaks.hprof.gz");
    let options = Options {
        all_leaks: true,
        pictures: false,
        ..Options::default()
    };
    let got = analyze_path(&dump, &options, &Control::default())
        .unwrap()
        .analysis;
    let want = [
        (
            "com.example.ImeActivity",
            sha1_hex("instance field android.view.inputmethod.InputMethodManager#mNextServedView"),
        ),
        (
            "com.example.ArrayActivity",
            fingerprint(&[
                ("com.example.Registry", "sSlots"),
                ("java.lang.Object[]", "[x]"),
            ]),
        ),
        (
            "com.example.ListenerActivity",
            fingerprint(&[
                ("com.example.EventBus", "sListeners"),
                ("java.util.ArrayList", "[x]"),
                ("com.example.ListenerActivity$1", "this$0"),
            ]),
        ),
        (
            "com.example.ThreadLocalActivity",
            fingerprint(&[("com.example.WorkerThread", "<Java Local>")]),
        ),
        (
            "com.example.StaticChainActivity",
            fingerprint(&[
                ("com.example.AppState", "sSession"),
                ("com.example.Session", "mCache"),
                ("com.example.Cache", "mActivity"),
            ]),
        ),
    ];
    assert_eq!(got.leaks.len(), want.len(), "{:#?}", got.leaks);
    for (class, signature) in want {
        let leaks = leaks_of(&got, class);
        assert_eq!(leaks.len(), 1, "{class}");
        assert_eq!(leaks[0].signature, signature, "{class}");
    }
}
