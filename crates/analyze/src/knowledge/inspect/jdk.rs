//! The JDK inspectors (Shark's `ObjectInspectors`): LeakCanary's watched objects, class
//! loaders, classes, anonymous classes, threads; and Android's main thread.

use super::vocab::{Checked, Inspectors, Inst, Report};
use crate::base::limits::MAX_NAME_BYTES;
use crate::base::shown::clipped;
use crate::heap::index::Node;

/// KEYED_WEAK_REFERENCE: an object LeakCanary's ObjectWatcher watched (whether or not it
/// was found retained) is leaking, for each reference watching it.
pub fn keyed_weak_reference(ins: &Inspectors<'_>, node: Node, r: &mut Report) {
    for w in ins.watched.of(&ins.heap, node) {
        r.yes(if w.description.is_empty() {
            "ObjectWatcher was watching this".into()
        } else {
            format!("ObjectWatcher was watching this because {}", w.description)
        });
        r.label(format!("key = {}", w.key));
        if let Some(d) = w.watch_duration_ms {
            r.label(format!("watchDurationMillis = {d}"));
        }
        if let Some(d) = w.retained_duration_ms {
            r.label(format!("retainedDurationMillis = {d}"));
        }
    }
}

/// ANONYMOUS_CLASS: `Anonymous subclass of …` for an instance of a class named like
/// `Outer$1`. Shark names the interface of an anonymous `Object` subclass only when the
/// class is on its own class path (never an app's), and a dump lists no interfaces: no
/// label then.
pub fn anonymous_class(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) {
    let name = ins.heap.class_name(o.class);
    if !is_anonymous(&name) {
        return;
    }
    let Some(parent) = ins.heap.superclass(o.class) else {
        return;
    };
    let parent = ins.heap.class_name(parent);
    if parent != "java.lang.Object" {
        r.label(format!(
            "Anonymous subclass of {}",
            clipped(&parent, MAX_NAME_BYTES)
        ));
    }
}

/// `^.+\$\d+$`.
fn is_anonymous(name: &str) -> bool {
    match name.rfind('$') {
        Some(at) if at > 0 => {
            let digits = &name[at + 1..];
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

/// The name of a thread (`None` when null); Shark requires the field.
fn thread_name(ins: &Inspectors<'_>, o: &Inst) -> Checked<Option<String>> {
    let id = ins.req_ref(o, "java.lang.Thread", "name")?;
    Ok(ins.string(id, ("java.lang.Thread", "name")))
}

/// THREAD: the thread's name as a label.
pub fn thread(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let name = thread_name(ins, o)?;
    r.label(format!(
        "Thread name: '{}'",
        name.as_deref().unwrap_or("null")
    ));
    Ok(())
}

/// MAIN_THREAD: the thread named `main` is not leaking.
pub fn main_thread(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    if thread_name(ins, o)?.as_deref() == Some("main") {
        r.no("the main thread always runs".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_anonymous;

    #[test]
    fn anonymous_classes_end_in_a_dollar_and_digits() {
        assert!(is_anonymous("com.example.Foo$1"));
        assert!(is_anonymous("Foo$Bar$23"));
        assert!(!is_anonymous("$1"));
        assert!(!is_anonymous("com.example.Foo$Bar"));
        assert!(!is_anonymous("com.example.Foo$"));
        assert!(!is_anonymous("com.example.Foo"));
    }
}
