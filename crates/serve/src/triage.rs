//! What the server keeps of an analysis's triage (issue 32): the part a package's page
//! shows ([`PackageTriage`], stored as JSON beside the package), and, for a package with
//! no leak, the path of its first top retainer that has one, signed so that packages run
//! out of memory by one cause group together ([`NoLeak`]). Both are cut as the page shows
//! them: each list to [`LIST`] entries (the analysis's own cap), names to
//! [`limits::NAME_BYTES`], paths to the analysis's [`MAX_TRACE_STEPS`] steps without their
//! labels.

use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};

use crate::limits;
use hprof_shrink_analyze::limits::{MAX_NOTES, MAX_TRACE_STEPS};
use hprof_shrink_analyze::model::{Analysis, Trace};
use hprof_shrink_analyze::render::text::not_run_lines;
use hprof_shrink_analyze::render::triage::one_line;
use hprof_shrink_analyze::triage::{
    BitmapCounts, Counts, DuplicateString, ThreadGroup, Triage, LIST_CAP,
};

/// Entries kept of each list: as many as the analysis keeps.
pub const LIST: usize = LIST_CAP;

/// Bytes kept of a duplicated String's value (the analysis keeps 100 characters).
const STRING_BYTES: usize = 400;

/// Bytes kept of one of the analysis's notes (a sentence, a few class names).
const NOTE_BYTES: usize = 1024;

/// The triage as a package's page shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageTriage {
    /// What the shares are of: the reachable objects' Java bytes and registered native
    /// bytes.
    pub heap_bytes: u64,
    /// (See `heap_bytes`.)
    pub heap_native_bytes: u64,
    /// The largest objects the GC roots dominate directly, largest first.
    pub top_retainers: Vec<ShownRetainer>,
    /// Top retainers beyond those kept.
    pub top_retainers_left_out: u64,
    /// Activities, Fragments, Windows, Bitmaps and threads, counted.
    pub counts: Counts,
    /// The app's Bitmaps: count, bytes, the large ones and the largest.
    pub bitmaps: BitmapCounts,
    /// Strings held more than once, most bytes wasted first.
    pub duplicate_strings: Vec<DuplicateString>,
    /// Duplicated values beyond those kept.
    pub duplicate_strings_left_out: u64,
    /// Threads grouped by name.
    pub threads: Vec<ThreadGroup>,
    /// Thread names beyond those kept.
    pub threads_left_out: u64,
    /// What the analysis says the reader should know (a shrunk dump's sizes without the
    /// dropped arrays, …), each cut; `None` in a triage recorded before notes were kept.
    #[serde(default)]
    pub notes: Option<Vec<String>>,
    /// Notes beyond those kept.
    #[serde(default)]
    pub notes_left_out: u64,
    /// The dump is a heap graph (a Perfetto trace, raw or in a package): no field values.
    #[serde(default)]
    pub heap_graph: bool,
    /// The rules and steps that could not run on it (`dump.notRun`), in the analyzer's own
    /// lines (a heading, then one a rule or step: at most one each, about 60), each cut.
    #[serde(default)]
    pub not_run: Vec<String>,
}

/// One of the objects the GC roots dominate directly, largest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShownRetainer {
    /// Its class, cut to the stored name length.
    pub class_name: String,
    /// instance, object array, primitive array or class.
    pub kind: String,
    /// The Java bytes it retains.
    pub retained_bytes: u64,
    /// The registered native bytes it retains.
    pub retained_native_bytes: u64,
    /// Over 10% of the heap (MAT's leak suspect).
    pub suspect: bool,
    /// Its shortest path from a GC root, labels left out.
    pub path: Option<Trace>,
}

/// The first [`LIST`] of `v`, and how many more there were (with `left_out`, those the
/// analysis left out already).
fn first<T>(v: &[T], left_out: u64) -> (Vec<T>, u64)
where
    T: Clone,
{
    let kept = v.len().min(LIST);
    (v[..kept].to_vec(), left_out + (v.len() - kept) as u64)
}

fn name(s: &str) -> String {
    limits::cut(s, limits::NAME_BYTES).into_owned()
}

/// A path as kept: its steps' names cut, their labels left out (counted); none when
/// longer than an analysis makes one.
fn path(t: &Trace) -> Option<Trace> {
    if t.steps.len() > MAX_TRACE_STEPS {
        return None;
    }
    let mut t = t.clone();
    t.root = name(&t.root);
    for s in &mut t.steps {
        s.class_name = name(&s.class_name);
        s.omitted_labels += s.labels.len() as u64;
        s.labels.clear();
        s.leaking_reason = None;
        if let Some(r) = &mut s.reference {
            r.name = name(&r.name);
            r.declared_by = r.declared_by.as_deref().map(name);
            r.owning_class = r.owning_class.as_deref().map(name);
            r.generic_name = r.generic_name.as_deref().map(name);
            r.library_match = None;
            r.collection = None;
        }
    }
    Some(t)
}

