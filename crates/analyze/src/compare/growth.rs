//! `growth`: what grows from one dump of a repeated scenario to the next, LeakCanary 3's
//! heap growth detection (after BLeak, Vilk and Berger, PLDI 2018).
//!
//! Each dump becomes a tree of *paths*, not objects: a breadth-first search from the GC
//! roots in which all objects reached from one tree node through references of one name
//! (`INSTANCE_FIELD Cart.items -> instance of java.util.ArrayList`, `ARRAY_ENTRY
//! Object[].[x] -> instance of com.example.Item`) are one child node. Each object belongs
//! to the first node that reaches it. A run of nodes of one name under each other (a
//! linked list's `next`) is one node, so a list of a million links is one path, not a
//! million (LeakCanary makes one node per link and counts the links on the first; the
//! counts are the same, and the links' own children gather under the one node). Names
//! carry no ids or indices, so the trees of two dumps line up. A node *grows* when, at
//! every dump after the first, one of its children that it already had in the first dump
//! gained at least `scenario_loops` objects in every step; the highest growing node of a
//! path is reported. Only the trees are kept from one dump to the next, never the dumps'
//! graphs.
//!
//! A reported node's retained size is the sum of the retained sizes of its own objects
//! that no other of its objects dominates, from the exact dominator tree of its dump: what
//! those objects keep alive between them, at least. (Objects taken at one depth cannot
//! dominate each other; a run's can, its first link dominating the next.)

use std::path::{Path, PathBuf};
use std::time::Instant;

use hprof_shrink_core::hprof::{tags, Hprof};
use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::Control;
use serde::Serialize;

use crate::base::error::AnalyzeError;
use crate::base::map::Map;
use crate::base::spare::Spare;
use crate::heap::edges::Edges;
use crate::heap::graph::{Graph, RecentLayouts, RefName};
use crate::heap::index::{Index, Node, NONE};
use crate::heap::input;
use crate::heap::mapping::Mapping;
use crate::paths::reach;
use crate::paths::tree_text::{edge_text, root_kind};
use crate::sizes::dominators::{Dominators, Fold, Place, Pre, Retained};

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
    /// R8/ProGuard names applied to every dump before the trees are compared by name.
    pub mapping: Option<Mapping>,
    /// Path nodes one dump's tree may hold.
    pub max_paths: usize,
    /// The process whose heap graph is read in each trace (`None`: each trace's only
    /// one); an error for an HPROF input.
    pub pid: Option<i32>,
}

impl Default for GrowthOptions {
    fn default() -> Self {
        GrowthOptions {
            scenario_loops: 1,
            mapping: None,
            max_paths: DEFAULT_MAX_PATHS,
            pid: None,
        }
    }
}

/// What `growth` found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrowthReport {
    /// [`GROWTH_SCHEMA`] when written.
    pub schema: u32,
    /// `hprof-shrink VERSION`.
    pub tool: String,
    /// [`GrowthOptions::scenario_loops`] as given.
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
    /// Growing nodes beyond the [`MAX_REPORTED`] listed.
    pub omitted_nodes: u64,
}

/// One dump read, and what its path tree held.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrowthDump {
    /// The file as given.
    pub path: String,
    /// The dump's header timestamp: milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// Bytes of the HPROF data read (a package's or `.hprof.gz`'s dump as inflated).
    pub bytes: u64,
    /// Objects the search from the GC roots reached.
    pub reachable_objects: u64,
    /// Nodes of the dump's path tree.
    pub path_nodes: u64,
    /// Nodes that grew in every step up to this dump (0 for the first dump).
    pub growing_nodes: u64,
    /// Wall-clock seconds reading it took (index, walk and retained sizes).
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
    /// Objects those retained bytes are of, if computed.
    pub retained_objects: Option<u64>,
    /// The change of the retained size since the dump before, when both are known.
    pub retained_increase_bytes: Option<i64>,
    /// The change of the retained objects since the dump before, when both are known.
    pub retained_increase_objects: Option<i64>,
    /// The children that grew in every step, largest last increase first.
    pub children: Vec<GrowingChild>,
    /// Growing children beyond the [`MAX_CHILDREN`] listed.
    pub omitted_children: u64,
}

/// One node on the path from a GC root type down to a reported node.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathStep {
    /// The node's name ([`GrowingNode::name`]'s form).
    pub name: String,
    /// Its objects in the last dump.
    pub objects: u64,
}

