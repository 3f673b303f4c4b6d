//! The second half of a run, on the graph made again without its id lookup: the
//! dominators, the duplicate Strings, every object's retained size, the triage, the census
//! when asked, and the reachable objects by class.

use super::analysis::Run;
use super::search::{ForTriage, Traced};
use crate::base::error::AnalyzeError;
use crate::heap::graph::Graph;
use crate::heap::index::{self, Index};
use crate::knowledge::inspect;
use crate::model::Leak;
use crate::paths::found;
use crate::paths::reach::Reach;
use crate::report::census;
use crate::report::{strings, summary, triage};
use crate::sizes::by_class::Sizer;
use crate::sizes::dominators::{self, Fold};
use crate::sizes::subtrees;

/// What the steps from the dominators on hand to the summary.
pub struct Weighed {
    /// Largest first, one per signature.
    pub leaks: Vec<Leak>,
    /// `None` when it was skipped (`--skip triage`).
    pub triage: Option<crate::model::triage::Triage>,
    pub census: Option<census::Census>,
    pub totals: summary::Totals,
}

/// What the subtrees and the triage measured.
struct Triaged {
    /// `None` when it was skipped.
    triage: Option<crate::model::triage::Triage>,
    /// The reachable objects' Java bytes, and the registered native bytes they own.
    reachable_bytes: u64,
    reachable_native_bytes: u64,
    /// The leaks' retained sizes (Java, then native), in the order of their nodes.
    retained: Vec<dominators::Retained>,
    leak_native: Vec<u64>,
    /// The unreachable objects' shallow sizes by class.
    gone: Sizer,
    /// Every number's retained size (for a census).
    trees: subtrees::Subtrees,
}

/// What the subtrees and the triage are measured on.
struct Weighing<'w, 'i, 'a> {
    g: &'w Graph<'i, 'a>,
    doms: &'w dominators::Dominators,
    reach: Option<&'w Reach>,
    leak_nodes: &'w [index::Node],
}

impl Run<'_> {
    /// The dominators on the graph made again on `ix` (its lookup released), the duplicate
    /// Strings, the retained sizes and the triage, the census if asked, and the reachable
    /// objects by class.
    pub fn weigh(&mut self, ix: &Index<'_>, traced: Traced) -> Result<Weighed, AnalyzeError> {
        let Traced {
            edges,
            roots,
            spare,
            reach,
            classes,
            mut leaks,
            leak_nodes,
            all_objects,
            mut for_triage,
        } = traced;
        let g = Graph::with_classes(ix, classes, self.ask.options.mapping.as_ref());
        let doms =
            dominators::Dominators::compute(edges, ix.len(), &roots, spare, self.ask.control)?;
        self.clock.timings.dominator_bytes = doms.peak_bytes;
        self.clock.timings.dominator_steps = doms.steps;
        self.clock.timings.dominator_depth = doms.depth;
        self.clock.step("dominators");
        // Before the subtrees' arrays are made: its maps and tables go when it ends.
        if let Some((values, strings)) = for_triage.strings.take() {
            let counted = &mut for_triage.counted;
            (
                counted.duplicate_strings,
                counted.duplicate_strings_left_out,
            ) = strings::duplicates(&g, &values, &strings, |s| doms.place(s).is_some());
        }
        self.clock.step("strings");
        let weighing = Weighing {
            g: &g,
            doms: &doms,
            reach: reach.as_ref(),
            leak_nodes: &leak_nodes,
        };
        let triaged = self.subtrees_and_triage(weighing, for_triage);
        // Only a census reads every retained size from here on.
        let trees = self.ask.take_census.then_some(triaged.trees);
        let (reachable_objects, reachable_edges) = (doms.reachable, doms.edges);
        let heap_bytes: u64 = all_objects.values().map(|&(_, bytes)| bytes).sum();
        let by_class = summary::reachable_by_class(all_objects, triaged.gone);
        let census = match (trees, &reach) {
            (Some(trees), Some(reach)) => {
                let c = census::take(&doms, &g, reach, &trees, &by_class);
                self.clock.step("census");
                Some(c)
            }
            _ => None,
        };
        if let Some(r) = &reach {
            self.clock.timings.step_reads = r.step_reads();
        }
        drop((reach, doms));
        let retained = triaged.retained.into_iter().zip(triaged.leak_native);
        for (leak, (r, native)) in leaks.iter_mut().zip(retained) {
            (leak.retained_bytes, leak.retained_objects) = (r.bytes, r.objects);
            leak.retained_native_bytes = native;
        }
        self.clock.step("retained sizes");
        self.ask.control.check()?;
        let leaks = found::largest_first(leaks);
        let (top_classes, omitted_top_classes) = summary::top_classes(&g, by_class);
        let totals = summary::Totals {
            heap_bytes,
            reachable_objects,
            reachable_bytes: triaged.reachable_bytes,
            reachable_native_bytes: triaged.reachable_native_bytes,
            reachable_edges,
            top_classes,
            omitted_top_classes,
        };
        Ok(Weighed {
            leaks,
            triage: triaged.triage,
            census,
            totals,
        })
    }

    /// Every object's retained size from the dominators (the leaks' among them), then the
    /// triage on them and on what the earlier steps counted, unless `--skip triage` asked
    /// otherwise (the retained sizes are summed either way: the leaks' and the totals
    /// read them).
    fn subtrees_and_triage(&mut self, weighing: Weighing<'_, '_, '_>, parts: ForTriage) -> Triaged {
        let Weighing {
            g,
            doms,
            reach,
            leak_nodes,
        } = weighing;
        let ForTriage {
            sizes,
            strings: _,
            native,
            counted,
            kinds,
            watched,
        } = parts;
        // Every number's retained size, the leaks' among them, and the shallow bytes of the
        // unreachable objects by class.
        // Unreadable, the sizes are read from the dump again.
        let sizes = sizes.take().unwrap_or_default();
        let by_class = Fold {
            init: Sizer::default,
            add: |sizer: &mut Sizer, key, size| sizer.add_sized(key, size),
            merge: Sizer::merge,
        };
        let codes = subtrees::Sizes {
            codes: &sizes,
            native: &native,
        };
        let keep = crate::model::triage::LIST_CAP;
        let (trees, retained, gone) =
            subtrees::Subtrees::compute(g, doms, codes, keep, leak_nodes, by_class);
        drop(sizes);
        self.clock.step("subtrees");
        let ins = inspect::Inspectors::new(inspect::heap::Heap::new(g.ix, g), kinds, watched)
            .with_values(self.ask.input.field_values);
        let leak_native: Vec<u64> = leak_nodes
            .iter()
            .map(|&n| trees.of_node(g, doms, n, &native).1)
            .collect();
        let weights = triage::Weights {
            doms,
            trees: &trees,
            native: &native,
        };
        let made = self.ask.makes_triage();
        let triage = made.then(|| triage::assemble(g, reach, &ins, weights, counted));
        let reachable_bytes = trees.reachable_java();
        drop((native, ins));
        if made {
            self.clock.step("triage");
        }
        Triaged {
            reachable_native_bytes: trees.reachable().1,
            triage,
            reachable_bytes,
            retained,
            leak_native,
            gone,
            trees,
        }
    }
}
