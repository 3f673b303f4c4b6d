//! The gate's verdict as JUnit XML, the report GitLab, Jenkins and GitHub's test-report
//! actions read: one `<testsuite>` for the report, one `<testcase>` per finding, a
//! `<failure>` (with the finding's text) where it fails the gate, `<skipped>` for library
//! leaks. A run without findings still holds one passing case, so that a CI server shows
//! the check ran.

use quick_xml::events::{BytesCData, BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;

use crate::gate::{Outcome, Verdict};

/// What the suite is about: its name (`analyze DUMP`, `diff BASE NEW`) and how long the
/// work took.
pub struct Suite<'a> {
    /// The suite's name.
    pub name: &'a str,
    /// Wall-clock seconds the work took.
    pub seconds: f64,
}

/// The verdict as a JUnit XML document.
pub fn render(suite: &Suite<'_>, v: &Verdict) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    // Writing into a Vec cannot fail.
    let _ = write(&mut w, suite, v);
    let mut s = String::from_utf8(w.into_inner()).unwrap_or_default();
    s.push('\n');
    s
}

fn write(w: &mut Writer<Vec<u8>>, suite: &Suite<'_>, v: &Verdict) -> std::io::Result<()> {
    let tests = v.cases.len().max(1).to_string();
    let failures = v.failures().to_string();
    let skipped = v
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Skipped)
        .count()
        .to_string();
    let time = format!("{:.3}", suite.seconds);
    let name = xml_text(suite.name);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let counts = [
        ("tests", tests.as_str()),
        ("failures", failures.as_str()),
        ("errors", "0"),
        ("skipped", skipped.as_str()),
        ("time", time.as_str()),
    ];
    w.write_event(Event::Start(
        BytesStart::new("testsuites")
            .with_attributes([("name", "hprof-shrink")])
            .with_attributes(counts),
    ))?;
    w.write_event(Event::Start(
        BytesStart::new("testsuite")
            .with_attributes([("name", name.as_str())])
            .with_attributes(counts),
    ))?;
    if v.cases.is_empty() {
        w.write_event(Event::Empty(BytesStart::new("testcase").with_attributes([
            ("classname", "hprof-shrink"),
            ("name", "no findings"),
        ])))?;
    }
    for c in &v.cases {
        let case_name = xml_text(&c.name);
        let classname = format!("hprof-shrink.{}", c.kind.replace(' ', "-"));
        w.write_event(Event::Start(BytesStart::new("testcase").with_attributes([
            ("classname", classname.as_str()),
            ("name", case_name.as_str()),
        ])))?;
        let text = xml_text(&c.text);
        match c.outcome {
            Outcome::Failed => {
                let message = format!("{} {}", c.kind, c.signature);
                w.write_event(Event::Start(
                    BytesStart::new("failure")
                        .with_attributes([("message", message.as_str()), ("type", c.kind)]),
                ))?;
                cdata(w, &text)?;
                w.write_event(Event::End(BytesEnd::new("failure")))?;
            }
            Outcome::Skipped => {
                w.write_event(Event::Empty(BytesStart::new("skipped").with_attributes([
                    ("message", "a library leak: not the app's to fix"),
                ])))?;
                system_out(w, &text)?;
            }
            Outcome::Passed { in_baseline } => {
                let head = if in_baseline { "in the baseline\n" } else { "" };
                system_out(w, &format!("{head}{text}"))?;
            }
        }
        w.write_event(Event::End(BytesEnd::new("testcase")))?;
    }
    w.write_event(Event::End(BytesEnd::new("testsuite")))?;
    w.write_event(Event::End(BytesEnd::new("testsuites")))?;
    Ok(())
}

fn system_out(w: &mut Writer<Vec<u8>>, text: &str) -> std::io::Result<()> {
    w.write_event(Event::Start(BytesStart::new("system-out")))?;
    w.write_event(Event::Text(BytesText::new(text)))?;
    w.write_event(Event::End(BytesEnd::new("system-out")))?;
    Ok(())
}

/// The text as CDATA (kept as written, as JUnit viewers show a failure's body); a `]]>` in
/// it is split over two sections (`]]` ends one, `>` starts the next), as XML requires.
fn cdata(w: &mut Writer<Vec<u8>>, text: &str) -> std::io::Result<()> {
    let parts: Vec<&str> = text.split("]]>").collect();
    for (i, part) in parts.iter().enumerate() {
        let head = if i > 0 { ">" } else { "" };
        let tail = if i + 1 < parts.len() { "]]" } else { "" };
        let section = format!("{head}{part}{tail}");
        w.write_event(Event::CData(BytesCData::new(section.as_str())))?;
    }
    Ok(())
}

/// `s` with every character XML 1.0 cannot hold (controls but tab, line feed and carriage
/// return; lone surrogates cannot be in a `str`; U+FFFE, U+FFFF) written as `\u{…}`; what
/// a dump names is escaped before it gets here, this keeps the document valid whatever.
fn xml_text(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c.to_string(),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                format!("\\u{{{:x}}}", c as u32)
            }
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::Case;

    fn case(name: &str, text: &str, outcome: Outcome) -> Case {
        Case {
            kind: "application leak",
            name: name.into(),
            signature: "0".repeat(40),
            text: text.into(),
            outcome,
        }
    }

    #[test]
    fn counts_escapes_and_a_cdata_end_inside_a_failure() {
        let v = Verdict {
            cases: vec![
                case("A<&>\"x\u{1}", "trace ]]> more", Outcome::Failed),
                case("B", "ok", Outcome::Passed { in_baseline: true }),
            ],
        };
        let xml = render(
            &Suite {
                name: "analyze d.hprof",
                seconds: 1.5,
            },
            &v,
        );
        assert!(xml.contains(r#"tests="2" failures="1""#), "{xml}");
        assert!(xml.contains("A&lt;&amp;&gt;&quot;x\\u{1}"), "{xml}");
        assert_eq!(failure_text(&xml), "trace ]]> more", "{xml}");
        assert!(xml.contains("in the baseline"), "{xml}");
    }

    /// The text inside `<failure>`, as an XML reader gives it back.
    fn failure_text(xml: &str) -> String {
        let mut r = quick_xml::Reader::from_str(xml);
        let (mut inside, mut out) = (false, String::new());
        loop {
            match r.read_event().unwrap() {
                Event::Start(e) if e.name().as_ref() == "failure" => inside = true,
                Event::End(e) if e.name().as_ref() == "failure" => inside = false,
                Event::CData(t) if inside => out.push_str(&t),
                Event::Eof => return out,
                _ => {}
            }
        }
    }

    #[test]
    fn no_findings_is_one_passing_case() {
        let xml = render(
            &Suite {
                name: "analyze d.hprof",
                seconds: 0.0,
            },
            &Verdict::default(),
        );
        assert!(xml.contains(r#"tests="1" failures="0""#), "{xml}");
        assert!(xml.contains(r#"name="no findings""#), "{xml}");
    }
}
