//! The listener's side of TLS: the rustls server configuration built over
//! the [`Certificates`] resolver, and a connection that is either plain or
//! TLS, so one listener pipeline (deadlines, connection caps, the request
//! line rewriting) serves both.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use super::resolver::Certificates;

/// Only HTTP/1.1 is offered in ALPN: the listeners are built with
/// actix-http's HTTP/1 service alone (actix-web's `http2` feature is off),
/// so a client must not be told it may speak h2.
/// Issue 36: `acme-tls/1` too, which only a CA validating TLS-ALPN-01
/// offers (and is then served the answer, see [`Certificates`]).
pub const ALPN: &[&[u8]] = &[b"http/1.1", super::resolver::ACME_TLS_ALPN];

/// TLS 1.2 and 1.3 with rustls' safe defaults, no client certificates,
/// the certificate picked per handshake by `certificates`.
pub fn acceptor(certificates: Arc<Certificates>) -> Result<TlsAcceptor, rustls::Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(super::provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(certificates);
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The handshake, within `deadline` (the request timeout: a client that
/// stalls in the handshake holds its slot no longer than one that stalls
/// in a request).
pub async fn accept(
    acceptor: &TlsAcceptor,
    tcp: TcpStream,
    deadline: Duration,
) -> io::Result<Conn> {
    match tokio::time::timeout(deadline, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => Ok(Conn::Tls(Box::new(tls))),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "TLS handshake took too long",
        )),
    }
}

/// A listener's connection: plain TCP, or TLS over it.
#[derive(Debug)]
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s) => s.is_write_vectored(),
            Conn::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
