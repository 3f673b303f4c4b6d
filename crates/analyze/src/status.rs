//! Leaking status: for each object on a path, whether it is leaking (YES), not (NO) or
//! unknown, and why: what the object's own fields say about its lifecycle.

use super::graph::Graph;
use super::index::Node;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaking {
    Yes,
    No,
    Unknown,
}

impl Leaking {
    pub fn word(self) -> &'static str {
        match self {
            Leaking::Yes => "YES",
            Leaking::No => "NO",
            Leaking::Unknown => "UNKNOWN",
        }
    }
}

/// What is known of one object.
pub struct Verdict {
    pub leaking: Leaking,
    pub reason: Option<String>,
    pub labels: Vec<String>,
}

/// Classes whose instances the rules look at, found once per dump.
pub struct Rules {
    activity: Option<u64>,
    application: Option<u64>,
    view: Option<u64>,
    thread: Option<u64>,
    fragments: Vec<u64>,
}

impl Rules {
    pub fn new(g: &Graph<'_, '_>) -> Rules {
        Rules {
            activity: g.class_named("android.app.Activity"),
            application: g.class_named("android.app.Application"),
            view: g.class_named("android.view.View"),
            thread: g.class_named("java.lang.Thread"),
            fragments: [
                "android.app.Fragment",
                "androidx.fragment.app.Fragment",
                "android.support.v4.app.Fragment",
            ]
            .iter()
            .filter_map(|n| g.class_named(n))
            .collect(),
        }
    }

    pub fn is_activity(&self, g: &Graph<'_, '_>, class: u64) -> bool {
        self.activity.is_some_and(|a| g.is_subclass(class, a))
    }

    /// An Activity instance's `mDestroyed`, if it is one.
    pub fn destroyed(&self, g: &Graph<'_, '_>, node: Node) -> Option<bool> {
        let class = g.class_of(node)?;
        if !self.is_activity(g, class) {
            return None;
        }
        g.field(node, "mDestroyed")
            .and_then(|v| v.as_i64())
            .map(|v| v != 0)
    }

    pub fn verdict(&self, g: &Graph<'_, '_>, node: Node, is_thread_root: bool) -> Verdict {
        let unknown = |labels| Verdict {
            leaking: Leaking::Unknown,
            reason: None,
            labels,
        };
        let no = |why: &str, labels| Verdict {
            leaking: Leaking::No,
            reason: Some(why.to_string()),
            labels,
        };
        let yes = |why: &str, labels| Verdict {
            leaking: Leaking::Yes,
            reason: Some(why.to_string()),
            labels,
        };
        if g.node_kind(node) == "class" {
            return no("a class is never leaking", Vec::new());
        }
        let Some(class) = g.class_of(node) else {
            return unknown(Vec::new());
        };
        let sub = |c: Option<u64>| c.is_some_and(|c| g.is_subclass(class, c));
        if sub(self.thread) {
            // The start of the name only: every thread on a path is looked at, and many
            // may share one long name.
            let labels = g
                .field(node, "name")
                .and_then(|v| v.as_object())
                .and_then(|id| super::leaks::shown_string(g, id))
                .map(|n| vec![format!("Thread name: '{n}'")])
                .unwrap_or_default();
            return if is_thread_root {
                no("the thread is running", labels)
            } else {
                unknown(labels)
            };
        }
        if sub(self.application) {
            return no("Application is a singleton", Vec::new());
        }
        if let Some(destroyed) = self.destroyed(g, node) {
            return if destroyed {
                yes("Activity#mDestroyed is true", Vec::new())
            } else {
                no("Activity#mDestroyed is false", Vec::new())
            };
        }
        if self.fragments.iter().any(|&f| g.is_subclass(class, f)) {
            let manager = g
                .field(node, "mFragmentManager")
                .and_then(|v| v.as_object());
            return match manager {
                Some(0) => yes("Fragment#mFragmentManager is null", Vec::new()),
                Some(_) => no("Fragment#mFragmentManager is not null", Vec::new()),
                None => unknown(Vec::new()),
            };
        }
        if sub(self.view) {
            let context = g.field(node, "mContext").and_then(|v| v.as_object());
            let context_destroyed = context
                .and_then(|id| g.ix.node(id))
                .and_then(|n| self.destroyed(g, n));
            if context_destroyed == Some(true) {
                return yes("View.mContext references a destroyed activity", Vec::new());
            }
            let attached = g.field(node, "mAttachInfo").and_then(|v| v.as_object());
            return match attached {
                Some(0) => unknown(vec!["View.mAttachInfo is null (view detached)".into()]),
                Some(_) => no("View attached", vec!["View.mAttachInfo is not null".into()]),
                None => unknown(Vec::new()),
            };
        }
        unknown(Vec::new())
    }
}
