//! The listener's side of TLS: the rustls server configuration built over
//! the [`Certificates`] resolver, and the handshake that turns an accepted
//! connection into the TLS stream the listener pipeline (deadlines,
//! connection caps, the request line rewriting) serves. A plain listener
//! serves the `TcpStream` itself through the same pipeline (generic over
//! the stream, `startup::guarded_server`), not an enum of the two: through
//! the enum every read and write of a plain redirect was a frame of its own
//! (issue 36, `benches/redirect_instructions.rs`).

use std::io;
use std::sync::Arc;
use std::time::Duration;

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
/// in a request). Takes the acceptor (an `Arc` inside) so the future owns
/// what it needs.
pub async fn accept(
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    deadline: Duration,
) -> io::Result<TlsStream<TcpStream>> {
    match tokio::time::timeout(deadline, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => Ok(tls),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "TLS handshake took too long",
        )),
    }
}
