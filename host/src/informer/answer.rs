//! The API server's answer to a list or watch, in whichever encoding it
//! chose: JSON as it is, protobuf transcoded to the same JSON
//! ([`protobuf`](super::protobuf)). The reflector reads JSON text either way.

use super::protobuf::{ACCEPT_PROTOBUF, TranscodeError, Transcoder, is_protobuf};
use futures::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, TryStreamExt};
use http_body_util::BodyExt;
use kube::client::Body;
use kube::core::Status;

/// The body of an answer that succeeded.
pub struct Answer {
    body: Body,
    /// Set when the body is protobuf.
    protobuf: Option<Transcoder>,
}

/// Why an answer's body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The connection failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A JSON body that is not UTF-8.
    #[error("not UTF-8: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    /// Protobuf this Herald cannot transcode.
    #[error("{0}")]
    Transcode(#[from] TranscodeError),
}

impl ReadError {
    /// Whether reading the same answer as JSON would do: the protobuf was
    /// well-formed but this Herald's schema cannot write it.
    pub fn wants_json(&self) -> bool {
        matches!(self, ReadError::Transcode(_))
    }
}

/// Sends `request`, asking for protobuf when `protobuf` is set. An error
/// status comes back as [`kube::Error::Api`] with the server's `Status`
/// (read from either encoding), as `kube::Client` reports it.
pub async fn send(
    client: &kube::Client,
    mut request: http::Request<Vec<u8>>,
    protobuf: Option<Transcoder>,
) -> Result<Answer, kube::Error> {
    if protobuf.is_some() {
        request.headers_mut().insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static(ACCEPT_PROTOBUF),
        );
    }
    let response = client.send(request.map(Body::from)).await?;
    let answered_protobuf = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(is_protobuf);
    let protobuf = protobuf.filter(|_| answered_protobuf);
    let code = response.status();
    let body = response.into_body();
    if code.is_client_error() || code.is_server_error() {
        let bytes = body.collect_bytes().await?;
        let mut status = None;
        if let Some(transcoder) = protobuf {
            let mut json = String::new();
            if transcoder.object(&bytes, &mut json).is_ok() {
                status = serde_json::from_str::<Status>(&json).ok();
            }
        } else {
            status = serde_json::from_slice::<Status>(&bytes).ok();
        }
        let status = status.unwrap_or_else(|| {
            Status::failure(
                String::from_utf8_lossy(&bytes).trim(),
                "Failed to parse error data",
            )
            .with_code(code.as_u16())
        });
        return Err(kube::Error::Api(status.boxed()));
    }
    Ok(Answer { body, protobuf })
}

impl Answer {
    /// Whether the server answered in protobuf.
    pub fn is_protobuf(&self) -> bool {
        self.protobuf.is_some()
    }

    /// The whole body as JSON text (a list).
    pub async fn text(self) -> Result<String, ReadError> {
        let bytes = self
            .body
            .collect_bytes()
            .await
            .map_err(std::io::Error::other)?;
        match self.protobuf {
            Some(transcoder) => {
                let mut json = String::with_capacity(bytes.len() * 2);
                transcoder.object(&bytes, &mut json)?;
                Ok(json)
            }
            None => Ok(std::str::from_utf8(&bytes)?.to_owned()),
        }
    }

    /// The body as a stream of watch events.
    pub fn events(self) -> Events {
        let stream = self
            .body
            .into_data_stream()
            .map_err(std::io::Error::other)
            .into_async_read();
        Events {
            stream: Box::pin(stream),
            protobuf: self.protobuf,
            buffer: Vec::with_capacity(16 * 1024),
            line: String::new(),
        }
    }
}

/// The events of a watch (or a streaming list), each as the line a JSON
/// watch sends: `{"type":…,"object":…}`.
pub struct Events {
    stream: std::pin::Pin<Box<dyn AsyncBufRead + Send>>,
    protobuf: Option<Transcoder>,
    buffer: Vec<u8>,
    line: String,
}

impl Events {
    /// The next event, `None` when the server ends the stream.
    pub async fn next(&mut self) -> Result<Option<&str>, ReadError> {
        match self.protobuf {
            Some(transcoder) => {
                // Each frame: its length (4 bytes, big-endian), then a
                // `metav1.WatchEvent`.
                let mut length = [0u8; 4];
                match self.stream.read_exact(&mut length).await {
                    Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => {
                        return Ok(None);
                    }
                    other => other?,
                }
                self.buffer.resize(u32::from_be_bytes(length) as usize, 0);
                self.stream.read_exact(&mut self.buffer).await?;
                self.line.clear();
                transcoder.watch_event(&self.buffer, &mut self.line)?;
                Ok(Some(&self.line))
            }
            None => loop {
                self.buffer.clear();
                if self.stream.read_until(b'\n', &mut self.buffer).await? == 0 {
                    return Ok(None);
                }
                // Some servers (and proxies) send blank keep-alive lines.
                if !self.buffer.trim_ascii().is_empty() {
                    return Ok(Some(std::str::from_utf8(&self.buffer)?));
                }
            },
        }
    }
}
