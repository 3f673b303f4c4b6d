//! R8/ProGuard `mapping.txt`: obfuscated class and field names back to the source's, so
//! traces read as the code and signatures stay the same across releases.
//!
//! The format: `original.Class -> obfuscated.a:` starts a class; indented lines under it
//! are its members, `type name -> a` for a field and `…(args) -> b` for a method; `#`
//! starts a comment.

use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::Arc;

use hprof_shrink_core::hprof::open_regular;

use crate::base::error::AnalyzeError;

/// The largest mapping file read (the mapping of a very large app is a few hundred MB).
/// Its text is kept, and its tables take 24 bytes a class and 16 a field on top
/// ([`Mapping::heap_bytes`]): no more than twice the text in all, once, however many
/// analyses share it (`diff`'s and `growth`'s dumps share one).
pub const MAX_MAPPING_BYTES: u64 = 1 << 30;

/// A mapping, shared by its clones.
#[derive(Debug, Default, Clone)]
pub struct Mapping(Arc<Tables>);

/// A name in the text: its start and length (the text is at most [`MAX_MAPPING_BYTES`]).
#[derive(Debug, Clone, Copy)]
struct Span {
    at: u32,
    len: u32,
}

#[derive(Debug, Clone, Copy)]
struct Class {
    obfuscated: Span,
    original: Span,
    /// Its fields in [`Tables::fields`], sorted by their obfuscated names.
    fields: (u32, u32),
}

#[derive(Debug, Default)]
struct Tables {
    /// The file's text: every name is a span of it.
    text: Box<str>,
    /// Sorted by their obfuscated names (stably: a class named twice, its last block
    /// first found from the end).
    classes: Vec<Class>,
    /// (obfuscated, original) names of fields, each class's together.
    fields: Vec<(Span, Span)>,
}

impl Tables {
    fn name(&self, s: Span) -> &str {
        self.text
            .get(s.at as usize..(s.at as usize).saturating_add(s.len as usize))
            .unwrap_or("")
    }

    /// The classes of this obfuscated name, in the file's order.
    fn classes_named(&self, obfuscated: &str) -> &[Class] {
        let from = self
            .classes
            .partition_point(|c| self.name(c.obfuscated) < obfuscated);
        let to = self
            .classes
            .partition_point(|c| self.name(c.obfuscated) <= obfuscated);
        &self.classes[from..to]
    }

    /// A class's field of this obfuscated name (the last of its block when named twice).
    fn field_of(&self, class: &Class, obfuscated: &str) -> Option<Span> {
        let fields = self
            .fields
            .get(class.fields.0 as usize..class.fields.1 as usize)?;
        let to = fields.partition_point(|f| self.name(f.0) <= obfuscated);
        let (obf, original) = fields.get(to.checked_sub(1)?)?;
        (self.name(*obf) == obfuscated).then_some(*original)
    }
}

/// The longest line [`Mapping::check`] reads.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What [`Mapping::check`] counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Class lines.
    pub classes: usize,
    /// Field lines.
    pub fields: usize,
}

/// One line of a mapping, read.
enum Line<'a> {
    /// `original.Class -> obfuscated:`.
    Class {
        original: &'a str,
        obfuscated: &'a str,
    },
    /// `    type name -> obfuscated` under a class.
    Field { name: &'a str, obfuscated: &'a str },
    /// A comment, a blank line or a method.
    Other,
}

/// What is wrong with a line that is not R8/ProGuard's format.
#[derive(Debug, thiserror::Error)]
enum LineError {
    #[error("expected `name -> obfuscated`, found {0:?}")]
    NoArrow(String),
    #[error("a class line ends with ':'")]
    ClassWithoutColon,
    #[error("a member before any class")]
    MemberBeforeClass,
    #[error("expected `type name` before ->, found {0:?}")]
    NoFieldName(String),
}

