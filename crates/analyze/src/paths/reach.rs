//! The path search, as LeakCanary's Shark does it: breadth-first from the GC roots over
//! the references [`crate::paths::refs`] says to follow, with two queues. References that are
//! known framework leaks, every Java local, an `ObjectAnimator`'s weak target and the
//! Java-frame roots of threads without a thread object are visited *last*: they wait in
//! a second queue that is only taken from once the first is empty (and from then on
//! everything found goes to it); an object waiting there that is reached again through an
//! ordinary reference before that moves to the first queue, with the new parent. So a path
//! that avoids them all wins, a static path beats a thread's local of the same length, and
//! a leak whose only path goes through a known leak is reported as that library leak.
//!
//! GC roots in Shark's order: thread objects first, then by root type (thread block,
//! sticky class, native stack, monitor used, JNI monitor, JNI local, JNI global, Java
//! frame), then by the root object's class name, then in the dump's order. Only the root
//! types Shark reads make paths; a thread's Java frames are references of its thread
//! object (`<Java Local>`) when it has one; a JNI global whose object's class is a known
//! leak is visited last (ignored: not a root).
//!
//! The leaking objects are leaves (LeakCanary HEAD): a path never goes through another
//! leaking object. Then, from each leaking object found (in the order found), what only
//! leaking objects reach is searched too: a leaking object found there has no trace of its
//! own and is named on the one that reaches it (`Also retains …`), and a leaking object
//! with a trace of its own that another's subgraph reaches is named the other way (`Also
//! retained by …`). Objects found in that second search have paths too (through the
//! leaking object), for the duplicate bitmaps.
//!
//! Memory: 5 bytes an object (its parent, its state) and the two queues; written out
//! through the dominators, 2 to 5 bytes an object ([`Spilled`]).

use std::collections::VecDeque;

use crate::base::map::{Map, Set};
use hprof_shrink_core::hprof::tags;
use hprof_shrink_core::Control;

use crate::base::error::AnalyzeError;
use crate::base::limits::MAX_NAME_BYTES;
use crate::base::shown::clipped;
use crate::heap::edges::Edges;
use crate::heap::graph::{utf16_cmp, Graph};
use crate::heap::index::{Node, RootRecord, NONE};
use crate::knowledge::library::Mark;
use crate::model::Reference;
use crate::paths::refs::{Ctx, Emit, PathRefs, Scratch};
use crate::paths::spilled::Spilled;

/// The parent of a root object.
const ROOT: Node = NONE - 1;

/// State bits of a node.
/// Found by the search (queued or visited).
const SEEN: u8 = 1;
/// Waiting in the visit-last queue.
const IN_LOW: u8 = 2;
/// Taken from the visit-last queue: reached through a reference visited last, or after
/// the first queue ran dry.
const LOW: u8 = 4;
/// Its references need [`PathRefs::for_each`].
const SPECIAL: u8 = 8;
/// A leaking object: a leaf of the search.
const LEAF: u8 = 16;
/// A leaking object the search reached (it has a trace).
const FOUND: u8 = 32;
/// Reached only through a leaking object (the second search).
const LATE: u8 = 64;

/// Leaking objects named on one leaking object's trace, at most this many of each kind
/// (the rest are counted).
pub const MAX_RELATED: usize = 1000;

/// Leaking objects related to one that has a trace.
#[derive(Debug, Default, Clone)]
pub struct Related {
    /// The first [`MAX_RELATED`].
    pub nodes: Vec<Node>,
    /// Beyond those.
    pub more: u64,
}

impl Related {
    fn add(&mut self, node: Node) {
        if self.nodes.contains(&node) {
            return;
        }
        if self.nodes.len() < MAX_RELATED {
            self.nodes.push(node);
        } else {
            self.more += 1;
        }
    }
}

/// Steps out of wide objects a [`StepNames`] names at most: past it, a step is named by
/// a walk of its own (as before the batch), so its memory stays bounded (some 60 bytes a
/// step) whatever the paths.
pub const MAX_NAMED_STEPS: usize = 1 << 16;

/// The steps that paths take out of wide objects (collections, object arrays, threads'
/// locals: see [`PathRefs::wide`]), each wide object's references walked once for all the
/// steps out of it ([`Reach::step_names`]). Without it, each path through a collection of
/// a million entries walks the collection to name its step, and fifty such paths fifty
/// times.
#[derive(Default)]
pub struct StepNames {
    /// (from, to) → the reference the search took.
    named: Map<(Node, Node), Emit>,
    /// The wide objects walked: a step out of one that is not in `named` has no reference.
    walked: Set<Node>,
}

