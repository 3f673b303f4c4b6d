//! Object inspectors: what an object's own fields say about whether it is leaking, with
//! LeakCanary's (Shark's) rules and words. Each inspector looks at the objects of one
//! framework class and adds reasons it is leaking (YES), reasons it is not (NO) and labels
//! (facts worth showing); [`resolve`] turns them into a trace's statuses as Shark does.
//! The same rules, as finders ([`crate::knowledge::finders`]), find leaking objects in a
//! dump nobody instrumented.
//!
//! Everything per class (which framework classes a class descends from, where a field is)
//! is worked out once per dump ([`kinds`], [`heap`]), so inspecting the objects of a trace
//! costs a table look-up each, and a few field reads for framework objects.
//!
//! Where Shark would stop the whole analysis (a field it requires is missing, a value it
//! requires is null), the inspector is skipped for that object and a note says so.

pub mod android;
mod animators;
pub mod compose;
mod context;
pub mod fragments;
pub mod heap;
mod jdk;
pub mod kinds;
pub mod resolve;
pub mod square;
pub mod views;
pub mod watch;

mod vocab;

use hprof_shrink_core::hprof::tags;

use crate::heap::index::Node;
use kinds::Kind;

pub use vocab::{Checked, Inspectors, Inst, Report};

/// The inspectors in LeakCanary's order (`AndroidObjectInspectors.appDefaults`: the JDK's,
/// then Android's), which is the order of an object's labels and reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Inspector {
    KeyedWeakReference,
    ClassLoader,
    Class,
    AnonymousClass,
    Thread,
    View,
    Editor,
    Activity,
    Service,
    ContextField,
    ContextWrapper,
    ApplicationPackageManager,
    ContextImpl,
    Dialog,
    ActivityThread,
    Application,
    InputMethodManager,
    Fragment,
    SupportFragment,
    AndroidxFragment,
    MessageQueue,
    LoadedApk,
    MortarPresenter,
    MortarScope,
    Coordinator,
    MainThread,
    ViewRootImpl,
    Window,
    Message,
    Toast,
    Recomposer,
    CompositionImpl,
    Animator,
    ObjectAnimator,
    LifecycleRegistry,
    Stub,
}

impl Inspector {
    pub const ALL: [Inspector; 36] = [
        Inspector::KeyedWeakReference,
        Inspector::ClassLoader,
        Inspector::Class,
        Inspector::AnonymousClass,
        Inspector::Thread,
        Inspector::View,
        Inspector::Editor,
        Inspector::Activity,
        Inspector::Service,
        Inspector::ContextField,
        Inspector::ContextWrapper,
        Inspector::ApplicationPackageManager,
        Inspector::ContextImpl,
        Inspector::Dialog,
        Inspector::ActivityThread,
        Inspector::Application,
        Inspector::InputMethodManager,
        Inspector::Fragment,
        Inspector::SupportFragment,
        Inspector::AndroidxFragment,
        Inspector::MessageQueue,
        Inspector::LoadedApk,
        Inspector::MortarPresenter,
        Inspector::MortarScope,
        Inspector::Coordinator,
        Inspector::MainThread,
        Inspector::ViewRootImpl,
        Inspector::Window,
        Inspector::Message,
        Inspector::Toast,
        Inspector::Recomposer,
        Inspector::CompositionImpl,
        Inspector::Animator,
        Inspector::ObjectAnimator,
        Inspector::LifecycleRegistry,
        Inspector::Stub,
    ];

