//! A leak's title on the groups page: LeakCanary's short description of it
//! (`Leak.shortDescription` in Shark), made from the analysis as recorded. For a library
//! leak, the pattern's text (`instance field android.view.inputmethod.InputMethodManager#mNextServedView`);
//! for an app leak, the first suspect reference as its origin's simple class name and the
//! reference's generic name (`MainActivity$1.this$0`, `ArrayList.[x]`), or the leaking
//! object's class when no reference is suspect.

use hprof_shrink_analyze::model::Leak;

/// The class name without its package (`a.b.C$D` → `C$D`), as LeakCanary's
/// `classSimpleName`.
fn simple(class_name: &str) -> &str {
    class_name.rsplit('.').next().unwrap_or(class_name)
}

/// LeakCanary's short description of `leak`.
pub fn short_description(leak: &Leak) -> String {
    if let Some(lib) = &leak.library_leak {
        return lib
            .leak_pattern
            .clone()
            .unwrap_or_else(|| lib.pattern.clone());
    }
    leak.trace
        .steps
        .iter()
        .find_map(|s| {
            let r = s.reference.as_ref().filter(|r| r.suspect)?;
            Some(format!("{}.{}", simple(&s.class_name), r.generic()))
        })
        .unwrap_or_else(|| leak.class_name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hprof_shrink_analyze::model::LibraryLeak;
    use serde_json::{json, Value};

    /// A step as the analysis JSON has it (built from JSON: fields added to the model
    /// later with defaults need nothing here).
    fn step(class: &str, reference: Option<(&str, &str, bool)>) -> Value {
        json!({
            "objectId": 1, "className": class, "kind": "instance", "leaking": "UNKNOWN",
            "leakingReason": null, "labels": [],
            "reference": reference.map(|(kind, name, suspect)| json!({
                "kind": kind, "name": name, "declaredBy": null, "suspect": suspect,
            })),
        })
    }

    fn leak(steps: Vec<Value>) -> Leak {
        serde_json::from_value(json!({
            "objectId": 9, "className": "com.example.MainActivity", "reason": "",
            "libraryLeak": null, "signature": "", "retainedBytes": 0, "retainedObjects": 0,
            "trace": { "root": "sticky class", "steps": steps },
        }))
        .unwrap()
    }

    #[test]
    fn the_first_suspect_reference_by_simple_class_and_generic_name() {
        let l = leak(vec![
            step(
                "android.app.ActivityThread",
                Some(("static", "sThread", false)),
            ),
            step("java.util.ArrayList", Some(("array", "[3]", true))),
            step("com.example.Listener$1", Some(("field", "this$0", true))),
            step("com.example.MainActivity", None),
        ]);
        assert_eq!(short_description(&l), "ArrayList.[x]");
        let l = leak(vec![
            step("com.example.App", Some(("field", "listener", false))),
            step("com.example.Listener$1", Some(("field", "this$0", true))),
            step("com.example.MainActivity", None),
        ]);
        assert_eq!(short_description(&l), "Listener$1.this$0");
    }

    #[test]
    fn no_suspect_reference_gives_the_class_and_a_library_leak_its_pattern() {
        let mut l = leak(vec![
            step("com.example.App", Some(("field", "a", false))),
            step("com.example.MainActivity", None),
        ]);
        assert_eq!(short_description(&l), "com.example.MainActivity");
        l.library_leak = Some(LibraryLeak {
            pattern: "android.view.inputmethod.InputMethodManager#mNextServedView".into(),
            leak_pattern: Some(
                "instance field android.view.inputmethod.InputMethodManager#mNextServedView".into(),
            ),
            ..LibraryLeak::default()
        });
        assert_eq!(
            short_description(&l),
            "instance field android.view.inputmethod.InputMethodManager#mNextServedView"
        );
    }
}
