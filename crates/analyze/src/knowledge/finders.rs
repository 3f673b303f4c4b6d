//! Leaking objects found without a key: LeakCanary's watched objects (its
//! `KeyedWeakReference`s, 1.x and 2.x) and, for a dump nobody instrumented, every rule by
//! which an inspector says "this object is leaking" (Shark's `FilteringLeakingObjectFinder`
//! over `AndroidObjectInspectors.appLeakingObjectFilters`): destroyed Activities, Fragments
//! without a manager or destroyed, detached root Views, ViewRootImpls without a view,
//! destroyed Windows, Toasts done showing, Services ActivityThread no longer holds,
//! contexts of destroyed Activities, quitting MessageQueues, dead Mortar scopes, disposed
//! Compose compositions and shut-down Recomposers.
//!
//! Which of them run is the [`Mode`]: on a dump whose watched objects are retained, those
//! alone (LeakCanary on the phone); on a dump without, the rules (`shark-cli` on a raw
//! dump); `--all-leaks`, both.
//!
//! [`candidates`] runs before the path search (which may stop at them) and reads only the
//! instances the references' pass collected ([`wanted`] names their classes): no pass of
//! its own over the dump.

use crate::base::map::Map;

use crate::heap::graph::Instances;
use crate::heap::index::Node;
use crate::knowledge::inspect::kinds::Kind;
use crate::knowledge::inspect::watch::Watched;
use crate::knowledge::inspect::{views, Checked, Inspectors, Inst};

/// A rule that finds leaking objects, by Shark's name of its inspector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Finder {
    KeyedWeakReference,
    View,
    Editor,
    Activity,
    Service,
    ContextWrapper,
    ApplicationPackageManager,
    ContextImpl,
    Fragment,
    SupportFragment,
    AndroidxFragment,
    MessageQueue,
    MortarScope,
    ViewRootImpl,
    Window,
    Toast,
    /// Ours: Shark 2.14 has no Compose finder.
    CompositionImpl,
    /// Ours.
    Recomposer,
    /// Matrix's `DestroyedActivityInfo` with the key looked for.
    MatrixKey,
}