impl StepNames {
    /// The wide objects walked (once each).
    pub fn walks(&self) -> usize {
        self.walked.len()
    }
}

pub struct Reach {
    /// Node → the node before it on its path (`ROOT` for a root object), and each node's
    /// state: in memory, or written out ([`Reach::spill`]).
    arrays: Arrays,
    /// Root object → the root it was taken from, and that root's known-leak row.
    roots: Map<Node, (RootRecord, Option<u16>)>,
    /// Every GC root object, whatever its type (the dominators' roots).
    gc_roots: Vec<Node>,
    pub refs: PathRefs,
    ctx: Ctx,
    /// Leaking objects (with a trace) → the leaking objects only they reach.
    retains: Map<Node, Related>,
    /// Leaking objects (with a trace) → the other leaking objects whose subgraph reaches
    /// them.
    retained_by: Map<Node, Related>,
}

/// The search's per-node arrays.
enum Arrays {
    Held {
        parent: Vec<Node>,
        state: Vec<u8>,
    },
    /// In an unnamed file ([`Spilled`]).
    Spilled(Spilled),
}

/// Shark's class name of each root type it reads (`shark.GcRoot$…`), which orders them.
fn shark_root_name(tag: u8) -> Option<&'static str> {
    Some(match tag {
        tags::ROOT_JNI_GLOBAL => "JniGlobal",
        tags::ROOT_JNI_LOCAL => "JniLocal",
        tags::ROOT_JAVA_FRAME => "JavaFrame",
        tags::ROOT_NATIVE_STACK => "NativeStack",
        tags::ROOT_STICKY_CLASS => "StickyClass",
        tags::ROOT_THREAD_BLOCK => "ThreadBlock",
        tags::ROOT_MONITOR_USED => "MonitorUsed",
        tags::ROOT_THREAD_OBJECT => "ThreadObject",
        tags::ROOT_JNI_MONITOR => "JniMonitor",
        _ => return None,
    })
}

/// Whether a root type makes paths (the nine Shark reads).
pub fn is_path_root(tag: u8) -> bool {
    shark_root_name(tag).is_some()
}

/// A root type in words.
pub fn root_name(tag: u8) -> &'static str {
    match tag {
        tags::ROOT_STICKY_CLASS => "system class",
        tags::ROOT_JNI_GLOBAL => "JNI global",
        tags::ROOT_JAVA_FRAME => "Java local variable",
        tags::ROOT_JNI_LOCAL => "JNI local",
        tags::ROOT_NATIVE_STACK => "native stack",
        tags::ROOT_THREAD_OBJECT => "thread object",
        tags::ROOT_THREAD_BLOCK => "thread block",
        tags::ROOT_MONITOR_USED => "monitor used",
        tags::ROOT_VM_INTERNAL => "VM internal",
        tags::ROOT_JNI_MONITOR => "JNI monitor",
        tags::ROOT_REFERENCE_CLEANUP => "reference cleanup",
        tags::ROOT_INTERNED_STRING => "interned string",
        tags::ROOT_FINALIZING => "finalizing",
        tags::ROOT_DEBUGGER => "debugger",
        tags::ROOT_UNREACHABLE => "unreachable",
        _ => "unknown",
    }
}

/// Leaking objects related to each leaking object (what it retains, or what retains it).
type RelatedBy = Map<Node, Related>;

/// What a search looks for: `special` the nodes that need its `PathRefs` beyond those it
/// knows itself (the instances of its special classes), `leaves` the leaking objects in
/// the finders' order; the related leaking objects are recorded for the first `traced` of
/// them that have a path.
pub struct Sought<'s> {
    pub special: &'s [Node],
    pub leaves: &'s [Node],
    pub traced: usize,
}

/// The search's moving parts.
struct Search<'r> {
    parent: Vec<Node>,
    state: Vec<u8>,
    normal: VecDeque<Node>,
    low: VecDeque<Node>,
    visiting_last: bool,
    roots: Map<Node, (RootRecord, Option<u16>)>,
    refs: &'r PathRefs,
    scratch: Scratch,
    ctx: Ctx,
    /// The references of a special object, reused.
    buf: Vec<Emit>,
    /// Objects visited so far, for the cancellation checks.
    visited: u64,
}

