//! Progress on stderr: a bar when stderr is a terminal, nothing otherwise (logs of batch
//! jobs get one line per file instead, from the caller). Every bar of the tool (the
//! shrink's stages, a batch's files, an upload's bytes) is set up by [`bar`], so they look
//! and behave alike.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use hprof_shrink_core::{Progress, Stage};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use hprof_shrink_upload::{Meter, Transfer};

/// How a bar's message sits before the bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// Padded to 20 columns: short names (the core's stages) that should line up.
    Padded,
    /// Padded or cut to 20 columns: a file name of any length.
    Clipped,
    /// As long as it is: a count that grows ("3/10 files").
    Free,
}

impl Label {
    fn template(self) -> &'static str {
        match self {
            Label::Padded => "{msg:20}",
            Label::Clipped => "{msg:20!}",
            Label::Free => "{msg}",
        }
    }
}

/// A bar on stderr counting bytes up to `len`, or none when it is not `enabled` (quiet,
/// too small to matter) or stderr is not a terminal.
pub fn bar(enabled: bool, len: u64, label: Label) -> Option<ProgressBar> {
    (enabled && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        bar.set_style(style(label));
        bar
    })
}

fn style(label: Label) -> ProgressStyle {
    let template = format!(
        "{} [{{bar:30}}] {{bytes}}/{{total_bytes}} {{bytes_per_sec}} eta {{eta}}",
        label.template()
    );
    ProgressStyle::with_template(&template)
        .expect("valid template")
        .progress_chars("=> ")
}

/// The bar of one shrink, inspect or verify: it restarts at each stage of the core's work.
pub struct Bar {
    bar: Option<ProgressBar>,
    stage: Mutex<Option<Stage>>,
}

impl Bar {
    /// A bar, when `enabled` and stderr is a terminal.
    pub fn new(enabled: bool) -> Bar {
        Bar {
            bar: bar(enabled, 0, Label::Padded),
            stage: Mutex::new(None),
        }
    }

    pub fn update(&self, p: Progress) {
        let Some(bar) = &self.bar else { return };
        let mut stage = self.stage.lock().unwrap_or_else(|e| e.into_inner());
        if *stage != Some(p.stage) {
            *stage = Some(p.stage);
            bar.reset();
            bar.set_length(p.total);
            bar.set_message(p.stage.label());
        }
        bar.set_position(p.done);
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The bars of uploads: one per body the upload reports, `upload NAME`, back to 0 at each
/// attempt, with the upload's log lines printed above it.
pub struct UploadBars;

impl Meter for UploadBars {
    fn start(&self, name: &str, len: u64) -> Option<Arc<dyn Transfer>> {
        let bar = bar(true, len, Label::Clipped)?;
        bar.set_message(format!("upload {name}"));
        Some(Arc::new(UploadBar(bar)))
    }
}

struct UploadBar(ProgressBar);

impl Transfer for UploadBar {
    fn restart(&self) {
        self.0.set_position(0);
    }
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
    fn suspend(&self, print: &mut dyn FnMut()) {
        self.0.suspend(print);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_makes_a_valid_template() {
        // Styled here directly: the tests have no terminal, so `bar` would never build one.
        for label in [Label::Padded, Label::Clipped, Label::Free] {
            style(label);
        }
    }
}
