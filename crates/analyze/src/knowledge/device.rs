//! The device a dump was taken on, as the known-leak table needs it: `Build.VERSION.SDK_INT`,
//! `Build.MANUFACTURER` and `Build.ID` read from the heap's `android.os.Build` classes (as
//! LeakCanary's Shark reads them), each filled in from a package's `result.info`
//! (`sdkVersion`, `manufacturer`) where the heap does not give it. The placeholders a
//! package writer puts when it knew no value (`sdkVersion=0`, `manufacturer=unknown`) are
//! no value.

use hprof_shrink_core::hprof::Value;

use crate::heap::graph::Graph;
use crate::knowledge::library::Device;

/// What the heap says, then what the package says.
pub fn device(g: &Graph<'_, '_>, sdk: Option<i64>, manufacturer: Option<&str>) -> Device {
    let heap = from_heap(g);
    let manufacturer = manufacturer
        .map(str::trim)
        .filter(|m| !m.is_empty() && *m != "unknown");
    Device {
        sdk: heap.sdk.or(sdk.filter(|&s| s > 0)),
        manufacturer: heap.manufacturer.or(manufacturer.map(str::to_string)),
        build_id: heap.build_id,
    }
}

/// The statics of `android.os.Build` and `android.os.Build$VERSION`, where the dump has
/// them.
pub fn from_heap(g: &Graph<'_, '_>) -> Device {
    let statics = |class: &str| {
        g.class_named(class)
            .map(|c| g.statics(c))
            .unwrap_or_default()
    };
    let string = |fields: &[(String, Value)], name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_object())
            .filter(|&id| id != 0)
            .and_then(|id| g.string_value(id))
    };
    let build = statics("android.os.Build");
    let version = statics("android.os.Build$VERSION");
    Device {
        sdk: version
            .iter()
            .find(|(n, _)| n == "SDK_INT")
            .and_then(|(_, v)| match v {
                Value::Int(i) => Some(*i as i64),
                _ => None,
            }),
        manufacturer: string(&build, "MANUFACTURER"),
        build_id: string(&build, "ID"),
    }
}