impl Search<'_> {
    #[inline(always)]
    fn enqueue(&mut self, v: Node, parent: Node, low: bool) {
        let last = self.visiting_last || low;
        let s = self.state[v as usize];
        if s & SEEN != 0 {
            // Waiting to be visited last, and reached now through an ordinary reference:
            // it moves up, with this parent.
            if !last && s & IN_LOW != 0 {
                self.state[v as usize] = s & !IN_LOW;
                self.parent[v as usize] = parent;
                self.normal.push_back(v);
            }
            return;
        }
        self.parent[v as usize] = parent;
        if last {
            self.state[v as usize] = s | SEEN | IN_LOW;
            self.low.push_back(v);
        } else {
            self.state[v as usize] = s | SEEN;
            self.normal.push_back(v);
        }
    }

    fn enqueue_root(&mut self, v: Node, root: RootRecord, low: bool, library: Option<u16>) {
        let s = self.state[v as usize];
        if s & SEEN != 0 {
            if !low && s & IN_LOW != 0 {
                self.state[v as usize] = s & !IN_LOW;
                self.parent[v as usize] = ROOT;
                self.roots.insert(v, (root, library));
                self.normal.push_back(v);
            }
            return;
        }
        self.roots.insert(v, (root, library));
        self.enqueue(v, ROOT, low);
    }

    /// The next object to visit, in Shark's order.
    fn poll(&mut self) -> Option<Node> {
        if !self.visiting_last {
            if let Some(u) = self.normal.pop_front() {
                return Some(u);
            }
            self.visiting_last = true;
        }
        while let Some(u) = self.low.pop_front() {
            let s = self.state[u as usize];
            // Moved up to the first queue since: already visited from there.
            if s & IN_LOW == 0 {
                continue;
            }
            self.state[u as usize] = (s & !IN_LOW) | LOW;
            return Some(u);
        }
        None
    }

    /// Queues the roots that make paths, in Shark's order (thread objects first, then by
    /// root type and class name), and gives every GC root object, sorted.
    fn seed(&mut self, g: &Graph<'_, '_>) -> Vec<Node> {
        let ix = g.ix;
        let serials = PathRefs::thread_serials(g);
        let mut gc_roots = Vec::new();
        let mut seeds: Vec<(Node, RootRecord, String)> = Vec::new();
        for root in &ix.roots {
            let Some(node) = ix.node(root.object_id) else {
                continue;
            };
            gc_roots.push(node);
            if !is_path_root(root.tag)
                || (root.tag == tags::ROOT_JAVA_FRAME
                    && root.thread_serial.is_some_and(|t| serials.contains(&t)))
            {
                continue;
            }
            seeds.push((node, *root, g.node_class_name(node)));
        }
        gc_roots.sort_unstable();
        gc_roots.dedup();
        seeds.sort_by(|(_, a, ca), (_, b, cb)| {
            let thread = |r: &RootRecord| r.tag != tags::ROOT_THREAD_OBJECT;
            thread(a)
                .cmp(&thread(b))
                .then_with(|| shark_root_name(b.tag).cmp(&shark_root_name(a.tag)))
                .then_with(|| utf16_cmp(ca, cb))
        });
        for (node, root, class) in &seeds {
            match root.tag {
                tags::ROOT_JAVA_FRAME => self.enqueue_root(*node, *root, true, None),
                tags::ROOT_JNI_GLOBAL => match self.refs.matchers.jni_global(class) {
                    Some(Mark::Ignored) => {}
                    Some(Mark::Library(e)) => self.enqueue_root(*node, *root, true, Some(e)),
                    None => self.enqueue_root(*node, *root, false, None),
                },
                _ => self.enqueue_root(*node, *root, false, None),
            }
        }
        gc_roots
    }

    /// The search itself, from the queued roots: every object reached is visited once,
    /// leaking objects as leaves (not expanded). Gives the leaking objects in the order
    /// found.
    #[inline]
    fn visit(
        &mut self,
        g: &Graph<'_, '_>,
        edges: &Edges,
        control: &Control<'_>,
    ) -> Result<Vec<Node>, AnalyzeError> {
        let mut found: Vec<Node> = Vec::new();
        while let Some(u) = self.poll() {
            self.visited += 1;
            if self.visited.is_multiple_of(65536) {
                control.check().map_err(|_| AnalyzeError::Cancelled)?;
            }
            if self.state[u as usize] & LEAF != 0 {
                self.state[u as usize] |= FOUND;
                found.push(u);
                continue;
            }
            self.expand(g, edges, u, |s, v, low| s.enqueue(v, u, low));
        }
        Ok(found)
    }

    /// What only leaking objects reach, from each in the order found: (what each
    /// `wanted` leaking object retains of the others, and which others retain it).
    #[inline]
    fn related(
        &mut self,
        g: &Graph<'_, '_>,
        edges: &Edges,
        found: &[Node],
        wanted: &Set<Node>,
        control: &Control<'_>,
    ) -> Result<(RelatedBy, RelatedBy), AnalyzeError> {
        let mut retains: Map<Node, Related> = Map::default();
        let mut retained_by: Map<Node, Related> = Map::default();
        let mut queue = std::mem::take(&mut self.normal);
        queue.clear();
        for &l in found {
            queue.push_back(l);
            while let Some(x) = queue.pop_front() {
                self.visited += 1;
                if self.visited.is_multiple_of(65536) {
                    control.check().map_err(|_| AnalyzeError::Cancelled)?;
                }
                self.expand(g, edges, x, |s, r, _| {
                    let st = s.state[r as usize];
                    let leaking = st & LEAF != 0 && r != l;
                    if leaking && st & FOUND != 0 {
                        if wanted.contains(&r) {
                            retained_by.entry(r).or_default().add(l);
                        }
                        return;
                    }
                    if st & SEEN != 0 {
                        return;
                    }
                    s.state[r as usize] = st | SEEN | LATE;
                    s.parent[r as usize] = x;
                    if leaking && wanted.contains(&l) {
                        retains.entry(l).or_default().add(r);
                    }
                    queue.push_back(r);
                });
            }
        }
        Ok((retains, retained_by))
    }

    /// The references of `u` the search follows, as (target, visited last).
    #[inline]
    fn expand(
        &mut self,
        g: &Graph<'_, '_>,
        edges: &Edges,
        u: Node,
        mut f: impl FnMut(&mut Self, Node, bool),
    ) {
        if self.state[u as usize] & SPECIAL == 0 {
            for &v in edges.of(u) {
                f(self, v, false);
            }
            return;
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        self.refs
            .for_each(g, u, &mut self.scratch, &mut self.ctx, |e| buf.push(e));
        for e in &buf {
            f(self, e.target, e.low);
        }
        self.buf = buf;
    }
}

