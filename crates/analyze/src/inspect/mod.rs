//! Object inspectors: what an object's own fields say about whether it is leaking, with
//! LeakCanary's (Shark's) rules and words. Each inspector looks at the objects of one
//! framework class and adds reasons it is leaking (YES), reasons it is not (NO) and labels
//! (facts worth showing); [`resolve`] turns them into a trace's statuses as Shark does.
//! The same rules, as finders ([`crate::finders`]), find leaking objects in a
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

use std::cell::{OnceCell, RefCell};

use crate::map::Set;
use hprof_shrink_core::hprof::{tags, Value};

use super::index::Node;
use super::limits::{MAX_NAME_BYTES, MAX_NOTES};
use heap::Heap;
use kinds::{ClassKinds, Kind, Kinds};

pub use context::Unwrapped;

/// What the inspectors say about one object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub labels: Vec<String>,
    /// Reasons it is leaking, in inspector order.
    pub leaking: Vec<String>,
    /// Reasons it is not leaking, in inspector order.
    pub not_leaking: Vec<String>,
}

impl Report {
    pub fn label(&mut self, s: String) {
        if !self.labels.contains(&s) {
            self.labels.push(s);
        }
    }
    pub fn yes(&mut self, s: String) {
        if !self.leaking.contains(&s) {
            self.leaking.push(s);
        }
    }
    pub fn no(&mut self, s: String) {
        if !self.not_leaking.contains(&s) {
            self.not_leaking.push(s);
        }
    }
    fn mark(&self) -> (usize, usize, usize) {
        (
            self.labels.len(),
            self.leaking.len(),
            self.not_leaking.len(),
        )
    }
    fn reset(&mut self, mark: (usize, usize, usize)) {
        self.labels.truncate(mark.0);
        self.leaking.truncate(mark.1);
        self.not_leaking.truncate(mark.2);
    }
}

/// A field Shark requires that an object lacks (or holds null where Shark needs a value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Missing {
    pub declared_by: &'static str,
    pub field: &'static str,
    pub null: bool,
}

impl Missing {
    pub fn field(declared_by: &'static str, field: &'static str) -> Missing {
        Missing {
            declared_by,
            field,
            null: false,
        }
    }
    pub fn null(declared_by: &'static str, field: &'static str) -> Missing {
        Missing {
            declared_by,
            field,
            null: true,
        }
    }
    fn text(&self) -> String {
        format!(
            "{}.{} {}",
            self.declared_by,
            self.field,
            if self.null { "is null" } else { "is missing" }
        )
    }
}

pub type Checked<T = ()> = Result<T, Missing>;

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

/// An instance and what its class is.
#[derive(Debug, Clone, Copy)]
pub struct Inst {
    pub node: Node,
    pub class: u64,
    pub kinds: ClassKinds,
}

/// The inspectors of one dump: its classes sorted into kinds, LeakCanary's watched
/// objects, and what was skipped.
pub struct Inspectors<'h> {
    pub heap: Heap<'h>,
    pub kinds: Kinds,
    pub watched: watch::Watched,
    /// The Services ActivityThread holds (ids), read on first need.
    services: OnceCell<Checked<Set<u64>>>,
    /// LeakCanary's table of the app's `R.id` names, read on first need.
    resource_ids: OnceCell<Option<ResourceIds>>,
    /// (inspector, class) pairs skipped, each noted once.
    skipped: RefCell<Set<(&'static str, u64)>>,
    notes: RefCell<Vec<String>>,
}

