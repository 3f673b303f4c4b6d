//! Known framework leaks and ignored references, as LeakCanary knows them: the table
//! (`library_leaks.json`) is data, one row per pattern, and [`Matchers`] applies the rows
//! that hold for one dump exactly as LeakCanary's Shark does.
//!
//! A row is an *instance field* (any field of that name on an instance whose class or one
//! of its superclasses is the row's class: the closest class's row wins for a name), a
//! *static field* (of exactly that class), a *JNI global* (a JNI global root whose object's
//! class is exactly that class) or a *thread local* (the locals of a thread of that name),
//! and is either *ignored* (never followed) or a *library leak* (followed only when
//! nothing else reaches an object; a leak whose only path goes through one is reported as
//! that known leak). A row holds for a dump when its SDK range holds `Build.VERSION.SDK_INT`,
//! its manufacturers (if any) hold `Build.MANUFACTURER` exactly (case and spaces count, as
//! in Shark), and its `buildId` (if any) equals `Build.ID`. A value the dump does not give
//! rules nothing out.
//!
//! The table also lists Matrix's entries that LeakCanary lacks (`source: matrix`) and the
//! patterns LeakCanary declares but never registers (`registered: false`): they are data,
//! not applied, so that paths and signatures stay LeakCanary's.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;
use serde::Deserialize;

/// What a row matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// A field of an instance whose class, or a superclass, is the row's class.
    Instance,
    /// A static field of exactly the row's class.
    Static,
    /// A JNI global root whose object's class is exactly the row's class.
    JniGlobal,
    /// The locals of a thread of the row's name.
    ThreadLocal,
    /// Matrix only: every instance of a class and its subclasses (never applied).
    Class,
}

impl Kind {
    /// The kind as the JSON writes it (`libraryLeak.kind`): `instance`, `static`, `jniGlobal`,
    /// `threadLocal` or `class`.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Instance => "instance",
            Kind::Static => "static",
            Kind::JniGlobal => "jniGlobal",
            Kind::ThreadLocal => "threadLocal",
            Kind::Class => "class",
        }
    }
}

/// Where a row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// LeakCanary's matchers only.
    Leakcanary,
    /// Matrix's only: data, never applied.
    Matrix,
    /// Both LeakCanary and Matrix.
    Both,
}

/// One row of the table.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    /// Unique: LeakCanary's enum name, with a suffix when the enum has several patterns.
    pub id: String,
    /// What the row matches.
    pub kind: Kind,
    /// The class (`instance`, `static`, `jniGlobal`, `class` rows).
    #[serde(default)]
    pub class: Option<String>,
    /// The field's name (`instance` and `static` rows).
    #[serde(default)]
    pub field: Option<String>,
    /// The thread's name (`threadLocal` rows).
    #[serde(default)]
    pub thread: Option<String>,
    /// Never followed (else a library leak).
    pub ignored: bool,
    /// Inclusive range of `Build.VERSION.SDK_INT` (10000: no upper bound).
    pub sdk: [i64; 2],
    /// `Build.MANUFACTURER` values, compared exactly; any when empty.
    pub manufacturers: Vec<String>,
    /// `Build.ID`, compared exactly, when set.
    #[serde(default)]
    pub build_id: Option<String>,
    /// What the leak is, in the project's words (`libraryLeak.description`).
    pub description: String,
    /// Where the bug is tracked (a URL), when known.
    pub bug: Option<String>,
    /// Who has the pattern (a `matrix` row is never applied).
    pub source: Source,
    /// The LeakCanary (or Matrix) enum constant the row comes from.
    pub upstream_enum: String,
    /// LeakCanary's `ReferencePattern.toString()` for this row.
    #[serde(default)]
    pub pattern: Option<String>,
    /// SHA-1 (hex) of `pattern`: LeakCanary's library-leak fingerprint.
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// False for a pattern LeakCanary declares but never adds to its matchers.
    #[serde(default = "registered")]
    pub registered: bool,
    /// What else decides whether upstream's pattern matches, in words (data: not
    /// applied).
    #[serde(default)]
    pub condition: Option<String>,
    /// Where LeakCanary's versions differ on the row (2.14 against HEAD), in words.
    #[serde(default)]
    pub upstream_note: Option<String>,
    /// Matrix's own entry and range, where it has the pattern too.
    #[serde(default)]
    pub matrix: Option<serde_json::Value>,
}