/// A child of a reported node that grew in every step.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrowingChild {
    /// The child's name: how its objects are referenced from the node's.
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

/// In [`TreeWalk::owner`]: taken by the group being read, whose node is not known yet.
/// No path node has this number ([`TreeWalk::take`] stops below it).
const CLAIMED: u32 = NONE - 1;

const GROWING: u8 = 1;
/// Grew in its step as a child of a growing node.
const GREW: u8 = 2;
const REPORTED: u8 = 4;
/// Took objects at more than one depth (a run of one name, or a child of one).
const MIXED: u8 = 8;

/// One node of a path tree.
#[derive(Clone, Copy)]
struct PathNode {
    name: u32,
    parent: u32,
    /// The node of the same path in the previous dump's tree.
    prev: u32,
    objects: u64,
    flags: u8,
    /// The breadth-first level at which it first took objects.
    level: u32,
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
    // All of one kind, before any is read.
    input::one_kind("growth", paths)?;
    let loops = options.scenario_loops.max(1);
    let mut names = Names::default();
    let mut prev: Option<Tree> = None;
    let mut dumps = Vec::new();
    let mut stopped_at = None;
    // The dump read ahead: the second, while the first is walked.
    let mut ahead = None;
    for (i, path) in paths.iter().enumerate() {
        let (mut loaded, load_seconds) = match ahead.take() {
            Some(loaded) => loaded?,
            None => load(path, options.pid, control)?,
        };
        let started = Instant::now();
        let mut walk = |names: &mut Names| {
            let step = Step {
                path,
                number: i + 1,
                prev: prev.as_ref(),
            };
            traverse(&mut loaded, step, options, names, control)
        };
        // The first dump's walk takes one thread and reads no references for dominators:
        // the second dump's index is built on the other cores meanwhile. (Later dumps
        // read their references then.)
        let walked = match paths.get(1).filter(|_| i == 0) {
            Some(second) => {
                let (walked, second) =
                    rayon::join(|| walk(&mut names), || load(second, options.pid, control));
                ahead = Some(second);
                walked
            }
            None => walk(&mut names),
        };
        drop(loaded);
        let (tree, mut dump) = walked?;
        dump.seconds = load_seconds + started.elapsed().as_secs_f64();
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

/// The dump time an HPROF header gives, for ordering a directory's dumps; `None` for a
/// Perfetto trace, whose packets count time from the device's boot, not the epoch.
pub fn dump_time(path: &Path) -> Result<Option<u64>, AnalyzeError> {
    // The header: its version string (at most a few dozen bytes), the id size, the time.
    let head = input::head(path, 256)?;
    match hprof_shrink_core::hprof::Header::parse(&head) {
        Ok(header) => Ok(Some(header.timestamp_ms)),
        Err(_) if input::heap_kind(path)? == input::HeapKind::Trace => Ok(None),
        Err(e) => Err(AnalyzeError::from(e).in_file(path)),
    }
}

/// The identity of a reference within one dump: kind, owner, field, target class.
type EdgeKey = (u8, u64, u64, (u8, u64));

/// Slots of the walk's memo of reference names.
const MEMO_SLOTS: usize = 1 << 12;

/// A key's slot in the memo: a multiplicative mix of its parts (a collision only costs a
/// look-up in the map).
#[inline]
fn memo_slot(key: &EdgeKey) -> usize {
    let mix = (key.1 ^ key.2.rotate_left(21) ^ key.3 .1.rotate_left(42))
        .wrapping_add(((key.0 as u64) << 8) | key.3 .0 as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mix >> (64 - MEMO_SLOTS.trailing_zeros())) as usize
}

fn target_key(g: &Graph<'_, '_>, t: Node) -> (u8, u64) {
    // One read of the record for the common case: a class's key says only its tag.
    match g.class_key(t) {
        (tags::CLASS_DUMP, _) => (tags::CLASS_DUMP, g.class_of(t).unwrap_or(0)),
        key => key,
    }
}

/// Groups of objects waiting to be taken by path nodes, one breadth-first level at a
/// time: each group's objects are a range of `objects` (kept flat, so a level of a
/// million one-object groups, a linked list's, costs no allocation each).
#[derive(Default)]
struct Level {
    groups: Vec<Group>,
    objects: Vec<Node>,
}

/// A child waiting to be visited: its parent, its name, the range of the objects it may
/// take.
#[derive(Clone, Copy)]
struct Group {
    parent: u32,
    name: u32,
    start: usize,
    end: usize,
}

impl Level {
    fn clear(&mut self) {
        self.groups.clear();
        self.objects.clear();
    }
}

/// The index of a dump, as built from its bytes.
type IndexOf<'a> = Index<'a>;

self_cell::self_cell!(
    /// A dump open, with its index.
    struct Loaded {
        owner: input::Input,
        #[covariant]
        dependent: IndexOf,
    }
);

/// Opens the dump at `path` (a trace's heap graph of `pid`) and builds its index; with the
/// seconds it took.
fn load(
    path: &Path,
    pid: Option<i32>,
    control: &Control<'_>,
) -> Result<(Loaded, f64), AnalyzeError> {
    let started = Instant::now();
    let opened = input::open_process(path, &Unpack::default(), pid)?;
    let loaded = Loaded::try_new(opened, |input| {
        let data = input.bytes.bytes();
        let hprof = Hprof::new(data)?;
        // A file holding several heap dumps: the last, as `analyze` takes by default.
        let dumps = hprof.heap_dumps()?;
        let mut ix = crate::heap::progress::build_index(
            &hprof,
            data.len() as u64,
            dumps.last().cloned(),
            control,
        )?;
        ix.class_sizes = input.class_sizes.clone();
        Ok::<_, AnalyzeError>(ix)
    })
    .map_err(|e| e.in_file(path))?;
    Ok((loaded, started.elapsed().as_secs_f64()))
}

/// One dump of the series: where it was read from, its number from 1, and the previous
/// dump's tree.
struct Step<'s> {
    path: &'s Path,
    number: usize,
    prev: Option<&'s Tree>,
}

/// What the walk leaves for the dominators: this dump's references, the path node of each
/// object, and the GC roots.
struct Walked<'w> {
    edges: Edges,
    owner: Vec<u32>,
    root_nodes: &'w [Node],
}