impl PackageTriage {
    /// What is kept of an analysis's triage, with its notes; `None` when it has none (an
    /// analyzer before the triage).
    pub fn of(a: &Analysis) -> Option<PackageTriage> {
        let mut t = PackageTriage::of_triage(a.triage.as_ref()?);
        t.notes_of(a);
        t.heap_graph = a.dump.format == hprof_shrink_analyze::perfetto::FORMAT;
        t.not_run = not_run_lines(a)
            .iter()
            .map(|l| limits::cut(l, NOTE_BYTES).into_owned())
            .collect();
        Some(t)
    }

    /// Keeps analysis `a`'s notes, as many as an analysis keeps, each cut.
    pub fn notes_of(&mut self, a: &Analysis) {
        let kept = a.notes.len().min(MAX_NOTES);
        self.notes = Some(
            a.notes[..kept]
                .iter()
                .map(|n| limits::cut(n, NOTE_BYTES).into_owned())
                .collect(),
        );
        self.notes_left_out = a.omitted_notes + (a.notes.len() - kept) as u64;
    }

    /// What is kept of a triage: every list cut to the page's length, names and Strings
    /// cut, paths without labels; no notes (they are the analysis's).
    fn of_triage(t: &Triage) -> PackageTriage {
        let (top, top_left_out) = first(&t.top_retainers, t.top_retainers_left_out);
        let (mut strings, strings_left_out) =
            first(&t.duplicate_strings, t.duplicate_strings_left_out);
        for s in &mut strings {
            s.value = limits::cut(&s.value, STRING_BYTES).into_owned();
        }
        let (mut threads, threads_left_out) = first(&t.threads, t.threads_left_out);
        for g in &mut threads {
            g.name = name(&g.name);
        }
        let mut bitmaps = t.bitmaps.clone();
        let (mut largest, largest_left_out) = first(&bitmaps.largest, bitmaps.largest_left_out);
        for b in &mut largest {
            // The page shows each Bitmap's size, not its path.
            b.path = None;
            b.config = name(&b.config);
        }
        bitmaps.largest = largest;
        bitmaps.largest_left_out = largest_left_out;
        bitmaps.large_rule = name(&bitmaps.large_rule);
        if let Some(s) = &mut bitmaps.screen {
            s.source = name(&s.source);
        }
        PackageTriage {
            heap_bytes: t.heap_bytes,
            heap_native_bytes: t.heap_native_bytes,
            top_retainers: top
                .iter()
                .map(|r| ShownRetainer {
                    class_name: name(&r.object.class_name),
                    kind: name(&r.object.kind),
                    retained_bytes: r.object.retained_bytes,
                    retained_native_bytes: r.object.retained_native_bytes,
                    suspect: r.suspect,
                    path: r.object.path.as_ref().and_then(path),
                })
                .collect(),
            top_retainers_left_out: top_left_out,
            counts: t.counts.clone(),
            bitmaps,
            duplicate_strings: strings,
            duplicate_strings_left_out: strings_left_out,
            threads,
            threads_left_out,
            notes: None,
            notes_left_out: 0,
            heap_graph: false,
            not_run: Vec::new(),
        }
    }
}

/// A package with no leak, by its first top retainer that has a path from a GC root: what
/// its no-leak group is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct NoLeak {
    /// [`path_signature`] of the path.
    pub signature: String,
    /// The top retainer's class.
    pub class_name: String,
    /// The path on one line, cut: the group's title.
    pub title: String,
    /// The Java bytes the top retainer retains.
    pub retained_bytes: u64,
    /// The registered native bytes it retains.
    pub retained_native_bytes: u64,
    /// The path as kept ([`PackageTriage`]'s), JSON.
    pub path: String,
    /// The dump was shrunk with its primitive arrays dropped: the retained size leaves out
    /// their bytes.
    pub shrunk: bool,
}

impl NoLeak {
    /// `None` when the analysis found a leak, has no triage (an analyzer before it), or no
    /// top retainer with a path. The largest retainer often has none (objects held only
    /// by the main thread's locals, which the path search does not follow): the next
    /// with a path is what the package is grouped by.
    pub fn of(a: &Analysis) -> Option<NoLeak> {
        if !a.leaks.is_empty() {
            return None;
        }
        let (r, kept) = a
            .triage
            .as_ref()?
            .top_retainers
            .iter()
            .find_map(|r| Some((r, path(r.object.path.as_ref()?)?)))?;
        Some(NoLeak {
            signature: path_signature(&kept),
            class_name: name(&r.object.class_name),
            title: name(&one_line(&kept)),
            retained_bytes: r.object.retained_bytes,
            retained_native_bytes: r.object.retained_native_bytes,
            path: serde_json::to_string(&kept).unwrap_or_default(),
            shrunk: a.input.shrunk,
        })
    }
}