impl<'h> Inspectors<'h> {
    pub fn new(heap: Heap<'h>, kinds: Kinds, watched: watch::Watched) -> Inspectors<'h> {
        Inspectors {
            heap,
            kinds,
            watched,
            services: OnceCell::new(),
            resource_ids: OnceCell::new(),
            skipped: Default::default(),
            notes: Default::default(),
        }
    }

    /// What outlives the graph they read (the classes' kinds, what LeakCanary watched),
    /// for inspectors made again on another graph of the same dump.
    pub fn into_parts(self) -> (Kinds, watch::Watched) {
        (self.kinds, self.watched)
    }

    /// What was skipped, for the analysis's notes.
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.borrow_mut())
    }

    /// Notes that `what` (an inspector or finder) was skipped on instances of `class`.
    pub fn note_skipped(&self, what: &'static str, class: u64, missing: Missing) {
        if !self.skipped.borrow_mut().insert((what, class)) {
            return;
        }
        let mut notes = self.notes.borrow_mut();
        if notes.len() >= MAX_NOTES {
            return;
        }
        let class = crate::shown::clipped(&self.heap.class_name(class), MAX_NAME_BYTES);
        notes.push(format!(
            "LeakCanary's {what} rule was skipped on {class}: {} (Shark would stop the analysis there)",
            missing.text()
        ));
    }

    /// An instance node with its kinds; `None` for anything else.
    pub fn inst(&self, node: Node) -> Option<Inst> {
        let class = self.heap.instance_class(node)?;
        Some(Inst {
            node,
            class,
            kinds: self.kinds.of(class),
        })
    }

    /// The instance an object id names, if the dump holds it as an instance.
    pub fn inst_id(&self, id: u64) -> Option<Inst> {
        self.inst(self.heap.instance(id)?)
    }

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
            if let Err(m) = done {
                r.reset(mark);
                if let Some(o) = inst {
                    self.note_skipped(ins.name(), o.class, m);
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

    // Field reads as the inspectors need them: `req…` where Shark requires the field
    // (its `!!`), `opt…` where it checks.

    pub fn opt(&self, o: &Inst, declared_by: &'static str, field: &'static str) -> Option<Value> {
        self.heap.field(o.node, declared_by, field)
    }

    pub fn req(&self, o: &Inst, declared_by: &'static str, field: &'static str) -> Checked<Value> {
        self.opt(o, declared_by, field)
            .ok_or(Missing::field(declared_by, field))
    }

    /// A reference field Shark requires: its object id (0 for null).
    pub fn req_ref(
        &self,
        o: &Inst,
        declared_by: &'static str,
        field: &'static str,
    ) -> Checked<u64> {
        self.req(o, declared_by, field)?
            .as_object()
            .ok_or(Missing::field(declared_by, field))
    }

    /// A reference field whose value Shark requires to be an instance.
    pub fn req_inst(
        &self,
        o: &Inst,
        declared_by: &'static str,
        field: &'static str,
    ) -> Checked<Inst> {
        let id = self.req_ref(o, declared_by, field)?;
        self.inst_id(id).ok_or(Missing::null(declared_by, field))
    }

    /// A reference field Shark requires, its value an instance or null.
    pub fn req_inst_or_null(
        &self,
        o: &Inst,
        declared_by: &'static str,
        field: &'static str,
    ) -> Checked<Option<Inst>> {
        Ok(self.inst_id(self.req_ref(o, declared_by, field)?))
    }

    pub fn opt_bool(
        &self,
        o: &Inst,
        declared_by: &'static str,
        field: &'static str,
    ) -> Option<bool> {
        match self.opt(o, declared_by, field)? {
            Value::Boolean(b) => Some(b),
            _ => None,
        }
    }

    pub fn req_bool(
        &self,
        o: &Inst,
        declared_by: &'static str,
        field: &'static str,
    ) -> Checked<bool> {
        self.opt_bool(o, declared_by, field)
            .ok_or(Missing::field(declared_by, field))
    }

    pub fn req_int(
        &self,
        o: &Inst,
        declared_by: &'static str,
        field: &'static str,
    ) -> Checked<i64> {
        match self.req(o, declared_by, field)? {
            v @ (Value::Int(_) | Value::Long(_) | Value::Short(_) | Value::Byte(_)) => {
                Ok(v.as_i64().unwrap_or_default())
            }
            _ => Err(Missing::field(declared_by, field)),
        }
    }

    /// A String field's text as shown (`None` for null or not a String).
    pub fn string_field(
        &self,
        o: &Inst,
        declared_by: &'static str,
        field: &'static str,
    ) -> Option<String> {
        let id = self.opt(o, declared_by, field)?.as_object()?;
        self.heap.string(id, MAX_NAME_BYTES)
    }

    /// An instance's class name, as shown.
    pub fn class_name(&self, o: &Inst) -> String {
        crate::shown::clipped(&self.heap.class_name(o.class), MAX_NAME_BYTES)
    }

    /// An instance's simple class name, as shown.
    pub fn simple_name(&self, o: &Inst) -> String {
        let name = self.heap.class_name(o.class);
        crate::shown::clipped(heap::simple_name(&name), MAX_NAME_BYTES)
    }

    /// The ids of the Services `ActivityThread.sCurrentActivityThread.mServices` holds.
    pub fn alive_services(&self) -> &Checked<Set<u64>> {
        self.services.get_or_init(|| android::alive_services(self))
    }

    /// The `R.id` names LeakCanary 2 saves in the process before it dumps the heap
    /// (`shark.AndroidResourceIdNames.holderField`: sorted `resourceIds`, their `names`):
    /// `None` without them (a raw dump), else the name of `id` (`None` when not in it).
    pub fn resource_name(&self, id: i64) -> Option<Option<String>> {
        let table = self
            .resource_ids
            .get_or_init(|| ResourceIds::read(&self.heap))
            .as_ref()?;
        Some(table.name(&self.heap, id))
    }

    /// `Activity.mDestroyed` of an Activity (`None` when the field is missing).
    pub fn destroyed(&self, activity: &Inst) -> Option<bool> {
        self.opt_bool(activity, "android.app.Activity", "mDestroyed")
    }
}

/// Where LeakCanary's resource id table is: its sorted `int[]` of ids and the `String[]`
/// of their names, both read in place (a binary search, one name read per View).
struct ResourceIds {
    ids: Node,
    names: Node,
}

impl ResourceIds {
    const CLASS: &'static str = "shark.AndroidResourceIdNames";

    fn read(heap: &Heap<'_>) -> Option<ResourceIds> {
        let class = heap.class(Self::CLASS)?;
        let holder = heap.instance(heap.static_field(class, "holderField")?.as_object()?)?;
        let array = |field| heap.node(heap.field(holder, Self::CLASS, field)?.as_object()?);
        let ids = array("resourceIds")?;
        heap.ints(ids)?;
        let names = array("names")?;
        heap.elements(names)?.next();
        Some(ResourceIds { ids, names })
    }

    fn name(&self, heap: &Heap<'_>, id: i64) -> Option<String> {
        let ints = heap.ints(self.ids)?;
        let count = ints.len() / 4;
        let at = |i: usize| {
            i64::from(i32::from_be_bytes([
                ints[4 * i],
                ints[4 * i + 1],
                ints[4 * i + 2],
                ints[4 * i + 3],
            ]))
        };
        // Kotlin's IntArray.binarySearch, as Shark looks the id up.
        let (mut lo, mut hi) = (0usize, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match at(mid).cmp(&id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let name = heap.elements(self.names)?.nth(mid)?;
                    return heap.string(name, MAX_NAME_BYTES);
                }
            }
        }
        None
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
