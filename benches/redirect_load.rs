//! Load benchmark: server CPU per redirect, qrtag against a bare actix-web
//! handler, measured in the same run.
//!
//! Run with `cargo bench --bench redirect_load` (optionally
//! `QRTAG_LOAD_REQUESTS=200000`). The bench binary re-executes itself as each
//! server (one worker thread each, like for like), drives it from this process
//! over keep-alive loopback connections, and reads the server process's CPU
//! time from `/proc/PID/task/*/schedstat` (nanoseconds, every thread, the
//! kernel's share of the socket work included). Wall-clock throughput is
//! printed too but is not the figure: the client shares the machine.
//!
//! What the qrtag side does per request is the whole production path:
//! snapshot lookup, resolver and policy, tracking cookie (a new ID each time,
//! the costlier case), and an access-log line written to a real file.

#[path = "support/load.rs"]
mod load;

use load::{ROLE_VAR, Server, measure, median, serve_bare, serve_qrtag};

const KEY: &str = load::KEY;

fn main() {
    match std::env::var(ROLE_VAR).as_deref() {
        Ok("bare") => serve_bare(),
        Ok("qrtag") => serve_qrtag(),
        _ => drive(),
    }
}

fn drive() {
    // `cargo test --benches` runs bench binaries with `--test`: one quick round.
    let quick = std::env::args().any(|a| a == "--test");
    let requests: usize = std::env::var("QRTAG_LOAD_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 4_000 } else { 100_000 });
    let rounds = if quick { 1 } else { 5 };
    let connections = 4;
    let (mut bare, mut qrtag, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    println!(
        "redirect_load: {requests} requests per run, {connections} connections, {rounds} rounds"
    );
    for round in 1..=rounds {
        // Alternate so drift in machine load hits both sides alike.
        let paths = [format!("/{KEY}")];
        let b = measure(&Server::start("bare"), &paths, requests, connections);
        let q = measure(&Server::start("qrtag"), &paths, requests, connections);
        let ratio = q.cpu_per_request_us / b.cpu_per_request_us;
        println!(
            "round {round}: bare {:.2} µs/req ({:.0} req/s), qrtag {:.2} µs/req ({:.0} req/s), ratio {ratio:.3}",
            b.cpu_per_request_us, b.requests_per_s, q.cpu_per_request_us, q.requests_per_s
        );
        bare.push(b.cpu_per_request_us);
        qrtag.push(q.cpu_per_request_us);
        ratios.push(ratio);
    }
    println!(
        "median: bare {:.2} µs CPU/req, qrtag {:.2} µs CPU/req, qrtag/bare = {:.3}",
        median(bare),
        median(qrtag),
        median(ratios)
    );
}