/// The signature of a path from a GC root, as a leak trace's is made (SHA-1, hex) but of
/// the whole path: the root's type, then each step's class and the generic name of its
/// reference to the next (`[x]` for any array element or collection entry), a gap where
/// the analysis left steps out marked without their count. Object ids, sizes, labels and
/// the length of a gap are not in it, and a run of like steps (a linked list's nodes, each
/// `Node next`) counts as one, a gap inside it too: the same cause in dumps of different
/// devices, or one list at different lengths (under or over the steps a path keeps), signs
/// alike.
pub fn path_signature(t: &Trace) -> String {
    let shown: Vec<Option<String>> = t
        .shown_steps()
        .into_iter()
        .map(|s| {
            s.map(|s| match &s.reference {
                Some(r) => format!("{} {}", s.class_name, r.generic()),
                None => s.class_name.clone(),
            })
        })
        .collect();
    let mut sha = Sha1::new();
    sha.update(t.root.as_bytes());
    sha.update(b"\n");
    let mut last: Option<&String> = None;
    for (i, step) in shown.iter().enumerate() {
        let step = match step {
            Some(step) => step,
            // A gap between two like steps is inside their run.
            None if i > 0 && shown.get(i + 1) == shown.get(i - 1) => continue,
            None => {
                sha.update("…\n".as_bytes());
                last = None;
                continue;
            }
        };
        if last == Some(step) {
            continue;
        }
        sha.update(step.as_bytes());
        sha.update(b"\n");
        last = Some(step);
    }
    hex::encode(sha.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hprof_shrink_analyze::model::{Reference, Step};

    fn step(class: &str, id: u64, field: Option<&str>) -> Step {
        Step {
            object_id: id,
            class_name: class.into(),
            kind: "instance".into(),
            leaking: "UNKNOWN".into(),
            leaking_reason: None,
            labels: vec![format!("label {id}")],
            omitted_labels: 0,
            reference: field.map(|f| Reference {
                kind: if f.starts_with('[') { "array" } else { "field" }.into(),
                name: f.into(),
                ..Reference::default()
            }),
        }
    }

    fn trace(steps: Vec<Step>) -> Trace {
        Trace {
            root: "JNI global".into(),
            steps,
            omitted_steps: 0,
            omitted_after: None,
        }
    }

    /// Object ids, labels and array indexes are not in a path's signature; classes,
    /// fields and the root are.
    #[test]
    fn a_paths_signature_is_its_classes_and_fields() {
        let a = trace(vec![
            step("com.example.Cache", 1, Some("entries")),
            step("java.lang.Object[]", 2, Some("[3]")),
            step("com.example.Entry", 3, None),
        ]);
        let b = trace(vec![
            step("com.example.Cache", 100, Some("entries")),
            step("java.lang.Object[]", 200, Some("[17]")),
            step("com.example.Entry", 300, None),
        ]);
        assert_eq!(path_signature(&a), path_signature(&b));
        let mut c = b.clone();
        c.steps[0].reference.as_mut().unwrap().name = "other".into();
        assert_ne!(path_signature(&a), path_signature(&c));
        let mut d = b.clone();
        d.steps[2].class_name = "com.example.Other".into();
        assert_ne!(path_signature(&a), path_signature(&d));
        let mut e = b;
        e.root = "sticky class".into();
        assert_ne!(path_signature(&a), path_signature(&e));
    }

    /// A chain of `links` list nodes from a holder to a big array, as the analysis keeps
    /// it: whole up to `MAX_TRACE_STEPS`, else its head and tail around a gap.
    fn chain(links: usize) -> Trace {
        let mut steps = vec![step("com.example.Holder", 1, Some("head"))];
        steps.extend((0..links).map(|i| step("com.example.Node", 10 + i as u64, Some("next"))));
        steps.push(step("com.example.Node", 5, Some("payload")));
        steps.push(step("byte[]", 6, None));
        let mut t = trace(steps);
        let head = MAX_TRACE_STEPS / 2;
        if t.steps.len() > MAX_TRACE_STEPS {
            let cut = t.steps.len() - MAX_TRACE_STEPS;
            t.steps.drain(head..head + cut);
            t.omitted_steps = cut as u64;
            t.omitted_after = Some(head as u64);
        }
        t
    }

    /// One list at any length signs alike, kept whole or cut around a gap; a list of
    /// another node class, or a path past it that differs, does not.
    #[test]
    fn a_list_at_any_length_signs_alike() {
        let one = path_signature(&chain(1));
        for links in [2, 40, 50, 70, 90, 10_000] {
            assert_eq!(path_signature(&chain(links)), one, "{links} links");
        }
        let mut other = chain(40);
        other.steps[5].class_name = "com.example.Other".into();
        assert_ne!(path_signature(&other), one);
        let mut end = chain(90);
        let last = end.steps.len() - 1;
        end.steps[last].class_name = "int[]".into();
        assert_ne!(path_signature(&end), one);
        // A gap between unlike steps stays in the signature.
        let mut gapped = chain(3);
        gapped.omitted_steps = 4;
        gapped.omitted_after = Some(1);
        assert_ne!(path_signature(&gapped), one);
    }
}
