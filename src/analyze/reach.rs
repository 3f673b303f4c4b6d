//! Breadth-first search from the GC roots over strong references: the shortest path to
//! every object, with references that are known framework leaks taken only when nothing
//! else reaches an object. Objects are numbered in the order found, so an object's parent
//! on its path always has a smaller number;
//! the path tree is what leak traces are made of.

use hprof_shrink_core::hprof::tags;
use hprof_shrink_core::Control;
use rustc_hash::FxHashMap;

use super::edges::Edges;
use super::error::AnalyzeError;
use super::graph::Graph;
use super::index::{Node, RootRecord, NONE};
use super::library::LibraryMatch;

/// A visit number: 0 is the super-root above every GC root; objects count from 1.
pub type Visit = u32;
const PENDING: u32 = NONE - 1;

pub struct Reach {
    /// Node → visit number (`NONE` when not strongly reachable).
    pub order: Vec<Visit>,
    /// Visit number → node (`NONE` at 0, the super-root).
    pub visit: Vec<Node>,
    /// Visit number → the visit number of its parent on its shortest path (0 for roots).
    pub parent: Vec<Visit>,
    /// Visits from here on were reached only through a known framework leak.
    pub library_from: Visit,
    /// Visits from here on are reachable only from roots that do not make paths
    /// (interned strings, debugger, finalizing, unknown…): counted for retained sizes,
    /// never a leak.
    pub nonpath_from: Visit,
    /// The GC root that puts each root object first on its path.
    pub roots: FxHashMap<Node, RootRecord>,
    /// Visits below this have had their references scanned.
    scanned_to: usize,
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
            order: vec![NONE; n],
            visit: vec![NONE],
            parent: vec![0],
            library_from: 0,
            nonpath_from: 0,
            roots: FxHashMap::default(),
            scanned_to: 1,
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
        let mut pending: Vec<(Node, Visit)> = Vec::new();
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
                if r.order[*node as usize] == NONE {
                    r.order[*node as usize] = PENDING;
                    pending.push((*node, 0));
                }
            } else {
                r.discover(*node, 0);
            }
        }
        r.scan(edges, &mut pending, control)?;
        r.library_from = r.visit.len() as Visit;
        // Then what only known leaks reach, and what that reaches.
        while !pending.is_empty() {
            let batch = std::mem::take(&mut pending);
            for (node, parent) in batch {
                if r.order[node as usize] == PENDING {
                    r.discover(node, parent);
                }
            }
            r.scan(edges, &mut pending, control)?;
        }
        r.nonpath_from = r.visit.len() as Visit;
        for (node, root) in &seeds {
            if !is_path_root(root.tag) && r.order[*node as usize] == NONE {
                r.discover(*node, 0);
            }
        }
        r.scan(edges, &mut pending, control)?;
        debug_assert!(pending.is_empty());
        Ok(r)
    }

    fn discover(&mut self, node: Node, parent: Visit) {
        self.order[node as usize] = self.visit.len() as Visit;
        self.visit.push(node);
        self.parent.push(parent);
    }

    /// Scans every visit not yet scanned, discovering what it references; library edges
    /// go to `pending` unless the target is reached otherwise.
    fn scan(
        &mut self,
        edges: &Edges,
        pending: &mut Vec<(Node, Visit)>,
        control: &Control<'_>,
    ) -> Result<(), AnalyzeError> {
        let mut cursor = self.scanned_to;
        while cursor < self.visit.len() {
            if cursor.is_multiple_of(65536) {
                control.check().map_err(|_| AnalyzeError::Cancelled)?;
            }
            let u = self.visit[cursor];
            let k = cursor as Visit;
            for (v, library) in edges.with_library(u) {
                if v == u {
                    continue;
                }
                let state = self.order[v as usize];
                if state == NONE {
                    if library.is_some() {
                        self.order[v as usize] = PENDING;
                        pending.push((v, k));
                    } else {
                        self.discover(v, k);
                    }
                } else if state == PENDING && library.is_none() {
                    self.discover(v, k);
                }
            }
            cursor += 1;
        }
        self.scanned_to = cursor;
        Ok(())
    }

    /// Whether a node has a path from a root that makes paths.
    pub fn on_path(&self, node: Node) -> bool {
        let k = self.order[node as usize];
        k != NONE && k != PENDING && k < self.nonpath_from
    }

    pub fn reachable(&self) -> u64 {
        self.visit.len() as u64 - 1
    }

    /// The path from the root to `node`, as nodes (root first).
    pub fn path(&self, node: Node) -> Vec<Node> {
        let mut out = Vec::new();
        let mut k = self.order[node as usize];
        while k != 0 && k != NONE && k != PENDING {
            out.push(self.visit[k as usize]);
            k = self.parent[k as usize];
        }
        out.reverse();
        out
    }

    /// Whether `node`'s path was found only through a known framework leak.
    pub fn through_library(&self, node: Node) -> bool {
        let k = self.order[node as usize];
        k >= self.library_from && k < self.nonpath_from
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
