//! The first half of a run, on the whole graph with its id lookup: classes and known
//! leaks, the references' pass, the finders, the path search, the leaks' traces, the
//! duplicate bitmaps and the triage's counts; then the path search spilled for the
//! dominators.

use super::analysis::Run;
use super::{asked, notes, references};
use crate::base::error::AnalyzeError;
use crate::base::map::Map;
use crate::base::{limits, parked, spare};
use crate::heap::edges;
use crate::heap::graph::{self, Graph, Instances};
use crate::heap::index::{self, Index};
use crate::knowledge::inspect::{self, heap::Heap, kinds::Kinds};
use crate::knowledge::library::LibraryTable;
use crate::knowledge::{device, finders, leaks, metadata};
use crate::model::{HeapMetadata, Leak, UnreachableObject};
use crate::paths::reach::{self, Reach};
use crate::paths::refs;
use crate::paths::{found, Searched};
use crate::report::{bitmaps, counts, strings, triage};
use crate::sizes::by_class::Histogram;
use crate::sizes::native_size;

/// What the analysis lists as the steps up to the dominators found it.
pub struct Listed {
    /// The key looked for, if any (see [`asked::leak_key`]).
    pub key: Option<String>,
    /// Which finders ran.
    pub mode: finders::Mode,
    pub keys_found: Vec<String>,
    pub more_keys: u64,
    pub more_leaks: u64,
    pub unreachable: Vec<UnreachableObject>,
    pub more_unreachable: u64,
    pub duplicates: bitmaps::Duplicates,
}

/// What the steps up to the dominators hand to those after: the graph's edges and roots,
/// the path search (unless spilled), and what the retained sizes and the triage need.
pub struct Traced {
    pub edges: edges::Edges,
    pub roots: Vec<index::Node>,
    pub spare: spare::Spare,
    pub reach: Option<Reach>,
    pub classes: graph::Classes,
    /// The leaks traced, their retained sizes still zero, and their nodes in that order.
    pub leaks: Vec<Leak>,
    pub leak_nodes: Vec<index::Node>,
    pub all_objects: Histogram,
    pub for_triage: ForTriage,
}

/// What the triage takes after the dominators.
pub struct ForTriage {
    pub sizes: parked::Parked<u8>,
    /// The String instances and where their values are, when duplicate Strings are
    /// looked for (not by a census, and only in a heap whose Strings have a `value`).
    pub strings: Option<(strings::StringValues, strings::Strings)>,
    pub native: Map<index::Node, u64>,
    pub counted: triage::Counted,
    pub kinds: Kinds,
    pub watched: inspect::watch::Watched,
}

/// The classes whose instances the triage reads: Cleaners (native sizes), the classes it
/// counts, Strings.
struct TriageClasses {
    cleaners: Vec<u64>,
    counted: counts::Classes,
    strings: Option<strings::StringValues>,
}

impl TriageClasses {
    /// `strings`: whether duplicate Strings are looked for (not for `diff`, which does
    /// not compare them: their hashing is a tenth of the references' pass).
    fn new(g: &Graph<'_, '_>, kinds: &Kinds, strings: bool) -> TriageClasses {
        TriageClasses {
            cleaners: native_size::cleaner_classes(g),
            counted: counts::Classes::new(g, kinds),
            strings: strings.then(|| strings::StringValues::new(g)).flatten(),
        }
    }

    /// The classes whose instances the references' pass keeps for the triage.
    fn all(&self) -> Vec<u64> {
        self.cleaners
            .iter()
            .copied()
            .chain(self.counted.all())
            .collect()
    }
}

/// The key, the inspectors, and the leaking objects found before the path search.
struct Sought<'h> {
    key: Option<String>,
    mode: finders::Mode,
    ins: inspect::Inspectors<'h>,
    /// The finders' candidates (none with a key).
    candidates: Vec<finders::Candidate>,
    /// Every leaking object: the path search's leaves.
    leaves: Vec<index::Node>,
}

