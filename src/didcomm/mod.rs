//! DIDComm Shorten URL 1.0 (Aries RFC 0746): qrtag as the url-shortener.
//!
//! Pure parts: [`message`] (v1/v2 JSON → one typed message), [`protocol`]
//! (the decision), [`problem`] (problem reports), [`oob`] (invitations in
//! URLs), [`did`] and [`resolve`] (did:peer:2, did:peer:0, did:key, offline).
//! Shells: [`identity`] (the key file), and the HTTP listener in
//! `src/server/api.rs`.

pub mod delivery;
pub mod did;
pub mod envelope;
pub mod identity;
pub mod message;
pub mod oob;
pub mod problem;
pub mod protocol;
pub mod replay;
pub mod resolve;