fn registered() -> bool {
    true
}

/// What a dump says about the device it was taken on (`android.os.Build`, or a package's
/// `result.info`). `None`: not known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Device {
    /// `Build.VERSION.SDK_INT`.
    pub sdk: Option<i64>,
    /// `Build.MANUFACTURER`.
    pub manufacturer: Option<String>,
    /// `Build.ID`.
    pub build_id: Option<String>,
}

impl Entry {
    /// `class#field`, `native global CLASS` or `thread NAME`: how the analysis names the
    /// row (`libraryLeak.pattern`).
    pub fn name(&self) -> String {
        let class = self.class.as_deref().unwrap_or("");
        match self.kind {
            Kind::Instance | Kind::Static => {
                format!("{class}#{}", self.field.as_deref().unwrap_or(""))
            }
            Kind::JniGlobal => format!("native global {class}"),
            Kind::ThreadLocal => format!("thread {}", self.thread.as_deref().unwrap_or("")),
            Kind::Class => class.to_string(),
        }
    }

    /// LeakCanary's text for the pattern (`instance field C#f`, `static field C#f`,
    /// `native global variable referencing C`, `local variable on thread T`): the row's
    /// `pattern`, or made the same way.
    pub fn pattern_text(&self) -> String {
        if let Some(p) = &self.pattern {
            return p.clone();
        }
        let class = self.class.as_deref().unwrap_or("");
        let field = self.field.as_deref().unwrap_or("");
        match self.kind {
            Kind::Instance => format!("instance field {class}#{field}"),
            Kind::Static => format!("static field {class}#{field}"),
            Kind::JniGlobal => format!("native global variable referencing {class}"),
            Kind::ThreadLocal => {
                format!(
                    "local variable on thread {}",
                    self.thread.as_deref().unwrap_or("")
                )
            }
            Kind::Class => format!("class {class}"),
        }
    }

    /// Whether the analysis applies the row at all: LeakCanary's registered patterns only.
    pub fn applied(&self) -> bool {
        self.registered && self.source != Source::Matrix && self.kind != Kind::Class
    }

    /// Whether the row holds on this device. A value the dump does not give rules nothing
    /// out.
    pub fn applies(&self, device: &Device) -> bool {
        // A row for every SDK (LeakCanary's ALWAYS) holds whatever the dump says.
        let sdk_ok = self.sdk == [1, 10000]
            || device
                .sdk
                .is_none_or(|s| (self.sdk[0]..=self.sdk[1]).contains(&s));
        let maker_ok = self.manufacturers.is_empty()
            || device
                .manufacturer
                .as_deref()
                .is_none_or(|m| self.manufacturers.iter().any(|e| e == m));
        let build_ok = match (&self.build_id, &device.build_id) {
            (Some(want), Some(have)) => want == have,
            _ => true,
        };
        sdk_ok && maker_ok && build_ok
    }
}

/// The known leaks' table: [`LibraryTable::builtin`], or one read from JSON.
#[derive(Debug, Clone)]
pub struct LibraryTable {
    /// Its rows, in file order (a row's index is its number in [`Mark::Library`]).
    pub entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct File {
    entries: Vec<Entry>,
}

/// What a matched reference does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Never followed.
    Ignored,
    /// A known leak (the table row): followed last.
    Library(u16),
}

