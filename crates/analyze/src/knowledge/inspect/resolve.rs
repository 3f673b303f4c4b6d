//! Leaking statuses as LeakCanary's Shark resolves them (`HeapAnalyzer.resolveStatus` and
//! `computeLeakStatuses`): one object from all its inspectors' reasons, then a whole path,
//! where a NO makes everything before it NO and a YES everything after it YES, naming the
//! nearest object that decided on its own.

use super::vocab::Report;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Status {
    Yes,
    No,
    #[default]
    Unknown,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Yes => "YES",
            Status::No => "NO",
            Status::Unknown => "UNKNOWN",
        }
    }
}

/// One object on its own: every reason joined with ` and `; NO wins over YES unless
/// `leaking_wins` (the leaking object), the loser named after `. Conflicts with `.
pub fn own(r: &Report, leaking_wins: bool) -> (Status, String) {
    let mut status = Status::Unknown;
    let mut reason = String::new();
    if !r.not_leaking.is_empty() {
        status = Status::No;
        reason = r.not_leaking.join(" and ");
    }
    if !r.leaking.is_empty() {
        let leaking = r.leaking.join(" and ");
        if status == Status::No {
            if leaking_wins {
                status = Status::Yes;
                reason = format!("{leaking}. Conflicts with {reason}");
            } else {
                reason = format!("{reason}. Conflicts with {leaking}");
            }
        } else {
            status = Status::Yes;
            reason = leaking;
        }
    }
    (status, reason)
}

/// [`own`]'s status alone, without building the reason.
pub fn own_status(r: &Report, leaking_wins: bool) -> Status {
    match (r.not_leaking.is_empty(), r.leaking.is_empty()) {
        (true, true) => Status::Unknown,
        (true, false) => Status::Yes,
        (false, true) => Status::No,
        (false, false) if leaking_wins => Status::Yes,
        (false, false) => Status::No,
    }
}

/// The object a trace leads to is leaking whatever its inspectors say.
pub fn leaking_object((status, reason): (Status, String)) -> (Status, String) {
    let reason = match status {
        Status::Yes => reason,
        Status::Unknown => "This is the leaking object".into(),
        Status::No => format!("This is the leaking object. Conflicts with {reason}"),
    };
    (Status::Yes, reason)
}

/// A leaking object without a strong path (Shark's unreachable objects).
pub fn unreachable_object(r: &Report) -> String {
    let (status, reason) = own(r, true);
    match status {
        Status::Yes => reason,
        Status::Unknown => "This is a leaking object".into(),
        Status::No => format!("This is a leaking object. Conflicts with {reason}"),
    }
}

/// An object before the last NO, whose nearest own-NO object after it is `below` (a
/// simple class name).
pub fn below_not_leaking(below: &str, (status, reason): (Status, String)) -> (Status, String) {
    let reason = match status {
        Status::Unknown => format!("{below}↓ is not leaking"),
        Status::No => format!("{below}↓ is not leaking and {reason}"),
        Status::Yes => format!("{below}↓ is not leaking. Conflicts with {reason}"),
    };
    (Status::No, reason)
}

/// An object after the first YES (and before the leaking object), whose nearest own-YES
/// object before it is `above`.
pub fn above_leaking(above: &str, (status, reason): (Status, String)) -> (Status, String) {
    let reason = match status {
        Status::No | Status::Unknown => format!("{above}↑ is leaking"),
        Status::Yes => format!("{above}↑ is leaking and {reason}"),
    };
    (Status::Yes, reason)
}

/// A path's statuses from each object's own (`own[i]`; the last already forced YES for a
/// leak): `(last NO, first YES after it)`, the bounds of the suspect references.
pub fn bounds(own: &[Status]) -> (Option<usize>, usize) {
    let last = own.len().saturating_sub(1);
    let last_no = own.iter().rposition(|&s| s == Status::No);
    let from = last_no.map_or(0, |n| n + 1);
    let first_yes = (from..own.len())
        .find(|&i| own[i] == Status::Yes)
        .unwrap_or(last);
    (last_no, first_yes)
}

