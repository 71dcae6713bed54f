//! DIDComm Shorten URL 1.0 end to end: the real application on port 0, the
//! real binary, real sockets.

#[path = "../support/mod.rs"]
mod support;

mod cli;
mod encrypted;
mod harness;
mod plain;
mod python;
mod read_your_writes;
mod receiver;
