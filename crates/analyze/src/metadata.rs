//! What the heap says about the device and the app (LeakCanary's
//! `AndroidMetadataExtractor`, and a little more): `android.os.Build`'s SDK level,
//! manufacturer and build id, the app's process and package from `ActivityThread`, and
//! LeakCanary's version when its classes are there. Read from the index before the graph
//! is made, since the known-leak patterns depend on the SDK level and the manufacturer.

use hprof_shrink_core::hprof::tags;

use super::index::Index;
use super::inspect::heap::{Heap, RawNames};
use super::limits::MAX_NAME_BYTES;
use super::model::HeapMetadata;

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

/// The SDK level and manufacturer the known-leak patterns are matched with: the package's
/// `result.info` where it has them, else the heap's; and a note for each value on which
/// the two disagree.
pub fn device(
    manifest_sdk: Option<&str>,
    manifest_manufacturer: Option<&str>,
    heap: &HeapMetadata,
) -> (Option<i64>, Option<String>, Vec<String>) {
    let mut notes = Vec::new();
    let package_sdk = manifest_sdk.and_then(|s| s.trim().parse::<i64>().ok());
    if let (Some(p), Some(h)) = (package_sdk, heap.sdk_int) {
        if p != h {
            notes.push(format!(
                "the package's result.info says sdkVersion {p} but the heap's android.os.Build.VERSION.SDK_INT is {h}: known leaks are matched for {p}"
            ));
        }
    }
    let package_maker = manifest_manufacturer.filter(|m| !m.is_empty());
    if let (Some(p), Some(h)) = (package_maker, heap.manufacturer.as_deref()) {
        if p != h {
            notes.push(format!(
                "the package's result.info says manufacturer {} but the heap's android.os.Build.MANUFACTURER is {h}: known leaks are matched for {}",
                super::shown::clipped(p, MAX_NAME_BYTES),
                super::shown::clipped(p, MAX_NAME_BYTES)
            ));
        }
    }
    (
        package_sdk.or(heap.sdk_int),
        package_maker
            .map(str::to_string)
            .or_else(|| heap.manufacturer.clone()),
        notes,
    )
}