/// Resolves a whole path given each object's own status and reason (`(status, reason)`;
/// the last one the leaking object's, already forced YES) and simple class names: Shark's
/// `computeLeakStatuses` on its own, as the tests state it.
#[cfg(test)]
pub fn path(mut own: Vec<(Status, String)>, names: &[&str]) -> Vec<(Status, String)> {
    let statuses: Vec<Status> = own.iter().map(|(s, _)| *s).collect();
    let (last_no, first_yes) = bounds(&statuses);
    let last = own.len().saturating_sub(1);
    for (i, o) in own.iter_mut().enumerate() {
        if let Some(l) = last_no.filter(|&l| i < l) {
            let j = (i + 1..=l)
                .find(|&j| statuses[j] == Status::No)
                .unwrap_or(l);
            *o = below_not_leaking(names[j], std::mem::take(o));
        } else if i > first_yes && i < last {
            let j = (first_yes..i)
                .rev()
                .find(|&j| statuses[j] == Status::Yes)
                .unwrap_or(first_yes);
            *o = above_leaking(names[j], std::mem::take(o));
        }
    }
    own
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(yes: &[&str], no: &[&str]) -> Report {
        Report {
            labels: vec![],
            leaking: yes.iter().map(|s| s.to_string()).collect(),
            not_leaking: no.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn run(objects: &[(&str, &[&str], &[&str])]) -> Vec<(Status, String)> {
        let last = objects.len() - 1;
        let own: Vec<(Status, String)> = objects
            .iter()
            .enumerate()
            .map(|(i, (_, yes, no))| {
                let r = own(&report(yes, no), i == last);
                if i == last {
                    leaking_object(r)
                } else {
                    r
                }
            })
            .collect();
        let names: Vec<&str> = objects.iter().map(|o| o.0).collect();
        path(own, &names)
    }

    // The cases of LeakCanary's LeakStatusTest, in its words.
    #[test]
    fn no_wins_over_yes_except_on_the_leaking_object() {
        let (s, r) = own(
            &report(&["Class1 is leaking"], &["Class1 is not leaking"]),
            false,
        );
        assert_eq!(
            (s, r.as_str()),
            (
                Status::No,
                "Class1 is not leaking. Conflicts with Class1 is leaking"
            )
        );
        let (s, r) = own(
            &report(&["Class1 is leaking"], &["Class1 is not leaking"]),
            true,
        );
        assert_eq!(
            (s, r.as_str()),
            (
                Status::Yes,
                "Class1 is leaking. Conflicts with Class1 is not leaking"
            )
        );
        assert_eq!(own_status(&report(&["a"], &["b"]), false), Status::No);
        assert_eq!(own_status(&report(&["a"], &["b"]), true), Status::Yes);
    }

    #[test]
    fn no_propagates_up_naming_the_nearest_object_that_decided() {
        let got = run(&[
            ("GcRoot", &[], &["a class is never leaking"]),
            ("Class1", &[], &[]),
            ("Class2", &["Class2 is leaking"], &[]),
            ("Class3", &[], &["Class3 is not leaking"]),
            ("Leaking", &[], &[]),
        ]);
        assert_eq!(
            got[0],
            (
                Status::No,
                "Class3↓ is not leaking and a class is never leaking".into()
            )
        );
        assert_eq!(got[1], (Status::No, "Class3↓ is not leaking".into()));
        assert_eq!(
            got[2],
            (
                Status::No,
                "Class3↓ is not leaking. Conflicts with Class2 is leaking".into()
            )
        );
        assert_eq!(got[3], (Status::No, "Class3 is not leaking".into()));
        assert_eq!(got[4], (Status::Yes, "This is the leaking object".into()));
    }

    #[test]
    fn yes_propagates_down_from_the_first_yes_after_the_last_no() {
        let got = run(&[
            ("GcRoot", &[], &["a class is never leaking"]),
            ("Class1", &[], &[]),
            ("Class2", &["Class2 is leaking"], &[]),
            ("Class3", &[], &[]),
            ("Class4", &["Class4 is leaking"], &[]),
            ("Class5", &[], &[]),
            ("Leaking", &["its lifecycle has ended"], &[]),
        ]);
        assert_eq!(got[0].0, Status::No);
        assert_eq!(got[1], (Status::Unknown, String::new()));
        assert_eq!(got[2], (Status::Yes, "Class2 is leaking".into()));
        assert_eq!(got[3], (Status::Yes, "Class2↑ is leaking".into()));
        assert_eq!(
            got[4],
            (
                Status::Yes,
                "Class2↑ is leaking and Class4 is leaking".into()
            )
        );
        assert_eq!(got[5], (Status::Yes, "Class4↑ is leaking".into()));
        assert_eq!(got[6], (Status::Yes, "its lifecycle has ended".into()));
    }

    #[test]
    fn the_leaking_object_wins_its_own_conflict() {
        let got = run(&[
            (
                "GcRoot",
                &["GcRoot is leaking"],
                &["a class is never leaking"],
            ),
            ("Leaking", &[], &["Leaking is not leaking"]),
        ]);
        // The last NO is the root's own: nothing before it to force, and the leaking
        // object's NO does not count (LeakStatusTest's gcRootClassNotLeakingConflicting...).
        assert_eq!(
            got[0],
            (
                Status::No,
                "a class is never leaking. Conflicts with GcRoot is leaking".into()
            )
        );
        assert_eq!(
            got[1],
            (
                Status::Yes,
                "This is the leaking object. Conflicts with Leaking is not leaking".into()
            )
        );
    }
}
