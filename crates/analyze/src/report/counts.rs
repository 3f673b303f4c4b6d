//! The triage's counts, made while the id lookup and the paths are there: Activities
//! (destroyed or not), Fragments, Windows, threads by name, and every Bitmap's size —
//! width × height, Java or registered native bytes, an inferred config, whether it is
//! large (Shark's rule against the screen, KOOM's constant without one) — with the path
//! of the largest.

use hprof_shrink_core::hprof::tags;

use crate::base::map::Map;
use crate::heap::graph::{Graph, Instances};
use crate::heap::index::Node;
use crate::knowledge::inspect::kinds::{Kind, Kinds};
use crate::knowledge::inspect::{self, android};
use crate::model::triage::LIST_CAP;
use crate::model::triage::{BitmapCounts, BitmapInfo, Counts, Screen};
use crate::paths::refs::thread_name;
use crate::paths::trace::traces;
use crate::paths::Searched;
use crate::report::live_bitmaps::{self, LiveBitmap};
use crate::report::triage::{thread_groups, Counted, Top};

/// KOOM's large bitmap: more pixels than this (`DEFAULT_BIG_BITMAP`, 768 × 1366).
pub const KOOM_LARGE_PIXELS: u64 = 768 * 1366;

/// A DisplayMetrics side longer than this (as `--screen` takes) is made up: that
/// DisplayMetrics is noted and not used.
pub const MAX_SCREEN_SIDE: u64 = 100_000;

const BITMAP: &str = "android.graphics.Bitmap";
const DISPLAY_METRICS: &str = "android.util.DisplayMetrics";

/// The classes whose instances the counts read, for the references' pass to collect.
pub struct Classes {
    pub activities: Vec<u64>,
    pub fragments: Vec<u64>,
    pub windows: Vec<u64>,
    pub bitmaps: Vec<u64>,
    pub display_metrics: Vec<u64>,
}

impl Classes {
    pub fn new(g: &Graph<'_, '_>, kinds: &Kinds) -> Classes {
        let below = |name: &str| -> Vec<u64> {
            let Some(base) = g.class_named(name) else {
                return Vec::new();
            };
            g.classes_where(|_| true)
                .into_iter()
                .filter(|&c| g.is_subclass(c, base))
                .collect()
        };
        Classes {
            activities: kinds.classes_with(Kind::Activity.bit()),
            fragments: kinds.classes_with(
                Kind::Fragment.bit() | Kind::SupportFragment.bit() | Kind::AndroidxFragment.bit(),
            ),
            windows: kinds.classes_with(Kind::Window.bit()),
            bitmaps: below(BITMAP),
            display_metrics: below(DISPLAY_METRICS),
        }
    }

    pub fn all(&self) -> impl Iterator<Item = u64> + '_ {
        self.activities
            .iter()
            .chain(&self.fragments)
            .chain(&self.windows)
            .chain(&self.bitmaps)
            .chain(&self.display_metrics)
            .copied()
    }
}

