//! Known framework leaks: references in Android itself (or a manufacturer's version of it)
//! that keep an Activity alive for a while. The table is data (`library_leaks.json`), by
//! SDK range and manufacturer. The path search visits these references last, so a path
//! that avoids them wins; a leak whose only path goes through one is a library leak.

use serde::Deserialize;

/// What an entry matches.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Pattern {
    /// An instance field, by the class that declares it.
    Field { class: String, field: String },
    /// A static field of a class.
    Static { class: String, field: String },
    /// Any local variable of a thread with this name.
    Thread { thread: String },
}

#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    #[serde(flatten)]
    pub pattern: Pattern,
    /// Inclusive range of SDK_INT the leak exists in.
    pub sdk: [i64; 2],
    /// `Build.MANUFACTURER` values the leak exists on (compared case-insensitively); any
    /// when empty.
    pub manufacturers: Vec<String>,
    pub description: String,
}

impl Entry {
    /// `class#field`, or `thread NAME`.
    pub fn name(&self) -> String {
        match &self.pattern {
            Pattern::Field { class, field } | Pattern::Static { class, field } => {
                format!("{class}#{field}")
            }
            Pattern::Thread { thread } => format!("thread {thread}"),
        }
    }

    /// Whether the entry applies to a dump of this SDK and manufacturer. An unknown SDK
    /// or manufacturer (a raw dump) does not rule an entry out.
    pub fn applies(&self, sdk: Option<i64>, manufacturer: Option<&str>) -> bool {
        let sdk_ok = sdk.is_none_or(|s| (self.sdk[0]..=self.sdk[1]).contains(&s));
        let maker_ok = self.manufacturers.is_empty()
            || manufacturer.is_none_or(|m| {
                self.manufacturers
                    .iter()
                    .any(|e| e.eq_ignore_ascii_case(m.trim()))
            });
        sdk_ok && maker_ok
    }
}

/// A reference to look up.
#[derive(Debug, Clone, Copy)]
pub enum LibraryMatch<'s> {
    /// (declaring class, field)
    Field(&'s str, &'s str),
    /// (class, static field)
    Static(&'s str, &'s str),
    Thread(&'s str),
}

#[derive(Debug, Clone)]
pub struct LibraryTable {
    pub entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct File {
    entries: Vec<Entry>,
}

impl LibraryTable {
    /// The table that ships with the tool.
    pub fn builtin() -> LibraryTable {
        let file: File = serde_json::from_str(include_str!("library_leaks.json"))
            .expect("the built-in library leak table is valid JSON (tested)");
        LibraryTable {
            entries: file.entries,
        }
    }

    /// The entry (its index) matching a reference, among those that apply.
    pub fn find(
        &self,
        what: LibraryMatch<'_>,
        sdk: Option<i64>,
        manufacturer: Option<&str>,
    ) -> Option<u16> {
        self.entries
            .iter()
            .position(|e| {
                let hit = match (&e.pattern, what) {
                    (Pattern::Field { class, field }, LibraryMatch::Field(c, f))
                    | (Pattern::Static { class, field }, LibraryMatch::Static(c, f)) => {
                        class == c && field == f
                    }
                    (Pattern::Thread { thread }, LibraryMatch::Thread(t)) => thread == t,
                    _ => false,
                };
                hit && e.applies(sdk, manufacturer)
            })
            .map(|i| i as u16)
    }

    pub fn get(&self, index: u16) -> &Entry {
        &self.entries[index as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_field_entries_match_by_declaring_class_and_sdk() {
        let t = LibraryTable::builtin();
        let imm = "android.view.inputmethod.InputMethodManager";
        let e = t.find(LibraryMatch::Field(imm, "mNextServedView"), Some(25), None);
        assert_eq!(t.get(e.unwrap()).name(), format!("{imm}#mNextServedView"));
        // Outside its SDK range, and a static of the same name, do not match.
        assert_eq!(
            t.find(LibraryMatch::Field(imm, "mNextServedView"), Some(34), None),
            None
        );
        assert_eq!(
            t.find(LibraryMatch::Static(imm, "mNextServedView"), Some(25), None),
            None
        );
        // A raw dump (SDK unknown) keeps the entry.
        assert!(t
            .find(LibraryMatch::Field(imm, "mNextServedView"), None, None)
            .is_some());
    }

    #[test]
    fn static_field_entries_match_by_class() {
        let t = LibraryTable::builtin();
        assert!(t
            .find(
                LibraryMatch::Static("android.text.TextLine", "sCached"),
                Some(21),
                None
            )
            .is_some());
        assert_eq!(
            t.find(
                LibraryMatch::Static("android.text.TextLine", "sCached"),
                Some(23),
                None
            ),
            None
        );
        assert_eq!(
            t.find(
                LibraryMatch::Field("android.text.TextLine", "sCached"),
                Some(21),
                None
            ),
            None
        );
    }

    #[test]
    fn manufacturer_entries_match_only_their_makers() {
        let t = LibraryTable::builtin();
        let m = LibraryMatch::Static("android.sec.clipboard.ClipboardUIManager", "sInstance");
        assert!(t.find(m, Some(20), Some("samsung")).is_some());
        assert!(t.find(m, Some(20), Some("Samsung ")).is_some());
        assert_eq!(t.find(m, Some(20), Some("Google")), None);
        assert!(t.find(m, Some(20), None).is_some());
    }

    #[test]
    fn thread_entries_match_by_thread_name() {
        let t = LibraryTable::builtin();
        assert!(t
            .find(
                LibraryMatch::Thread("FinalizerWatchdogDaemon"),
                Some(30),
                None
            )
            .is_some());
        assert_eq!(t.find(LibraryMatch::Thread("main"), Some(30), None), None);
    }

    #[test]
    fn every_entry_is_well_formed() {
        for e in LibraryTable::builtin().entries {
            assert!(e.sdk[0] <= e.sdk[1], "{}", e.name());
            assert!(!e.description.is_empty(), "{}", e.name());
        }
    }
}
