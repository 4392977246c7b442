//! Standard output that stops quietly when its reader goes away.
//!
//! `reasonix policy test | head -3` closes the pipe after three lines. Rust ignores `SIGPIPE`,
//! so the next write fails with `BrokenPipe`; printed as an error, that would read as a
//! configuration problem (exit 2), and `println!` would panic. Here the first `BrokenPipe` marks
//! the output closed, and every later write succeeds without a byte written: the command finishes
//! its work and exits with the status it would have had (`policy test` still exits 1 when a test
//! failed), saying nothing about the pipe.

use std::io::{self, Write};

/// Standard output, buffered, coloured only on a terminal (anstream), quiet once closed.
pub struct Stdout {
    inner: Box<dyn Write>,
    closed: bool,
}

impl Stdout {
    /// For text with colour: escapes kept on a terminal, stripped on a pipe or with `NO_COLOR`.
    pub fn text() -> Stdout {
        Stdout {
            inner: Box::new(io::BufWriter::new(anstream::AutoStream::auto(
                io::stdout().lock(),
            ))),
            closed: false,
        }
    }

    /// For bytes written as they are (JSON, scripts).
    pub fn plain() -> Stdout {
        Stdout {
            inner: Box::new(io::BufWriter::new(io::stdout().lock())),
            closed: false,
        }
    }

    fn settle(&mut self, result: io::Result<()>) -> io::Result<()> {
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let written = self.inner.write_all(buf);
        self.settle(written).map(|()| buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let flushed = self.inner.flush();
        self.settle(flushed)
    }
}

impl Drop for Stdout {
    fn drop(&mut self) {
        // The buffer's own drop would flush and ignore the error; flushing here keeps a closed
        // pipe quiet in the same way and marks nothing else.
        let _ = self.flush();
    }
}
