//! The framework classes the inspectors and finders know, and for every class of the dump
//! which of them it is or descends from (by name, as LeakCanary matches "instance of"),
//! worked out once per dump so that looking at an object costs one table look-up.

use rustc_hash::FxHashMap;

use crate::base::map::{Map, Set};

use super::heap::Heap;

/// A framework class an inspector or finder looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    ClassLoader,
    Thread,
    View,
    Editor,
    Activity,
    Service,
    Application,
    ContextWrapper,
    Context,
    ContextImpl,
    ApplicationContextManager,
    ApplicationPackageManager,
    Dialog,
    ActivityThread,
    InputMethodManager,
    Fragment,
    SupportFragment,
    AndroidxFragment,
    MessageQueue,
    LoadedApk,
    MortarPresenter,
    MortarScope,
    Coordinator,
    ViewRootImpl,
    Window,
    Message,
    Toast,
    Recomposer,
    CompositionImpl,
    Animator,
    ObjectAnimator,
    LifecycleRegistry,
    Binder,
    DecorContext,
}

/// Each kind's class name.
pub const NAMES: [(Kind, &str); 34] = [
    (Kind::ClassLoader, "java.lang.ClassLoader"),
    (Kind::Thread, "java.lang.Thread"),
    (Kind::View, "android.view.View"),
    (Kind::Editor, "android.widget.Editor"),
    (Kind::Activity, "android.app.Activity"),
    (Kind::Service, "android.app.Service"),
    (Kind::Application, "android.app.Application"),
    (Kind::ContextWrapper, "android.content.ContextWrapper"),
    (Kind::Context, "android.content.Context"),
    (Kind::ContextImpl, "android.app.ContextImpl"),
    // Shark's name for the package manager (no AOSP class has it: its rule never fires).
    (
        Kind::ApplicationContextManager,
        "android.app.ApplicationContextManager",
    ),
    // AOSP's, which the same rule was meant for.
    (
        Kind::ApplicationPackageManager,
        "android.app.ApplicationPackageManager",
    ),
    (Kind::Dialog, "android.app.Dialog"),
    (Kind::ActivityThread, "android.app.ActivityThread"),
    (
        Kind::InputMethodManager,
        "android.view.inputmethod.InputMethodManager",
    ),
    (Kind::Fragment, "android.app.Fragment"),
    (Kind::SupportFragment, "android.support.v4.app.Fragment"),
    (Kind::AndroidxFragment, "androidx.fragment.app.Fragment"),
    (Kind::MessageQueue, "android.os.MessageQueue"),
    (Kind::LoadedApk, "android.app.LoadedApk"),
    (Kind::MortarPresenter, "mortar.Presenter"),
    (Kind::MortarScope, "mortar.MortarScope"),
    (Kind::Coordinator, "com.squareup.coordinators.Coordinator"),
    (Kind::ViewRootImpl, "android.view.ViewRootImpl"),
    (Kind::Window, "android.view.Window"),
    (Kind::Message, "android.os.Message"),
    (Kind::Toast, "android.widget.Toast"),
    (Kind::Recomposer, "androidx.compose.runtime.Recomposer"),
    (
        Kind::CompositionImpl,
        "androidx.compose.runtime.CompositionImpl",
    ),
    (Kind::Animator, "android.animation.Animator"),
    (Kind::ObjectAnimator, "android.animation.ObjectAnimator"),
    (
        Kind::LifecycleRegistry,
        "androidx.lifecycle.LifecycleRegistry",
    ),
    (Kind::Binder, "android.os.Binder"),
    (
        Kind::DecorContext,
        "com.android.internal.policy.DecorContext",
    ),
];

impl Kind {
    pub fn bit(self) -> u64 {
        1 << self as u8
    }

    pub fn name(self) -> &'static str {
        NAMES[self as usize].1
    }
}

/// The nearest of the four context classes in a class's chain (LeakCanary's "matching
/// class" when it unwraps a context): an Activity subclass is an Activity before it is a
/// ContextWrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    ContextWrapper,
    Activity,
    Application,
    Service,
}

impl Component {
    fn of(kind: Kind) -> Option<Component> {
        match kind {
            Kind::ContextWrapper => Some(Component::ContextWrapper),
            Kind::Activity => Some(Component::Activity),
            Kind::Application => Some(Component::Application),
            Kind::Service => Some(Component::Service),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ClassKinds {
    /// A bit per [`Kind`] the class is or descends from.
    pub mask: u64,
    pub component: Option<Component>,
}

impl ClassKinds {
    pub fn is(&self, kind: Kind) -> bool {
        self.mask & kind.bit() != 0
    }
}

/// Every class's kinds.
pub struct Kinds {
    by_class: Map<u64, ClassKinds>,
}

impl Kinds {
    pub fn new(heap: &Heap<'_>) -> Kinds {
        let by_name: FxHashMap<&str, Kind> = NAMES.iter().map(|&(k, n)| (n, k)).collect();
        let own = |class: u64| -> ClassKinds {
            match by_name.get(heap.class_name(class).as_ref()) {
                Some(&k) => ClassKinds {
                    mask: k.bit(),
                    component: Component::of(k),
                },
                None => ClassKinds::default(),
            }
        };
        let mut by_class: Map<u64, ClassKinds> = Map::default();
        let ids: Vec<u64> = heap.ix.classes.classes().map(|c| c.class_id).collect();
        let mut chain = Vec::new();
        // The classes on the walk, to find a superclass cycle in one look each (a search
        // of the walk would be quadratic in a deep hierarchy's depth).
        let mut on_chain: Set<u64> = Set::default();
        for id in ids {
            if by_class.contains_key(&id) {
                continue;
            }
            // Up to the first class already known (or the top), then down again: every
            // class is walked once.
            chain.clear();
            on_chain.clear();
            let mut c = Some(id);
            let mut above = ClassKinds::default();
            while let Some(class) = c {
                if let Some(k) = by_class.get(&class) {
                    above = *k;
                    break;
                }
                if !on_chain.insert(class) {
                    break; // a superclass cycle: what was seen so far
                }
                chain.push(class);
                c = heap.superclass(class);
            }
            for &class in chain.iter().rev() {
                let o = own(class);
                above = ClassKinds {
                    mask: above.mask | o.mask,
                    component: o.component.or(above.component),
                };
                by_class.insert(class, above);
            }
        }
        Kinds { by_class }
    }

    pub fn of(&self, class: u64) -> ClassKinds {
        self.by_class.get(&class).copied().unwrap_or_default()
    }

    /// The classes that are (or descend from) any of `mask`'s kinds.
    pub fn classes_with(&self, mask: u64) -> Vec<u64> {
        let mut out: Vec<u64> = self
            .by_class
            .iter()
            .filter(|(_, k)| k.mask & mask != 0)
            .map(|(&c, _)| c)
            .collect();
        out.sort_unstable();
        out
    }

    /// The classes whose chain holds one of the four context classes.
    pub fn component_classes(&self) -> Vec<u64> {
        let mut out: Vec<u64> = self
            .by_class
            .iter()
            .filter(|(_, k)| k.component.is_some())
            .map(|(&c, _)| c)
            .collect();
        out.sort_unstable();
        out
    }
}
