//! Progress on stderr: a bar when stderr is a terminal, nothing otherwise (logs of batch
//! jobs get one line per file instead, from the caller).

use std::io::IsTerminal;
use std::sync::Mutex;

use hprof_shrink_core::{Progress, Stage};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Bar {
    bar: Option<ProgressBar>,
    stage: Mutex<Option<Stage>>,
}

impl Bar {
    /// A bar, when `enabled` and stderr is a terminal.
    pub fn new(enabled: bool) -> Bar {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg:20} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar
        });
        Bar {
            bar,
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