impl Finder {
    /// The finders of a dump without a key, in Shark's order.
    pub const ALL: [Finder; 18] = [
        Finder::KeyedWeakReference,
        Finder::View,
        Finder::Editor,
        Finder::Activity,
        Finder::Service,
        Finder::ContextWrapper,
        Finder::ApplicationPackageManager,
        Finder::ContextImpl,
        Finder::Fragment,
        Finder::SupportFragment,
        Finder::AndroidxFragment,
        Finder::MessageQueue,
        Finder::MortarScope,
        Finder::ViewRootImpl,
        Finder::Window,
        Finder::Toast,
        Finder::CompositionImpl,
        Finder::Recomposer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Finder::KeyedWeakReference => "KEYED_WEAK_REFERENCE",
            Finder::View => "VIEW",
            Finder::Editor => "EDITOR",
            Finder::Activity => "ACTIVITY",
            Finder::Service => "SERVICE",
            Finder::ContextWrapper => "CONTEXT_WRAPPER",
            Finder::ApplicationPackageManager => "APPLICATION_PACKAGE_MANAGER",
            Finder::ContextImpl => "CONTEXT_IMPL",
            Finder::Fragment => "FRAGMENT",
            Finder::SupportFragment => "SUPPORT_FRAGMENT",
            Finder::AndroidxFragment => "ANDROIDX_FRAGMENT",
            Finder::MessageQueue => "MESSAGE_QUEUE",
            Finder::MortarScope => "MORTAR_SCOPE",
            Finder::ViewRootImpl => "VIEW_ROOT_IMPL",
            Finder::Window => "WINDOW",
            Finder::Toast => "TOAST",
            Finder::CompositionImpl => "COMPOSITION_IMPL",
            Finder::Recomposer => "RECOMPOSER",
            Finder::MatrixKey => "MATRIX_KEY",
        }
    }

    /// The framework classes whose instances it looks at (none: the watched objects, or
    /// every context).
    fn kinds(self) -> u64 {
        let k = |kinds: &[Kind]| kinds.iter().fold(0, |m, k| m | k.bit());
        match self {
            Finder::KeyedWeakReference | Finder::ContextWrapper | Finder::MatrixKey => 0,
            Finder::View => k(&[Kind::View]),
            Finder::Editor => k(&[Kind::Editor]),
            Finder::Activity => k(&[Kind::Activity]),
            Finder::Service => k(&[Kind::Service]),
            Finder::ApplicationPackageManager => k(&[
                Kind::ApplicationContextManager,
                Kind::ApplicationPackageManager,
            ]),
            Finder::ContextImpl => k(&[Kind::ContextImpl]),
            Finder::Fragment => k(&[Kind::Fragment]),
            Finder::SupportFragment => k(&[Kind::SupportFragment]),
            Finder::AndroidxFragment => k(&[Kind::AndroidxFragment]),
            Finder::MessageQueue => k(&[Kind::MessageQueue]),
            Finder::MortarScope => k(&[Kind::MortarScope]),
            Finder::ViewRootImpl => k(&[Kind::ViewRootImpl]),
            Finder::Window => k(&[Kind::Window]),
            Finder::Toast => k(&[Kind::Toast]),
            Finder::CompositionImpl => k(&[Kind::CompositionImpl]),
            Finder::Recomposer => k(&[Kind::Recomposer]),
        }
    }

    /// Whether its rule says `o` is leaking.
    fn leaking(self, ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
        use crate::knowledge::inspect::{android, compose, fragments, square};
        match self {
            Finder::KeyedWeakReference | Finder::MatrixKey => Ok(false),
            Finder::View => views::view_leaking(ins, o),
            Finder::Editor => views::editor_leaking(ins, o),
            Finder::Activity => Ok(android::activity_leaking(ins, o)),
            Finder::Service => android::service_leaking(ins, o),
            Finder::ContextWrapper => android::context_wrapper_leaking(ins, o),
            Finder::ApplicationPackageManager => android::package_manager_leaking(ins, o),
            Finder::ContextImpl => android::context_impl_leaking(ins, o),
            Finder::Fragment => fragments::framework_leaking(ins, o),
            Finder::SupportFragment => fragments::support_leaking(ins, o),
            Finder::AndroidxFragment => fragments::androidx_leaking(ins, o),
            Finder::MessageQueue => android::message_queue_leaking(ins, o),
            Finder::MortarScope => square::scope_leaking(ins, o),
            Finder::ViewRootImpl => views::view_root_impl_leaking(ins, o),
            Finder::Window => views::window_leaking(ins, o),
            Finder::Toast => views::toast_leaking(ins, o),
            Finder::CompositionImpl => compose::composition_leaking(ins, o),
            Finder::Recomposer => compose::recomposer_leaking(ins, o),
        }
    }
}

/// Which finders an analysis runs, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A key: Matrix's `DestroyedActivityInfo` of that key.
    MatrixKey,
    /// No key, and the dump holds retained watched objects: those alone are the leaks, as
    /// LeakCanary's `KeyedWeakReferenceFinder` on the phone; the inspectors only decide
    /// statuses and labels.
    Watched,
    /// No key, and no retained watched object: what the inspectors' rules flag, as Shark's
    /// `FilteringLeakingObjectFinder` on a raw dump.
    Inspectors,
    /// `--all-leaks`: both.
    AllLeaks,
}

impl Mode {
    /// The mode of a dump without a key: `all_leaks` asked, else by whether LeakCanary
    /// watched and found retained some object of it.
    pub fn without_key(all_leaks: bool, watched: &Watched) -> Mode {
        if all_leaks {
            Mode::AllLeaks
        } else if watched.retained().next().is_some() {
            Mode::Watched
        } else {
            Mode::Inspectors
        }
    }

