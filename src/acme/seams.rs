//! Where the ACME part meets the TLS listener: the port-80 challenge map and
//! the certificate resolver live with the listener (`src/tls/`), so the
//! renewer reaches them only through these two traits and never imports it.

use super::CertificateBundle;

/// Answers `GET /.well-known/acme-challenge/{token}` with the key
/// authorisation while an order is validated. `put` comes before the CA is
/// told the challenge is ready and `remove` after the order is done, whether
/// it succeeded or not.
pub trait Http01Responder: Send + Sync {
    fn put(&self, token: &str, key_authorization: &str);
    fn remove(&self, token: &str);
}

/// Makes a certificate the one served for its names, without a restart: the
/// listener's SNI resolver swaps it in for new handshakes, connections open on
/// the old one carry on.
pub trait Installer: Send + Sync {
    /// `name` is the certificate's first name (the domain it was ordered for);
    /// an error (a chain or key the listener cannot use) is reported in the
    /// renewal status and the previous certificate stays.
    fn install(&self, name: &str, bundle: &CertificateBundle) -> Result<(), String>;
}

/// Issue 36: serves the TLS-ALPN-01 answer: `answer` (a self-signed
/// certificate for `name` carrying the acmeIdentifier extension, and its
/// key) to a handshake naming `name` and offering ALPN `acme-tls/1`, until
/// `remove`. `put` comes before the CA is told the challenge is ready.
pub trait TlsAlpn01Responder: Send + Sync {
    fn put(&self, name: &str, answer: &CertificateBundle) -> Result<(), String>;
    fn remove(&self, name: &str);
}