/// Builds the path tree of the dump `loaded` (read from `step.path`) against the previous
/// one's, and marks what grew.
fn traverse(
    loaded: &mut Loaded,
    step: Step<'_>,
    options: &GrowthOptions,
    names: &mut Names,
    control: &Control<'_>,
) -> Result<(Tree, GrowthDump), AnalyzeError> {
    let Step {
        path,
        number: step,
        prev,
    } = step;
    let loops = options.scenario_loops.max(1);
    let ix = loaded.borrow_dependent();
    let g = Graph::new(ix, options.mapping.as_ref());
    control.check()?;

    let (by_kind, root_nodes) = roots_by_kind(ix);
    let mut walk = TreeWalk {
        g: &g,
        prev,
        names,
        tree: Tree::default(),
        owner: vec![NONE; ix.len()],
        keys: Map::default(),
        memo: vec![((0, 0, 0, (0, 0)), NONE); MEMO_SLOTS],
        reached: 0,
        met: Vec::new(),
        slots: Vec::new(),
        last_child: Vec::new(),
        call: 0,
        level: 0,
        layouts: RecentLayouts::default(),
    };
    // From the second dump on, what grows needs this dump's dominators: their references
    // are read on the other cores while the walk (one thread) names the paths, and
    // dropped unread if nothing grew.
    let edges = if prev.is_some() {
        let (walked, edges) = rayon::join(
            || walk.walk(by_kind, path, options.max_paths, control),
            || Edges::build(&g, |_| (), |_, _, _, _, _, _| (), |_, _| ()).0,
        );
        walked?;
        Some(edges)
    } else {
        walk.walk(by_kind, path, options.max_paths, control)?;
        None
    };
    let TreeWalk {
        mut tree,
        owner,
        reached,
        ..
    } = walk;

    let growing_nodes = mark(&mut tree, prev, step, loops);
    if let Some(edges) = edges.filter(|_| growing_nodes > 0) {
        // The walk looked ids up; the dominators look up none: the id lookup (2 bytes an
        // object) goes before they take their memory, as in `analyze`.
        let classes = g.classes();
        drop(g);
        loaded.with_dependent_mut(|_, ix| ix.release_lookup());
        let g = Graph::with_classes(loaded.borrow_dependent(), classes, options.mapping.as_ref());
        let walked = Walked {
            edges,
            owner,
            root_nodes: &root_nodes,
        };
        retained_sizes(&g, walked, &mut tree, prev, control)?;
    }
    let (input, ix) = (loaded.borrow_owner(), loaded.borrow_dependent());
    let data = input.bytes.bytes();
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
    /// A few of `keys`, by [`memo_slot`] (name `NONE`: empty).
    memo: Vec<(EdgeKey, u32)>,
    /// Objects taken.
    reached: u64,
    /// The references met from them: (group, object).
    met: Vec<(u32, Node)>,
    /// By name: the parent that last took a child of that name, and that child.
    last_child: Vec<(u32, u32)>,
    /// By name: the `children` call that last met it, and its group there.
    slots: Vec<(u64, u32)>,
    call: u64,
    /// The breadth-first level being taken.
    level: u32,
    /// The layouts of the classes whose instances were read last.
    layouts: RecentLayouts<'w>,
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
            prev: if self.prev.is_some() { 0 } else { NONE },
            objects: 1,
            flags: 0,
            level: 0,
        });
        // The root types that make leak paths first, breadth first; then the others
        // (their objects not reached from the first), breadth first.
        let (first, late): (Vec<_>, Vec<_>) = by_kind
            .into_iter()
            .partition(|(tag, _)| reach::is_path_root(*tag));
        let mut visited = 0u64;
        for kinds in [first, late] {
            let mut level = Level::default();
            for (tag, objects) in kinds {
                let name = self.names.intern(format!("GcRoot({})", root_kind(tag)));
                let start = level.objects.len();
                level.objects.extend(objects);
                level.groups.push(Group {
                    parent: 0,
                    name,
                    start,
                    end: level.objects.len(),
                });
            }
            let mut next = Level::default();
            while !level.groups.is_empty() {
                for gi in 0..level.groups.len() {
                    visited += 1;
                    if visited.is_multiple_of(4096) {
                        control.check()?;
                    }
                    let group = level.groups[gi];
                    // The group's objects no node took since they were met, kept in
                    // place (the level is read once).
                    let objects = &mut level.objects[group.start..group.end];
                    let mut kept = 0;
                    for i in 0..objects.len() {
                        let o = objects[i];
                        // Claimed at once: an object met twice in one group (two of the
                        // parent's objects referencing it by the same name) is one object.
                        if self.owner[o as usize] == NONE {
                            self.owner[o as usize] = CLAIMED;
                            objects[kept] = o;
                            kept += 1;
                        }
                    }
                    if kept == 0 {
                        continue;
                    }
                    let fresh = &objects[..kept];
                    let me = self.take(group.parent, group.name, fresh, path, max_paths)?;
                    self.children(me, fresh, &mut next);
                }
                std::mem::swap(&mut level, &mut next);
                next.clear();
                self.level += 1;
            }
        }
        Ok(())
    }

    /// The path node `name` under `parent` (a new one, unless `parent` already has it or
    /// is itself a run of `name`), taking the objects in `fresh`.
    fn take(
        &mut self,
        parent_at: u32,
        name: u32,
        fresh: &[Node],
        path: &Path,
        max_paths: usize,
    ) -> Result<u32, AnalyzeError> {
        let tree = &mut self.tree;
        let parent = tree.nodes[parent_at as usize];
        // A run of same-named nodes (a linked list's `next`) is one node: one node per
        // link would make a path per object of a long list, and split the links' own
        // children (each link's String) into as many one-object nodes.
        if self.last_child.len() <= name as usize {
            self.last_child.resize(name as usize + 1, (NONE, NONE));
        }
        let last = &mut self.last_child[name as usize];
        let me = if parent.name == name && parent_at != 0 {
            parent_at
        } else if last.0 == parent_at {
            // A run's node takes objects at several depths, so its children recur, one
            // level after another: the name's last child says it without hashing.
            last.1
        } else if let Some(&me) = tree.children.get(&(parent_at, name)) {
            *last = (parent_at, me);
            me
        } else {
            if tree.nodes.len() >= max_paths.min(CLAIMED as usize) {
                return Err(AnalyzeError::TooManyPaths {
                    path: path.to_path_buf(),
                    limit: max_paths,
                });
            }
            let me = tree.nodes.len() as u32;
            let prev_node = match self.prev {
                Some(t) if parent.prev != NONE => t.child(parent.prev, name),
                _ => NONE,
            };
            tree.nodes.push(PathNode {
                name,
                parent: parent_at,
                prev: prev_node,
                objects: 0,
                flags: 0,
                level: self.level,
            });
            tree.children.insert((parent_at, name), me);
            *last = (parent_at, me);
            me
        };
        let node = &mut tree.nodes[me as usize];
        node.objects += fresh.len() as u64;
        if node.level != self.level {
            node.flags |= MIXED;
        }
        for &o in fresh {
            self.owner[o as usize] = me;
        }
        self.reached += fresh.len() as u64;
        Ok(me)
    }

    /// The children of node `me`, appended to `next`: the objects its objects (`fresh`)
    /// reference and no node has taken yet, grouped by the name of the reference, the
    /// groups in the order first met.
    fn children(&mut self, me: u32, fresh: &[Node], next: &mut Level) {
        let g = self.g;
        let owner = &self.owner;
        let keys = &mut self.keys;
        let memo = &mut self.memo;
        let names = &mut *self.names;
        let slots = &mut self.slots;
        let layouts = &mut self.layouts;
        let first = next.groups.len();
        self.call += 1;
        let call = self.call;
        // While each group met has one object (a list's link, its String, the String's
        // array), its object is placed as the group is made: `base + k` holds group k's.
        // A name met again ends that: from then on (group, object) pairs gather in
        // `met`, placed below by counting.
        let base = next.objects.len();
        let mut direct = true;
        let met = &mut self.met;
        met.clear();
        for &o in fresh {
            for (t, r) in g.named_refs(o, layouts) {
                if owner[t as usize] != NONE {
                    continue;
                }
                let key: EdgeKey = match r {
                    RefName::Field {
                        declared_by,
                        name_id,
                    } => (0, declared_by, name_id, target_key(g, t)),
                    RefName::Static { class, name_id } => (1, class, name_id, target_key(g, t)),
                    RefName::Element(_) => (2, g.class_of(o).unwrap_or(0), 0, target_key(g, t)),
                };
                // Most references repeat a few names: a direct-mapped memo in front of
                // the map (whose hashing and probing cost more than the rest of a step).
                let m = &mut memo[memo_slot(&key)];
                let name = if m.0 == key && m.1 != NONE {
                    m.1
                } else {
                    let name = *keys
                        .entry(key)
                        .or_insert_with(|| names.intern(edge_text(g, o, t, r)));
                    *m = (key, name);
                    name
                };
                // The name's group in this call: names are few, so a table by name
                // stamped with the call says it without hashing.
                if slots.len() <= name as usize {
                    slots.resize(name as usize + 1, (0, 0));
                }
                let slot = &mut slots[name as usize];
                if slot.0 != call {
                    let k = next.groups.len() - first;
                    *slot = (call, k as u32);
                    let at = if direct { base + k } else { 0 };
                    next.groups.push(Group {
                        parent: me,
                        name,
                        start: at,
                        end: at + direct as usize,
                    });
                    if direct {
                        next.objects.push(t);
                    } else {
                        met.push((k as u32, t));
                    }
                } else {
                    if direct {
                        direct = false;
                        met.extend(next.objects.drain(base..).zip(0..).map(|(t, k)| (k, t)));
                        // Counted again from none, as the groups made from now on.
                        for group in &mut next.groups[first..] {
                            (group.start, group.end) = (0, 0);
                        }
                    }
                    met.push((slot.1, t));
                }
            }
        }
        if direct {
            return;
        }
        let groups = &mut next.groups[first..];
        // Counting placement: each group's objects in the order met.
        for &(k, _) in met.iter() {
            groups[k as usize].end += 1;
        }
        let mut at = next.objects.len();
        for group in groups.iter_mut() {
            let len = group.end;
            group.start = at;
            group.end = at;
            at += len;
        }
        next.objects.resize(at, NONE);
        for &(k, t) in met.iter() {
            let group = &mut groups[k as usize];
            next.objects[group.end] = t;
            group.end += 1;
        }
    }
}