    /// Its name in the analysis (`finder`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::MatrixKey => "matrix-key",
            Mode::Watched => "keyed-weak-references",
            Mode::Inspectors => "inspectors",
            Mode::AllLeaks => "all-leaks",
        }
    }
}

/// A set of finders.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Finders(u32);

impl Finders {
    pub fn with(mut self, f: Finder) -> Finders {
        self.0 |= 1 << f as u8;
        self
    }

    pub fn has(self, f: Finder) -> bool {
        self.0 & (1 << f as u8) != 0
    }

    /// Their names, in Shark's order (the key's last).
    pub fn names(self) -> Vec<String> {
        Finder::ALL
            .iter()
            .chain([&Finder::MatrixKey])
            .filter(|&&f| self.has(f))
            .map(|f| f.name().to_string())
            .collect()
    }
}

/// An object found leaking, and by which rules.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    pub node: Node,
    pub finders: Finders,
}

/// The classes whose instances [`candidates`] reads: for the references' pass to collect.
pub fn wanted(
    ins_kinds: &crate::knowledge::inspect::kinds::Kinds,
    heap: &crate::knowledge::inspect::heap::Heap<'_>,
) -> Vec<u64> {
    let mask = Finder::ALL.iter().fold(0, |m, f| m | f.kinds());
    let mut out = ins_kinds.classes_with(mask);
    out.extend(ins_kinds.component_classes());
    out.extend(Watched::classes(heap));
    out.sort_unstable();
    out.dedup();
    out
}

/// The leaking objects of `mode` (none for a key), in id order: LeakCanary's retained
/// watched objects, and (but in [`Mode::Watched`]) each instance some finder's rule flags.
/// A watched object keeps the names of every rule that flags it. A rule that cannot be
/// applied to an object (a field Shark requires is missing) is skipped for it, with a note.
pub fn candidates(mode: Mode, ins: &Inspectors<'_>, instances: &Instances) -> Vec<Candidate> {
    let mut out = match mode {
        Mode::MatrixKey => return Vec::new(),
        Mode::Watched | Mode::Inspectors | Mode::AllLeaks => every_candidate(ins, instances),
    };
    if mode == Mode::Watched {
        out.retain(|c| c.finders.has(Finder::KeyedWeakReference));
    }
    out
}

/// Every leaking object every finder finds, in id order.
fn every_candidate(ins: &Inspectors<'_>, instances: &Instances) -> Vec<Candidate> {
    let mut found: Map<Node, Finders> = Map::default();
    for node in ins.watched.retained() {
        let e = found.entry(node).or_default();
        *e = e.with(Finder::KeyedWeakReference);
    }
    let components = ins.kinds.component_classes();
    for f in Finder::ALL {
        let classes = match f {
            Finder::KeyedWeakReference | Finder::MatrixKey => continue,
            Finder::ContextWrapper => components.clone(),
            f => ins.kinds.classes_with(f.kinds()),
        };
        if classes.is_empty() {
            continue;
        }
        for node in instances.of(&classes) {
            let Some(o) = ins.inst(node) else { continue };
            ins.begin();
            let verdict = f.leaking(ins, &o);
            // On a heap without values, a rule that asked for one has no answer.
            if ins.skipped_for_values("finder", f.name()) {
                continue;
            }
            match verdict {
                Ok(true) => {
                    let e = found.entry(node).or_default();
                    *e = e.with(f);
                }
                Ok(false) => {}
                Err(m) => ins.note_skipped("finder", f.name(), o.class, m),
            }
        }
    }
    let mut out: Vec<Candidate> = found
        .into_iter()
        .map(|(node, finders)| Candidate { node, finders })
        .collect();
    out.sort_unstable_by_key(|c| c.node);
    out
}
