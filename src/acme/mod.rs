//! Certificates from an ACME CA (issue 36): ordered, stored, shared between
//! nodes and renewed by one node at a time.
//!
//! Built on `instant-acme` rather than `rustls-acme`: `rustls-acme` owns the
//! whole state machine, its cache and the TLS-ALPN-01 listener, while qrtag
//! needs its own storage (the data directory, or an admin-only CouchDB
//! database several nodes share), a lease so that one node among several
//! orders, and HTTP-01 answered by its own port-80 listener. `instant-acme`
//! is the protocol only (accounts, orders, challenges, finalisation), so each
//! of those stays a part of qrtag:
//!
//! - [`settings`] — the directory URL (Let's Encrypt production by default),
//!   contact, the CA's own root, the names; checked once.
//! - [`order`] — one order: account loaded or created once, HTTP-01 through an
//!   [`Http01Responder`], polled within a deadline, finalised with a key made
//!   by rcgen.
//! - [`store`] — [`CertStore`]: account, certificates and the renewal lease,
//!   on disk ([`store::disk`]) or in CouchDB ([`store::couch`]).
//! - [`schedule`] — when to renew and how long to back off (pure).
//! - [`renewer`] — the task: installs what the store holds, renews under the
//!   lease, keeps the old certificate when an order fails, and reports a
//!   [`RenewalStatus`].
//!
//! The TLS listener and the port-80 challenge map are not here: they plug in
//! through [`Http01Responder`] and [`Installer`].

pub mod bundle;
pub mod error;
pub mod order;
pub mod renewer;
pub mod schedule;
pub mod seams;
pub mod settings;
pub mod store;

pub use bundle::CertificateBundle;
pub use error::AcmeError;
pub use order::AcmeClient;
pub use renewer::{RenewalStatus, Renewer, Timing};
pub use seams::{Http01Responder, Installer, TlsAlpn01Responder};
pub use settings::{AcmeSettings, Challenge, DirectoryUrl};
pub use store::{CertStore, Lease, StoreError};
