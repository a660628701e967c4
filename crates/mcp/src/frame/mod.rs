//! Line framing of the stdio transport, and what each line is: a message for rmcp, or an error
//! answered right here. rmcp's own stdio codec drops lines over its limit and ignores lines it
//! cannot parse, so a client waits for an answer that never comes; here every line that could
//! be a request gets exactly one answer (JSON-RPC 2.0 §5.1: -32700 for unparsable text, -32600
//! for an invalid request, -32602 for a known method with malformed params).
//!
//! - `classify.rs`: what a line is, and the answer to one that is no message
//! - `leading_id.rs`: the `id` of a line cut off at the limit

mod classify;
mod leading_id;

pub use classify::{INVALID_PARAMS, INVALID_REQUEST, Inbound, LineError, PARSE_ERROR, Rejection, classify};
pub use leading_id::leading_id;

use cortex_domain::limits::MAX_MESSAGE_BYTES;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Bytes kept from the start of an oversized line, to read its `id` from.
const HEAD_BYTES: usize = 4096;

/// One line read from the client.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A whole line, without its newline.
    Line(Vec<u8>),
    /// A line longer than the limit: its first bytes and its full length. The rest was read
    /// and discarded, so the next frame starts at the next line.
    TooLarge { head: Vec<u8>, bytes: usize },
}

/// Splits a byte stream into lines of at most `limit` bytes.
///
/// Cancel-safe: rmcp polls `receive` inside a `select!` and drops it whenever something else is
/// ready first, so the part of a line read so far lives here, not in the future; the only await
/// is `fill_buf`, which reads nothing when it is dropped.
pub struct LineFramer<R> {
    reader: R,
    limit: usize,
    /// The current line so far (only its head once it is over the limit).
    line: Vec<u8>,
    /// Bytes of the current line so far.
    bytes: usize,
    over: bool,
}

impl<R: AsyncBufRead + Unpin> LineFramer<R> {
    pub fn new(reader: R) -> LineFramer<R> {
        LineFramer::with_limit(reader, MAX_MESSAGE_BYTES)
    }

    pub fn with_limit(reader: R, limit: usize) -> LineFramer<R> {
        LineFramer { reader, limit, line: Vec::new(), bytes: 0, over: false }
    }

    /// The next line, or `None` at the end of the stream. A last line without a newline
    /// still counts.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                if self.bytes == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let (chunk, used, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            self.bytes += chunk.len();
            if !self.over && self.bytes > self.limit {
                self.over = true;
                self.line.truncate(HEAD_BYTES);
            }
            if self.over {
                let room = HEAD_BYTES.saturating_sub(self.line.len());
                self.line.extend_from_slice(&chunk[..room.min(chunk.len())]);
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.reader.consume(used);
            if done {
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> Frame {
        let line = std::mem::take(&mut self.line);
        let bytes = std::mem::replace(&mut self.bytes, 0);
        if std::mem::replace(&mut self.over, false) {
            Frame::TooLarge { head: line, bytes }
        } else {
            Frame::Line(line)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_read_dropped_midway_loses_nothing() {
        use tokio::io::AsyncWriteExt;
        let (mut client, server) = tokio::io::duplex(64);
        let mut framer = LineFramer::new(tokio::io::BufReader::new(server));
        client.write_all(b"{\"first\": ").await.unwrap();
        // Poll once (it reads the half line, then waits for more), then drop the read, as
        // rmcp's select! does when another event comes first.
        tokio::select! {
            biased;
            _ = framer.next() => panic!("half a line is not a frame"),
            _ = std::future::ready(()) => {}
        }
        client.write_all(b"1}\nsecond\n").await.unwrap();
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(br#"{"first": 1}"#.to_vec())));
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(b"second".to_vec())));
    }

    #[tokio::test]
    async fn lines_over_the_limit_are_reported_whole_and_the_next_line_is_intact() {
        let input = b"short\nxxxxxxxxxxxxxxxxxxxx\n\nlast".to_vec();
        let mut framer = LineFramer::with_limit(&input[..], 10);
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(b"short".to_vec())));
        assert_eq!(framer.next().await.unwrap(), Some(Frame::TooLarge { head: vec![b'x'; 20], bytes: 20 }));
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(Vec::new())));
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(b"last".to_vec())));
        assert_eq!(framer.next().await.unwrap(), None);
    }
}
