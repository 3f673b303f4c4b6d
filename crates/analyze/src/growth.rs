//! `growth`: what grows from one dump of a repeated scenario to the next, LeakCanary 3's
//! heap growth detection (after BLeak, Vilk and Berger, PLDI 2018).
//!
//! Each dump becomes a tree of *paths*, not objects: a breadth-first search from the GC
//! roots in which all objects reached from one tree node through references of one name
//! (`INSTANCE_FIELD Cart.items -> instance of java.util.ArrayList`, `ARRAY_ENTRY
//! Object[].[x] -> instance of com.example.Item`) are one child node. Each object belongs
//! to the first node that reaches it; a run of same-named nodes (a linked list) counts its
//! objects on its first node. Names carry no ids or indices, so the trees of two dumps
//! line up. A node *grows* when, at every dump after the first, one of its children that
//! it already had in the first dump gained at least `scenario_loops` objects in every step;
//! the highest growing node of a path is reported. Only the trees are kept from one dump to
//! the next, never the dumps' graphs.
//!
//! A reported node's retained size is the sum of the retained sizes of its own objects
//! (none of which dominates another: they are all as far from the roots), from the exact
//! dominator tree of its dump: what those objects keep alive between them, at least.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Instant;

use hprof_shrink_core::hprof::{tags, Hprof};
use hprof_shrink_core::{Control, Stage};
use serde::Serialize;

use super::dominators::{Dominators, Retained};
use super::edges::Edges;
use super::error::AnalyzeError;
use super::graph::{Graph, RefName};
use super::index::{Index, Node, NONE};
use super::map::Map;
use super::spare::Spare;
use super::{input, reach, Mapping, Ticks};

/// Path nodes one dump's tree may hold by default. Each takes about 40 bytes; a dump
/// whose paths never repeat (every object reached a different way) would make one per
/// object, and is refused past this.
pub const DEFAULT_MAX_PATHS: usize = 4_000_000;

/// Growing nodes a report lists (the largest by retained size); the rest are counted.
pub const MAX_REPORTED: usize = 100;

/// Growing children listed under each reported node (by increase); the rest are counted.
pub const MAX_CHILDREN: usize = 20;

/// Steps of a node's path from its GC root that a report shows: the first
/// [`PATH_HEAD_STEPS`] and the last [`PATH_TAIL_STEPS`], with the count left out between.
pub const PATH_HEAD_STEPS: usize = 30;
/// See [`PATH_HEAD_STEPS`].
pub const PATH_TAIL_STEPS: usize = 30;

/// Bytes kept of a path node's name (a class or field name from the dump can be long).
pub const MAX_NAME_BYTES: usize = 512;

/// The version of the JSON below.
pub const GROWTH_SCHEMA: u32 = 1;

/// How `growth` reads the dumps.
#[derive(Debug, Clone)]
pub struct GrowthOptions {
    /// How many times the scenario ran between two dumps: the smallest increase per step
    /// that counts as growth (LeakCanary's `scenarioLoopsPerDump`).
    pub scenario_loops: u64,
    pub mapping: Option<Mapping>,
    /// Path nodes one dump's tree may hold.
    pub max_paths: usize,
}

impl Default for GrowthOptions {
    fn default() -> Self {
        GrowthOptions {
            scenario_loops: 1,
            mapping: None,
            max_paths: DEFAULT_MAX_PATHS,
        }
    }
}

/// What `growth` found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrowthReport {
    pub schema: u32,
    pub tool: String,
    pub scenario_loops: u64,
    /// The dumps compared, in order (those after a step that did not grow are not read).
    pub dumps: Vec<GrowthDump>,
    /// Dumps given.
    pub dumps_given: usize,
    /// Whether something grew in every step.
    pub growing: bool,
    /// The dump (from 1) at which nothing had grown in every step, if one did.
    pub stopped_at: Option<usize>,
    /// The growing nodes, largest retained size first.
    pub nodes: Vec<GrowingNode>,
    pub omitted_nodes: u64,
}

/// One dump read, and what its path tree held.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrowthDump {
    pub path: String,
    pub timestamp_ms: u64,
    pub bytes: u64,
    /// Objects the search from the GC roots reached.
    pub reachable_objects: u64,
    /// Nodes of the dump's path tree.
    pub path_nodes: u64,
    /// Nodes that grew in every step up to this dump (0 for the first dump).
    pub growing_nodes: u64,
    pub seconds: f64,
}