/// Reads one line (`in_class`: a class line came before).
fn read_line(line: &str, in_class: bool) -> Result<Line<'_>, LineError> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(Line::Other);
    }
    let Some((left, right)) = trimmed.split_once(" -> ") else {
        return Err(LineError::NoArrow(trimmed.to_string()));
    };
    if !line.starts_with(char::is_whitespace) {
        let obf = right
            .strip_suffix(':')
            .ok_or(LineError::ClassWithoutColon)?;
        return Ok(Line::Class {
            original: left.trim(),
            obfuscated: obf.trim(),
        });
    }
    if left.contains('(') {
        return Ok(Line::Other);
    }
    // A field: `type name -> obf`.
    if !in_class {
        return Err(LineError::MemberBeforeClass);
    }
    let Some(name) = left.split_whitespace().nth(1) else {
        return Err(LineError::NoFieldName(left.to_string()));
    };
    Ok(Line::Field {
        name,
        obfuscated: right.trim(),
    })
}

impl Mapping {
    /// Reads a mapping file: a regular file (a FIFO or a device is refused before
    /// anything is read, as every input is), of at most [`MAX_MAPPING_BYTES`].
    pub fn read(path: &Path) -> Result<Mapping, AnalyzeError> {
        let io = |source| AnalyzeError::Io {
            path: path.to_path_buf(),
            source,
        };
        // Said here: the opening's own words are a heap dump's.
        if path.is_dir() {
            return Err(io(std::io::Error::other(
                "is a directory, not an R8/ProGuard mapping.txt",
            )));
        }
        let file = open_regular(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > MAX_MAPPING_BYTES {
            return Err(AnalyzeError::MappingTooLarge {
                path: path.to_path_buf(),
                bytes: len,
                max: MAX_MAPPING_BYTES,
            });
        }
        // The file may grow while it is read: the cap holds all the same.
        let mut text = String::with_capacity(len as usize);
        file.take(MAX_MAPPING_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(io)?;
        if text.len() as u64 > MAX_MAPPING_BYTES {
            return Err(AnalyzeError::MappingTooLarge {
                path: path.to_path_buf(),
                bytes: text.len() as u64,
                max: MAX_MAPPING_BYTES,
            });
        }
        Mapping::from_text(text).map_err(|(line, what)| AnalyzeError::Mapping {
            path: path.to_path_buf(),
            line,
            what,
        })
    }

    /// Parses the text; an error names the line (1-based) and what is wrong with it.
    pub fn parse(text: &str) -> Result<Mapping, (usize, String)> {
        Mapping::from_text(text.to_string())
    }

    /// Parses the text, which it keeps: the names are spans of it.
    fn from_text(text: String) -> Result<Mapping, (usize, String)> {
        if text.len() as u64 > MAX_MAPPING_BYTES {
            return Err((0, format!("over {MAX_MAPPING_BYTES} bytes")));
        }
        let base = text.as_ptr() as usize;
        // Within the text, under 1 GiB: its offset fits.
        let span = |s: &str| Span {
            at: (s.as_ptr() as usize - base) as u32,
            len: s.len() as u32,
        };
        let mut classes: Vec<Class> = Vec::new();
        let mut fields: Vec<(Span, Span)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            match read_line(line, !classes.is_empty()).map_err(|what| (i + 1, what.to_string()))? {
                Line::Class {
                    original,
                    obfuscated,
                } => {
                    let at = fields.len() as u32;
                    classes.push(Class {
                        obfuscated: span(obfuscated),
                        original: span(original),
                        fields: (at, at),
                    });
                }
                Line::Field { name, obfuscated } => {
                    fields.push((span(obfuscated), span(name)));
                    if let Some(class) = classes.last_mut() {
                        class.fields.1 = fields.len() as u32;
                    }
                }
                Line::Other => {}
            }
        }
        Ok(Mapping::sorted(text, classes, fields))
    }

    /// The tables of `text`'s classes and fields, sorted for the lookups.
    fn sorted(text: String, classes: Vec<Class>, fields: Vec<(Span, Span)>) -> Mapping {
        let mut t = Tables {
            text: text.into_boxed_str(),
            classes,
            fields,
        };
        let Tables {
            text,
            classes,
            fields,
        } = &mut t;
        let name = |s: &Span| &text[s.at as usize..(s.at + s.len) as usize];
        for c in classes.iter() {
            fields[c.fields.0 as usize..c.fields.1 as usize]
                .sort_by(|a, b| name(&a.0).cmp(name(&b.0)));
        }
        classes.sort_by(|a, b| name(&a.obfuscated).cmp(name(&b.obfuscated)));
        classes.shrink_to_fit();
        fields.shrink_to_fit();
        Mapping(Arc::new(t))
    }

    /// Checks a mapping as it streams from `reader`, with the reader [`Mapping::read`]
    /// uses, line by line, keeping nothing but the line at hand (at most
    /// [`MAX_LINE_BYTES`]): its class and field lines counted, or the first line that is
    /// wrong (1-based) and why; the outer error is the reader's. What a server takes a
    /// mapping with, without holding it.
    pub fn check(reader: impl BufRead) -> std::io::Result<Result<Counts, (usize, String)>> {
        let mut reader = reader;
        let mut counts = Counts::default();
        let mut buf = Vec::new();
        for n in 1.. {
            buf.clear();
            let got = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)?;
            if got == 0 {
                break;
            }
            if buf.len() > MAX_LINE_BYTES {
                return Ok(Err((
                    n,
                    format!("a line longer than {MAX_LINE_BYTES} bytes"),
                )));
            }
            let Ok(line) = std::str::from_utf8(&buf) else {
                return Ok(Err((n, "not UTF-8 text".to_string())));
            };
            let line = line.strip_suffix('\n').unwrap_or(line);
            let line = line.strip_suffix('\r').unwrap_or(line);
            match read_line(line, counts.classes > 0) {
                Ok(Line::Class { .. }) => counts.classes += 1,
                Ok(Line::Field { .. }) => counts.fields += 1,
                Ok(Line::Other) => {}
                Err(what) => return Ok(Err((n, what.to_string()))),
            }
        }
        Ok(Ok(counts))
    }