/// The counts, the threads by name and the Bitmaps. An Activity is destroyed as
/// LeakCanary's inspector says (`mDestroyed`, else `mFinished`).
pub fn take(
    searched: Searched<'_, '_, '_, '_>,
    instances: &Instances,
    classes: &Classes,
    native: &Map<Node, u64>,
    screen: Option<(u64, u64)>,
) -> Counted {
    let Searched { g, reach, ins } = searched;
    let reached = |nodes: Vec<Node>| -> Vec<Node> {
        nodes.into_iter().filter(|&n| reach.on_path(n)).collect()
    };
    let acts = reached(instances.of(&classes.activities));
    let destroyed = acts
        .iter()
        .filter(|&&n| {
            ins.inst(n)
                .is_some_and(|o| android::activity_leaking(ins, &o))
        })
        .count() as u64;
    // The threads as Shark counts them: distinct objects of thread-object roots.
    let mut thread_ids: Vec<u64> =
        g.ix.roots
            .iter()
            .filter(|r| r.tag == tags::ROOT_THREAD_OBJECT)
            .map(|r| r.object_id)
            .collect();
    thread_ids.sort_unstable();
    thread_ids.dedup();
    let names = thread_ids.iter().map(|&id| {
        g.ix.node(id)
            .and_then(|n| thread_name(g, n))
            .unwrap_or_else(|| "<no name>".into())
    });
    let (thread_list, threads_left_out) = thread_groups(names);
    if !ins.values() {
        // Neither is in a heap graph: said, rather than counted as none and "<no name>".
        let lacked = [
            (
                "destroyed Activities",
                "android.app.Activity.mDestroyed",
                acts.len(),
            ),
            (
                "threads by name",
                "java.lang.Thread.name's text",
                thread_ids.len(),
            ),
        ];
        for (step, needs, objects) in lacked.into_iter().filter(|l| l.2 > 0) {
            ins.not_run("step", step, needs.into(), objects as u64);
        }
    }
    let mut notes = Vec::new();
    let found = screen_in_heap(g, instances, classes, &mut notes);
    let large = Large::new(found, screen);
    let mut bitmaps = bitmaps(searched, instances, classes, native, large);
    bitmaps.dimensions_unknown = bitmaps.count > 0 && !has_dimensions(ins);
    Counted {
        counts: Counts {
            activities: acts.len() as u64,
            destroyed_activities: destroyed,
            destroyed_unknown: !ins.values() && !acts.is_empty(),
            fragments: reached(instances.of(&classes.fragments)).len() as u64,
            windows: reached(instances.of(&classes.windows)).len() as u64,
            bitmaps: bitmaps.count,
            threads: thread_ids.len() as u64,
        },
        threads: thread_list,
        threads_left_out,
        bitmaps,
        notes,
        ..Counted::default()
    }
}

/// Whether the heap's Bitmaps have their width and height: a dump's do; a heap graph's
/// when ART recorded them (its `bitmap_width_field`, described as `mWidth`).
pub fn has_dimensions(ins: &inspect::Inspectors<'_>) -> bool {
    ins.values()
        || ins
            .heap
            .class(BITMAP)
            .is_some_and(|c| ins.heap.has_field(c, BITMAP, "mWidth"))
}

/// The screen from the heap: the largest `widthPixels × heightPixels` of any
/// DisplayMetrics (a process has several; the largest is the display's, whatever the
/// orientation), as Shark takes it. One with a side over [`MAX_SCREEN_SIDE`] is noted
/// and left out.
fn screen_in_heap(
    g: &Graph<'_, '_>,
    instances: &Instances,
    classes: &Classes,
    notes: &mut Vec<String>,
) -> Option<(u64, u64)> {
    let mut implausible = 0u64;
    let screen = instances
        .of(&classes.display_metrics)
        .into_iter()
        .filter_map(|n| {
            let f = g.fields(n)?;
            let get = |name: &str| {
                f.iter()
                    .find(|(k, _)| k == name)
                    .and_then(|(_, v)| v.as_i64())
                    .filter(|&v| v > 0)
            };
            let (w, h) = (get("widthPixels")? as u64, get("heightPixels")? as u64);
            if w > MAX_SCREEN_SIDE || h > MAX_SCREEN_SIDE {
                implausible += 1;
                return None;
            }
            Some((w, h))
        })
        .max_by_key(|&(w, h)| (w * h, w));
    if implausible > 0 {
        notes.push(format!(
            "DisplayMetrics left out as implausible (a side over {MAX_SCREEN_SIDE} pixels): {implausible}"
        ));
    }
    screen
}

/// Shark's large Bitmap: more pixels than the screen's × 1.1.
fn large_threshold(w: u64, h: u64) -> u64 {
    (w.saturating_mul(h) as f64 * 1.1) as u64
}