    /// Shark's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Inspector::KeyedWeakReference => "KEYED_WEAK_REFERENCE",
            Inspector::ClassLoader => "CLASSLOADER",
            Inspector::Class => "CLASS",
            Inspector::AnonymousClass => "ANONYMOUS_CLASS",
            Inspector::Thread => "THREAD",
            Inspector::View => "VIEW",
            Inspector::Editor => "EDITOR",
            Inspector::Activity => "ACTIVITY",
            Inspector::Service => "SERVICE",
            Inspector::ContextField => "CONTEXT_FIELD",
            Inspector::ContextWrapper => "CONTEXT_WRAPPER",
            Inspector::ApplicationPackageManager => "APPLICATION_PACKAGE_MANAGER",
            Inspector::ContextImpl => "CONTEXT_IMPL",
            Inspector::Dialog => "DIALOG",
            Inspector::ActivityThread => "ACTIVITY_THREAD",
            Inspector::Application => "APPLICATION",
            Inspector::InputMethodManager => "INPUT_METHOD_MANAGER",
            Inspector::Fragment => "FRAGMENT",
            Inspector::SupportFragment => "SUPPORT_FRAGMENT",
            Inspector::AndroidxFragment => "ANDROIDX_FRAGMENT",
            Inspector::MessageQueue => "MESSAGE_QUEUE",
            Inspector::LoadedApk => "LOADED_APK",
            Inspector::MortarPresenter => "MORTAR_PRESENTER",
            Inspector::MortarScope => "MORTAR_SCOPE",
            Inspector::Coordinator => "COORDINATOR",
            Inspector::MainThread => "MAIN_THREAD",
            Inspector::ViewRootImpl => "VIEW_ROOT_IMPL",
            Inspector::Window => "WINDOW",
            Inspector::Message => "MESSAGE",
            Inspector::Toast => "TOAST",
            Inspector::Recomposer => "RECOMPOSER",
            Inspector::CompositionImpl => "COMPOSITION_IMPL",
            Inspector::Animator => "ANIMATOR",
            Inspector::ObjectAnimator => "OBJECT_ANIMATOR",
            Inspector::LifecycleRegistry => "LIFECYCLE_REGISTRY",
            Inspector::Stub => "STUB",
        }
    }

    /// Inspectors that only add labels: skipped on the objects of a long trace whose
    /// steps are not kept, since their labels would not be shown.
    fn labels_only(self) -> bool {
        matches!(
            self,
            Inspector::AnonymousClass
                | Inspector::Thread
                | Inspector::ContextField
                | Inspector::Dialog
                | Inspector::LoadedApk
                | Inspector::MortarPresenter
                | Inspector::Coordinator
                | Inspector::Message
                | Inspector::Animator
                | Inspector::ObjectAnimator
                | Inspector::Stub
        )
    }

    /// The framework class whose instances it looks at (`None`: any object).
    fn kind(self) -> Option<Kind> {
        Some(match self {
            Inspector::KeyedWeakReference
            | Inspector::Class
            | Inspector::AnonymousClass
            | Inspector::ContextField => return None,
            Inspector::ClassLoader => Kind::ClassLoader,
            Inspector::Thread | Inspector::MainThread => Kind::Thread,
            Inspector::View => Kind::View,
            Inspector::Editor => Kind::Editor,
            Inspector::Activity => Kind::Activity,
            Inspector::Service => Kind::Service,
            Inspector::ContextWrapper => Kind::ContextWrapper,
            Inspector::ApplicationPackageManager => return None,
            Inspector::ContextImpl => Kind::ContextImpl,
            Inspector::Dialog => Kind::Dialog,
            Inspector::ActivityThread => Kind::ActivityThread,
            Inspector::Application => Kind::Application,
            Inspector::InputMethodManager => Kind::InputMethodManager,
            Inspector::Fragment => Kind::Fragment,
            Inspector::SupportFragment => Kind::SupportFragment,
            Inspector::AndroidxFragment => Kind::AndroidxFragment,
            Inspector::MessageQueue => Kind::MessageQueue,
            Inspector::LoadedApk => Kind::LoadedApk,
            Inspector::MortarPresenter => Kind::MortarPresenter,
            Inspector::MortarScope => Kind::MortarScope,
            Inspector::Coordinator => Kind::Coordinator,
            Inspector::ViewRootImpl => Kind::ViewRootImpl,
            Inspector::Window => Kind::Window,
            Inspector::Message => Kind::Message,
            Inspector::Toast => Kind::Toast,
            Inspector::Recomposer => Kind::Recomposer,
            Inspector::CompositionImpl => Kind::CompositionImpl,
            Inspector::Animator => Kind::Animator,
            Inspector::ObjectAnimator => Kind::ObjectAnimator,
            Inspector::LifecycleRegistry => Kind::LifecycleRegistry,
            Inspector::Stub => Kind::Binder,
        })
    }
}