impl Run<'_> {
    /// The steps on the whole graph, up to the dominators: classes and known leaks, the
    /// references' pass, the finders, the path search, the leaks' traces, the duplicate
    /// bitmaps and the triage's counts. The graph made on `ix` goes at the end, before its
    /// id lookup does.
    pub fn find_leaks(
        &mut self,
        ix: &Index<'_>,
        metadata: &HeapMetadata,
    ) -> Result<(Listed, Traced), AnalyzeError> {
        let (input, options) = (self.ask.input, self.ask.options);
        // The device, from the heap and the package; the known leaks depend on it.
        let (sdk, manufacturer, device_notes) = metadata::device(
            input.manifest_value("sdkVersion"),
            input.manifest_value("manufacturer"),
            metadata,
        );
        // What the key asks is said first, then what the device's reading found.
        let asked = asked::leak_key(options, input);
        self.notes.extend(asked.note.clone());
        self.notes.extend(device_notes);
        let library = LibraryTable::builtin();
        let g = Graph::new(ix, options.mapping.as_ref());
        self.clock.step("classes");
        self.ask.control.check()?;
        // The known-leak rows that hold for this device, as the path search applies them.
        let device = device::device(&g, sdk, manufacturer.as_deref());
        let path_refs = refs::PathRefs::new(&g, library, &device);
        self.clock.step("known leaks");
        // The instances every finder looks at, the instances the path search reads from
        // the dump, and the shallow sizes of all objects by class, are taken in the pass
        // that reads every object for its references.
        let heap = Heap::new(g.ix, &g);
        let kinds = Kinds::new(&heap);
        let triaged = TriageClasses::new(&g, &kinds, self.ask.looks_for_duplicate_strings());
        let wanted = references::wanted(&g, &heap, &kinds, &triaged.all(), &path_refs);
        self.clock.step("finder classes");
        let references::Passed {
            edges,
            special,
            sizes,
            strings,
            all_objects,
            instances,
            unread,
        } = references::pass(&g, wanted, &triaged.strings, self.ask.unpack);
        self.clock.timings.edge_bytes = edges.memory();
        self.clock.step("references");
        self.ask.control.check()?;
        let sought = self.seek(&g, asked, Inspected { heap, kinds }, &instances);
        self.clock.step("finders");
        let leaves = sought.leaves;
        let searched = reach::Sought {
            special: &special,
            leaves: &leaves,
            traced: limits::MAX_LEAKS,
        };
        let reach = Reach::compute(&g, &edges, path_refs, searched, self.ask.control)?;
        drop((special, leaves));
        self.clock.step("paths");
        let key = sought.key.as_deref();
        let notes = &mut self.notes;
        let found = found::found(&g, &reach, &instances, key, sought.candidates, notes);
        self.clock.step("leaks");
        let ins = sought.ins;
        let (leaks, leak_nodes) = found::traces(&g, &reach, &ins, library, found.to_trace);
        self.clock.step("traces");
        let unreachable = found::unreachable(&g, &ins, found.unreachable_nodes);
        self.clock.step("unreachable");
        // A private package's pixels are a pattern: there is no picture to draw.
        let pictures = options.pictures && !input.private;
        let min_bytes = options.min_bitmap_bytes;
        let duplicates = bitmaps::duplicates(&g, &reach, &ins, &instances, min_bytes, pictures);
        self.clock.step("bitmaps");
        let searched = Searched {
            g: &g,
            reach: &reach,
            ins: &ins,
        };
        let (native, counted) = self.count(searched, instances, &triaged);
        if let Some(note) = notes::unread_note(&g, &unread, leaks.is_empty()) {
            self.notes.push(note);
        }
        self.clock.step("counts");
        self.clock.timings.step_reads = reach.step_reads();
        let (roots, spare, reach) = self.spill_paths(reach, ix);
        let (kinds, watched) = ins.into_parts();
        let listed = Listed {
            key: sought.key,
            mode: sought.mode,
            keys_found: found.keys_found,
            more_keys: found.more_keys,
            more_leaks: found.more_leaks,
            unreachable,
            more_unreachable: found.more_unreachable,
            duplicates,
        };
        let for_triage = ForTriage {
            sizes,
            strings: triaged.strings.map(|values| (values, strings)),
            native,
            counted,
            kinds,
            watched,
        };
        let traced = Traced {
            edges,
            roots,
            spare,
            reach,
            classes: g.classes(),
            leaks,
            leak_nodes,
            all_objects,
            for_triage,
        };
        Ok((listed, traced))
    }

    /// The inspectors on the heap and the leaking objects, with the watchers' notes: the
    /// key `asked` finds them, else the finders its mode runs.
    fn seek<'h>(
        &mut self,
        g: &Graph<'_, '_>,
        asked: asked::Asked,
        inspected: Inspected<'h>,
        instances: &Instances,
    ) -> Sought<'h> {
        let Inspected { heap, kinds } = inspected;
        let values = self.ask.input.field_values;
        // Whether LeakCanary found a watched object retained is in its references'
        // times and keys: values, which a heap graph does not hold.
        let watched = match values {
            true => inspect::watch::Watched::read(&heap, instances),
            false => inspect::watch::Watched::default(),
        };
        self.notes.extend(watched.notes.iter().cloned());
        let mode = match &asked.key {
            Some(_) => finders::Mode::MatrixKey,
            None => finders::Mode::without_key(asked.all_leaks, &watched),
        };
        let ins = inspect::Inspectors::new(heap, kinds, watched).with_values(values);
        if !values {
            not_run_without_values(&ins, instances, asked.key.is_some());
        }
        // Every leaking object, before the search: a path never goes through one
        // (LeakCanary HEAD's leaves). Without a key the finders of the mode find them.
        let candidates = finders::candidates(mode, &ins, instances);
        let leaves: Vec<index::Node> = match &asked.key {
            Some(k) => leaks::by_key(g, &|_| true, instances, k).all,
            None => candidates.iter().map(|c| c.node).collect(),
        };
        Sought {
            key: asked.key,
            mode,
            ins,
            candidates,
            leaves,
        }
    }

    /// The native bytes registered for each object and the triage's counts, from the
    /// pass's `instances`, which go here; with the inspectors' notes and the shrunk dump's.
    fn count(
        &mut self,
        searched: Searched<'_, '_, '_, '_>,
        instances: Instances,
        triaged: &TriageClasses,
    ) -> (Map<index::Node, u64>, triage::Counted) {
        let Searched { g, ins, .. } = searched;
        let registered = native_size::registered(g, &instances, &triaged.cleaners);
        self.notes.extend(registered.note());
        let native = registered.bytes;
        let mut counted = counts::take(
            searched,
            &instances,
            &triaged.counted,
            &native,
            self.ask.options.screen,
        );
        drop(instances);
        self.notes.append(&mut counted.notes);
        self.notes.extend(ins.take_notes());
        self.not_run.extend(ins.take_not_run());
        if self.ask.input.private {
            self.notes.push(notes::PRIVATE.into());
        }
        if self.ask.input.shrunk {
            self.notes.push(notes::SHRUNK.into());
        }
        (native, counted)
    }

    /// The GC roots in the dump's order, and the path search's memory made spare for the
    /// dominators: the search is spilled to a file (when that fails, a census keeps it in
    /// memory, else it is `None` and the triage's objects are shown without paths).
    fn spill_paths(
        &mut self,
        reach: Reach,
        ix: &Index<'_>,
    ) -> (Vec<index::Node>, spare::Spare, Option<Reach>) {
        // The paths are made; their memory goes before the dominators take theirs.
        let roots: Vec<index::Node> = {
            let mut r: Vec<index::Node> = reach.gc_roots().to_vec();
            r.sort_unstable_by_key(|&n| ix.offset(n));
            r
        };
        // Its arrays go to the next step rather than back to the system: the search is
        // written to an unnamed file (2 to 5 bytes an object) for the triage's and the
        // census's paths, read back a few entries a path once the dominators are known.
        let mut spare = spare::Spare::default();
        let unpack = self.ask.unpack;
        let mut held = reach;
        let spilled = unpack.tempfile(None).and_then(|file| {
            unpack.admit("the path search", ix.len() as u64 * 5, &file)?;
            held.spill(file, &mut spare)
        });
        let reach = match spilled {
            Ok(()) => Some(held),
            // A census names its retainers by their paths: it keeps the search in memory.
            Err(e) if self.ask.take_census => {
                self.notes.push(format!(
                    "the path search stayed in memory through the dominators ({} MiB more at the peak): it could not be written to a temporary file ({e})",
                    (ix.len() as u64 * 5).div_ceil(1 << 20)
                ));
                Some(held)
            }
            Err(e) => {
                self.notes.push(format!(
                    "the triage's objects are shown without paths: the path search could not be written to a temporary file ({e})"
                ));
                held.into_spare(&mut spare);
                None
            }
        };
        (roots, spare, reach)
    }
}