/// A Bitmap's config from its bytes per pixel.
fn config(bytes: u64, pixels: u64) -> &'static str {
    if pixels == 0 {
        return "unknown";
    }
    match bytes / pixels {
        1 => "ALPHA_8",
        2 => "RGB_565",
        4 => "ARGB_8888",
        8 => "RGBA_F16",
        _ => "unknown",
    }
}

/// The pixel bytes of a registered size: API 26-28 register 32 bytes more than the
/// pixels, later versions mark a malloc'ed allocation in the low bit.
fn pixel_bytes(native: u64, pixels: u64) -> u64 {
    if native >= 32 && pixels > 0 && (native - 32).is_multiple_of(pixels) {
        native - 32
    } else {
        native & !1
    }
}

/// What a large Bitmap is measured against: the screen, and the pixels over which one
/// is large, by which rule.
struct Large {
    screen: Option<Screen>,
    threshold: u64,
    rule: &'static str,
}

impl Large {
    /// The heap's screen (`found`), else the one given, else KOOM's constant.
    fn new(found: Option<(u64, u64)>, screen: Option<(u64, u64)>) -> Large {
        let (screen, threshold, rule) = match (found, screen) {
            (Some((w, h)), _) => (
                Some(Screen {
                    width: w,
                    height: h,
                    source: "DisplayMetrics".into(),
                }),
                large_threshold(w, h),
                "screen",
            ),
            (None, Some((w, h))) => (
                Some(Screen {
                    width: w,
                    height: h,
                    source: "--screen".into(),
                }),
                large_threshold(w, h),
                "screen",
            ),
            (None, None) => (None, KOOM_LARGE_PIXELS, "koom"),
        };
        Large {
            screen,
            threshold,
            rule,
        }
    }
}

fn bitmaps(
    searched: Searched<'_, '_, '_, '_>,
    instances: &Instances,
    classes: &Classes,
    native: &Map<Node, u64>,
    large: Large,
) -> BitmapCounts {
    let Searched { g, reach, ins } = searched;
    let Large {
        screen,
        threshold,
        rule,
    } = large;
    // The largest, by bytes (ties: the lower id, offered first).
    let mut largest: Top<u64, (BitmapInfo, Node)> = Top::new(LIST_CAP);
    let mut out = BitmapCounts {
        screen,
        large_threshold_pixels: threshold,
        large_rule: rule.into(),
        ..BitmapCounts::default()
    };
    for b in live_bitmaps::live(g, reach, instances.of(&classes.bitmaps)) {
        let LiveBitmap {
            node,
            width,
            height,
            recycled,
            ..
        } = b;
        let java_bytes = b.buffer.map_or(0, |bytes| bytes.len() as u64);
        let native_bytes = native.get(&node).copied().unwrap_or(0);
        let pixels = (width.max(0) as u64).saturating_mul(height.max(0) as u64);
        let config = if java_bytes > 0 {
            config(java_bytes, pixels)
        } else if native_bytes > 0 {
            config(pixel_bytes(native_bytes, pixels), pixels)
        } else {
            "unknown"
        };
        let large = threshold > 0 && pixels > threshold;
        let bytes = java_bytes.saturating_add(native_bytes);
        out.count += 1;
        out.java_bytes = out.java_bytes.saturating_add(java_bytes);
        out.native_bytes = out.native_bytes.saturating_add(native_bytes);
        if large {
            out.large_count += 1;
            out.large_bytes = out.large_bytes.saturating_add(bytes);
        }
        largest.offer(
            bytes,
            (
                BitmapInfo {
                    object_id: g.ix.id(node),
                    width,
                    height,
                    config: config.into(),
                    java_bytes,
                    native_bytes,
                    recycled,
                    large,
                    path: None,
                },
                node,
            ),
        );
    }
    let (kept, left) = largest.finish();
    out.largest_left_out = left;
    let nodes: Vec<Node> = kept.iter().map(|(_, n)| *n).collect();
    out.largest = kept
        .into_iter()
        .zip(traces(g, reach, ins, &nodes))
        .map(|((mut info, _), path)| {
            info.path = path;
            info
        })
        .collect();
    out
}