    /// How many class lines it holds.
    pub fn classes(&self) -> usize {
        self.0.classes.len()
    }

    /// The original name of an obfuscated class (arrays too: `a.b[]` → `com.x.Y[]`).
    pub fn class(&self, obfuscated: &str) -> Option<String> {
        let base = obfuscated.trim_end_matches("[]");
        let dims = &obfuscated[base.len()..];
        let t = &self.0;
        let c = t.classes_named(base).last()?;
        Some(format!("{}{dims}", t.name(c.original)))
    }

    /// The original name of a field, given the obfuscated name of its declaring class.
    pub fn field(&self, obfuscated_class: &str, obfuscated_field: &str) -> Option<String> {
        let t = &self.0;
        // A class named twice: its later block's field first, as a later line overrides.
        t.classes_named(obfuscated_class)
            .iter()
            .rev()
            .find_map(|c| t.field_of(c, obfuscated_field))
            .map(|s| t.name(s).to_string())
    }

    /// The bytes it holds: its text, and its tables (24 bytes a class, 16 a field).
    pub fn heap_bytes(&self) -> u64 {
        let t = &self.0;
        (t.text.len()
            + t.classes.capacity() * std::mem::size_of::<Class>()
            + t.fields.capacity() * std::mem::size_of::<(Span, Span)>()) as u64
    }
}

/// A mapping made of its classes and fields one by one rather than read from a file (a
/// Perfetto trace's own deobfuscation packets): the same tables and lookups, its names
/// held in one text of at most [`MAX_MAPPING_BYTES`].
#[derive(Default)]
pub struct Builder {
    text: String,
    classes: Vec<Class>,
    fields: Vec<(Span, Span)>,
}

/// The names given a [`Builder`] passed [`MAX_MAPPING_BYTES`].
#[derive(Debug)]
pub struct TooLarge;

impl Builder {
    /// `name`, appended to the text.
    fn span(&mut self, name: &str) -> Result<Span, TooLarge> {
        let at = self.text.len();
        if (at + name.len()) as u64 > MAX_MAPPING_BYTES {
            return Err(TooLarge);
        }
        self.text.push_str(name);
        Ok(Span {
            at: at as u32,
            len: name.len() as u32,
        })
    }