/// A path that grew in every step (the highest of its path), as reported.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrowingNode {
    /// The node's name: how its objects are referenced from its parent's.
    pub name: String,
    /// Its objects in the last dump.
    pub objects: u64,
    /// The nodes from the GC root type down to the node's parent.
    pub path: Vec<PathStep>,
    /// Steps of the path left out between its head and its tail.
    pub omitted_steps: u64,
    /// What the node's objects retain in the last dump (Java bytes), if computed.
    pub retained_bytes: Option<u64>,
    pub retained_objects: Option<u64>,
    /// The change of the retained size since the dump before, when both are known.
    pub retained_increase_bytes: Option<i64>,
    pub retained_increase_objects: Option<i64>,
    /// The children that grew in every step, largest last increase first.
    pub children: Vec<GrowingChild>,
    pub omitted_children: u64,
}

/// One node on the path from a GC root type down to a reported node.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathStep {
    pub name: String,
    pub objects: u64,
}

/// A child of a reported node that grew in every step.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrowingChild {
    pub name: String,
    /// Its objects in the last dump.
    pub objects: u64,
    /// Objects gained in each step (dump 2 over dump 1, then 3 over 2, ...).
    pub increases: Vec<u64>,
    /// The last step's increase divided by the scenario loops.
    pub increase_per_loop: f64,
}

/// Names shared by the trees of all dumps: the text is the identity across dumps.
#[derive(Default)]
struct Names {
    ids: Map<String, u32>,
    texts: Vec<String>,
}

impl Names {
    fn intern(&mut self, text: String) -> u32 {
        if let Some(&id) = self.ids.get(&text) {
            return id;
        }
        let id = self.texts.len() as u32;
        self.texts.push(text.clone());
        self.ids.insert(text, id);
        id
    }
}

const GROWING: u8 = 1;
/// Grew in its step as a child of a growing node.
const GREW: u8 = 2;
const REPORTED: u8 = 4;

/// One node of a path tree.
#[derive(Clone, Copy)]
struct PathNode {
    name: u32,
    parent: u32,
    /// Where its objects are counted: itself, or the first of the run of same-named
    /// nodes it ends.
    head: u32,
    /// The node of the same path in the previous dump's tree.
    prev: u32,
    objects: u64,
    flags: u8,
}

#[derive(Default)]
struct Tree {
    nodes: Vec<PathNode>,
    /// (parent, name) → child.
    children: Map<(u32, u32), u32>,
    /// A grown child's increases per step.
    history: Map<u32, Vec<u64>>,
    /// A reported node's retained size.
    retained: Map<u32, Retained>,
    /// A reported node's retained size in the previous dump, when it was reported there.
    before: Map<u32, Retained>,
}

impl Tree {
    fn child(&self, parent: u32, name: u32) -> u32 {
        self.children.get(&(parent, name)).copied().unwrap_or(NONE)
    }

    fn has(&self, node: u32, flag: u8) -> bool {
        self.nodes[node as usize].flags & flag != 0
    }
}

/// Compares the dumps at `paths`, in the order given. `on_dump` hears of each dump once it
/// is done.
pub fn growth_paths(
    paths: &[PathBuf],
    options: &GrowthOptions,
    control: &Control<'_>,
    on_dump: &mut dyn FnMut(usize, &GrowthDump),
) -> Result<GrowthReport, AnalyzeError> {
    let loops = options.scenario_loops.max(1);
    let mut names = Names::default();
    let mut prev: Option<Tree> = None;
    let mut dumps = Vec::new();
    let mut stopped_at = None;
    for (i, path) in paths.iter().enumerate() {
        let started = Instant::now();
        let (tree, mut dump) = traverse(
            path,
            options,
            prev.as_ref(),
            i + 1,
            loops,
            &mut names,
            control,
        )?;
        dump.seconds = started.elapsed().as_secs_f64();
        on_dump(i + 1, &dump);
        let grows = dump.growing_nodes > 0;
        dumps.push(dump);
        prev = Some(tree);
        if i > 0 && !grows {
            stopped_at = Some(i + 1);
            break;
        }
    }
    let tree = prev.unwrap_or_default();
    let growing = paths.len() > 1 && stopped_at.is_none();
    let mut nodes = if growing {
        report_nodes(&tree, &names, loops)
    } else {
        Vec::new()
    };
    nodes.sort_by(|a, b| {
        b.retained_bytes
            .cmp(&a.retained_bytes)
            .then_with(|| a.name.cmp(&b.name))
    });
    let omitted_nodes = nodes.len().saturating_sub(MAX_REPORTED) as u64;
    nodes.truncate(MAX_REPORTED);
    Ok(GrowthReport {
        schema: GROWTH_SCHEMA,
        tool: format!("hprof-shrink {}", env!("CARGO_PKG_VERSION")),
        scenario_loops: loops,
        dumps,
        dumps_given: paths.len(),
        growing,
        stopped_at,
        nodes,
        omitted_nodes,
    })
}