impl Reach {
    /// The search over `edges` (the graph's plain references) and `refs` (the rest), for
    /// the leaking objects `sought` says.
    pub fn compute(
        g: &Graph<'_, '_>,
        edges: &Edges,
        refs: PathRefs,
        sought: Sought<'_>,
        control: &Control<'_>,
    ) -> Result<Reach, AnalyzeError> {
        let Sought {
            special,
            leaves,
            traced,
        } = sought;
        let n = g.ix.len();
        let mut s = Search {
            parent: vec![NONE; n],
            state: vec![0; n],
            normal: VecDeque::new(),
            low: VecDeque::new(),
            visiting_last: false,
            roots: Map::default(),
            refs: &refs,
            scratch: Scratch::default(),
            ctx: Ctx::default(),
            buf: Vec::new(),
            visited: 0,
        };
        for &v in special.iter().chain(refs.special_nodes(g).iter()) {
            s.state[v as usize] |= SPECIAL;
        }
        for &v in leaves {
            s.state[v as usize] |= LEAF;
        }
        let gc_roots = s.seed(g);
        let found = s.visit(g, edges, control)?;
        let wanted: Set<Node> = leaves
            .iter()
            .copied()
            .filter(|&l| s.state[l as usize] & FOUND != 0)
            .take(traced)
            .collect();
        let (retains, retained_by) = s.related(g, edges, &found, &wanted, control)?;
        let Search {
            parent,
            state,
            roots,
            ctx,
            ..
        } = s;
        Ok(Reach {
            arrays: Arrays::Held { parent, state },
            roots,
            gc_roots,
            refs,
            ctx,
            retains,
            retained_by,
        })
    }

    /// Ends the search, keeping its largest array for the next step.
    pub fn into_spare(self, spare: &mut crate::base::spare::Spare) {
        if let Arrays::Held { parent, .. } = self.arrays {
            spare.give(parent);
        }
    }

