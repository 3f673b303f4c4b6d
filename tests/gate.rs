//! The CI gate (`--fail-on`, `--baseline`, `--write-baseline`) and the JUnit report of
//! `analyze`, `diff` and `growth`: the exit statuses a CI job acts on, and the JUnit XML a
//! CI server reads, parsed by a real JUnit parser (Python's junitparser, from the test
//! environment scripts/setup-python.sh makes).

mod support;

use std::path::Path;
use std::process::Command;

use hprof_fixtures::series;
use support::moto::python;
use support::*;

/// What `--fail-on` exits with when it trips.
const EXIT_GATE: i32 = 5;

/// `art-leaks` holds four application leaks and one library leak when every finder runs
/// (`--all-leaks`; LeakCanary's watched objects alone are one of them).
fn leaks_dump() -> std::path::PathBuf {
    fixture("art-leaks.hprof")
}

#[test]
fn analyze_exits_5_on_a_leak_and_a_baseline_lets_known_ones_pass() {
    let dir = tempfile::tempdir().unwrap();
    let dump = leaks_dump();
    // No gate by default, and with `none`: 0 whatever is found.
    for extra in [&[][..], &["--fail-on", "none"]] {
        let o = bin()
            .args(["analyze", "--all-leaks", s(&dump)])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let o = run(&["analyze", "--all-leaks", s(&dump), "--fail-on", "any"]);
    assert_eq!(o.status.code(), Some(EXIT_GATE), "{}", stderr(&o));
    assert!(stderr(&o).contains("4 findings"), "{}", stderr(&o));
    // The report is written all the same.
    assert!(stdout(&o).contains("APPLICATION LEAKS"), "{}", stdout(&o));
    // `new` without a baseline: every leak is new.
    let o = run(&["analyze", "--all-leaks", s(&dump), "--fail-on", "new"]);
    assert_eq!(o.status.code(), Some(EXIT_GATE), "{}", stderr(&o));

    // The baseline this dump writes holds its four application leaks, not the library one.
    let baseline = dir.path().join("known.txt");
    let o = run(&[
        "analyze",
        "--all-leaks",
        s(&dump),
        "--write-baseline",
        s(&baseline),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&baseline).unwrap();
    let signatures: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(signatures.len(), 4, "{text}");
    // Written again: refused without --force, as any output.
    let o = run(&[
        "analyze",
        "--all-leaks",
        s(&dump),
        "--write-baseline",
        s(&baseline),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    let o = run(&[
        "analyze",
        "--all-leaks",
        s(&dump),
        "--fail-on",
        "new",
        "--baseline",
        s(&baseline),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Two of the four forgotten: those two are new.
    let partial = dir.path().join("partial.txt");
    std::fs::write(
        &partial,
        format!("# two known\n{}\n{}\n", signatures[0], signatures[1]),
    )
    .unwrap();
    let o = run(&[
        "analyze",
        "--all-leaks",
        s(&dump),
        "--fail-on",
        "new",
        "--baseline",
        s(&partial),
    ]);
    assert_eq!(o.status.code(), Some(EXIT_GATE), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2 findings not in the baseline"),
        "{}",
        stderr(&o)
    );

    // A baseline that is not one is refused before the work, as a failure.
    let o = bin()
        .args([
            "analyze",
            "--all-leaks",
            s(&dump),
            "-v",
            "--fail-on",
            "new",
            "--baseline",
            s(&dump),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--baseline"), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("index"),
        "before the work: {}",
        stderr(&o)
    );
}

#[test]
fn diff_and_growth_gate_on_what_is_new_and_what_grows() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: Vec<u8>| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    // A cache that grows and leaks in NEW.
    let base = write("base.hprof", series::cache(20, false));
    let new = write("new.hprof", series::cache(60, true));
    let o = run(&["diff", s(&base), s(&base), "--fail-on", "any"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "a dump against itself: {}",
        stderr(&o)
    );
    let o = run(&["diff", s(&base), s(&new), "--fail-on", "any"]);
    assert_eq!(o.status.code(), Some(EXIT_GATE), "{}", stderr(&o));
    assert_eq!(run(&["diff", s(&base), s(&new)]).status.code(), Some(0));

    // Growth: a list gaining items in every step fails the gate; the same dump three
    // times does not.
    let dumps: Vec<_> = (0..3)
        .map(|i| {
            write(
                &format!("g{i}.hprof"),
                series::item_list(10 + 5 * i, 1_700_000_000_000 + i as u64),
            )
        })
        .collect();
    let args = |d: &[&Path]| {
        let mut v: Vec<String> = vec!["growth".into()];
        v.extend(d.iter().map(|p| s(p).to_string()));
        v.extend([
            "--fail-on".into(),
            "any".into(),
            "--format".into(),
            "junit".into(),
        ]);
        v
    };
    let o = bin()
        .args(args(&[&dumps[0], &dumps[1], &dumps[2]]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(EXIT_GATE), "{}", stderr(&o));
    assert!(stdout(&o).contains("<failure"), "{}", stdout(&o));
    // The failing path's signature, taken into a baseline, lets it pass under `new`.
    let xml = stdout(&o);
    let sig = xml
        .split('[')
        .filter_map(|p| p.split(']').next())
        .find(|p| p.starts_with("path:"))
        .unwrap()
        .to_string();
    let baseline = write("b.txt", format!("{sig}\n").into_bytes());
    let mut again = args(&[&dumps[0], &dumps[1], &dumps[2]]);
    again.splice(
        again.len() - 4..again.len() - 2,
        ["--fail-on".into(), "new".into()],
    );
    again.extend(["--baseline".into(), s(&baseline).into()]);
    let o = bin().args(&again).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stderr(&o), stdout(&o));
    let o = bin()
        .args(args(&[&dumps[0], &dumps[0], &dumps[0]]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// The JUnit reports, read by junitparser as GitLab's and Jenkins' readers read them: one
/// test case per finding, the failing ones with the leak trace as their text.
#[test]
fn junit_reports_parse_with_a_junit_parser() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let dump = leaks_dump();
    let xml = dir.path().join("leaks.xml");
    let o = run(&[
        "analyze",
        "--all-leaks",
        s(&dump),
        "--format",
        "junit",
        "--fail-on",
        "any",
        "-o",
        s(&xml),
    ]);
    assert_eq!(o.status.code(), Some(EXIT_GATE), "{}", stderr(&o));
    let script = r#"
import sys
from junitparser import JUnitXml, Failure, Skipped
xml = JUnitXml.fromfile(sys.argv[1])
cases = [c for suite in xml for c in suite]
failed = [c for c in cases if any(isinstance(r, Failure) for r in c.result)]
skipped = [c for c in cases if any(isinstance(r, Skipped) for r in c.result)]
print(len(cases), len(failed), len(skipped), xml.tests, xml.failures)
for c in failed:
    assert "Signature:" in c.result[0].text, c.result[0].text
    assert "GC Root" in c.result[0].text
"#;
    let out = Command::new(&python)
        .args(["-c", script, s(&xml)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "5 4 1 5 4", "{}", stdout(&out));
}
