//! A private package's shown values (`--private`): the Strings the shrink replaced read as
//! redacted where an analysis shows their text, a String map key in a trace and a duplicate
//! String; what was found, and the kept values (names, labels), stay as they are.

use serde_json::Value;

use crate::model::Analysis;

/// What a replaced String reads as.
pub const REDACTED: &str = "‹redacted›";

/// `a` with the replaced Strings' texts redacted. Done on the analysis's JSON form, the one
/// shape every part of it (leaks, bitmaps, triage paths) shares; an analysis that does not
/// go through it (none: it is what `--format json` writes) is left as it was.
pub fn redact(a: Analysis) -> Analysis {
    let Ok(mut v) = serde_json::to_value(&a) else {
        return a;
    };
    walk(&mut v);
    serde_json::from_value(v).unwrap_or(a)
}

fn walk(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                match (k.as_str(), x) {
                    ("reference", Value::Object(r)) => {
                        // A String key as Shark names it: `["text"]` (cut when long).
                        if let Some(Value::String(name)) = r.get_mut("name") {
                            if name.starts_with("[\"") {
                                *name = format!("[\"{REDACTED}\"]");
                            }
                        }
                    }
                    ("duplicateStrings", Value::Array(list)) => {
                        for d in list {
                            if let Some(value) = d.get_mut("value") {
                                *value = Value::String(REDACTED.into());
                            }
                        }
                    }
                    (_, x) => walk(x),
                }
            }
        }
        Value::Array(list) => list.iter_mut().for_each(walk),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_keys_and_duplicate_strings_read_as_redacted_and_nothing_else_changes() {
        let mut v = serde_json::json!({
            "leaks": [{"trace": {"steps": [
                {"reference": {"name": "[\"alice@example.com\"]", "kind": "array"}},
                {"reference": {"name": "[instance @12 of a.B]"}},
                {"reference": {"name": "[\"a long key…[+25 chars]"}},
                {"reference": {"name": "mListeners"}, "labels": ["Thread name: 'main'"]}
            ]}}],
            "triage": {"duplicateStrings": [{"value": "hunter2", "count": 3}]}
        });
        walk(&mut v);
        let steps = &v["leaks"][0]["trace"]["steps"];
        assert_eq!(steps[0]["reference"]["name"], format!("[\"{REDACTED}\"]"));
        assert_eq!(steps[0]["reference"]["kind"], "array");
        assert_eq!(steps[1]["reference"]["name"], "[instance @12 of a.B]");
        assert_eq!(steps[2]["reference"]["name"], format!("[\"{REDACTED}\"]"));
        assert_eq!(steps[3]["reference"]["name"], "mListeners");
        assert_eq!(steps[3]["labels"][0], "Thread name: 'main'");
        assert_eq!(v["triage"]["duplicateStrings"][0]["value"], REDACTED);
        assert_eq!(v["triage"]["duplicateStrings"][0]["count"], 3);
    }
}