    /// Writes the per-node arrays to `file` (2 bytes an object when parents are mostly
    /// neighbours, 5 at most: see [`Spilled`]) and frees them (the parents' array into
    /// `spare`), for the steps that take memory next: the paths are read back from the
    /// file afterwards, a few entries each. On an error the arrays stay.
    pub fn spill(
        &mut self,
        file: std::fs::File,
        spare: &mut crate::base::spare::Spare,
    ) -> std::io::Result<()> {
        if cfg!(not(unix)) {
            return Err(std::io::ErrorKind::Unsupported.into());
        }
        let Arrays::Held { parent, state } = &self.arrays else {
            return Ok(());
        };
        let spilled = Spilled::write(file, parent, state)?;
        let held = std::mem::replace(&mut self.arrays, Arrays::Spilled(spilled));
        if let Arrays::Held { parent, .. } = held {
            spare.give(parent);
        }
        Ok(())
    }

    #[inline]
    fn state_of(&self, node: Node) -> u8 {
        match &self.arrays {
            Arrays::Held { state, .. } => state[node as usize],
            // Unreadable: as not reached (no path shown).
            Arrays::Spilled(s) => s.state(node),
        }
    }

    #[inline]
    fn parent_of(&self, node: Node) -> Node {
        match &self.arrays {
            Arrays::Held { parent, .. } => parent[node as usize],
            Arrays::Spilled(s) => s.parent(node),
        }
    }

    fn nodes(&self) -> usize {
        match &self.arrays {
            Arrays::Held { state, .. } => state.len(),
            Arrays::Spilled(s) => s.nodes(),
        }
    }

    /// Every GC root object, whatever its type, by node.
    pub fn gc_roots(&self) -> &[Node] {
        &self.gc_roots
    }

    /// Whether the search reached `node` (through no ignored reference, from a root that
    /// makes paths): it has a path.
    pub fn on_path(&self, node: Node) -> bool {
        self.state_of(node) & SEEN != 0
    }

    /// Whether a leaking object has a trace of its own: a path through no other leaking
    /// object.
    pub fn has_trace(&self, node: Node) -> bool {
        self.state_of(node) & FOUND != 0
    }

    /// Whether `node` is reached only through a leaking object.
    pub fn only_through_leak(&self, node: Node) -> bool {
        self.state_of(node) & LATE != 0
    }

    /// The root `node`'s path starts from (the object at its start), and that root's
    /// known-leak row (a JNI global).
    pub fn root_of(&self, node: Node) -> Option<(RootRecord, Option<u16>)> {
        self.roots.get(&node).copied()
    }

    /// The path from the root to `node`, as nodes (root first); empty without one.
    pub fn path(&self, node: Node) -> Vec<Node> {
        let mut out = Vec::new();
        if !self.on_path(node) {
            return out;
        }
        let mut at = node;
        while at != ROOT && at != NONE {
            out.push(at);
            at = self.parent_of(at);
            if out.len() > self.nodes() {
                break;
            }
        }
        out.reverse();
        out
    }

    /// The reference from `from` to `to` on a path, as the search took it, and the
    /// known-leak row it matched. Names unclipped.
    pub fn reference(
        &self,
        g: &Graph<'_, '_>,
        from: Node,
        to: Node,
    ) -> Option<(Reference, Option<u16>)> {
        self.refs.name(g, &self.ctx, from, to, self.want(from, to))
    }

    /// The steps of `pairs` (from, to) that leave a wide object, named by one walk of
    /// each such object (the first [`MAX_NAMED_STEPS`] steps; the rest are named one by
    /// one by [`Reach::reference_named`]).
    pub fn step_names(
        &self,
        g: &Graph<'_, '_>,
        pairs: impl IntoIterator<Item = (Node, Node)>,
    ) -> StepNames {
        let mut wanted: Map<Node, Set<Node>> = Map::default();
        let mut steps = 0usize;
        for (from, to) in pairs {
            if steps == MAX_NAMED_STEPS {
                break;
            }
            if self.refs.wide(g, from) && wanted.entry(from).or_default().insert(to) {
                steps += 1;
            }
        }
        let mut out = StepNames::default();
        for (from, to) in wanted {
            let wants: Vec<(Node, Option<bool>)> =
                to.iter().map(|&t| (t, self.want(from, t))).collect();
            for (target, e) in self.refs.picks(g, &self.ctx, from, &wants) {
                out.named.insert((from, target), e);
            }
            out.walked.insert(from);
        }
        out
    }

    /// The steps of the paths to `nodes` that leave a wide object, named as
    /// [`Reach::step_names`] does.
    pub fn step_names_to(&self, g: &Graph<'_, '_>, nodes: &[Node]) -> StepNames {
        // Each path is made again by its trace rather than all held here: a path can be
        // a million steps long.
        let pairs = nodes.iter().flat_map(|&n| {
            let p = self.path(n);
            (1..p.len()).map(move |i| (p[i - 1], p[i]))
        });
        self.step_names(g, pairs)
    }

