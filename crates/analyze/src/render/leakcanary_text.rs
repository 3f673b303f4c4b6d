//! LeakCanary's own text read back: what `HeapAnalysis.toString()` writes (what an app's
//! "Share" sends, what LeakCanary prints in Logcat), 2.x's wording (`Signature:`) and the
//! newest (`Leak fingerprint:`). Its sections (APPLICATION LEAKS, LIBRARY LEAKS,
//! UNREACHABLE OBJECTS, METADATA), each leak's pattern, size, signature and trace, and the
//! metadata, as this analyzer's model ([`Leak`], [`UnreachableObject`]), so that a leak
//! LeakCanary reported and the same leak found in a dump are one group: LeakCanary's
//! signature is this analyzer's ([`crate::model::SIGNATURE_VERSION`]).
//!
//! Any text reads in one pass over its lines, within [`MAX_REPORT_BYTES`]: what is not
//! understood is named ([`Report::not_understood`]), never a failure, unless the text is
//! not LeakCanary's analysis at all ([`ReportError`]). Every list is capped as an
//! analysis's is ([`crate::base::limits`]), every string cut ([`clipped`]).

use sha1::{Digest, Sha1};

use crate::base::limits::{
    MAX_LEAKS, MAX_NAME_BYTES, MAX_NOTES, MAX_STEP_LABELS, MAX_TEXT_BYTES, MAX_UNREACHABLE,
    TRACE_HEAD_STEPS, TRACE_TAIL_STEPS,
};
use crate::base::shown::clipped;
use crate::model::{Leak, LibraryLeak, Reference, Step, Trace, UnreachableObject};
use crate::render::text::GC_ROOTS;

/// The longest text read, in bytes: LeakCanary's text of 50 leaks of long traces is a
/// few hundred kB.
pub const MAX_REPORT_BYTES: usize = 4 << 20;

/// METADATA lines kept.
pub const MAX_METADATA: usize = 64;

/// The zero-width space LeakCanary starts the leaking object's lines with.
const ZWSP: char = '\u{200B}';

/// Why a text is not LeakCanary's analysis.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReportError {
    /// Over [`MAX_REPORT_BYTES`].
    #[error("the text is {0} bytes, over the limit of {MAX_REPORT_BYTES}")]
    TooLarge(usize),
    /// No `HEAP ANALYSIS RESULT` line: not LeakCanary's analysis.
    #[error(
        "not LeakCanary's analysis text (HeapAnalysis.toString()): no \"HEAP ANALYSIS RESULT\" line"
    )]
    NotAReport,
    /// LeakCanary's `HEAP ANALYSIS FAILED`: nothing was found to record.
    #[error("LeakCanary's analysis failed (HEAP ANALYSIS FAILED): it found no leak to record")]
    AnalysisFailed,
}

/// A LeakCanary text, read.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Report {
    /// Its application leaks, then its library leaks: the first [`MAX_LEAKS`].
    pub leaks: Vec<Leak>,
    /// Leaks read past [`MAX_LEAKS`].
    pub omitted_leaks: u64,
    /// Its unreachable objects: the first [`MAX_UNREACHABLE`].
    pub unreachable: Vec<UnreachableObject>,
    /// Unreachable objects read past [`MAX_UNREACHABLE`].
    pub omitted_unreachable: u64,
    /// METADATA's `key: value` lines, in order: the first [`MAX_METADATA`].
    pub metadata: Vec<(String, String)>,
    /// What was not understood (a line, a leak without its trace), with its line number:
    /// the first [`MAX_NOTES`].
    pub not_understood: Vec<String>,
    /// More of it.
    pub omitted_not_understood: u64,
}

