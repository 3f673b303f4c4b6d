//! What every HTTP client of the host shares: the TLS provider, chosen once, and a file as a
//! streamed request body. The upload client uses both, and so does the server's S3 store.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Once};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, ReadBuf};

use super::meter::Transfer;

/// rustls's ring provider, chosen once per process: reqwest is built without a default
/// one, and even plain HTTP needs one set.
pub fn install_crypto_provider() {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Fails only when the process already chose a provider, which is then used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The file as a request body of exactly the size that was hashed, read as it is sent
/// (never whole in memory), reporting what it sent to a [`Transfer`].
pub struct FileBody {
    file: tokio::fs::File,
    left: u64,
    buf: Box<[u8]>,
    transfer: Option<Arc<dyn Transfer>>,
}

impl FileBody {
    /// `len` bytes of `file` from where it stands, reported to nothing.
    pub fn new(file: tokio::fs::File, len: u64) -> FileBody {
        FileBody::reported(file, len, None)
    }

    /// `len` bytes of `file` from where it stands, each chunk reported to `transfer`.
    pub fn reported(
        file: tokio::fs::File,
        len: u64,
        transfer: Option<Arc<dyn Transfer>>,
    ) -> FileBody {
        FileBody {
            file,
            left: len,
            buf: vec![0; 64 * 1024].into_boxed_slice(),
            transfer,
        }
    }
}

impl http_body::Body for FileBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if this.left == 0 {
            return Poll::Ready(None);
        }
        let want = this
            .buf
            .len()
            .min(usize::try_from(this.left).unwrap_or(usize::MAX));
        let mut rb = ReadBuf::new(&mut this.buf[..want]);
        match Pin::new(&mut this.file).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) if rb.filled().is_empty() => Poll::Ready(Some(Err(
                io::Error::new(io::ErrorKind::UnexpectedEof, "the file got shorter"),
            ))),
            Poll::Ready(Ok(())) => {
                let data = Bytes::copy_from_slice(rb.filled());
                this.left -= data.len() as u64;
                if let Some(t) = &this.transfer {
                    t.advance(data.len() as u64);
                }
                Poll::Ready(Some(Ok(http_body::Frame::data(data))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}
