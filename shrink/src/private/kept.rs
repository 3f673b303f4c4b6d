//! The String values a private package keeps: those LeakCanary's and Matrix's rules and
//! the inspectors read, which are framework or library state, not what a user typed or
//! saw. Everything else a String holds is replaced ([`super::replace`]).
//!
//! The table names classes; a field kept on a class is kept on its subclasses (a
//! `HandlerThread`'s name is `Thread.name`). docs/usage.md lists it with the reasons
//! (a test there checks every entry is listed).

use rustc_hash::FxHashMap;

use crate::hprof::{BasicType, ClassIndex, Value};
use crate::passes::DumpInfo;

/// What of a class's Strings is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// The String an instance field names.
    Field(&'static str),
    /// The Strings of the `String[]` an instance field names.
    Elements(&'static str),
    /// The String a static field names.
    Static(&'static str),
    /// Every String the class's static fields name.
    Statics,
}

/// One kept value: where it is and why it is kept.
#[derive(Debug, Clone, Copy)]
pub struct KeptValue {
    /// The class (dotted) that declares the field.
    pub class: &'static str,
    /// Which of its Strings.
    pub holds: Holds,
    /// Who reads it.
    pub why: &'static str,
}

const fn kept(class: &'static str, holds: Holds, why: &'static str) -> KeptValue {
    KeptValue { class, holds, why }
}

/// Every String value a private package keeps.
pub const KEPT: &[KeptValue] = &[
    kept(
        "leakcanary.KeyedWeakReference",
        Holds::Field("key"),
        "the watched object's key: `--key` and the leak's identity",
    ),
    kept(
        "leakcanary.KeyedWeakReference",
        Holds::Field("description"),
        "what was watched (`Activity received Activity#onDestroy() callback`): the leak's label",
    ),
    kept(
        "com.squareup.leakcanary.KeyedWeakReference",
        Holds::Field("key"),
        "LeakCanary 1's key",
    ),
    kept(
        "com.squareup.leakcanary.KeyedWeakReference",
        Holds::Field("name"),
        "LeakCanary 1's description",
    ),
    kept(
        "com.tencent.matrix.resource.analyzer.model.DestroyedActivityInfo",
        Holds::Field("mKey"),
        "Matrix's key of the destroyed Activity: `result.info`'s leaked key",
    ),
    kept(
        "com.tencent.matrix.resource.analyzer.model.DestroyedActivityInfo",
        Holds::Field("mActivityName"),
        "Matrix's name of the destroyed Activity's class",
    ),
    kept(
        "android.os.Build",
        Holds::Statics,
        "the device (MANUFACTURER picks the known leaks that apply, ID names the build)",
    ),
    kept(
        "android.os.Build$VERSION",
        Holds::Statics,
        "the Android release and codename",
    ),
    kept(
        "java.lang.Thread",
        Holds::Field("name"),
        "thread names: known leaks match threads by name, traces show them",
    ),
    kept(
        "java.lang.Enum",
        Holds::Field("name"),
        "enum constants' names (a Fragment's or a Compose state's): code",
    ),
    kept(
        "android.app.Fragment",
        Holds::Field("mTag"),
        "a Fragment's tag, a label in traces: code",
    ),
    kept(
        "android.support.v4.app.Fragment",
        Holds::Field("mTag"),
        "likewise",
    ),
    kept(
        "androidx.fragment.app.Fragment",
        Holds::Field("mTag"),
        "likewise",
    ),
    kept(
        "android.view.WindowManager$LayoutParams",
        Holds::Field("mTitle"),
        "a window's title as the framework sets it (the Activity's class, `Toast`): a label",
    ),
    kept(
        "android.animation.ObjectAnimator",
        Holds::Field("mPropertyName"),
        "the animated property's name: a label",
    ),
    kept("android.util.Property", Holds::Field("mName"), "likewise"),
    kept(
        "mortar.MortarScope",
        Holds::Field("name"),
        "a Mortar scope's name: a label",
    ),
    kept(
        "android.content.pm.ApplicationInfo",
        Holds::Field("processName"),
        "the app's process name",
    ),
    kept(
        "android.app.ActivityThread$AppBindData",
        Holds::Field("processName"),
        "likewise",
    ),
    kept(
        "android.content.pm.PackageItemInfo",
        Holds::Field("packageName"),
        "the app's package name",
    ),
    kept(
        "leakcanary.internal.InternalLeakCanary",
        Holds::Static("version"),
        "LeakCanary's version",
    ),
    kept(
        "shark.AndroidResourceIdNames",
        Holds::Elements("names"),
        "the `R.id` names LeakCanary saves: View labels",
    ),
];

/// How a kept field's value is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Follow {
    /// The field names a String.
    String,
    /// The field names a String[].
    Elements,
}

/// The kept fields resolved against one dump: where in which instances, and the Strings
/// static fields name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KeptFields {
    /// Class id (a kept class or a subclass) → (offset in the instance's field data, what
    /// the field holds).
    pub instance: FxHashMap<u64, Vec<(u32, Follow)>>,
    /// Objects static fields name, and what they are.
    pub statics: Vec<(u64, Follow)>,
}