impl Report {
    /// The value of the first METADATA line of one of these keys.
    pub fn metadata_value(&self, keys: &[&str]) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| keys.iter().any(|w| k.eq_ignore_ascii_case(w)))
            .map(|(_, v)| v.as_str())
    }

    fn note(&mut self, line: usize, what: String) {
        if self.not_understood.len() < MAX_NOTES {
            self.not_understood.push(format!("line {line}: {what}"));
        } else {
            self.omitted_not_understood += 1;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Section {
    Head,
    Application,
    Library,
    Unreachable,
    Metadata,
    /// STACKTRACE, or what a section's title did not name.
    Other,
}

/// A leak as its lines come.
#[derive(Debug, Default)]
struct Partial {
    line: usize,
    pattern: Option<String>,
    description: Option<String>,
    total_bytes: Option<u64>,
    traces: u64,
    signature: Option<String>,
    root: Option<String>,
    steps: Vec<Step>,
    /// The last step is the leaking object (`╰→`).
    ended: bool,
    /// The leaking object's `Retaining X in N objects`.
    retained: Option<(u64, u64)>,
    in_trace: bool,
    /// Steps left out between the first [`TRACE_HEAD_STEPS`] and the last
    /// [`TRACE_TAIL_STEPS`] (as an analysis keeps a long trace), as they come: a text of
    /// any length holds no more than those.
    omitted_steps: u64,
}

impl Partial {
    fn push_step(&mut self, s: Step) {
        if self.steps.len() == TRACE_HEAD_STEPS + TRACE_TAIL_STEPS {
            self.steps.remove(TRACE_HEAD_STEPS);
            self.omitted_steps += 1;
        }
        self.steps.push(s);
    }
}

/// Reads LeakCanary's text. See the module's doc.
pub fn parse(text: &str) -> Result<Report, ReportError> {
    if text.len() > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge(text.len()));
    }
    let mut r = Report::default();
    let mut section = Section::Head;
    let mut seen_result = false;
    let mut leak: Option<Partial> = None;
    let mut object: Option<Step> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end();
        if line.len() >= 4 && line.bytes().all(|b| b == b'=') {
            finish_leak(&mut r, leak.take());
            finish_object(&mut r, object.take());
            section = Section::Other;
            continue;
        }
        if let Some(s) = section_title(line) {
            finish_leak(&mut r, leak.take());
            finish_object(&mut r, object.take());
            if line == "HEAP ANALYSIS RESULT" {
                seen_result = true;
            }
            if line == "HEAP ANALYSIS FAILED" {
                return Err(ReportError::AnalysisFailed);
            }
            section = s;
            continue;
        }
        if line.is_empty() || boilerplate(line) {
            continue;
        }
        match section {
            Section::Application | Section::Library => {
                leak_line(&mut r, &mut leak, n, line);
            }
            Section::Unreachable => object_line(&mut r, &mut object, n, line),
            Section::Metadata => match line.split_once(": ") {
                Some((k, v)) if r.metadata.len() < MAX_METADATA => r.metadata.push((
                    clipped(k.trim(), MAX_NAME_BYTES),
                    clipped(v.trim(), MAX_TEXT_BYTES),
                )),
                Some(_) => {}
                None => r.note(n, quoted(line)),
            },
            Section::Head | Section::Other => {}
        }
    }
    finish_leak(&mut r, leak.take());
    finish_object(&mut r, object.take());
    if !seen_result {
        return Err(ReportError::NotAReport);
    }
    Ok(r)
}

