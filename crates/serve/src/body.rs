//! Bodies on their way in and out of a connection: a request body must keep coming
//! ([`Paced`]), and both hold their connection busy while they last ([`Held`]), so that
//! its idle and header clocks do not run while a request is in flight. What holds the
//! connection is the caller's guard (`H`, the connection's hold in `conn`), dropped when
//! the body is done.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// A request body that brought fewer than `min` bytes in `window` of waiting for it.
#[derive(Debug, thiserror::Error)]
#[error("the body stalled: fewer than {min} bytes came in {} s", window.as_secs_f64())]
pub struct Stalled {
    /// The bytes a body had to bring.
    pub min: u64,
    /// The waiting time it had to bring them in.
    pub window: Duration,
}

/// The [`Stalled`] body `e` is, or wraps.
pub fn stalled_in<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Stalled> {
    let mut e = Some(e);
    while let Some(err) = e {
        if let Some(s) = err.downcast_ref::<Stalled>() {
            return Some(s);
        }
        if let Some(PacedError::Stalled(s)) = err.downcast_ref::<PacedError>() {
            return Some(s);
        }
        e = err.source();
    }
    None
}

/// Why a [`Paced`] body failed.
#[derive(Debug, thiserror::Error)]
pub enum PacedError {
    /// It stalled.
    #[error(transparent)]
    Stalled(#[from] Stalled),
    /// The body it wraps failed.
    #[error(transparent)]
    Inner(Box<dyn std::error::Error + Send + Sync>),
}

/// A request body that must bring at least `min` bytes in each `window` of time spent
/// waiting for it. Only waiting counts: while the handler is busy elsewhere (writing to
/// disk) the client cannot send and is not blamed for it.
pub struct Paced<B, H> {
    inner: B,
    min: u64,
    window: Duration,
    /// Bytes and waiting time since `min` bytes last came.
    got: u64,
    waited: Duration,
    /// Since when the handler has been waiting, and the moment the window runs out.
    waiting: Option<(Instant, Pin<Box<Sleep>>)>,
    hold: Option<H>,
}

impl<B: Body, H> Paced<B, H> {
    /// `inner`, held to `min` bytes per `window` of waiting; `hold` is kept until the body
    /// ends.
    pub fn new(inner: B, min: u64, window: Duration, hold: H) -> Paced<B, H> {
        // An empty body (a GET) holds nothing: the request's answer does.
        let hold = (!inner.is_end_stream()).then_some(hold);
        Paced {
            inner,
            min,
            window,
            got: 0,
            waited: Duration::ZERO,
            waiting: None,
            hold,
        }
    }
}

impl<B, H: Unpin> Body for Paced<B, H>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = PacedError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, PacedError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                if let Some((since, _)) = this.waiting.take() {
                    this.waited += since.elapsed();
                }
                match frame {
                    Some(Ok(f)) => {
                        if let Some(d) = f.data_ref() {
                            this.got += d.len() as u64;
                            if this.got >= this.min {
                                this.got = 0;
                                this.waited = Duration::ZERO;
                            }
                        }
                        Poll::Ready(Some(Ok(f)))
                    }
                    Some(Err(e)) => {
                        this.hold = None;
                        Poll::Ready(Some(Err(PacedError::Inner(e.into()))))
                    }
                    None => {
                        this.hold = None;
                        Poll::Ready(None)
                    }
                }
            }
            Poll::Pending => {
                let left = this.window.saturating_sub(this.waited);
                let (_, timer) = this.waiting.get_or_insert_with(|| {
                    let now = Instant::now();
                    (now, Box::pin(tokio::time::sleep_until(now + left)))
                });
                ready!(timer.as_mut().poll(cx));
                this.waiting = None;
                this.hold = None;
                Poll::Ready(Some(Err(PacedError::Stalled(Stalled {
                    min: this.min,
                    window: this.window,
                }))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An answer's body that keeps its connection busy until it has been sent (or dropped).
pub struct Held<B, H> {
    inner: B,
    hold: Option<H>,
}

impl<B, H> Held<B, H> {
    /// `inner`, keeping `hold` until it has been sent or dropped.
    pub fn new(inner: B, hold: H) -> Held<B, H> {
        Held {
            inner,
            hold: Some(hold),
        }
    }
}

impl<B, H: Unpin> Body for Held<B, H>
where
    B: Body + Unpin,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = &mut *self;
        let r = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        if r.is_none() {
            this.hold = None;
        }
        Poll::Ready(r)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
