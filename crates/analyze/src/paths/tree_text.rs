//! How a path's parts are written in a growth tree's node or a census retainer's path,
//! as LeakCanary's heap-growth tree names them: a reference (`INSTANCE_FIELD
//! Cache.items -> instance of java.util.ArrayList`), a GC root and its object, a
//! reference's target; each escaped and cut as every name from the dump is.

use hprof_shrink_core::hprof::tags;

use crate::base::limits::MAX_NAME_BYTES;
use crate::heap::graph::{Graph, RefName};
use crate::heap::index::Node;

/// A name as shown (characters that act on a terminal or a page written out, see
/// [`shown`](crate::base::shown::shown)), cut to [`MAX_NAME_BYTES`].
pub fn clip(s: String) -> String {
    let mut s = match crate::base::shown::shown(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(o) => o,
    };
    if s.len() > MAX_NAME_BYTES {
        let mut end = MAX_NAME_BYTES;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// A class's simple name: what follows its last dot.
pub fn simple(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// What a reference's target is called in a node name.
pub fn target_text(g: &Graph<'_, '_>, t: Node) -> String {
    match g.ix.tag(t) {
        tags::INSTANCE_DUMP => format!("instance of {}", g.node_class_name(t)),
        tags::CLASS_DUMP => format!("class {}", g.node_class_name(t)),
        tags::OBJECT_ARRAY_DUMP => format!("array of {}", g.node_class_name(t)),
        _ => {
            let name = g.node_class_name(t);
            format!("array of {}", name.trim_end_matches("[]"))
        }
    }
}

/// Names a reference the way LeakCanary's growth tree does.
pub fn edge_text(g: &Graph<'_, '_>, from: Node, t: Node, r: RefName) -> String {
    let target = target_text(g, t);
    let text = match r {
        RefName::Field {
            declared_by,
            name_id,
        } => format!(
            "INSTANCE_FIELD {}.{} -> {target}",
            simple(g.class_name(declared_by)),
            g.field_name(declared_by, name_id)
        ),
        RefName::Static { class, name_id } => format!(
            "STATIC_FIELD {}.{} -> {target}",
            simple(g.class_name(class)),
            g.field_name(class, name_id)
        ),
        RefName::Element(_) => {
            format!(
                "ARRAY_ENTRY {}.[x] -> {target}",
                simple(&g.node_class_name(from))
            )
        }
    };
    clip(text)
}

/// A GC root and its object, named as a retainer's path starts: `GcRoot(StickyClass) ->
/// class com.example.Cache`.
pub fn root_text(g: &Graph<'_, '_>, tag: u8, node: Node) -> String {
    clip(format!(
        "GcRoot({}) -> {}",
        root_kind(tag),
        target_text(g, node)
    ))
}

/// A GC root's kind, as LeakCanary names it.
pub fn root_kind(tag: u8) -> &'static str {
    match tag {
        tags::ROOT_STICKY_CLASS => "StickyClass",
        tags::ROOT_JNI_GLOBAL => "JniGlobal",
        tags::ROOT_JAVA_FRAME => "JavaFrame",
        tags::ROOT_JNI_LOCAL => "JniLocal",
        tags::ROOT_NATIVE_STACK => "NativeStack",
        tags::ROOT_THREAD_OBJECT => "ThreadObject",
        tags::ROOT_THREAD_BLOCK => "ThreadBlock",
        tags::ROOT_MONITOR_USED => "MonitorUsed",
        tags::ROOT_VM_INTERNAL => "VmInternal",
        tags::ROOT_JNI_MONITOR => "JniMonitor",
        tags::ROOT_REFERENCE_CLEANUP => "ReferenceCleanup",
        tags::ROOT_INTERNED_STRING => "InternedString",
        tags::ROOT_FINALIZING => "Finalizing",
        tags::ROOT_DEBUGGER => "Debugger",
        tags::ROOT_UNREACHABLE => "Unreachable",
        _ => "Unknown",
    }
}