impl Inspectors<'_> {
    /// Everything the inspectors say about `node`. Without `labels`, the inspectors that
    /// only label are not run (the statuses are the same).
    pub fn inspect(&self, node: Node, labels: bool) -> Report {
        let mut r = Report::default();
        let inst = self.inst(node);
        let is_class = self.heap.ix.tag(node) == tags::CLASS_DUMP;
        for ins in Inspector::ALL {
            if !labels && ins.labels_only() {
                continue;
            }
            if let Some(k) = ins.kind() {
                if !inst.is_some_and(|i| i.kinds.is(k)) {
                    continue;
                }
            }
            let mark = r.mark();
            self.begin();
            let done = match (ins, inst) {
                (Inspector::KeyedWeakReference, _) => {
                    jdk::keyed_weak_reference(self, node, &mut r);
                    Ok(())
                }
                (Inspector::Class, _) => {
                    if is_class {
                        r.no("a class is never leaking".into());
                    }
                    Ok(())
                }
                (_, Some(o)) => self.run(ins, &o, &mut r),
                (_, None) => Ok(()),
            };
            // On a heap without values, what a rule said having asked for one is dropped.
            if self.skipped_for_values("inspector", ins.name()) {
                r.reset(mark);
                continue;
            }
            if let Err(m) = done {
                r.reset(mark);
                if let Some(o) = inst {
                    self.note_skipped("inspector", ins.name(), o.class, m);
                }
            }
        }
        r
    }

    fn run(&self, ins: Inspector, o: &Inst, r: &mut Report) -> Checked {
        match ins {
            Inspector::KeyedWeakReference | Inspector::Class => Ok(()),
            Inspector::ClassLoader => {
                r.no("A ClassLoader is never leaking".into());
                Ok(())
            }
            Inspector::AnonymousClass => {
                jdk::anonymous_class(self, o, r);
                Ok(())
            }
            Inspector::Thread => jdk::thread(self, o, r),
            Inspector::View => views::view(self, o, r),
            Inspector::Editor => views::editor(self, o, r),
            Inspector::Activity => android::activity(self, o, r),
            Inspector::Service => android::service(self, o, r),
            Inspector::ContextField => android::context_field(self, o, r),
            Inspector::ContextWrapper => android::context_wrapper(self, o, r),
            Inspector::ApplicationPackageManager => android::package_manager(self, o, r),
            Inspector::ContextImpl => android::context_impl(self, o, r),
            Inspector::Dialog => views::dialog(self, o, r),
            Inspector::ActivityThread => {
                r.no("ActivityThread is a singleton".into());
                Ok(())
            }
            Inspector::Application => {
                r.no("Application is a singleton".into());
                Ok(())
            }
            Inspector::InputMethodManager => {
                r.no("InputMethodManager is a singleton".into());
                Ok(())
            }
            Inspector::Fragment => fragments::framework(self, o, r),
            Inspector::SupportFragment => fragments::support(self, o, r),
            Inspector::AndroidxFragment => fragments::androidx(self, o, r),
            Inspector::MessageQueue => android::message_queue(self, o, r),
            Inspector::LoadedApk => android::loaded_apk(self, o, r),
            Inspector::MortarPresenter => square::presenter(self, o, r),
            Inspector::MortarScope => square::scope(self, o, r),
            Inspector::Coordinator => square::coordinator(self, o, r),
            Inspector::MainThread => jdk::main_thread(self, o, r),
            Inspector::ViewRootImpl => views::view_root_impl(self, o, r),
            Inspector::Window => views::window(self, o, r),
            Inspector::Message => android::message(self, o, r),
            Inspector::Toast => views::toast(self, o, r),
            Inspector::Recomposer => compose::recomposer(self, o, r),
            Inspector::CompositionImpl => compose::composition(self, o, r),
            Inspector::Animator => animators::animator(self, o, r),
            Inspector::ObjectAnimator => animators::object_animator(self, o, r),
            Inspector::LifecycleRegistry => fragments::lifecycle_registry(self, o, r),
            Inspector::Stub => {
                android::stub(self, o, r);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::kinds::{Kind, NAMES};
    use super::Inspector;

    #[test]
    fn the_kinds_table_is_in_the_enums_order() {
        for (i, (k, _)) in NAMES.iter().enumerate() {
            assert_eq!(*k as usize, i, "{k:?}");
        }
        assert_eq!(
            Kind::DecorContext.name(),
            "com.android.internal.policy.DecorContext"
        );
    }

    #[test]
    fn thirty_six_inspectors_each_named_once() {
        let mut names: Vec<&str> = Inspector::ALL.iter().map(|i| i.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 36);
    }
}