/// The retained sizes of the reported nodes (and what they retained in the previous dump),
/// from this dump's dominator tree over the walk's edges; its `owner` (the path node of
/// each object) is dropped before the tree is built.
fn retained_sizes(
    g: &Graph<'_, '_>,
    walked: Walked<'_>,
    tree: &mut Tree,
    prev: Option<&Tree>,
    control: &Control<'_>,
) -> Result<(), AnalyzeError> {
    let Walked {
        edges,
        owner,
        root_nodes,
    } = walked;
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
    // The walk's table and the references' runs, freed on two threads, go back to the
    // system before the dominators take their place (else the peak depends on which
    // thread's heap kept them).
    crate::base::spare::give_back_freed_memory();
    control.check()?;
    let doms = Dominators::compute(edges, ix.len(), root_nodes, Spare::default(), control)?;
    let mixed: Vec<bool> = reported.iter().map(|&k| tree.has(k, MIXED)).collect();
    let inner = dominated_within(&doms, &wanted, &of, &mixed);
    let nothing = Fold {
        init: || (),
        add: |_: &mut (), _| 0,
        merge: |_, _| (),
    };
    let (sums, _, ()) = doms.retained(&wanted, 0, |node| g.shallow_size(node), nothing);
    let mut per = vec![Retained::default(); reported.len()];
    for ((r, i), inner) in sums.into_iter().zip(of).zip(inner) {
        if inner {
            continue;
        }
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

/// Which of `wanted` (of reported node `of[i]`) another object of its own node dominates,
/// for the nodes that took objects at several depths (`mixed`: a run, or a child of one,
/// whose first link dominates the next); the others' objects are all as far from the
/// roots, so none dominates another. Each number is walked up from once: its nearest
/// wanted ancestor is kept.
fn dominated_within(doms: &Dominators, wanted: &[Node], of: &[usize], mixed: &[bool]) -> Vec<bool> {
    let mut inner = vec![false; wanted.len()];
    if !mixed.iter().any(|&m| m) {
        return inner;
    }
    let idom = doms.idoms();
    // Number → the reported node it is an object of.
    let mut member: Map<Pre, usize> = Map::default();
    for (&w, &i) in wanted.iter().zip(of) {
        if let Some(Place::Vertex(p)) = doms.place(w) {
            member.insert(p, i);
        }
    }
    // Number → its nearest ancestor (itself included) that is a member, `UNSEEN` until
    // walked, `NONE` for none.
    const UNSEEN: Pre = Pre::MAX - 1;
    let mut nearest = vec![UNSEEN; idom.len()];
    let mut path: Vec<Pre> = Vec::new();
    let mut find = |mut q: Pre| -> Pre {
        path.clear();
        let found = loop {
            if q == 0 {
                break NONE;
            }
            if member.contains_key(&q) {
                break q;
            }
            if nearest[q as usize] != UNSEEN {
                break nearest[q as usize];
            }
            path.push(q);
            q = idom[q as usize];
        };
        for &p in &path {
            nearest[p as usize] = found;
        }
        found
    };
    for (k, (&w, &i)) in wanted.iter().zip(of).enumerate() {
        if !mixed[i] {
            continue;
        }
        // The first ancestor: a leaf's dominator, a number's immediate dominator.
        let mut m = match doms.place(w) {
            Some(Place::Leaf(d)) => find(d),
            Some(Place::Vertex(p)) => find(idom[p as usize]),
            None => NONE,
        };
        while m != NONE {
            if member.get(&m) == Some(&i) {
                inner[k] = true;
                break;
            }
            m = find(idom[m as usize]);
        }
    }
    inner
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
        if c.prev == NONE {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// root → 0 → 1 → 2, and 1 → 3 (a leaf); 4 beside 0 under the root.
    fn doms() -> Dominators {
        let succ = vec![vec![1], vec![2, 3], vec![], vec![], vec![]];
        let edges = Edges::from_lists(&succ);
        Dominators::compute(
            edges,
            succ.len(),
            &[0, 4],
            Spare::default(),
            &Control::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_mixed_nodes_objects_under_its_own_are_left_out_once() {
        let doms = doms();
        // Node 0 holds 0, 1, 2 and the leaf 3 (a run); node 1 holds 4.
        let wanted = [0, 1, 2, 3, 4];
        let of = [0, 0, 0, 0, 1];
        assert_eq!(
            dominated_within(&doms, &wanted, &of, &[true, false]),
            [false, true, true, true, false]
        );
        // Objects of another node in between do not hide the first: 1 belongs to node 1.
        let of = [0, 1, 0, 0, 1];
        assert_eq!(
            dominated_within(&doms, &wanted, &of, &[true, true]),
            [false, false, true, true, false]
        );
        // Nodes whose objects are all at one depth are summed as they are.
        assert_eq!(
            dominated_within(&doms, &wanted, &[0, 0, 0, 0, 1], &[false, false]),
            [false; 5]
        );
    }
}
