//! What the heap says about the device and the app (LeakCanary's
//! `AndroidMetadataExtractor`, and a little more): `android.os.Build`'s SDK level,
//! manufacturer and build id, the app's process and package from `ActivityThread`, and
//! LeakCanary's version when its classes are there. Read from the index before the graph
//! is made, since the known-leak patterns depend on the SDK level and the manufacturer.

use hprof_shrink_core::hprof::tags;

use crate::base::limits::MAX_NAME_BYTES;
use crate::heap::index::Index;
use crate::knowledge::inspect::heap::{Heap, RawNames};
use crate::model::HeapMetadata;

/// Reads the metadata; what the heap lacks stays `None`.
pub fn read(ix: &Index<'_>) -> HeapMetadata {
    let names = RawNames(ix);
    let heap = Heap::new(ix, &names);
    let string = |id: Option<u64>| id.and_then(|id| heap.string(id, MAX_NAME_BYTES));
    let static_string = |class: &'static str, field: &str| {
        string(
            heap.class(class)
                .and_then(|c| heap.static_field(c, field))
                .and_then(|v| v.as_object()),
        )
    };
    let sdk_int = heap
        .class("android.os.Build$VERSION")
        .and_then(|c| heap.static_field(c, "SDK_INT"))
        .and_then(|v| v.as_i64());

    // ActivityThread.sCurrentActivityThread.mBoundApplication.appInfo.
    let field = |node, class, name| {
        heap.field(node, class, name)
            .and_then(|v| v.as_object())
            .and_then(|id| heap.instance(id))
    };
    let bound = heap
        .class("android.app.ActivityThread")
        .and_then(|c| heap.static_field(c, "sCurrentActivityThread"))
        .and_then(|v| v.as_object())
        .and_then(|id| heap.instance(id))
        .and_then(|t| field(t, "android.app.ActivityThread", "mBoundApplication"));
    let info = bound.and_then(|b| field(b, "android.app.ActivityThread$AppBindData", "appInfo"));
    let text = |node: Option<_>, class, name| {
        string(
            node.and_then(|n| heap.field(n, class, name))
                .and_then(|v| v.as_object()),
        )
    };
    let process_name =
        text(info, "android.content.pm.ApplicationInfo", "processName").or_else(|| {
            text(
                bound,
                "android.app.ActivityThread$AppBindData",
                "processName",
            )
        });
    let package_name = text(info, "android.content.pm.PackageItemInfo", "packageName");

    let leakcanary_version = static_string("leakcanary.internal.InternalLeakCanary", "version")
        .or_else(|| {
            heap.class("com.squareup.leakcanary.KeyedWeakReference")
                .map(|_| "1.x".to_string())
        });
    HeapMetadata {
        sdk_int,
        manufacturer: static_string("android.os.Build", "MANUFACTURER"),
        build_id: static_string("android.os.Build", "ID"),
        process_name,
        package_name,
        leakcanary_version,
    }
}

/// Threads, as Shark counts them: distinct objects of thread-object roots.
pub fn thread_count(ix: &Index<'_>) -> u64 {
    let mut threads: Vec<u64> = ix
        .roots
        .iter()
        .filter(|r| r.tag == tags::ROOT_THREAD_OBJECT)
        .map(|r| r.object_id)
        .collect();
    threads.sort_unstable();
    threads.dedup();
    threads.len() as u64
}

/// The SDK level and manufacturer the known-leak patterns are matched with: the heap's
/// (`android.os.Build`, what the framework code in the dump is, as LeakCanary reads it)
/// where it has them, else the package's `result.info`; and a note for each value on
/// which the two disagree. A `result.info` placeholder (`0`, `unknown`) is no value.
pub fn device(
    manifest_sdk: Option<&str>,
    manifest_manufacturer: Option<&str>,
    heap: &HeapMetadata,
) -> (Option<i64>, Option<String>, Vec<String>) {
    let mut notes = Vec::new();
    let package_sdk = manifest_sdk
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|&s| s > 0);
    if let (Some(p), Some(h)) = (package_sdk, heap.sdk_int) {
        if p != h {
            notes.push(format!(
                "the package's result.info says sdkVersion {p} but the heap's android.os.Build.VERSION.SDK_INT is {h}: known leaks are matched for {h}"
            ));
        }
    }
    let package_maker = manifest_manufacturer
        .map(str::trim)
        .filter(|m| !m.is_empty() && *m != "unknown");
    if let (Some(p), Some(h)) = (package_maker, heap.manufacturer.as_deref()) {
        if p != h {
            notes.push(format!(
                "the package's result.info says manufacturer {} but the heap's android.os.Build.MANUFACTURER is {}: known leaks are matched for {}",
                crate::base::shown::clipped(p, MAX_NAME_BYTES),
                crate::base::shown::clipped(h, MAX_NAME_BYTES),
                crate::base::shown::clipped(h, MAX_NAME_BYTES)
            ));
        }
    }
    (
        heap.sdk_int.or(package_sdk),
        heap.manufacturer
            .clone()
            .or_else(|| package_maker.map(str::to_string)),
        notes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heap(sdk: Option<i64>, maker: Option<&str>) -> HeapMetadata {
        HeapMetadata {
            sdk_int: sdk,
            manufacturer: maker.map(str::to_string),
            ..HeapMetadata::default()
        }
    }

    #[test]
    fn the_heaps_device_wins_and_a_disagreement_is_a_note() {
        let (sdk, maker, notes) =
            device(Some("29"), Some("samsung"), &heap(Some(30), Some("Google")));
        assert_eq!((sdk, maker.as_deref()), (Some(30), Some("Google")));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].ends_with("known leaks are matched for 30"),
            "{notes:?}"
        );
        assert!(
            notes[1].ends_with("known leaks are matched for Google"),
            "{notes:?}"
        );
        // Agreeing: no note.
        let (_, _, notes) = device(Some("30"), Some("Google"), &heap(Some(30), Some("Google")));
        assert!(notes.is_empty());
    }

    #[test]
    fn without_android_os_build_the_package_says_and_placeholders_say_nothing() {
        let none = heap(None, None);
        let (sdk, maker, notes) = device(Some("23"), Some("samsung"), &none);
        assert_eq!((sdk, maker.as_deref()), (Some(23), Some("samsung")));
        assert!(notes.is_empty());
        let (sdk, maker, _) = device(Some("0"), Some("unknown"), &none);
        assert_eq!((sdk, maker), (None, None));
        let (_, _, notes) = device(Some("0"), Some("unknown"), &heap(Some(30), Some("Google")));
        assert!(notes.is_empty(), "{notes:?}");
    }
}
