//! The inspectors' shared vocabulary: the [`Inspectors`] of a dump with the field reads
//! every inspector uses, the [`Inst`] an inspector looks at, the [`Report`] it writes and
//! the [`Missing`] field that makes it skip an object. The inspectors (the sibling modules)
//! and their dispatch (`inspect`'s own file) use these; this file uses none of them, so
//! the inspectors never import from the module that calls them.

use std::cell::{Cell, OnceCell, RefCell};

use crate::base::map::Set;
use hprof_shrink_core::hprof::{BasicType, Value};

use super::heap::{self, Heap};
use super::kinds::{ClassKinds, Kinds};
use super::watch;
use crate::base::limits::{MAX_NAME_BYTES, MAX_NOTES};
use crate::heap::index::Node;
use crate::model::NotRun;

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
    /// Where the report is now, to go back to when an inspector is skipped.
    pub(super) fn mark(&self) -> (usize, usize, usize) {
        (
            self.labels.len(),
            self.leaking.len(),
            self.not_leaking.len(),
        )
    }
    /// Drops what was added since `mark`.
    pub(super) fn reset(&mut self, mark: (usize, usize, usize)) {
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
    pub(super) services: OnceCell<Checked<Set<u64>>>,
    /// LeakCanary's table of the app's `R.id` names, read on first need.
    resource_ids: OnceCell<Option<ResourceIds>>,
    /// (inspector, class) pairs skipped, each noted once.
    skipped: RefCell<Set<(&'static str, u64)>>,
    notes: RefCell<Vec<String>>,
    /// Whether the heap holds field values (a heap graph does not).
    values: bool,
    /// On a heap without values: the first field a rule asked for since [`Self::begin`]
    /// that the heap does not hold, so that its answer is not taken.
    lacked: Cell<Option<(&'static str, &'static str)>>,
    /// The rules that could not run, once each, in the order met.
    not_run: RefCell<Vec<NotRun>>,
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
            values: true,
            lacked: Cell::new(None),
            not_run: Default::default(),
        }
    }

    /// The inspectors of a heap that holds no field values (`values` false): a rule that
    /// asks for a field the heap does not hold is not run (see [`Self::lacked`]).
    pub fn with_values(mut self, values: bool) -> Inspectors<'h> {
        self.values = values;
        self
    }

    /// Whether the heap holds field values.
    pub fn values(&self) -> bool {
        self.values
    }

    /// Starts one rule's run on one object: what it asks for from here is its own.
    pub fn begin(&self) {
        self.lacked.set(None);
    }

    /// On a heap without values, the first field the rule run since [`Self::begin`] asked
    /// for and did not get (`declared_by`, `field`): its answer rests on a value the heap
    /// does not hold, and is not taken.
    pub fn lacked(&self) -> Option<(&'static str, &'static str)> {
        self.lacked.get()
    }

    /// Records that a field was asked for and is not in the heap.
    fn lacks(&self, declared_by: &'static str, field: &'static str) {
        if !self.values && self.lacked.get().is_none() {
            self.lacked.set(Some((declared_by, field)));
        }
    }

    /// Records that `rule` (a `finder`, an `inspector` or a `step`, as `kind` says) was not
    /// run on `objects` more objects for want of `needs`: one entry a rule, the first need
    /// it met.
    pub fn not_run(&self, kind: &'static str, rule: &'static str, needs: String, objects: u64) {
        let mut all = self.not_run.borrow_mut();
        match all.iter_mut().find(|n| n.kind == kind && n.rule == rule) {
            Some(n) => n.objects += objects,
            None => all.push(NotRun {
                kind: kind.into(),
                rule: rule.into(),
                needs,
                objects,
            }),
        }
    }

    /// The rules that could not run, for the analysis.
    pub fn take_not_run(&self) -> Vec<NotRun> {
        std::mem::take(&mut *self.not_run.borrow_mut())
    }

    /// A rule's run on one object (begun with [`Self::begin`]) that asked for a field the
    /// heap does not hold: recorded, and true (its answer is not to be taken).
    pub fn skipped_for_values(&self, kind: &'static str, rule: &'static str) -> bool {
        match self.lacked() {
            Some((class, field)) => {
                self.not_run(kind, rule, format!("{class}.{field}"), 1);
                true
            }
            None => false,
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

    /// Notes that `what` (an inspector or finder, as `kind` says) was skipped on instances
    /// of `class`. On a heap without values, what it missed is one the heap never holds:
    /// it goes with the rules that could not run instead.
    pub fn note_skipped(
        &self,
        kind: &'static str,
        what: &'static str,
        class: u64,
        missing: Missing,
    ) {
        if !self.values {
            let needs = format!("{}.{}", missing.declared_by, missing.field);
            self.not_run(kind, what, needs, 1);
            return;
        }
        if !self.skipped.borrow_mut().insert((what, class)) {
            return;
        }
        let mut notes = self.notes.borrow_mut();
        if notes.len() >= MAX_NOTES {
            return;
        }
        let class = crate::base::shown::clipped(&self.heap.class_name(class), MAX_NAME_BYTES);
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

    // Field reads as the inspectors need them: `req…` where Shark requires the field
    // (its `!!`), `opt…` where it checks.

    pub fn opt(&self, o: &Inst, declared_by: &'static str, field: &'static str) -> Option<Value> {
        let value = self.heap.field(o.node, declared_by, field);
        if value.is_none() {
            self.lacks(declared_by, field);
        }
        value
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
        if !self.values {
            // A heap graph holds a String's size, not its text.
            self.lacks(declared_by, field);
            return None;
        }
        self.heap.string(id, MAX_NAME_BYTES)
    }

    /// The text of the String `id` as shown (`None`: not a String, or a heap without
    /// values, where the rule asking is not taken; `of` names what the text is of).
    pub fn string(&self, id: u64, of: (&'static str, &'static str)) -> Option<String> {
        if !self.values && id != 0 {
            self.lacks(of.0, of.1);
            return None;
        }
        self.heap.string(id, MAX_NAME_BYTES)
    }

    /// An instance's class name, as shown.
    pub fn class_name(&self, o: &Inst) -> String {
        crate::base::shown::clipped(&self.heap.class_name(o.class), MAX_NAME_BYTES)
    }

    /// An instance's simple class name, as shown.
    pub fn simple_name(&self, o: &Inst) -> String {
        let name = self.heap.class_name(o.class);
        crate::base::shown::clipped(heap::simple_name(&name), MAX_NAME_BYTES)
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
            Value::read(BasicType::Int, &ints[4 * i..4 * i + 4], 4)
                .as_i64()
                .unwrap_or(0)
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