impl KeptFields {
    /// Resolves [`KEPT`] against `info` (pass 1 of the dump `data`). A class whose
    /// hierarchy cannot be read keeps nothing: its Strings are replaced, never kept.
    pub fn resolve(info: &DumpInfo, data: &[u8]) -> KeptFields {
        let classes = &info.classes;
        let entries = |class_id: u64| -> Vec<&'static KeptValue> {
            let Some(name) = classes.name_id(class_id) else {
                return Vec::new();
            };
            KEPT.iter()
                .filter(|k| info.names.kept_text(name) == Some(k.class))
                .collect()
        };
        let mut out = KeptFields::default();
        // The kept classes by id (a dump may name one class twice).
        let mut kept_classes: FxHashMap<u64, Vec<&'static KeptValue>> = FxHashMap::default();
        for c in classes.classes() {
            let e = entries(c.class_id);
            if !e.is_empty() {
                kept_classes.insert(c.class_id, e);
            }
        }
        for (&class_id, list) in &kept_classes {
            let Some(class) = classes.get(class_id) else {
                continue;
            };
            for f in classes.static_fields(data, class) {
                let Value::Object(id) = f.value else { continue };
                if id == 0 {
                    continue;
                }
                let name = info.names.kept_text(f.name_id);
                let wanted = list.iter().any(|k| match k.holds {
                    Holds::Statics => true,
                    Holds::Static(field) => name == Some(field),
                    _ => false,
                });
                if wanted {
                    out.statics.push((id, Follow::String));
                }
            }
        }
        if kept_classes.is_empty() {
            return out;
        }
        for c in classes.classes() {
            if let Some(fields) = instance_fields(info, data, classes, c.class_id, &kept_classes) {
                out.instance.insert(c.class_id, fields);
            }
        }
        out
    }

    /// Whether any instance field is kept.
    pub fn is_empty(&self) -> bool {
        self.instance.is_empty() && self.statics.is_empty()
    }
}

/// The kept object fields of instances of `class_id`: those its kept ancestors (or it)
/// declare. `None` when there are none, or its hierarchy cannot be read.
fn instance_fields(
    info: &DumpInfo,
    data: &[u8],
    classes: &ClassIndex,
    class_id: u64,
    kept_classes: &FxHashMap<u64, Vec<&'static KeptValue>>,
) -> Option<Vec<(u32, Follow)>> {
    let chain = classes.hierarchy(class_id).ok()?;
    if !chain.iter().any(|c| kept_classes.contains_key(&c.class_id)) {
        return None;
    }
    let layout = classes.layout(data, class_id).ok()?;
    let mut fields = Vec::new();
    for f in layout.fields.iter().filter(|f| f.ty == BasicType::Object) {
        let Some(list) = kept_classes.get(&f.declared_by) else {
            continue;
        };
        let name = info.names.kept_text(f.name_id);
        for k in list {
            let follow = match k.holds {
                Holds::Field(n) if name == Some(n) => Follow::String,
                Holds::Elements(n) if name == Some(n) => Follow::Elements,
                _ => continue,
            };
            fields.push((f.offset as u32, follow));
        }
    }
    (!fields.is_empty()).then_some(fields)
}

/// Every class and field name [`KEPT`] mentions, for pass 1 to note the STRING ids of:
/// class names dotted and in HotSpot's internal form.
pub fn names() -> impl Iterator<Item = (String, &'static str)> {
    KEPT.iter().flat_map(|k| {
        let field = match k.holds {
            Holds::Field(f) | Holds::Elements(f) | Holds::Static(f) => Some(f),
            Holds::Statics => None,
        };
        [
            Some((k.class.to_string(), k.class)),
            Some((k.class.replace('.', "/"), k.class)),
            field.map(|f| (f.to_string(), f)),
        ]
        .into_iter()
        .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_says_why_and_names_a_dotted_class() {
        for k in KEPT {
            assert!(!k.why.is_empty(), "{k:?}");
            assert!(!k.class.contains('/'), "{k:?}");
        }
        assert!(names().any(|(t, _)| t == "java/lang/Thread"));
        // Pass 1 skips longer STRING records without a lookup.
        assert!(names().all(|(t, _)| t.len() <= crate::passes::names::LONGEST));
    }
}