/// The dump time an HPROF header gives, for ordering a directory's dumps.
pub fn dump_time(path: &Path) -> Result<u64, AnalyzeError> {
    let input = input::open(path)?;
    let hprof = Hprof::new(input.bytes.bytes())?;
    Ok(hprof.header().timestamp_ms)
}

pub(super) fn clip(mut s: String) -> String {
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

pub(super) fn simple(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// What a reference's target is called in a node name.
pub(super) fn target_text(g: &Graph<'_, '_>, t: Node) -> String {
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

/// The identity of a reference within one dump: kind, owner, field, target class.
type EdgeKey = (u8, u64, u64, (u8, u64));

fn target_key(g: &Graph<'_, '_>, t: Node) -> (u8, u64) {
    match g.ix.tag(t) {
        tags::CLASS_DUMP => (tags::CLASS_DUMP, g.class_of(t).unwrap_or(0)),
        _ => g.class_key(t),
    }
}

/// Names a reference the way LeakCanary's growth tree does.
pub(super) fn edge_text(g: &Graph<'_, '_>, from: Node, t: Node, r: RefName) -> String {
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
pub(super) fn root_text(g: &Graph<'_, '_>, tag: u8, node: Node) -> String {
    clip(format!(
        "GcRoot({}) -> {}",
        root_kind(tag),
        target_text(g, node)
    ))
}

fn root_kind(tag: u8) -> &'static str {
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

/// A child waiting to be visited: its parent, its name, the objects it may take.
struct Pending {
    parent: u32,
    name: u32,
    objects: Vec<Node>,
}

/// Reads one dump, builds its path tree against the previous one, and marks what grew.
fn traverse(
    path: &Path,
    options: &GrowthOptions,
    prev: Option<&Tree>,
    step: usize,
    loops: u64,
    names: &mut Names,
    control: &Control<'_>,
) -> Result<(Tree, GrowthDump), AnalyzeError> {
    let input = input::open(path)?;
    let data = input.bytes.bytes();
    let hprof = Hprof::new(data)?;
    // A file holding several heap dumps: the last, as `analyze` takes by default.
    let dumps = hprof.heap_dumps()?;
    let done = std::sync::atomic::AtomicU64::new(0);
    let total = data.len() as u64;
    let ix = Index::build(
        &hprof,
        rayon::current_num_threads(),
        dumps.last().cloned(),
        |start| Ticks(control.shared_ticker(Stage::Read, total, &done, start)),
    )?;
    let g = Graph::new(&ix, options.mapping.as_ref());
    control.check()?;

    let (by_kind, root_nodes) = roots_by_kind(&ix);
    let mut walk = TreeWalk {
        g: &g,
        prev,
        names,
        tree: Tree::default(),
        owner: vec![NONE; ix.len()],
        keys: Map::default(),
        reached: 0,
    };
    walk.walk(by_kind, path, options.max_paths, control)?;
    let TreeWalk {
        mut tree,
        owner,
        reached,
        ..
    } = walk;

    let growing_nodes = mark(&mut tree, prev, step, loops);
    if growing_nodes > 0 {
        retained_sizes(&g, &mut tree, prev, owner, &root_nodes, control)?;
    }
    if let input::Bytes::File(m) = &input.bytes {
        m.check_intact()?;
    }
    let dump = GrowthDump {
        path: path.display().to_string(),
        timestamp_ms: ix.timestamp_ms,
        bytes: data.len() as u64,
        reachable_objects: reached,
        path_nodes: tree.nodes.len() as u64,
        growing_nodes,
        seconds: 0.0,
    };
    Ok((tree, dump))
}

/// The root objects by type, path-making types first (in their order), each object once
/// under its best type (as the leak paths choose); and every root object, in dump order.
fn roots_by_kind(ix: &Index<'_>) -> (Vec<(u8, Vec<Node>)>, Vec<Node>) {
    // Each root object once, under its best root type (as the leak paths choose).
    let mut roots: Map<Node, u8> = Map::default();
    for root in &ix.roots {
        if let Some(node) = ix.node(root.object_id) {
            let e = roots.entry(node).or_insert(root.tag);
            if rank(root.tag) < rank(*e) {
                *e = root.tag;
            }
        }
    }
    let mut root_nodes: Vec<Node> = roots.keys().copied().collect();
    root_nodes.sort_unstable_by_key(|&n| ix.offset(n));

    // Roots by type, path-making types first (their order), the rest visited last.
    let mut by_kind: Vec<(u8, Vec<Node>)> = Vec::new();
    for &n in &root_nodes {
        let tag = roots[&n];
        match by_kind.iter_mut().find(|(t, _)| *t == tag) {
            Some((_, v)) => v.push(n),
            None => by_kind.push((tag, vec![n])),
        }
    }
    by_kind.sort_by_key(|(t, _)| rank(*t));
    (by_kind, root_nodes)
}

/// One dump's path tree as it is built: each object taken by the first path node that
/// reaches it, breadth first.
struct TreeWalk<'w, 'g> {
    g: &'w Graph<'g, 'g>,
    prev: Option<&'w Tree>,
    names: &'w mut Names,
    tree: Tree,
    /// Object → the path node that took it.
    owner: Vec<u32>,
    keys: Map<EdgeKey, u32>,
    /// Objects taken.
    reached: u64,
}

impl TreeWalk<'_, '_> {
    /// Builds the tree from the roots (`by_kind`, the types that make no paths visited
    /// last), at most `max_paths` nodes (`path` names the dump in the error).
    fn walk(
        &mut self,
        by_kind: Vec<(u8, Vec<Node>)>,
        path: &Path,
        max_paths: usize,
        control: &Control<'_>,
    ) -> Result<(), AnalyzeError> {
        let root_name = self.names.intern("root".into());
        self.tree.nodes.push(PathNode {
            name: root_name,
            parent: NONE,
            head: 0,
            prev: if self.prev.is_some() { 0 } else { NONE },
            objects: 1,
            flags: 0,
        });
        let mut queue: VecDeque<Pending> = VecDeque::new();
        let mut late: VecDeque<Pending> = VecDeque::new();
        for (tag, objects) in by_kind {
            let name = self.names.intern(format!("GcRoot({})", root_kind(tag)));
            let p = Pending {
                parent: 0,
                name,
                objects,
            };
            if reach::is_path_root(tag) {
                queue.push_back(p);
            } else {
                late.push_back(p);
            }
        }
        let mut in_late = false;
        let mut visited_nodes = 0u64;
        loop {
            let p = match queue.pop_front() {
                Some(p) => p,
                None => match late.pop_front() {
                    Some(p) => {
                        in_late = true;
                        p
                    }
                    None => break,
                },
            };
            visited_nodes += 1;
            if visited_nodes.is_multiple_of(4096) {
                control.check()?;
            }
            let fresh: Vec<Node> = p
                .objects
                .into_iter()
                .filter(|&o| self.owner[o as usize] == NONE)
                .collect();
            if fresh.is_empty() {
                continue;
            }
            if self.tree.nodes.len() >= max_paths {
                return Err(AnalyzeError::TooManyPaths {
                    path: path.to_path_buf(),
                    limit: max_paths,
                });
            }
            let me = self.take(p.parent, p.name, &fresh);
            let groups = self.children(me, &fresh);
            let into = if in_late { &mut late } else { &mut queue };
            into.extend(groups);
        }
        Ok(())
    }

    /// A new path node `name` under `parent`, taking the objects `fresh`.
    fn take(&mut self, parent_at: u32, name: u32, fresh: &[Node]) -> u32 {
        let tree = &mut self.tree;
        let me = tree.nodes.len() as u32;
        let parent = tree.nodes[parent_at as usize];
        // A run of same-named nodes (a linked list) counts on its first node.
        let head = if parent.name == name && parent_at != 0 {
            parent.head
        } else {
            me
        };
        let prev_node = match self.prev {
            Some(t) if parent.prev != NONE => t.child(parent.prev, name),
            _ => NONE,
        };
        tree.nodes.push(PathNode {
            name,
            parent: parent_at,
            head,
            prev: prev_node,
            objects: 0,
            flags: 0,
        });
        tree.children.insert((parent_at, name), me);
        tree.nodes[head as usize].objects += fresh.len() as u64;
        for &o in fresh {
            self.owner[o as usize] = me;
        }
        self.reached += fresh.len() as u64;
        me
    }

    /// The children of node `me`: the objects its objects reference and no node has
    /// taken yet, by the name of the reference, in the order first met.
    #[inline]
    fn children(&mut self, me: u32, fresh: &[Node]) -> Vec<Pending> {
        let g = self.g;
        let owner = &self.owner;
        let keys = &mut self.keys;
        let names = &mut *self.names;
        let mut groups: Vec<Pending> = Vec::new();
        let mut slot: Map<u32, usize> = Map::default();
        for &o in fresh {
            g.for_each_named_ref(o, |t, r| {
                if owner[t as usize] != NONE {
                    return;
                }
                let key: EdgeKey = match r {
                    RefName::Field {
                        declared_by,
                        name_id,
                    } => (0, declared_by, name_id, target_key(g, t)),
                    RefName::Static { class, name_id } => (1, class, name_id, target_key(g, t)),
                    RefName::Element(_) => (2, g.class_of(o).unwrap_or(0), 0, target_key(g, t)),
                };
                let name = *keys
                    .entry(key)
                    .or_insert_with(|| names.intern(edge_text(g, o, t, r)));
                let at = *slot.entry(name).or_insert_with(|| {
                    groups.push(Pending {
                        parent: me,
                        name,
                        objects: Vec::new(),
                    });
                    groups.len() - 1
                });
                groups[at].objects.push(t);
            });
        }
        groups
    }
}

/// The retained sizes of the reported nodes (and what they retained in the previous dump),
/// from this dump's dominator tree; `owner` (the path node of each object) is dropped
/// before the tree is built.
fn retained_sizes(
    g: &Graph<'_, '_>,
    tree: &mut Tree,
    prev: Option<&Tree>,
    owner: Vec<u32>,
    root_nodes: &[Node],
    control: &Control<'_>,
) -> Result<(), AnalyzeError> {
    let ix = g.ix;
    let reported: Vec<u32> = (0..tree.nodes.len() as u32)
        .filter(|&k| tree.has(k, REPORTED))
        .collect();
    let which: Map<u32, usize> = reported.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    let mut wanted: Vec<Node> = Vec::new();
    let mut of: Vec<usize> = Vec::new();
    for (o, &k) in owner.iter().enumerate() {
        if let Some(&i) = which.get(&k) {
            wanted.push(o as Node);
            of.push(i);
        }
    }
    drop(owner);
    let (edges, ()) = Edges::build(g, || (), |_, _, _, _, _, _| (), |_, _| ());
    control.check()?;
    let doms = Dominators::compute(edges, ix.len(), root_nodes, Spare::default(), control)?;
    let (sums, _, ()) = doms.retained(
        &wanted,
        0,
        |node| g.shallow_size(node),
        || (),
        |_, _| 0,
        |_, _| (),
    );
    let mut per = vec![Retained::default(); reported.len()];
    for (r, i) in sums.into_iter().zip(of) {
        per[i].bytes += r.bytes;
        per[i].objects += r.objects;
    }
    tree.retained = reported.into_iter().zip(per).collect();
    if let Some(prev) = prev {
        for &k in tree.retained.keys() {
            let p = tree.nodes[k as usize].prev;
            if let Some(&r) = prev.retained.get(&p) {
                tree.before.insert(k, r);
            }
        }
    }
    Ok(())
}

/// Root types in the order the leak paths prefer them; the rest after.
fn rank(tag: u8) -> usize {
    const ORDER: [u8; 11] = [
        tags::ROOT_STICKY_CLASS,
        tags::ROOT_JNI_GLOBAL,
        tags::ROOT_JAVA_FRAME,
        tags::ROOT_JNI_LOCAL,
        tags::ROOT_NATIVE_STACK,
        tags::ROOT_THREAD_OBJECT,
        tags::ROOT_THREAD_BLOCK,
        tags::ROOT_MONITOR_USED,
        tags::ROOT_VM_INTERNAL,
        tags::ROOT_JNI_MONITOR,
        tags::ROOT_REFERENCE_CLEANUP,
    ];
    ORDER.iter().position(|&t| t == tag).unwrap_or(ORDER.len())
}

/// Marks the growing nodes of `tree` against `prev` (LeakCanary's rules, docs/analyze.md)
/// and returns how many are reported. The first dump: every node with a child may grow.
fn mark(tree: &mut Tree, prev: Option<&Tree>, step: usize, loops: u64) -> u64 {
    let n = tree.nodes.len();
    let Some(prev) = prev else {
        for k in 1..n {
            let p = tree.nodes[k].parent as usize;
            tree.nodes[p].flags |= GROWING;
        }
        return 0;
    };
    // Children first judged one by one against their node of the previous dump; nodes
    // come after their parents, so a pass in order sees each parent's outcome.
    for k in 1..n {
        let c = tree.nodes[k];
        if c.head != k as u32 || c.prev == NONE {
            continue;
        }
        let parent = tree.nodes[c.parent as usize];
        if parent.prev == NONE || !prev.has(parent.prev, GROWING) {
            continue;
        }
        // After the first step only the children that grew before may grow now.
        if step > 2 && !prev.has(c.prev, GREW) {
            continue;
        }
        let before = prev.nodes[c.prev as usize].objects;
        let increase = c.objects.saturating_sub(before);
        if increase >= loops {
            tree.nodes[k].flags |= GREW;
            tree.nodes[c.parent as usize].flags |= GROWING;
            let mut h = prev.history.get(&c.prev).cloned().unwrap_or_default();
            h.push(increase);
            tree.history.insert(k as u32, h);
        }
    }
    let mut reported = 0;
    for k in 0..n {
        let node = tree.nodes[k];
        if node.flags & GROWING == 0 {
            continue;
        }
        let parent_grows = node.parent != NONE && tree.has(node.parent, GROWING);
        if !parent_grows {
            tree.nodes[k].flags |= REPORTED;
            reported += 1;
        }
    }
    reported
}

/// The reported nodes of the last tree, as the report shows them.
fn report_nodes(tree: &Tree, names: &Names, loops: u64) -> Vec<GrowingNode> {
    let text = |k: u32| names.texts[tree.nodes[k as usize].name as usize].clone();
    // Grown children by parent.
    let mut grown: Map<u32, Vec<u32>> = Map::default();
    for (&k, _) in tree.history.iter() {
        grown
            .entry(tree.nodes[k as usize].parent)
            .or_default()
            .push(k);
    }
    let mut out = Vec::new();
    for k in 0..tree.nodes.len() as u32 {
        if !tree.has(k, REPORTED) {
            continue;
        }
        let node = tree.nodes[k as usize];
        // The path: GC root type down to the parent, without the tree's root.
        let mut path = Vec::new();
        let mut at = node.parent;
        while at != NONE && at != 0 {
            path.push(PathStep {
                name: text(at),
                objects: tree.nodes[at as usize].objects,
            });
            at = tree.nodes[at as usize].parent;
        }
        path.reverse();
        let mut omitted_steps = 0;
        if path.len() > PATH_HEAD_STEPS + PATH_TAIL_STEPS {
            omitted_steps = (path.len() - PATH_HEAD_STEPS - PATH_TAIL_STEPS) as u64;
            path.drain(PATH_HEAD_STEPS..path.len() - PATH_TAIL_STEPS);
        }
        let mut children: Vec<GrowingChild> = grown
            .get(&k)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
            .iter()
            .map(|&c| {
                let increases = tree.history[&c].clone();
                let last = increases.last().copied().unwrap_or(0);
                GrowingChild {
                    name: text(c),
                    objects: tree.nodes[c as usize].objects,
                    increases,
                    increase_per_loop: last as f64 / loops as f64,
                }
            })
            .collect();
        children.sort_by(|a, b| {
            b.increases
                .last()
                .cmp(&a.increases.last())
                .then_with(|| a.name.cmp(&b.name))
        });
        let omitted_children = children.len().saturating_sub(MAX_CHILDREN) as u64;
        children.truncate(MAX_CHILDREN);
        let retained = tree.retained.get(&k).copied();
        let before = tree.before.get(&k).copied();
        out.push(GrowingNode {
            name: text(k),
            objects: node.objects,
            path,
            omitted_steps,
            retained_bytes: retained.map(|r| r.bytes),
            retained_objects: retained.map(|r| r.objects),
            retained_increase_bytes: retained
                .zip(before)
                .map(|(r, b)| r.bytes as i64 - b.bytes as i64),
            retained_increase_objects: retained
                .zip(before)
                .map(|(r, b)| r.objects as i64 - b.objects as i64),
            children,
            omitted_children,
        });
    }
    out
}
