//! Reading a call's body before MCP sees it, under two bounds: the body timeout (a client
//! sending its body slowly must not hold its key's places for calls indefinitely) and the
//! server's budget of bytes in flight (bodies being read or held by their calls, over all
//! keys): a dozen large bodies at once would otherwise take their size several times over in
//! memory. A body that finds the budget spent is refused at once, to be sent again later.

use axum::body::{Body, Bytes};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget counts kibibytes: a semaphore takes at most `u32::MAX` permits at once.
const UNIT: usize = 1024;

pub struct Budget {
    units: Arc<Semaphore>,
}

/// Bytes of the budget a call holds until its answer has been sent.
pub struct Held(Option<OwnedSemaphorePermit>);

#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not all of it came within the body timeout.
    TimedOut,
    /// The server holds as many bytes as it may: retry shortly.
    Busy,
    /// Over the server's body limit.
    TooLarge,
    /// The client's stream broke off.
    Broken(String),
}

impl Budget {
    pub fn new(max_bytes: usize) -> Budget {
        Budget { units: Arc::new(Semaphore::new(max_bytes.div_ceil(UNIT).min(Semaphore::MAX_PERMITS))) }
    }

    /// Enough of the budget for `total` bytes, adding to what `held` has.
    fn grow(&self, held: &mut Held, total: usize) -> Result<(), Refused> {
        let have = held.0.as_ref().map_or(0, |p| p.num_permits());
        let need = total.div_ceil(UNIT).saturating_sub(have);
        if need == 0 {
            return Ok(());
        }
        let more = u32::try_from(need).map_err(|_| Refused::TooLarge)?;
        let permit = self.units.clone().try_acquire_many_owned(more).map_err(|_| Refused::Busy)?;
        match &mut held.0 {
            Some(existing) => existing.merge(permit),
            None => held.0 = Some(permit),
        }
        Ok(())
    }

    /// The whole body, within `timeout` and `limit` bytes, and its share of the budget.
    /// `length` (the declared `Content-Length`) is taken from the budget up front.
    pub async fn read(
        &self,
        body: Body,
        length: Option<u64>,
        limit: usize,
        timeout: Duration,
    ) -> Result<(Bytes, Held), Refused> {
        let mut held = Held(None);
        let declared = length.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        if declared > limit {
            return Err(Refused::TooLarge);
        }
        let refused_up_front = self.grow(&mut held, declared).err();
        let deadline = tokio::time::Instant::now() + timeout;
        let mut stream = body.into_data_stream();
        let mut first: Option<Bytes> = None;
        let mut buffer: Vec<u8> = Vec::new();
        if let Some(refused) = refused_up_front {
            discard(stream, deadline).await;
            return Err(refused);
        }
        loop {
            let chunk = match tokio::time::timeout_at(deadline, stream.next()).await {
                Err(_) => return Err(Refused::TimedOut),
                Ok(None) => break,
                Ok(Some(Err(e))) => return Err(Refused::Broken(e.to_string())),
                Ok(Some(Ok(chunk))) => chunk,
            };
            let so_far = first.as_ref().map_or(0, Bytes::len) + buffer.len() + chunk.len();
            if so_far > limit {
                return Err(Refused::TooLarge);
            }
            if let Err(refused) = self.grow(&mut held, so_far) {
                drop((first, buffer, held));
                discard(stream, deadline).await;
                return Err(refused);
            }
            // Most bodies arrive as one chunk: keep it as it is, without a copy.
            match first.take() {
                None if buffer.is_empty() => first = Some(chunk),
                taken => {
                    if let Some(earlier) = taken {
                        buffer.reserve(declared.max(so_far).saturating_sub(buffer.len()));
                        buffer.extend_from_slice(&earlier);
                    }
                    buffer.extend_from_slice(&chunk);
                }
            }
        }
        let bytes = match first {
            Some(only) => only,
            None => Bytes::from(buffer),
        };
        Ok((bytes, held))
    }
}

/// Reads the rest of a refused body and lets it go (no memory kept), until its end or the
/// deadline: a client still sending then gets the refusal, not a reset connection.
async fn discard(mut stream: axum::body::BodyDataStream, deadline: tokio::time::Instant) {
    let _ = tokio::time::timeout_at(deadline, async { while let Some(Ok(_)) = stream.next().await {} }).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(chunks: Vec<&'static [u8]>) -> Body {
        Body::from_stream(futures::stream::iter(
            chunks.into_iter().map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c))),
        ))
    }

    #[tokio::test]
    async fn bodies_are_read_whole_and_hold_their_bytes_until_dropped() {
        let budget = Budget::new(3 * UNIT);
        let (bytes, held) =
            budget.read(body(vec![b"ab", b"cd"]), None, 10_000, Duration::from_secs(5)).await.unwrap();
        assert_eq!(&bytes[..], b"abcd");
        let big = vec![0u8; 3 * UNIT];
        let refused =
            budget.read(Body::from(big.clone()), Some(big.len() as u64), 10_000, Duration::from_secs(5));
        assert_eq!(refused.await.err(), Some(Refused::Busy), "1 KiB held + 3 KiB over a 3 KiB budget");
        drop(held);
        let (bytes, _held) = budget
            .read(Body::from(big.clone()), Some(big.len() as u64), 10_000, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(bytes.len(), big.len());
    }

    #[tokio::test]
    async fn a_body_over_the_limit_or_too_slow_is_refused() {
        let budget = Budget::new(1 << 20);
        let large = budget.read(body(vec![&[0u8; 600], &[0u8; 600]]), None, 1000, Duration::from_secs(5));
        assert_eq!(large.await.err(), Some(Refused::TooLarge));
        let stalled = Body::from_stream(futures::stream::pending::<Result<Bytes, std::io::Error>>());
        let slow = budget.read(stalled, None, 1000, Duration::from_millis(50));
        assert_eq!(slow.await.err(), Some(Refused::TimedOut));
    }
}