impl LibraryTable {
    /// The table that ships with the tool (parsed once).
    pub fn builtin() -> &'static LibraryTable {
        static TABLE: OnceLock<LibraryTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            LibraryTable::from_json(include_str!("library_leaks.json"))
                .expect("the built-in library leak table is valid (tested)")
        })
    }

    /// A table from the JSON of `library_leaks.json` (`{"entries": [...]}`); an unknown field
    /// is an error.
    pub fn from_json(text: &str) -> Result<LibraryTable, serde_json::Error> {
        let file: File = serde_json::from_str(text)?;
        Ok(LibraryTable {
            entries: file.entries,
        })
    }

    /// The row at `index` (as [`Mark::Library`] holds); panics past the table's end.
    pub fn get(&self, index: u16) -> &Entry {
        &self.entries[index as usize]
    }

    /// The row with this id.
    pub fn by_id(&self, id: &str) -> Option<u16> {
        self.entries
            .iter()
            .position(|e| e.id == id)
            .map(|i| i as u16)
    }

    /// The rows that hold on `device`, by kind, looked up as Shark looks them up.
    pub fn matchers(&self, device: &Device) -> Matchers {
        let mut m = Matchers::default();
        for (i, e) in self.entries.iter().enumerate() {
            if !e.applied() || !e.applies(device) {
                continue;
            }
            let mark = if e.ignored {
                Mark::Ignored
            } else {
                Mark::Library(i as u16)
            };
            let class = e.class.clone().unwrap_or_default();
            let field = e.field.clone().unwrap_or_default();
            // As in Shark, a later row for the same key replaces an earlier one.
            match e.kind {
                Kind::Instance => set(m.instance.entry(class).or_default(), field, mark),
                Kind::Static => set(m.statics.entry(class).or_default(), field, mark),
                Kind::JniGlobal => {
                    m.jni.insert(class, mark);
                }
                Kind::ThreadLocal => {
                    m.threads.insert(e.thread.clone().unwrap_or_default(), mark);
                }
                Kind::Class => {}
            }
        }
        m
    }
}

fn set(list: &mut Vec<(String, Mark)>, field: String, mark: Mark) {
    match list.iter_mut().find(|(f, _)| *f == field) {
        Some(slot) => slot.1 = mark,
        None => list.push((field, mark)),
    }
}

/// The rows that hold on one dump, by what they match.
#[derive(Debug, Clone, Default)]
pub struct Matchers {
    /// Class name → (field name, mark).
    instance: FxHashMap<String, Vec<(String, Mark)>>,
    /// Class name → (static field name, mark).
    statics: FxHashMap<String, Vec<(String, Mark)>>,
    /// Class name of a JNI global root's object → mark.
    jni: FxHashMap<String, Mark>,
    /// Thread name → mark of its locals.
    threads: FxHashMap<String, Mark>,
}

