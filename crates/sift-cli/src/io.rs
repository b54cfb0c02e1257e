//! The terminal side of the tool: removing unfinished outputs on a signal, and stdout.

use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

/// On SIGINT or SIGTERM, removes the temporary files of unfinished outputs, then dies by
/// the same signal (the shell reports 130 or 143, and a script running `sift` stops as it
/// would without the handler). A signal thread does this, so a process blocked in a long
/// write or encode exits at once.
pub fn remove_temp_files_on_signal() -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("cannot install the signal handler")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                sift_format::remove_temp_files();
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                // Only reached if the default action could not be restored.
                std::process::exit(128 + signal);
            }
        })
        .context("cannot start the signal thread")?;
    Ok(())
}

// ----------------------------------------------------------------------------- stdout

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// True once a write to stdout failed because its reader went away (`sift cat | head`).
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Buffered stdout that remembers a broken pipe, however deep inside a library writer the
/// error is wrapped.
pub struct Stdout {
    inner: BufWriter<std::io::StdoutLock<'static>>,
}

impl Stdout {
    pub fn new() -> Self {
        Self {
            inner: BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        }
    }
}

fn note_broken_pipe<T>(r: std::io::Result<T>) -> std::io::Result<T> {
    if let Err(e) = &r
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
    r
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        note_broken_pipe(self.inner.write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        note_broken_pipe(self.inner.write_all(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        note_broken_pipe(self.inner.flush())
    }
}
