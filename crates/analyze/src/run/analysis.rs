//! One analysis's state, and its first and last steps: the heap dump chosen, the index,
//! the two halves (`search`, `weigh`), the summary and the check that the file did not
//! change under the mapping.

use std::path::Path;
use std::time::Instant;

use hprof_shrink_core::hprof::Hprof;
use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::Control;

use super::{asked, Options, Outcome, Timings};
use crate::base::error::AnalyzeError;
use crate::base::{limits, shown};
use crate::heap::input;
use crate::heap::progress::build_index;
use crate::knowledge::metadata;
use crate::model::{redact, Analysis, SCHEMA_VERSION, SIGNATURE_VERSION};
use crate::report::census;
use crate::report::{bitmaps, summary};

/// What one analysis is asked: its input, the options, the bounds of what it may unpack,
/// the control that may cancel it, and whether a census is taken.
pub struct Request<'r> {
    pub input: &'r input::Input,
    /// The input's path, as the analysis names it.
    pub path: &'r Path,
    pub options: &'r Options,
    pub unpack: &'r Unpack,
    pub control: &'r Control<'r>,
    /// Keep the path search through the dominators for a census (see [`census`]).
    pub take_census: bool,
    /// The format's name, when the input is a described heap (see
    /// [`crate::heap::source`]); `None`: the dump's header says it.
    pub format: Option<&'r str>,
}

/// Steps' timings, each from the end of the one before.
pub struct Clock {
    pub timings: Timings,
    since: Instant,
}

impl<'r> Request<'r> {
    /// An analysis of `input` (read from `path`) without a census, its format the dump's.
    pub fn new(
        input: &'r input::Input,
        path: &'r Path,
        options: &'r Options,
        unpack: &'r Unpack,
        control: &'r Control<'r>,
    ) -> Request<'r> {
        Request {
            input,
            path,
            options,
            unpack,
            control,
            take_census: false,
            format: input.format,
        }
    }

    /// Whether the triage's duplicate Strings are looked for: not by a census (`diff`
    /// does not compare them) nor when skipped.
    pub fn looks_for_duplicate_strings(&self) -> bool {
        !self.take_census && self.options.skip.strings()
    }

    /// Whether the triage is assembled: not by a census (`diff` reads its leaks, its
    /// totals and the census, which takes the subtrees whatever was asked) nor when
    /// skipped.
    pub fn makes_triage(&self) -> bool {
        !self.take_census && !self.options.skip.triage
    }
}

impl Clock {
    /// Records the step `name`, ending now.
    pub fn step(&mut self, name: &'static str) {
        self.since = self.timings.step(name, self.since);
    }
}

/// One analysis under way: what it was asked, the notes it has for its reader so far,
/// and the clock of its steps. The steps are its methods.
pub struct Run<'r> {
    pub ask: Request<'r>,
    pub notes: Vec<String>,
    /// The rules and steps that could not run on this heap (see [`crate::model::NotRun`]).
    pub not_run: Vec<crate::model::NotRun>,
    pub clock: Clock,
}

impl<'r> Run<'r> {
    /// A run of `ask`, after the steps `timings` already holds (opening the input).
    pub fn new(ask: Request<'r>, timings: Timings) -> Run<'r> {
        Run {
            ask,
            notes: Vec::new(),
            not_run: Vec::new(),
            clock: Clock {
                timings,
                since: Instant::now(),
            },
        }
    }

    /// Every step, in order: the analysis, and the census when one was asked.
    pub fn analyze(mut self) -> Result<(Outcome, Option<census::Census>), AnalyzeError> {
        let input = self.ask.input;
        let data = input.bytes.bytes();
        let hprof = Hprof::new(data)?;
        // A file can hold several heap dumps one after another; one is analyzed, the last
        // unless asked, as Eclipse MAT asks which to open.
        let dumps = hprof.heap_dumps()?;
        let chosen = asked::choose_dump(dumps.len(), self.ask.options.dump, &mut self.notes)?;
        self.clock.step("heap dumps");
        let mut ix = build_index(
            &hprof,
            data.len() as u64,
            dumps.get(chosen - 1).cloned(),
            self.ask.control,
        )?;
        if let Some(format) = self.ask.format {
            ix.format = format.to_string();
        }
        ix.class_sizes = self.ask.input.class_sizes.clone();
        self.clock.timings.index_bytes = ix.memory();
        self.clock.step("index");

        let metadata = metadata::read(&ix);
        let (listed, traced) = self.find_leaks(&ix, &metadata)?;
        // The id lookup goes too (2 bytes an object), and the graph and the inspectors are
        // made again on what remains, with the same per-class tables: the triage's and the
        // census's paths look their few ids up without it (the paths of one list walk each
        // collection they pass once, see [`crate::paths::reach::StepNames`]).
        ix.release_lookup();
        let weighed = self.weigh(&ix, traced)?;
        let chosen = summary::Chosen {
            bytes: data.len() as u64,
            dumps: dumps.len(),
            chosen,
        };
        let mut dump = summary::dump(&ix, &chosen, weighed.totals);
        dump.not_run = std::mem::take(&mut self.not_run);
        if !self.ask.take_census {
            dump.skipped = self.ask.options.skip.names();
        }
        let mut notes = std::mem::take(&mut self.notes);
        let omitted_notes = limits::keep_first(&mut notes, limits::MAX_NOTES);
        let bitmaps::Duplicates {
            groups: duplicate_bitmaps,
            omitted: omitted_duplicate_bitmaps,
            pictures,
        } = listed.duplicates;
        let analysis = Analysis {
            schema: SCHEMA_VERSION,
            signature_version: SIGNATURE_VERSION,
            tool: format!("hprof-shrink {}", env!("CARGO_PKG_VERSION")),
            input: asked::input_summary(input, self.ask.path),
            dump,
            metadata,
            finder: listed.mode.name().into(),
            key: listed
                .key
                .map(|k| shown::clipped(&k, limits::MAX_NAME_BYTES)),
            keys_found: listed.keys_found,
            omitted_keys_found: listed.more_keys,
            leaks: weighed.leaks,
            omitted_leaks: listed.more_leaks,
            unreachable: listed.unreachable,
            omitted_unreachable: listed.more_unreachable,
            duplicate_bitmaps,
            omitted_duplicate_bitmaps,
            triage: weighed.triage,
            notes,
            omitted_notes,
        };
        // A private package's replaced Strings show as garbage: they read as redacted.
        let analysis = if input.private {
            redact::redact(analysis)
        } else {
            analysis
        };
        self.clock.step("summary");
        if let input::Bytes::File(m) = &input.bytes {
            m.check_intact()?;
        }
        self.clock.step("check");
        let outcome = Outcome {
            analysis,
            pictures,
            timings: self.clock.timings,
        };
        Ok((outcome, weighed.census))
    }
}