impl Matchers {
    /// The marks of the instance fields of a class whose chain (the class, then each
    /// superclass up to but not including `java.lang.Object`) is `chain`: by field name,
    /// the closest class's row winning, as Shark's field reader does.
    pub fn instance_fields<'c>(
        &self,
        chain: impl IntoIterator<Item = &'c str>,
    ) -> Vec<(String, Mark)> {
        let mut out: Vec<(String, Mark)> = Vec::new();
        if self.instance.is_empty() {
            return out;
        }
        for class in chain {
            if let Some(fields) = self.instance.get(class) {
                for (f, mark) in fields {
                    if !out.iter().any(|(g, _)| g == f) {
                        out.push((f.clone(), *mark));
                    }
                }
            }
        }
        out
    }

    /// The mark of a static field of exactly this class.
    pub fn static_field(&self, class: &str, field: &str) -> Option<Mark> {
        self.statics
            .get(class)?
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| *m)
    }

    /// Whether any static field of this class has a row.
    pub fn has_statics(&self, class: &str) -> bool {
        self.statics.contains_key(class)
    }

    /// The mark of a JNI global root whose object's class (exactly) is `class`.
    pub fn jni_global(&self, class: &str) -> Option<Mark> {
        self.jni.get(class).copied()
    }

    /// The mark of the locals of a thread named `name`.
    pub fn thread(&self, name: &str) -> Option<Mark> {
        self.threads.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha1::Digest;

    fn device(sdk: i64, maker: &str) -> Device {
        Device {
            sdk: Some(sdk),
            manufacturer: Some(maker.to_string()),
            build_id: None,
        }
    }

    fn entry_name(m: Option<Mark>) -> Option<String> {
        match m? {
            Mark::Library(i) => Some(LibraryTable::builtin().get(i).id.clone()),
            Mark::Ignored => Some("ignored".into()),
        }
    }

    const IMM: &str = "android.view.inputmethod.InputMethodManager";

    fn field_mark(m: &Matchers, chain: &[&str], field: &str) -> Option<Mark> {
        m.instance_fields(chain.iter().copied())
            .into_iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| m)
    }

    #[test]
    fn instance_field_rows_match_over_the_class_chain() {
        let m = LibraryTable::builtin().matchers(&device(30, "Google"));
        // The class itself, and a subclass of it (a vendor's InputMethodManager).
        assert_eq!(
            entry_name(field_mark(&m, &[IMM], "mNextServedView")).as_deref(),
            Some("INPUT_METHOD_MANAGER_IS_TERRIBLE__M_NEXT_SERVED_VIEW")
        );
        assert_eq!(
            entry_name(field_mark(&m, &["com.vendor.Imm", IMM], "mNextServedView")).as_deref(),
            Some("INPUT_METHOD_MANAGER_IS_TERRIBLE__M_NEXT_SERVED_VIEW")
        );
        // Another field of the class, or the field on another class, does not match.
        assert_eq!(field_mark(&m, &[IMM], "mH"), None);
        assert_eq!(
            field_mark(&m, &["android.view.View"], "mNextServedView"),
            None
        );
        // referent is ignored on every WeakReference subclass, LeakCanary 1.x's included.
        assert_eq!(
            field_mark(
                &m,
                &[
                    "com.squareup.leakcanary.KeyedWeakReference",
                    "java.lang.ref.WeakReference",
                    "java.lang.ref.Reference"
                ],
                "referent"
            ),
            Some(Mark::Ignored)
        );
    }

    #[test]
    fn the_closest_class_in_the_chain_wins() {
        let table = LibraryTable::from_json(
            r#"{"entries": [
              {"id": "SUPER", "kind": "instance", "class": "a.Base", "field": "f", "ignored": true,
               "sdk": [1, 10000], "manufacturers": [], "description": "d", "bug": null,
               "source": "leakcanary", "upstreamEnum": "SUPER"},
              {"id": "SUB", "kind": "instance", "class": "a.Sub", "field": "f", "ignored": false,
               "sdk": [1, 10000], "manufacturers": [], "description": "d", "bug": null,
               "source": "leakcanary", "upstreamEnum": "SUB"}
            ]}"#,
        )
        .unwrap();
        let m = table.matchers(&Device::default());
        assert_eq!(
            field_mark(&m, &["a.Sub", "a.Base"], "f"),
            Some(Mark::Library(1))
        );
        assert_eq!(field_mark(&m, &["a.Base"], "f"), Some(Mark::Ignored));
        assert_eq!(
            field_mark(&m, &["a.Other", "a.Sub", "a.Base"], "f"),
            Some(Mark::Library(1))
        );
    }

    #[test]
    fn static_field_rows_match_the_exact_class_only() {
        let m = LibraryTable::builtin().matchers(&device(21, "Google"));
        assert_eq!(
            entry_name(m.static_field("android.text.TextLine", "sCached")).as_deref(),
            Some("TEXT_LINE__SCACHED")
        );
        // Not a subclass's static of the same name, not an instance field of that name.
        assert_eq!(m.static_field("android.text.MyTextLine", "sCached"), None);
        assert_eq!(field_mark(&m, &["android.text.TextLine"], "sCached"), None);
    }

    #[test]
    fn jni_global_rows_match_the_root_objects_exact_class() {
        let m = LibraryTable::builtin().matchers(&device(30, "Google"));
        assert_eq!(
            entry_name(m.jni_global("android.widget.Toast$TN")).as_deref(),
            Some("TOAST_TN")
        );
        assert_eq!(m.jni_global("android.widget.Toast"), None);
        // A JNI-global pattern is not a field pattern.
        assert_eq!(field_mark(&m, &["android.widget.Toast$TN"], "mView"), None);
    }

    #[test]
    fn thread_local_rows_match_the_thread_name_exactly() {
        let m = LibraryTable::builtin().matchers(&device(30, "Google"));
        assert_eq!(m.thread("main"), Some(Mark::Ignored));
        assert_eq!(m.thread("FinalizerWatchdogDaemon"), Some(Mark::Ignored));
        assert_eq!(m.thread("main2"), None);
        assert_eq!(m.thread("Main"), None);
        // Not a library leak: the finalizer daemon (in neither source) has no row.
        assert_eq!(m.thread("FinalizerDaemon"), None);
    }

    #[test]
    fn sdk_ranges_are_inclusive() {
        let t = LibraryTable::builtin();
        let at = |sdk| {
            entry_name(field_mark(
                &t.matchers(&device(sdk, "Google")),
                &[IMM],
                "mNextServedView",
            ))
        };
        // 15..=35 (LeakCanary HEAD; v2.14 stopped at 33).
        assert_eq!(at(14), None);
        assert!(at(15).is_some());
        assert!(at(35).is_some());
        assert_eq!(at(36), None);
        // An SDK the dump does not give rules nothing out.
        let unknown = t.matchers(&Device::default());
        assert!(field_mark(&unknown, &[IMM], "mNextServedView").is_some());
    }

    #[test]
    fn manufacturers_compare_exactly() {
        let t = LibraryTable::builtin();
        // Samsung's static ActivityManager.mContext, SDK 22..=23.
        let at = |sdk, maker: &str| {
            entry_name(
                t.matchers(&device(sdk, maker))
                    .static_field("android.app.ActivityManager", "mContext"),
            )
        };
        assert_eq!(
            at(22, "samsung").as_deref(),
            Some("ACTIVITY_MANAGER_MCONTEXT")
        );
        assert_eq!(
            at(23, "samsung").as_deref(),
            Some("ACTIVITY_MANAGER_MCONTEXT")
        );
        assert_eq!(at(24, "samsung"), None);
        assert_eq!(at(21, "samsung"), None);
        // Another maker, or the name spelled otherwise: Shark compares with equals.
        assert_eq!(at(22, "Google"), None);
        assert_eq!(at(22, "Samsung"), None);
        assert_eq!(at(22, "samsung "), None);
        // Not an instance field (the old table's mistake).
        assert_eq!(
            field_mark(
                &t.matchers(&device(22, "samsung")),
                &["android.app.ActivityManager"],
                "mContext"
            ),
            None
        );
        // One pattern, two makers on two SDKs (SystemSensorManager.mAppContextImpl).
        let ssm = |sdk, maker: &str| {
            t.matchers(&device(sdk, maker))
                .static_field("android.hardware.SystemSensorManager", "mAppContextImpl")
                .is_some()
        };
        assert!(ssm(19, "LENOVO"));
        assert!(ssm(22, "vivo"));
        assert!(!ssm(22, "LENOVO"));
        assert!(!ssm(19, "vivo"));
        // Several makers (ResourcesImpl.mAppContext, HEAD adds motorola).
        let res = |maker: &str| {
            t.matchers(&device(30, maker))
                .static_field("android.content.res.ResourcesImpl", "mAppContext")
                .is_some()
        };
        assert!(res("Xiaomi") && res("HMD Global") && res("motorola"));
        assert!(!res("samsung"));
    }

    #[test]
    fn build_id_rows_need_that_build() {
        let t = LibraryTable::builtin();
        let class = "android.window.WindowOnBackInvokedDispatcher$OnBackInvokedCallbackWrapper";
        let at = |id: Option<&str>| {
            let d = Device {
                sdk: Some(32),
                manufacturer: Some("Google".into()),
                build_id: id.map(str::to_string),
            };
            field_mark(&t.matchers(&d), &[class], "mCallback").is_some()
        };
        assert!(at(Some("TPP2.220218.008")));
        assert!(!at(Some("TPP2.220218.009")));
        assert!(at(None));
    }

    #[test]
    fn rows_not_applied_never_match() {
        let m = LibraryTable::builtin().matchers(&device(20, "samsung"));
        // Matrix's own Message.next (SDK <= 21) and a pattern LeakCanary never registers.
        assert_eq!(field_mark(&m, &["android.os.Message"], "next"), None);
        assert_eq!(
            field_mark(&m, &["WV.R9"], "e"),
            None,
            "AW_CONTENTS_POSTED_CALLBACK is declared, not registered"
        );
        // Matrix's class exclusions: WeakReference's other fields are followed.
        assert_eq!(
            field_mark(&m, &["java.lang.ref.WeakReference"], "queue"),
            None
        );
    }

    fn sha1_hex(s: &str) -> String {
        sha1::Sha1::digest(s.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Shark's manufacturer constants (AndroidReferenceMatchers.Companion).
    const MAKERS: &[&str] = &[
        "samsung",
        "motorola",
        "LENOVO",
        "LGE",
        "NVIDIA",
        "Meizu",
        "OnePlus",
        "HUAWEI",
        "vivo",
        "Razer",
        "SHARP",
        "Xiaomi",
        "HMD Global",
        "INFINIX",
        "TES",
        "realme",
    ];

    #[test]
    #[allow(clippy::too_many_lines)] // a test: every row, check by check
    fn every_row_is_well_formed_and_the_counts_are_leakcanarys() {
        let t = LibraryTable::builtin();
        let mut ids = std::collections::HashSet::new();
        for e in &t.entries {
            let what = &e.id;
            assert!(ids.insert(e.id.clone()), "{what}: duplicate id");
            assert!(!e.upstream_enum.is_empty(), "{what}");
            match e.kind {
                Kind::Instance | Kind::Static => {
                    assert!(e.class.as_deref().is_some_and(|c| !c.is_empty()), "{what}");
                    assert!(e.field.as_deref().is_some_and(|f| !f.is_empty()), "{what}");
                    assert!(e.thread.is_none(), "{what}");
                }
                Kind::JniGlobal | Kind::Class => {
                    assert!(e.class.as_deref().is_some_and(|c| !c.is_empty()), "{what}");
                    assert!(e.field.is_none() && e.thread.is_none(), "{what}");
                }
                Kind::ThreadLocal => {
                    assert!(e.thread.as_deref().is_some_and(|t| !t.is_empty()), "{what}");
                    assert!(e.class.is_none() && e.field.is_none(), "{what}");
                }
            }
            assert!(
                1 <= e.sdk[0] && e.sdk[0] <= e.sdk[1] && e.sdk[1] <= 10000,
                "{what}"
            );
            assert!(e.description.trim().len() > 20, "{what}: description");
            assert!(e.description.ends_with('.'), "{what}: description");
            for m in &e.manufacturers {
                assert!(MAKERS.contains(&m.as_str()), "{what}: maker {m}");
            }
            if let Some(bug) = &e.bug {
                assert!(bug.starts_with("https://"), "{what}: {bug}");
            }
            if e.kind != Kind::Class {
                let pattern = e.pattern_text();
                // Shark's own text; only one row keeps a class name without its package
                // (LeakCanary's, which therefore never matches the heap's name).
                let made = {
                    let mut f = e.clone();
                    f.pattern = None;
                    f.pattern_text()
                };
                if e.id != "CONNECTIVITY_MANAGER_CALLBACK_HANDLER" {
                    assert_eq!(pattern, made, "{what}");
                }
                if !e.ignored {
                    assert_eq!(
                        e.fingerprint.as_deref(),
                        Some(sha1_hex(&pattern).as_str()),
                        "{what}"
                    );
                }
            }
        }
        // No two applied rows can match the same reference on the same device.
        let applied: Vec<&Entry> = t.entries.iter().filter(|e| e.applied()).collect();
        for (i, a) in applied.iter().enumerate() {
            for b in &applied[i + 1..] {
                let same_key = a.kind == b.kind
                    && a.class == b.class
                    && a.field == b.field
                    && a.thread == b.thread;
                if !same_key {
                    continue;
                }
                let sdk_overlap = a.sdk[0] <= b.sdk[1] && b.sdk[0] <= a.sdk[1];
                let maker_overlap = a.manufacturers.is_empty()
                    || b.manufacturers.is_empty()
                    || a.manufacturers.iter().any(|m| b.manufacturers.contains(m));
                assert!(
                    !(sdk_overlap && maker_overlap),
                    "{} and {} overlap",
                    a.id,
                    b.id
                );
                assert_eq!(a.pattern_text(), b.pattern_text(), "{} {}", a.id, b.id);
            }
        }
        // LeakCanary's counts (issue 30): 90 registered library patterns, 65 instance
        // field, 16 static, 9 JNI global, 35 tied to a manufacturer; 18 ignored references.
        let library: std::collections::BTreeSet<(String, Kind)> = applied
            .iter()
            .filter(|e| !e.ignored)
            .map(|e| (e.pattern_text(), e.kind))
            .collect();
        assert_eq!(library.len(), 90);
        let of = |k: Kind| library.iter().filter(|(_, kind)| *kind == k).count();
        assert_eq!(
            (of(Kind::Instance), of(Kind::Static), of(Kind::JniGlobal)),
            (65, 16, 9)
        );
        assert_eq!(of(Kind::ThreadLocal), 0);
        let makers: std::collections::BTreeSet<String> = applied
            .iter()
            .filter(|e| !e.ignored && !e.manufacturers.is_empty())
            .map(|e| e.pattern_text())
            .collect();
        assert_eq!(makers.len(), 35);
        let ignored: Vec<&&Entry> = applied.iter().filter(|e| e.ignored).collect();
        assert_eq!(ignored.len(), 18);
        assert_eq!(
            ignored.iter().filter(|e| e.kind == Kind::Instance).count(),
            15
        );
        assert_eq!(
            ignored
                .iter()
                .filter(|e| e.kind == Kind::ThreadLocal)
                .count(),
            3
        );
        // Listed, not applied: 8 declared but unregistered, 10 of Matrix's own.
        assert_eq!(t.entries.iter().filter(|e| !e.registered).count(), 8);
        let matrix: Vec<&Entry> = t
            .entries
            .iter()
            .filter(|e| e.source == Source::Matrix)
            .collect();
        assert_eq!(matrix.len(), 10);
        assert_eq!(matrix.iter().filter(|e| e.kind == Kind::Class).count(), 5);
        assert_eq!(t.entries.len(), 127);
    }

    #[test]
    fn the_old_tables_mistakes_are_gone() {
        let t = LibraryTable::builtin();
        let find = |kind: Kind, class: &str, field: &str| {
            t.entries.iter().find(|e| {
                e.kind == kind
                    && e.class.as_deref() == Some(class)
                    && e.field.as_deref() == Some(field)
            })
        };
        let am = find(Kind::Static, "android.app.ActivityManager", "mContext").unwrap();
        assert_eq!(
            (am.sdk, am.manufacturers.clone()),
            ([22, 23], vec!["samsung".to_string()])
        );
        assert!(find(Kind::Instance, "android.app.ActivityManager", "mContext").is_none());
        assert_eq!(
            find(Kind::Instance, IMM, "mNextServedView").unwrap().sdk,
            [15, 35]
        );
        let watchdog = t
            .entries
            .iter()
            .find(|e| e.thread.as_deref() == Some("FinalizerWatchdogDaemon"))
            .unwrap();
        assert!(watchdog.ignored);
        assert!(!t
            .entries
            .iter()
            .any(|e| e.thread.as_deref() == Some("FinalizerDaemon")));
        assert!(find(
            Kind::Instance,
            "android.view.textservice.SpellCheckerSession",
            "mSpellCheckerSessionListener"
        )
        .is_none());
        assert!(find(
            Kind::Static,
            "android.view.accessibility.AccessibilityNodeInfo",
            "sPool"
        )
        .is_none());
        assert!(find(
            Kind::Static,
            "android.sec.clipboard.ClipboardUIManager",
            "sInstance"
        )
        .is_none());
        assert!(find(
            Kind::Instance,
            "android.sec.clipboard.ClipboardUIManager",
            "mContext"
        )
        .is_some());
    }
}
