//! A plugin's stdout and stderr, turned into log lines tagged with its name.

use super::logger::{LogLevel, LogSource, PluginLogger};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi_io::bytes::Bytes;

/// Most bytes buffered while waiting for a newline; a longer line is emitted in pieces.
const MAX_PENDING: usize = super::logger::MAX_LINE_BYTES;

/// One of the guest's output streams; every newline-terminated line becomes a
/// log line of the plugin (stdout at info, stderr at warn).
#[derive(Clone)]
pub struct LogStream {
    inner: Arc<LineSplitter>,
}

struct LineSplitter {
    logger: Arc<PluginLogger>,
    source: LogSource,
    pending: Mutex<Vec<u8>>,
}

impl LogStream {
    /// The stream of `source` (stdout or stderr), logged through `logger`.
    pub fn new(logger: Arc<PluginLogger>, source: LogSource) -> Self {
        LogStream {
            inner: Arc::new(LineSplitter {
                logger,
                source,
                pending: Mutex::new(Vec::new()),
            }),
        }
    }
}

impl LineSplitter {
    fn level(&self) -> LogLevel {
        match self.source {
            LogSource::Stderr => LogLevel::Warn,
            _ => LogLevel::Info,
        }
    }

    fn emit(&self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        self.logger
            .log(self.level(), self.source, &String::from_utf8_lossy(line));
    }

    fn write(&self, bytes: &[u8]) {
        // Bounded in bytes before anything is split: a plugin writing
        // gigabytes costs the host a check per write.
        if !self.logger.admit_output(bytes.len()) {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut rest = bytes;
        while let Some(newline) = rest.iter().position(|b| *b == b'\n') {
            if pending.is_empty() {
                self.emit(&rest[..newline]);
            } else {
                pending.extend_from_slice(&rest[..newline]);
                self.emit(&pending);
                pending.clear();
            }
            rest = &rest[newline + 1..];
        }
        pending.extend_from_slice(rest);
        while pending.len() >= MAX_PENDING {
            let chunk: Vec<u8> = pending.drain(..MAX_PENDING).collect();
            self.emit(&chunk);
        }
    }

    fn flush(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if !pending.is_empty() {
            self.emit(&pending);
            pending.clear();
        }
    }
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for LogStream {
    async fn ready(&mut self) {}
}

impl OutputStream for LogStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.inner.write(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        // Lines are emitted as soon as they are complete; a partial line waits
        // for its newline (or for the call to end, see `LogStream::finish`).
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for LogStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.inner.write(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.inner.flush();
        Poll::Ready(Ok(()))
    }
}

impl LogStream {
    /// Emits a trailing partial line, at the end of a call.
    pub fn finish(&self) {
        self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::log::{LogRate, MemorySink};

    #[test]
    fn output_is_split_into_lines_across_writes() {
        let sink = MemorySink::default();
        let logger = Arc::new(PluginLogger::new(
            "p".into(),
            "-".into(),
            Arc::new(sink.clone()),
            LogRate::default(),
        ));
        let stream = LogStream::new(logger, LogSource::Stdout);
        stream.inner.write(b"hello ");
        stream.inner.write(b"world\nsecond\r\nthird");
        stream.finish();
        let lines: Vec<String> = sink.take().into_iter().map(|l| l.message).collect();
        assert_eq!(lines, ["hello world", "second", "third"]);
    }
}
