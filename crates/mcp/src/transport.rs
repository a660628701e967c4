//! The stdio transport handed to rmcp: lines in through [`LineFramer`] and [`classify`], every
//! line that is not a message answered here; everything out through one writer task, so rmcp's
//! concurrent sends and our own error answers never interleave within a line.

use crate::frame::{Frame, Inbound, LineFramer, Rejection, classify};
use cortex_domain::limits::MAX_MESSAGE_BYTES;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Answers waiting for the writer; a slow reader on the other end holds senders back here.
const OUTBOX: usize = 64;

pub struct LineTransport<R> {
    framer: LineFramer<R>,
    limit: usize,
    outbox: Option<mpsc::Sender<Vec<u8>>>,
    /// Error answers not handed to the writer yet. They wait here, not in a future, because
    /// rmcp may drop `receive` at any await (see [`LineFramer`]).
    unsent: VecDeque<Vec<u8>>,
    writer: Option<JoinHandle<io::Result<()>>>,
}

impl<R: AsyncBufRead + Unpin + Send + 'static> LineTransport<R> {
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(reader: R, writer: W) -> LineTransport<R> {
        LineTransport::with_limit(reader, writer, MAX_MESSAGE_BYTES)
    }

    pub fn with_limit<W: AsyncWrite + Unpin + Send + 'static>(
        reader: R,
        writer: W,
        limit: usize,
    ) -> LineTransport<R> {
        let (outbox, lines) = mpsc::channel(OUTBOX);
        LineTransport {
            framer: LineFramer::with_limit(reader, limit),
            limit,
            outbox: Some(outbox),
            unsent: VecDeque::new(),
            writer: Some(tokio::spawn(write_lines(lines, writer))),
        }
    }

    fn answer(&mut self, rejection: Rejection) {
        tracing::warn!(code = rejection.code, id = %rejection.id, "{}: {}", rejection.kind.name(), rejection.message);
        self.unsent.push_back(rejection.to_line());
    }

    /// Hands the owed answers to the writer; a line leaves the queue only once it has a place.
    async fn flush_answers(&mut self) {
        let Some(outbox) = &self.outbox else { return };
        while !self.unsent.is_empty() {
            let Ok(place) = outbox.reserve().await else {
                // The writer stopped: the client's end is closed, nobody is left to answer.
                self.unsent.clear();
                return;
            };
            if let Some(line) = self.unsent.pop_front() {
                place.send(line);
            }
        }
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut lines: mpsc::Receiver<Vec<u8>>,
    mut out: W,
) -> io::Result<()> {
    while let Some(line) = lines.recv().await {
        out.write_all(&line).await?;
        out.flush().await?;
    }
    Ok(())
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the output stream is closed")
}

impl<R: AsyncBufRead + Unpin + Send + 'static> Transport<RoleServer> for LineTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let outbox = self.outbox.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            outbox.ok_or_else(closed)?.send(line).await.map_err(|_| closed())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            self.flush_answers().await;
            let frame = match self.framer.next().await {
                Ok(Some(frame)) => frame,
                Ok(None) => return None,
                Err(e) => {
                    tracing::warn!("cannot read the input stream: {e}");
                    return None;
                }
            };
            match frame {
                Frame::TooLarge { head, bytes } => {
                    self.answer(Rejection::too_large(&head, bytes, self.limit))
                }
                Frame::Line(line) => match classify(&line) {
                    Inbound::Message(message) => return Some(*message),
                    Inbound::Reject(rejection) => self.answer(rejection),
                    Inbound::Skip(reason) => {
                        if !line.iter().all(u8::is_ascii_whitespace) {
                            tracing::warn!("ignored a line without an answer: {reason}");
                        }
                    }
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.flush_answers().await;
        // Dropping our sender lets the writer finish what is queued, then stop.
        self.outbox = None;
        match self.writer.take() {
            Some(writer) => writer.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}