    /// A class, `obfuscated` → `original`; the fields given next are its.
    pub fn class(&mut self, original: &str, obfuscated: &str) -> Result<(), TooLarge> {
        let (obfuscated, original) = (self.span(obfuscated)?, self.span(original)?);
        let at = self.fields.len() as u32;
        self.classes.push(Class {
            obfuscated,
            original,
            fields: (at, at),
        });
        Ok(())
    }

    /// A field of the last class given (none: ignored).
    pub fn field(&mut self, original: &str, obfuscated: &str) -> Result<(), TooLarge> {
        if self.classes.is_empty() {
            return Ok(());
        }
        let (obfuscated, original) = (self.span(obfuscated)?, self.span(original)?);
        self.fields.push((obfuscated, original));
        let n = self.fields.len() as u32;
        if let Some(class) = self.classes.last_mut() {
            class.fields.1 = n;
        }
        Ok(())
    }

    /// The mapping; `None` when no class was given.
    pub fn finish(self) -> Option<Mapping> {
        (!self.classes.is_empty()).then(|| Mapping::sorted(self.text, self.classes, self.fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# compiler: R8
com.example.LeakyActivity -> a.a:
    android.content.Context mContext -> a
    int[] mBigState -> b
    void onCreate(android.os.Bundle) -> onCreate
    1:3:void leak():10:12 -> c
com.example.Holder -> a.b:
    java.lang.Object sLeaked -> a
";

    #[test]
    fn classes_and_fields_map_back() {
        let m = Mapping::parse(TEXT).unwrap();
        assert_eq!(m.class("a.a").as_deref(), Some("com.example.LeakyActivity"));
        assert_eq!(m.class("a.b[]").as_deref(), Some("com.example.Holder[]"));
        assert_eq!(m.class("java.lang.String"), None);
        assert_eq!(m.field("a.a", "b").as_deref(), Some("mBigState"));
        assert_eq!(m.field("a.b", "a").as_deref(), Some("sLeaked"));
        // Methods are not fields.
        assert_eq!(m.field("a.a", "c"), None);
    }

    #[test]
    fn check_reads_as_parse_does_keeping_one_line() {
        let text = "# c\na.B -> x:\n    int f -> a\n    void m() -> b\nc.D -> y:\r\n";
        assert_eq!(
            Mapping::check(text.as_bytes()).unwrap(),
            Ok(Counts {
                classes: 2,
                fields: 1
            })
        );
        assert_eq!(Mapping::parse(text).unwrap().classes(), 2);
        for bad in ["a.B -> x:\nnot a line\n", "    int f -> a\n", "a.B -> x\n"] {
            assert_eq!(
                Mapping::check(bad.as_bytes()).unwrap().unwrap_err(),
                Mapping::parse(bad).unwrap_err(),
                "{bad:?}"
            );
        }
        assert_eq!(
            Mapping::check(&b"a.B -> x:\n\xff\n"[..])
                .unwrap()
                .unwrap_err(),
            (2, "not UTF-8 text".to_string())
        );
        let long = format!("a.B -> x:\n# {}\n", "y".repeat(MAX_LINE_BYTES));
        assert_eq!(Mapping::check(long.as_bytes()).unwrap().unwrap_err().0, 2);
    }

    #[test]
    fn a_built_mapping_maps_as_a_read_one() {
        let mut b = Builder::default();
        b.field("ignored", "x").unwrap();
        b.class("com.example.LeakyActivity", "a.a").unwrap();
        b.field("mBigState", "b").unwrap();
        b.class("com.example.Holder", "a.b").unwrap();
        b.field("sLeaked", "a").unwrap();
        let built = b.finish().unwrap();
        let read = Mapping::parse(TEXT).unwrap();
        for m in [&built, &read] {
            assert_eq!(m.class("a.b[]").as_deref(), Some("com.example.Holder[]"));
            assert_eq!(m.field("a.a", "b").as_deref(), Some("mBigState"));
            assert_eq!(m.field("a.b", "a").as_deref(), Some("sLeaked"));
            assert_eq!(m.field("a.b", "x"), None);
        }
        assert!(Builder::default().finish().is_none());
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = Mapping::parse("com.example.A -> a:\n    int x y z\n").unwrap_err();
        assert_eq!(err.0, 2);
    }
}