    /// [`Reach::reference`], a step out of a wide object that `names` walked read from
    /// it.
    pub fn reference_named(
        &self,
        g: &Graph<'_, '_>,
        from: Node,
        to: Node,
        names: &StepNames,
    ) -> Option<(Reference, Option<u16>)> {
        if names.walked.contains(&from) {
            let e = names.named.get(&(from, to))?;
            return Some(self.refs.described(g, from, *e));
        }
        self.reference(g, from, to)
    }

    /// References read so far by the walks that name paths' steps.
    pub fn step_reads(&self) -> u64 {
        self.refs.step_reads()
    }

    /// Which of `from`'s references to `to` the search took: in the second search or after
    /// the first queue ran dry, the first (`None`); else the first of the priority `to`
    /// came by (`Some(low)`).
    fn want(&self, from: Node, to: Node) -> Option<bool> {
        let s = |n: Node| self.state_of(n);
        if s(to) & LATE != 0 || s(from) & LOW != 0 {
            None
        } else {
            Some(s(to) & LOW != 0)
        }
    }

    /// The first known leak on a path (its root, then its references from the root),
    /// as Shark names a library leak.
    pub fn library_on_path(
        &self,
        g: &Graph<'_, '_>,
        path: &[Node],
        names: &StepNames,
    ) -> Option<u16> {
        let first = *path.first()?;
        if let Some((_, Some(e))) = self.root_of(first) {
            return Some(e);
        }
        for pair in path.windows(2) {
            let (u, v) = (pair[0], pair[1]);
            // Known leaks are visited last, or read by the mNewActivities reader: only
            // such steps are named.
            let could =
                self.state_of(v) & (LOW | LATE) != 0 || self.refs.names_new_activities(g, u);
            if could {
                if let Some((_, Some(e))) = self.reference_named(g, u, v, names) {
                    return Some(e);
                }
            }
        }
        None
    }

    /// The leaking objects only `node` reaches, and the other leaking objects whose
    /// subgraph reaches it.
    pub fn related(&self, node: Node) -> (Option<&Related>, Option<&Related>) {
        (self.retains.get(&node), self.retained_by.get(&node))
    }

    /// The labels LeakCanary HEAD puts on a leaking object's trace for the leaking objects
    /// related to it, one per class: first those it retains that have no trace of their
    /// own (`Also retains leaking object ID (CLASS)`, `Also retains N leaking CLASS
    /// objects`), then those that also retain it (`Also retained by leaking object ID
    /// (CLASS), which has its own leak trace`, `… N leaking CLASS objects, which have their
    /// own leak traces`). At most [`MAX_RELATED_LABELS`] classes of each, the rest
    /// counted in one more label.
    pub fn related_labels(&self, g: &Graph<'_, '_>, node: Node) -> Vec<String> {
        let (retains, by) = self.related(node);
        let mut out = Vec::new();
        for (related, by) in [(retains, false), (by, true)] {
            let Some(related) = related else { continue };
            let mut groups: Vec<(String, Vec<u64>)> = Vec::new();
            for &n in &related.nodes {
                let class = clipped(&g.node_class_name(n), MAX_NAME_BYTES);
                match groups.iter_mut().find(|(c, _)| *c == class) {
                    Some((_, ids)) => ids.push(g.ix.id(n)),
                    None => groups.push((class, vec![g.ix.id(n)])),
                }
            }
            let mut more = related.more;
            for (i, (class, ids)) in groups.iter().enumerate() {
                if i >= MAX_RELATED_LABELS {
                    more += ids.len() as u64;
                    continue;
                }
                out.push(match (ids.as_slice(), by) {
                    ([id], false) => format!("Also retains leaking object {id} ({class})"),
                    (ids, false) => format!("Also retains {} leaking {class} objects", ids.len()),
                    ([id], true) => format!(
                        "Also retained by leaking object {id} ({class}), which has its own leak trace"
                    ),
                    (ids, true) => format!(
                        "Also retained by {} leaking {class} objects, which have their own leak traces",
                        ids.len()
                    ),
                });
            }
            if more > 0 {
                out.push(if by {
                    format!("Also retained by {more} more leaking objects, which have their own leak traces")
                } else {
                    format!("Also retains {more} more leaking objects")
                });
            }
        }
        out
    }
}

/// Classes of related leaking objects named on one trace, of each kind.
pub const MAX_RELATED_LABELS: usize = 10;