/// The section a title line opens, if it is one.
fn section_title(line: &str) -> Option<Section> {
    let counted = |suffixes: &[&str]| {
        suffixes.iter().any(|s| {
            line.strip_suffix(s)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    Some(match line {
        "HEAP ANALYSIS RESULT" | "HEAP ANALYSIS FAILED" => Section::Head,
        "METADATA" => Section::Metadata,
        "STACKTRACE" => Section::Other,
        _ if counted(&[" APPLICATION LEAKS", " APPLICATION LEAK"]) => Section::Application,
        _ if counted(&[" LIBRARY LEAKS", " LIBRARY LEAK"]) => Section::Library,
        _ if counted(&[" UNREACHABLE OBJECTS", " UNREACHABLE OBJECT"]) => Section::Unreachable,
        _ => return None,
    })
}

/// The fixed sentences under the section titles.
fn boilerplate(line: &str) -> bool {
    [
        "References underlined with ",
        "Learn more at ",
        "A Library Leak is a leak caused by",
        "See https://",
        "An unreachable object is still in memory",
        "from GC roots.",
        "Please include this in bug reports",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// A line for the report's notes: quoted, cut.
fn quoted(line: &str) -> String {
    format!("not understood: {:?}", clipped(line, 120))
}

/// One line of a leaks section.
fn leak_line(r: &mut Report, leak: &mut Option<Partial>, n: usize, line: &str) {
    // A leak's head line after a trace (or a pattern) starts the next leak.
    let head = |leak: &mut Option<Partial>, r: &mut Report, new: bool| {
        if new || leak.as_ref().is_none_or(|l| l.in_trace) {
            finish_leak(r, leak.take());
            *leak = Some(Partial {
                line: n,
                traces: 1,
                ..Partial::default()
            });
        }
    };
    if let Some(p) = line.strip_prefix("Leak pattern: ") {
        head(leak, r, true);
        if let Some(l) = leak.as_mut() {
            l.pattern = Some(p.trim().to_string());
        }
        return;
    }
    if let Some(bytes) = line
        .strip_suffix(" bytes retained by leaking objects")
        .and_then(|b| b.trim().parse::<u64>().ok())
    {
        head(
            leak,
            r,
            leak.as_ref().is_some_and(|l| l.total_bytes.is_some()),
        );
        if let Some(l) = leak.as_mut() {
            l.total_bytes = Some(bytes);
        }
        return;
    }
    if let Some(count) = line
        .strip_prefix("Displaying only 1 leak trace out of ")
        .and_then(|rest| rest.split_once(' '))
        .and_then(|(c, _)| c.parse::<u64>().ok())
    {
        head(leak, r, false);
        if let Some(l) = leak.as_mut() {
            l.traces = count.max(1);
        }
        return;
    }
    if let Some(sig) = line
        .strip_prefix("Signature: ")
        .or_else(|| line.strip_prefix("Leak fingerprint: "))
    {
        head(
            leak,
            r,
            leak.as_ref().is_some_and(|l| l.signature.is_some()),
        );
        if let Some(l) = leak.as_mut() {
            l.signature = Some(sig.trim().to_string());
        }
        return;
    }
    if let Some(d) = line.strip_prefix("Description: ") {
        match leak.as_mut() {
            Some(l) if !l.in_trace => l.description = Some(d.trim().to_string()),
            _ => r.note(n, quoted(line)),
        }
        return;
    }
    if line == "┬───" {
        head(leak, r, false);
        if let Some(l) = leak.as_mut() {
            l.in_trace = true;
        }
        return;
    }
    match leak.as_mut() {
        // A description goes on over lines until the leak's size, signature or trace.
        Some(l)
            if !l.in_trace
                && l.total_bytes.is_none()
                && l.signature.is_none()
                && l.description
                    .as_ref()
                    .is_some_and(|d| d.len() < MAX_TEXT_BYTES) =>
        {
            if let Some(d) = l.description.as_mut() {
                d.push('\n');
                d.push_str(line);
            }
        }
        Some(l) if l.in_trace && !l.ended => {
            if !trace_line(l, line) {
                r.note(n, quoted(line));
            }
        }
        Some(l) if l.ended => {
            if !leaking_object_line(l, line) {
                r.note(n, quoted(line));
            }
        }
        _ => r.note(n, quoted(line)),
    }
}

/// A line of a trace before its leaking object; false when it is none of a trace's.
fn trace_line(l: &mut Partial, line: &str) -> bool {
    if let Some(root) = line.strip_prefix("│ GC Root: ") {
        l.root = Some(root_words(root.trim()));
        return true;
    }
    if line == "│" {
        return true;
    }
    if let Some(rest) = line.strip_prefix("├─ ") {
        l.push_step(step(rest));
        return true;
    }
    if let Some(rest) = line.strip_prefix("╰→ ") {
        l.push_step(step(rest));
        l.ended = true;
        return true;
    }
    let Some(body) = line.strip_prefix('│') else {
        return false;
    };
    let Some(s) = l.steps.last_mut() else {
        return false;
    };
    let body = body.trim();
    if let Some(r) = body.strip_prefix("↓ ") {
        s.reference = Some(reference(r.trim(), &s.class_name));
    } else if !body.is_empty() && body.chars().all(|c| c == '~') {
        match s.reference.as_mut() {
            Some(r) => r.suspect = true,
            None => return false,
        }
    } else {
        object_detail(s, body, &mut None);
    }
    true
}

/// A line under the leaking object (`\u{200B}     …`); false when it is not one.
fn leaking_object_line(l: &mut Partial, line: &str) -> bool {
    let Some(body) = line.strip_prefix(ZWSP) else {
        return false;
    };
    let Some(s) = l.steps.last_mut() else {
        return false;
    };
    object_detail(s, body.trim(), &mut l.retained);
    true
}

/// An object's line under its name: its status, its retained size, else a label.
fn object_detail(s: &mut Step, body: &str, retained: &mut Option<(u64, u64)>) {
    if let Some(status) = body.strip_prefix("Leaking: ") {
        let (word, why) = match status.split_once(" (") {
            Some((w, why)) => (w, Some(why.strip_suffix(')').unwrap_or(why))),
            None => (status, None),
        };
        s.leaking = match word {
            "YES" | "NO" | "UNKNOWN" => word.into(),
            _ => "UNKNOWN".into(),
        };
        s.leaking_reason = why.map(|w| clipped(w, MAX_TEXT_BYTES));
    } else if let Some(size) = body.strip_prefix("Retaining ").and_then(retaining) {
        *retained = Some(size);
    } else if s.labels.len() < MAX_STEP_LABELS {
        s.labels.push(clipped(body, MAX_TEXT_BYTES));
    } else {
        s.omitted_labels += 1;
    }
}

/// `202 B in 4 objects`, `1.4 kB in 12 objects`: (bytes, objects). LeakCanary writes the
/// size in SI units with one decimal (in the phone's locale: `1,4 kB` too); the bytes are
/// as close as that says.
fn retaining(s: &str) -> Option<(u64, u64)> {
    let (size, objects) = s.split_once(" in ")?;
    let objects = objects.strip_suffix(" objects")?.trim().parse().ok()?;
    let (number, unit) = size.trim().split_once(' ')?;
    let exp = ["B", "kB", "MB", "GB", "TB", "PB", "EB"]
        .iter()
        .position(|u| *u == unit)?;
    let value: f64 = number.replace(',', ".").parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    let bytes = value * 1000f64.powi(exp as i32);
    // Saturating: an f64 past u64::MAX converts to u64::MAX.
    Some((bytes.round() as u64, objects))
}

/// A step from `CLASS TYPE` (`com.example.A instance`, `java.lang.Object[] array`).
fn step(rest: &str) -> Step {
    let rest = rest.trim();
    let (class, kind) = match rest.rsplit_once(' ') {
        Some((c, k)) if matches!(k, "instance" | "class" | "array") => (c, k),
        _ => (rest, "instance"),
    };
    Step {
        object_id: 0,
        class_name: clipped(class, MAX_NAME_BYTES),
        kind: kind.into(),
        leaking: "UNKNOWN".into(),
        leaking_reason: None,
        labels: Vec::new(),
        omitted_labels: 0,
        reference: None,
    }
}

/// A reference line's text after `↓ `: `static Owner.field`, `Owner.field`, `Owner[3]`
/// (2.x before 2.6: `Owner[].[3]`), `Owner<Java Local>`. LeakCanary writes the owner's
/// simple name; the declaring class is the step's own when the names agree.
fn reference(text: &str, class_name: &str) -> Reference {
    let (is_static, text) = match text.strip_prefix("static ") {
        Some(t) => (true, t),
        None => (false, text),
    };
    let simple = class_name.rsplit('.').next().unwrap_or(class_name);
    let owner_class = |owner: &str| {
        let owner = owner.trim_end_matches('.');
        if owner == simple || owner == simple.trim_end_matches("[]") {
            class_name.to_string()
        } else {
            clipped(owner, MAX_NAME_BYTES)
        }
    };
    let (kind, owner, name, reference_type) = if let Some(owner) = text.strip_suffix("<Java Local>")
    {
        ("local", owner, "<Java Local>".to_string(), "LOCAL")
    } else if let Some(at) = array_index(text) {
        ("array", &text[..at], text[at..].to_string(), "ARRAY_ENTRY")
    } else if let Some((owner, field)) = text.split_once('.') {
        let (kind, ty) = if is_static {
            ("static", "STATIC_FIELD")
        } else {
            ("field", "INSTANCE_FIELD")
        };
        (kind, owner, field.to_string(), ty)
    } else {
        ("field", "", text.to_string(), "INSTANCE_FIELD")
    };
    let owner = (!owner.is_empty()).then(|| owner_class(owner));
    let (declared_by, owning_class) = match kind {
        "static" | "field" => (owner, None),
        _ => (None, owner),
    };
    Reference {
        kind: kind.into(),
        name: clipped(&name, MAX_NAME_BYTES),
        declared_by,
        suspect: false,
        reference_type: Some(reference_type.into()),
        owning_class,
        generic_name: (kind == "array").then(|| "[x]".to_string()),
        library_match: None,
        collection: None,
    }
}

/// Where an array entry's `[index]` starts in a reference's text: the first `[` not
/// opening a `[]` of the owner's type; None when the text does not end with `]`.
fn array_index(text: &str) -> Option<usize> {
    if !text.ends_with(']') {
        return None;
    }
    let b = text.as_bytes();
    (0..b.len()).find(|&i| b[i] == b'[' && b.get(i + 1) != Some(&b']'))
}

/// This analyzer's words for a GC root LeakCanary describes (`System class`).
fn root_words(description: &str) -> String {
    GC_ROOTS
        .iter()
        .find(|(_, d)| *d == description)
        .map_or_else(
            || clipped(description, MAX_NAME_BYTES),
            |(w, _)| w.to_string(),
        )
}

/// The leak's fingerprint as LeakCanary computes it, from its trace: the SHA-1 of the
/// suspect references' origin class and generic name; a library leak's, of its pattern.
fn fingerprint(l: &Partial) -> String {
    let mut sha = Sha1::new();
    match &l.pattern {
        Some(p) => sha.update(p.as_bytes()),
        None => {
            for s in &l.steps {
                if let Some(r) = s.reference.as_ref().filter(|r| r.suspect) {
                    sha.update(s.class_name.as_bytes());
                    sha.update(r.generic().as_bytes());
                }
            }
        }
    }
    sha.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn is_signature(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// This analyzer's `class#field` form of LeakCanary's pattern text.
fn pattern_row(text: &str) -> String {
    if let Some(p) = text
        .strip_prefix("static field ")
        .or_else(|| text.strip_prefix("instance field "))
    {
        return p.to_string();
    }
    if let Some(c) = text.strip_prefix("native global variable referencing ") {
        return format!("native global {c}");
    }
    if let Some(t) = text.strip_prefix("local variable on thread ") {
        return format!("thread {t}");
    }
    text.to_string()
}

/// The leak read, in the report; a leak without its trace is named as not understood.
fn finish_leak(r: &mut Report, leak: Option<Partial>) {
    let Some(mut l) = leak else { return };
    if !l.ended {
        r.note(
            l.line,
            "a leak without its trace (┬─── … ╰→ the leaking object): left out".into(),
        );
        return;
    }
    if r.leaks.len() >= MAX_LEAKS {
        r.omitted_leaks += 1;
        return;
    }
    let signature = match l.signature.take().filter(|s| is_signature(s)) {
        Some(s) => s.to_ascii_lowercase(),
        None => {
            r.note(
                l.line,
                "a leak without a signature (40 hex digits): its fingerprint computed from its trace".into(),
            );
            fingerprint(&l)
        }
    };
    // A pattern makes a library leak, in whichever section it came.
    let library_leak = l.pattern.as_ref().map(|p| LibraryLeak {
        pattern: clipped(&pattern_row(p), MAX_NAME_BYTES),
        description: clipped(l.description.as_deref().unwrap_or(""), MAX_TEXT_BYTES),
        leak_pattern: Some(clipped(p, MAX_NAME_BYTES)),
        ..LibraryLeak::default()
    });
    let steps = std::mem::take(&mut l.steps);
    let last = steps.last().cloned().unwrap_or_else(|| step(""));
    let (retained, objects) = l.retained.unwrap_or((l.total_bytes.unwrap_or(0), 0));
    let (omitted_steps, omitted_after) = match l.omitted_steps {
        0 => (0, None),
        n => (n, Some(TRACE_HEAD_STEPS as u64)),
    };
    r.leaks.push(Leak {
        object_id: 0,
        class_name: last.class_name.clone(),
        reason: last.leaking_reason.clone().unwrap_or_default(),
        finders: Vec::new(),
        library_leak,
        trace_signature: None,
        signature,
        retained_bytes: retained,
        retained_native_bytes: 0,
        retained_objects: objects,
        trace_count: l.traces,
        object_ids: Vec::new(),
        total_retained_bytes: l.total_bytes.unwrap_or(retained),
        total_retained_objects: objects,
        total_retained_native_bytes: 0,
        trace: Trace {
            root: l.root.take().unwrap_or_else(|| "unknown".into()),
            steps,
            omitted_steps,
            omitted_after,
        },
    });
}

/// One line of the unreachable objects: `CLASS TYPE`, then its lines (`\u{200B}  …`).
fn object_line(r: &mut Report, object: &mut Option<Step>, n: usize, line: &str) {
    match line.strip_prefix(ZWSP) {
        Some(body) => match object.as_mut() {
            // An unreachable object's size is not kept.
            Some(s) => object_detail(s, body.trim(), &mut None),
            None => r.note(n, quoted(line)),
        },
        None => {
            finish_object(r, object.take());
            *object = Some(step(line));
        }
    }
}

fn finish_object(r: &mut Report, object: Option<Step>) {
    let Some(s) = object else { return };
    if r.unreachable.len() >= MAX_UNREACHABLE {
        r.omitted_unreachable += 1;
        return;
    }
    r.unreachable.push(UnreachableObject {
        object_id: 0,
        class_name: s.class_name,
        kind: s.kind,
        finders: Vec::new(),
        leaking_reason: s.leaking_reason.unwrap_or_default(),
        labels: s.labels,
        omitted_labels: s.omitted_labels,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_LEAKS: &str = "\
====================================
HEAP ANALYSIS RESULT
====================================
1 APPLICATION LEAKS

References underlined with \"~~~\" are likely causes.
Learn more at https://squ.re/leaks.

300 bytes retained by leaking objects
Displaying only 1 leak trace out of 2 with the same leak fingerprint
Leak fingerprint: 0123456789abcdef0123456789abcdef01234567
┬───
│ GC Root: System class
│
├─ com.example.Registry class
│    Leaking: NO (a class is never leaking)
│    ↓ static Registry.sSlots
│                      ~~~~~~
├─ java.lang.Object[] array
│    Leaking: UNKNOWN
│    ↓ Object[3]
│            ~~~
╰→ com.example.A instance
\u{200B}     Leaking: YES (Activity#mDestroyed is true)
\u{200B}     Retaining 1,2 kB in 7 objects
\u{200B}     key = k
====================================
1 LIBRARY LEAKS

Leak pattern: static field android.view.inputmethod.InputMethodManager#sInstance
Description: IMM keeps the last view
12 bytes retained by leaking objects
Signature: 1111111111111111111111111111111111111111
┬───
│ GC Root: Global variable in native code
│
╰→ com.example.B instance
\u{200B}     Leaking: YES (why)
this line is not LeakCanary's
====================================
1 UNREACHABLE OBJECTS

com.example.C instance
\u{200B}  Leaking: YES (watched)
====================================
METADATA

Please include this in bug reports and Stack Overflow questions.

Build.VERSION.SDK_INT: 34
Build.MANUFACTURER: Google
App version: 1.2
====================================";

    #[test]
    fn sections_leaks_traces_and_metadata_are_read() {
        let r = parse(TWO_LEAKS).unwrap();
        assert_eq!(r.leaks.len(), 2);
        let a = &r.leaks[0];
        assert_eq!(a.signature, "0123456789abcdef0123456789abcdef01234567");
        assert_eq!((a.trace_count, a.total_retained_bytes), (2, 300));
        assert_eq!((a.retained_bytes, a.retained_objects), (1200, 7));
        assert_eq!(a.class_name, "com.example.A");
        assert_eq!(a.trace.root, "system class");
        let steps = &a.trace.steps;
        assert_eq!(steps.len(), 3);
        let r0 = steps[0].reference.as_ref().unwrap();
        assert_eq!(
            (r0.kind.as_str(), r0.name.as_str(), r0.suspect),
            ("static", "sSlots", true)
        );
        assert_eq!(r0.declared_by.as_deref(), Some("com.example.Registry"));
        let r1 = steps[1].reference.as_ref().unwrap();
        assert_eq!(
            (r1.kind.as_str(), r1.name.as_str(), r1.generic()),
            ("array", "[3]", "[x]")
        );
        assert_eq!(steps[2].leaking, "YES");
        assert_eq!(steps[2].labels, ["key = k"]);
        let b = &r.leaks[1];
        let lib = b.library_leak.as_ref().unwrap();
        assert_eq!(
            lib.pattern,
            "android.view.inputmethod.InputMethodManager#sInstance"
        );
        assert_eq!(b.trace.root, "JNI global");
        assert_eq!(r.unreachable.len(), 1);
        assert_eq!(r.unreachable[0].leaking_reason, "watched");
        assert_eq!(r.metadata_value(&["App version"]), Some("1.2"));
        assert_eq!(r.metadata.len(), 3);
        assert_eq!(r.not_understood.len(), 1, "{:?}", r.not_understood);
        assert!(
            r.not_understood[0].starts_with("line 39: "),
            "{:?}",
            r.not_understood
        );
    }

    #[test]
    fn a_leak_without_a_signature_gets_leakcanarys_fingerprint_of_its_trace() {
        let text = TWO_LEAKS.replace(
            "Leak fingerprint: 0123456789abcdef0123456789abcdef01234567\n",
            "",
        );
        let r = parse(&text).unwrap();
        let want: String = Sha1::digest(b"com.example.RegistrysSlotsjava.lang.Object[][x]")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(r.leaks[0].signature, want);
        assert!(r.not_understood[0].contains("without a signature"));
    }

    #[test]
    fn anything_else_is_refused_or_read_in_part_without_panicking() {
        assert_eq!(parse(""), Err(ReportError::NotAReport));
        assert_eq!(
            parse("hello\n\u{200B}\n│\n╰→ \n"),
            Err(ReportError::NotAReport)
        );
        let failed = "====================================\nHEAP ANALYSIS FAILED\n";
        assert_eq!(parse(failed), Err(ReportError::AnalysisFailed));
        let big = "x".repeat(MAX_REPORT_BYTES + 1);
        assert_eq!(parse(&big), Err(ReportError::TooLarge(big.len())));
        // Every prefix of a real text reads (in part), whatever line it ends in.
        for cut in 0..TWO_LEAKS.len() {
            if TWO_LEAKS.is_char_boundary(cut) {
                let _ = parse(&TWO_LEAKS[..cut]);
            }
        }
        // A leak cut before its trace is named, not recorded.
        let cut = &TWO_LEAKS[..TWO_LEAKS.find("┬───").unwrap()];
        let r = parse(cut).unwrap();
        assert!(r.leaks.is_empty());
        assert!(
            r.not_understood[0].contains("without its trace"),
            "{:?}",
            r.not_understood
        );
        // A trace of any length keeps its head and tail, and counts the rest.
        let long = TWO_LEAKS.replace(
            "├─ java.lang.Object[] array\n",
            &"├─ java.lang.Object[] array\n".repeat(100_000),
        );
        let r = parse(&long).unwrap();
        let t = &r.leaks[0].trace;
        assert_eq!(t.steps.len(), TRACE_HEAD_STEPS + TRACE_TAIL_STEPS);
        assert_eq!(
            t.omitted_steps,
            100_000 + 2 - (TRACE_HEAD_STEPS + TRACE_TAIL_STEPS) as u64
        );
        assert_eq!(t.steps.last().unwrap().class_name, "com.example.A");
        assert_eq!(t.steps[0].class_name, "com.example.Registry");
        // Hostile sizes saturate.
        assert_eq!(retaining("1e308 EB in 1 objects"), Some((u64::MAX, 1)));
        assert_eq!(retaining("NaN B in 1 objects"), None);
    }

    /// Shark 2.14's own text on every scenario dump (fixtures/scenarios/NAME.shark.txt,
    /// both finders) reads whole, and says what Shark's answer on the same run
    /// (NAME.shark.json) says: each leak's signature, kind, leaking class and size, the
    /// unreachable objects, the SDK.
    #[test]
    fn sharks_text_on_every_scenario_reads_as_sharks_answer() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/scenarios");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let Some(stem) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".shark.txt"))
            else {
                continue;
            };
            let text = std::fs::read_to_string(&path).unwrap();
            let json: serde_json::Value = serde_json::from_slice(
                &std::fs::read(dir.join(format!("{stem}.shark.json"))).unwrap(),
            )
            .unwrap();
            for mode in ["kwr", "filter"] {
                let Some(start) = text.find(&format!("==== {mode} ====\n")) else {
                    continue;
                };
                let rest = &text[start + mode.len() + 11..];
                let section = &rest[..rest.find("\n==== ").map_or(rest.len(), |e| e + 1)];
                let answer = &json[mode];
                let what = format!("{stem} {mode}");
                let r = parse(section).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(
                    r.not_understood.is_empty(),
                    "{what}: {:?}",
                    r.not_understood
                );
                let leaks = answer["leaks"].as_array().unwrap();
                assert_eq!(r.leaks.len(), leaks.len().min(MAX_LEAKS), "{what}");
                for (got, want) in r.leaks.iter().zip(leaks) {
                    assert_eq!(got.signature, want["signature"].as_str().unwrap(), "{what}");
                    assert_eq!(
                        got.library_leak.is_some(),
                        want["kind"] == "library",
                        "{what}"
                    );
                    assert_eq!(
                        got.class_name,
                        want["traces"][0]["leakingObjectClass"].as_str().unwrap(),
                        "{what}"
                    );
                    if let Some(total) = want["totalRetainedHeapByteSize"].as_u64() {
                        assert_eq!(got.total_retained_bytes, total, "{what}");
                    }
                    assert_eq!(
                        got.trace_count,
                        want["traces"].as_array().unwrap().len() as u64,
                        "{what}"
                    );
                }
                assert_eq!(
                    r.unreachable.len(),
                    answer["unreachableObjects"].as_array().map_or(0, Vec::len),
                    "{what}"
                );
                assert!(
                    r.metadata_value(&["Build.VERSION.SDK_INT"]).is_some(),
                    "{what}"
                );
                read += 1;
            }
        }
        assert!(read > 40, "{read} texts read");
    }
}