/// The steps that read values, recorded as not run on a heap without them: each only when
/// the heap holds objects of the class it reads (LeakCanary's watched references, the
/// Bitmaps), or when it was asked for (a key).
fn not_run_without_values(ins: &inspect::Inspectors<'_>, instances: &Instances, key: bool) {
    let count = |classes: &[u64]| instances.of(classes).len() as u64;
    let watched = count(&inspect::watch::Watched::classes(&ins.heap));
    if watched > 0 {
        let needs = "leakcanary.KeyedWeakReference.retainedUptimeMillis (whether it was retained)";
        ins.not_run(
            "finder",
            finders::Finder::KeyedWeakReference.name(),
            needs.into(),
            watched,
        );
    }
    if key {
        let needs = "DestroyedActivityInfo.mKey's text";
        ins.not_run("finder", finders::Finder::MatrixKey.name(), needs.into(), 0);
    }
    if ins.heap.class("android.os.Build$VERSION").is_some() {
        // The known framework leaks that depend on the device are applied as for a
        // device the heap does not name.
        let needs = "android.os.Build.VERSION.SDK_INT and android.os.Build.MANUFACTURER";
        ins.not_run("step", "known leaks of this device", needs.into(), 0);
    }
    let bitmaps = ins.heap.class(bitmaps::BITMAP).map_or(0, |c| count(&[c]));
    if bitmaps > 0 {
        // Their width and height, when the heap graph has them, make their sizes.
        let (step, needs) = match counts::has_dimensions(ins) {
            true => ("duplicate bitmaps", "android.graphics.Bitmap's pixels"),
            false => (
                "duplicate bitmaps and Bitmap sizes",
                "android.graphics.Bitmap's mWidth, mHeight and pixels",
            ),
        };
        ins.not_run("step", step, needs.into(), bitmaps);
    }
}

/// The heap the inspectors read and the kinds of its classes: what they are made of.
struct Inspected<'h> {
    heap: Heap<'h>,
    kinds: Kinds,
}
