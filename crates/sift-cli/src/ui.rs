//! Progress bars and status messages on stderr.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// What the user asked to see on stderr.
#[derive(Debug, Clone, Copy)]
pub struct Ui {
    quiet: bool,
    /// Progress bars are only drawn for a person watching a terminal.
    interactive: bool,
}

impl Ui {
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            interactive: !quiet && std::io::stderr().is_terminal(),
        }
    }

    /// Whether informational messages should be printed.
    pub fn verbose(&self) -> bool {
        !self.quiet
    }

    /// A progress bar counting `unit` (e.g. "rows") up to `total`, or a spinner if the
    /// total is unknown. Hidden unless stderr is an interactive terminal.
    pub fn progress(&self, total: Option<u64>, unit: &str, message: &str) -> ProgressBar {
        if !self.interactive {
            return ProgressBar::hidden();
        }
        let bar = match total {
            Some(n) => {
                let template = format!(
                    "{{msg}} [{{elapsed_precise}}] {{wide_bar}} {{human_pos}}/{{human_len}} {unit} ({{eta}})"
                );
                let style = ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
                ProgressBar::new(n).with_style(style)
            }
            None => {
                let template =
                    format!("{{spinner}} {{msg}} [{{elapsed_precise}}] {{human_pos}} {unit}");
                let style = ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| ProgressStyle::default_spinner());
                ProgressBar::new_spinner().with_style(style)
            }
        };
        bar.set_message(message.to_string());
        bar.enable_steady_tick(Duration::from_millis(100));
        bar
    }
}
