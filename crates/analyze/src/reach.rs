//! Breadth-first search from the GC roots over strong references: the shortest path to
//! every object, with references that are known framework leaks taken only when nothing
//! else reaches an object. The path tree (each object's parent on its path) is what leak
//! traces are made of. Five bytes an object: its parent and how it was reached.

use hprof_shrink_core::hprof::tags;
use hprof_shrink_core::Control;
use rustc_hash::FxHashMap;

use super::edges::Edges;
use super::error::AnalyzeError;
use super::graph::Graph;
use super::index::{Node, RootRecord, NONE};
use super::library::LibraryMatch;
use super::spare::Spare;

/// The parent of a root object.
const ROOT: Node = NONE - 1;

/// How an object was reached.
const UNSEEN: u8 = 0;
/// Found only through a known framework leak so far: waits for the rest.
const PENDING: u8 = 1;
/// On a path from a root that makes paths.
const PATH: u8 = 2;
/// On such a path only through a known framework leak.
const LIBRARY: u8 = 3;
/// Reachable only from roots that do not make paths (interned strings, debugger,
/// finalizing, unknown…): counted for retained sizes, never a leak.
const NONPATH: u8 = 4;

pub struct Reach {
    /// Node → the node before it on its shortest path (`ROOT` for a root object).
    parent: Vec<Node>,
    /// Node → how it was reached.
    state: Vec<u8>,
    /// What [`Reach::discover`] marks now.
    phase: u8,
    /// Found, not yet scanned, in the order found.
    queue: std::collections::VecDeque<Node>,
    reached: u64,
    /// The GC root that puts each root object first on its path.
    pub roots: FxHashMap<Node, RootRecord>,
}

/// Roots that make a path, best first (Matrix's choice of root types): when an object is
/// rooted more than once, the path shows the first of these.
const PATH_ROOTS: [u8; 11] = [
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

pub fn is_path_root(tag: u8) -> bool {
    PATH_ROOTS.contains(&tag)
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

impl Reach {
    pub fn compute(
        g: &Graph<'_, '_>,
        edges: &Edges,
        sdk: Option<i64>,
        manufacturer: Option<&str>,
        control: &Control<'_>,
    ) -> Result<Reach, AnalyzeError> {
        let ix = g.ix;
        let n = ix.len();
        let mut r = Reach {
            parent: vec![NONE; n],
            state: vec![UNSEEN; n],
            phase: PATH,
            queue: Default::default(),
            reached: 0,
            roots: FxHashMap::default(),
        };
        // Each root object once, with its best root type.
        let rank = |tag: u8| {
            PATH_ROOTS
                .iter()
                .position(|&t| t == tag)
                .unwrap_or(PATH_ROOTS.len())
        };
        for root in &ix.roots {
            let Some(node) = ix.node(root.object_id) else {
                continue;
            };
            r.roots
                .entry(node)
                .and_modify(|best| {
                    if rank(root.tag) < rank(best.tag) {
                        *best = *root;
                    }
                })
                .or_insert(*root);
        }
        let mut seeds: Vec<(Node, RootRecord)> = r.roots.iter().map(|(n, r)| (*n, *r)).collect();
        // Root order decides ties between equally short paths: make it the dump's.
        seeds.sort_unstable_by_key(|(node, root)| (rank(root.tag), ix.offset(*node)));
        let thread_names = thread_names(g);
        let mut pending: Vec<(Node, Node)> = Vec::new();
        for (node, root) in &seeds {
            if !is_path_root(root.tag) {
                continue;
            }
            // Locals of a thread that is itself a known leak wait with the library edges.
            let library_thread =
                root.thread_serial.is_some_and(|s| {
                    thread_names.get(&s).is_some_and(|name| {
                        g.library
                            .find(LibraryMatch::Thread(name), sdk, manufacturer)
                            .is_some()
                    })
                }) && matches!(root.tag, tags::ROOT_JAVA_FRAME | tags::ROOT_JNI_LOCAL);
            if library_thread {
                if r.state[*node as usize] == UNSEEN {
                    r.state[*node as usize] = PENDING;
                    pending.push((*node, ROOT));
                }
            } else if r.state[*node as usize] == UNSEEN {
                r.discover(*node, ROOT);
            }
        }
        r.scan(edges, &mut pending, control)?;
        // Then what only known leaks reach, and what that reaches.
        r.phase = LIBRARY;
        while !pending.is_empty() {
            let batch = std::mem::take(&mut pending);
            for (node, parent) in batch {
                if r.state[node as usize] == PENDING {
                    r.discover(node, parent);
                }
            }
            r.scan(edges, &mut pending, control)?;
        }
        r.phase = NONPATH;
        for (node, root) in &seeds {
            if !is_path_root(root.tag) && r.state[*node as usize] == UNSEEN {
                r.discover(*node, ROOT);
            }
        }
        r.scan(edges, &mut pending, control)?;
        debug_assert!(pending.is_empty());
        r.queue = Default::default();
        Ok(r)
    }

    fn discover(&mut self, node: Node, parent: Node) {
        self.state[node as usize] = self.phase;
        self.parent[node as usize] = parent;
        self.queue.push_back(node);
        self.reached += 1;
    }

    /// Scans every visit not yet scanned, discovering what it references; library edges
    /// go to `pending` unless the target is reached otherwise.
    fn scan(
        &mut self,
        edges: &Edges,
        pending: &mut Vec<(Node, Node)>,
        control: &Control<'_>,
    ) -> Result<(), AnalyzeError> {
        let mut scanned = 0u64;
        while let Some(u) = self.queue.pop_front() {
            scanned += 1;
            if scanned.is_multiple_of(65536) {
                control.check().map_err(|_| AnalyzeError::Cancelled)?;
            }
            for (v, library) in edges.with_library(u) {
                if v == u {
                    continue;
                }
                match self.state[v as usize] {
                    UNSEEN if library.is_some() => {
                        self.state[v as usize] = PENDING;
                        pending.push((v, u));
                    }
                    UNSEEN => self.discover(v, u),
                    PENDING if library.is_none() => self.discover(v, u),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Ends the search, keeping its largest array for the next step.
    pub fn into_spare(self, spare: &mut Spare) {
        spare.give(self.parent);
    }

    /// Whether a node has a path from a root that makes paths.
    pub fn on_path(&self, node: Node) -> bool {
        matches!(self.state[node as usize], PATH | LIBRARY)
    }

    pub fn reachable(&self) -> u64 {
        self.reached
    }

    /// The path from the root to `node`, as nodes (root first).
    pub fn path(&self, node: Node) -> Vec<Node> {
        let mut out = Vec::new();
        if matches!(self.state[node as usize], UNSEEN | PENDING) {
            return out;
        }
        let mut at = node;
        while at != ROOT {
            out.push(at);
            at = self.parent[at as usize];
        }
        out.reverse();
        out
    }

    /// Whether `node`'s path was found only through a known framework leak.
    pub fn through_library(&self, node: Node) -> bool {
        self.state[node as usize] == LIBRARY
    }
}

/// Thread serial → thread name, from each thread object's `name` field.
pub fn thread_names(g: &Graph<'_, '_>) -> FxHashMap<u32, String> {
    let mut out = FxHashMap::default();
    for (serial, id) in &g.ix.threads {
        if let Some(name) = thread_name(g, *id) {
            out.insert(*serial, name);
        }
    }
    out
}

pub fn thread_name(g: &Graph<'_, '_>, thread: u64) -> Option<String> {
    let name = g.field(g.ix.node(thread)?, "name")?.as_object()?;
    g.string_value(name)
}
