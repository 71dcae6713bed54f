//! The public listener over raw sockets with mutated requests: whatever
//! arrives, every answer sent gets exactly one access-log line, and every line
//! parses (issue 10: "every response the public listener sends gets exactly
//! one line").
//!
//! Valid requests are mutated (bytes flipped, inserted, deleted, lines
//! repeated or cut, requests spliced), pipelined several to a connection, and
//! written in pieces cut at random points; a few requests are sent split at
//! every byte. The run is bounded in count and seeded, so a failure is
//! reproduced by its seed: `QRTAG_FUZZ_SEED=N cargo test --test wire_fuzz`.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use futures_util::StreamExt;
use qrtag::access_log::parse_line;
use qrtag::settings::AccessLogTarget;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::poll;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TIMEOUT: Duration = Duration::from_secs(20);
/// Connections of (mostly) mutated requests, about 2,500 requests: a second
/// or two.
const CONNECTIONS: usize = 1_000;
const CONCURRENCY: usize = 16;

/// Requests the service answers each in its own way: redirects, 404, the
/// handler's 400 and 501, bodies in both framings, continue, raw bytes.
const CORPUS: &[&[u8]] = &[
    b"GET /abcde HTTP/1.1\r\nHost: 0x1f.ie\r\nUser-Agent: Phone/1.0\r\n\r\n",
    b"HEAD /abcde HTTP/1.1\r\nHost: 0x1f.ie\r\n\r\n",
    b"GET /docs/api/v1?x=1#f HTTP/1.1\r\nHost: a\r\nReferer: https://r.example/\r\nCookie: qrtag=0Vh3kY2s4fLq9ZxA01b\r\n\r\n",
    b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\nUser-Agent: B\xc3\xbccher\r\n\r\n",
    b"GET /a/../b HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET http://u:pw@evil.example/abcde HTTP/1.1\r\nHost: a\r\n\r\n",
    b"POST /abcde HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
    b"PUT /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
    b"POST /abcde HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
    b"GET /nope1 HTTP/1.0\r\n\r\n",
    b"GET /abcde HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 203.0.113.9\r\n\r\n",
    b"\r\nGET /abcde?q=%C3%A9 HTTP/1.1\nHost: a\n\n",
];

/// Bytes a mutation inserts: the ones parsers trip over.
const NASTY: &[u8] = b"\r\n \t\0\x7f\x80\xff\xc3\"<>\\^`{}|:;,=%#?/0123456789abcdefABCDEF";

fn mutate(rng: &mut StdRng, req: &[u8]) -> Vec<u8> {
    let mut out = req.to_vec();
    for _ in 0..rng.random_range(0..4) {
        let at = rng.random_range(0..=out.len());
        match rng.random_range(0..7) {
            0 if at < out.len() => out[at] ^= 1 << rng.random_range(0..8),
            1 => out.insert(at, NASTY[rng.random_range(0..NASTY.len())]),
            2 if at < out.len() => {
                out.remove(at);
            }
            3 => out.truncate(at),
            // Repeat a line (two Hosts, two Content-Lengths...).
            4 => {
                let start = out[..at]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                let end = out[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(out.len(), |i| at + i + 1);
                let line = out[start..end].to_vec();
                out.splice(end..end, line);
            }
            5 => {
                let other = CORPUS[rng.random_range(0..CORPUS.len())];
                let from = rng.random_range(0..=other.len());
                out.splice(at..at, other[from..].iter().copied());
            }
            _ => {
                let run = rng.random_range(1..300);
                let b = NASTY[rng.random_range(0..NASTY.len())];
                out.splice(at..at, std::iter::repeat_n(b, run));
            }
        }
    }
    out
}

/// Writes `pieces` one write each (no Nagle, so each goes out on its own),
/// ends the sending side, and reads everything the server sends until it
/// closes. A reset after the server's last answer (it closes with bytes of
/// ours unread) ends the reading like a close: what arrived before it counts.
async fn exchange(addr: SocketAddr, pieces: &[&[u8]]) -> Vec<u8> {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.set_nodelay(true).expect("nodelay");
    for piece in pieces {
        if s.write_all(piece).await.is_err() {
            break; // The server closed early; what it answered is read below.
        }
    }
    let _ = s.shutdown().await;
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match tokio::time::timeout(TIMEOUT, s.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return out,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => panic!("no close within {TIMEOUT:?}"),
        }
    }
}

/// The statuses of the final answers in `bytes` (interim `100 Continue` left
/// out). Our answers have a `content-length` body, or none for HEAD, and no
/// body begins like a status line, which tells the two apart.
fn final_statuses(mut bytes: &[u8]) -> Vec<u16> {
    let mut statuses = Vec::new();
    while !bytes.is_empty() {
        assert!(
            bytes.starts_with(b"HTTP/1."),
            "not a status line: {bytes:?}"
        );
        let end = memchr::memmem::find(bytes, b"\r\n\r\n").expect("a whole head") + 4;
        let head = std::str::from_utf8(&bytes[..end]).expect("ASCII head");
        let status: u16 = head[9..12].parse().expect("status");
        let length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().to_owned())
            })
            .map_or(0, |v| v.parse().expect("length"));
        bytes = &bytes[end..];
        if status >= 200 {
            statuses.push(status);
            if !bytes.starts_with(b"HTTP/1.") {
                bytes = &bytes[length.min(bytes.len())..];
            }
        }
    }
    statuses
}

fn split_at(rng: &mut StdRng, bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = (0..rng.random_range(0..5))
        .map(|_| rng.random_range(0..=bytes.len()))
        .collect();
    cuts.sort_unstable();
    let mut from = 0;
    let mut pieces = Vec::new();
    for cut in cuts.into_iter().chain([bytes.len()]) {
        pieces.push(bytes[from..cut].to_vec());
        from = cut;
    }
    pieces
}

/// Sends a request for `target` and returns the number of its line in the
/// log (0-based), once it is there.
async fn marker_line(app: &support::TestApp, log: &std::path::Path, target: &str) -> usize {
    assert_eq!(app.get(target).await.status(), 404);
    let needle = format!(" {target} ");
    poll::until(TIMEOUT, "the marker's line", || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        std::future::ready(text.lines().position(|l| l.contains(&needle)))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_to_mutated_requests_has_exactly_one_log_line() {
    let seed: u64 = std::env::var("QRTAG_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261124);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = support::test_settings(dir.path());
    settings.request_timeout = Duration::from_secs(15);
    let AccessLogTarget::Path(log) = settings.access_log.clone() else {
        panic!("a log file");
    };
    let app = support::spawn_with(settings, dir).await;
    app.link("abcde", "https://example.com/whelans/?p=14").await;
    app.link("docs", "https://docs.example/").await;
    app.wait_for_status("/abcde", 302).await;
    // Lines before this marker's are the warm-up's.
    let start = marker_line(&app, &log, "/fuzz-start").await;

    let mut rng = StdRng::seed_from_u64(seed);
    let mut connections: Vec<Vec<Vec<u8>>> = Vec::new();
    for _ in 0..CONNECTIONS {
        let mut bytes = Vec::new();
        for _ in 0..rng.random_range(1..=4) {
            let req = CORPUS[rng.random_range(0..CORPUS.len())];
            let req = if rng.random_bool(0.7) {
                mutate(&mut rng, req)
            } else {
                req.to_vec()
            };
            bytes.extend(req);
        }
        connections.push(split_at(&mut rng, &bytes));
    }
    // A few requests split at every byte, and one pipelined pair.
    let mut every: Vec<u8> = CORPUS[3].to_vec();
    every.extend_from_slice(CORPUS[7]);
    for req in [CORPUS[0], CORPUS[2], &every[..]] {
        connections.push(req.iter().map(|&b| vec![b]).collect());
    }

    let answers: Vec<(usize, Vec<u16>)> =
        futures_util::stream::iter(connections.iter().enumerate())
            .map(|(i, pieces)| async move {
                let pieces: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
                (i, final_statuses(&exchange(app.public, &pieces).await))
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
    let mut sent: BTreeMap<u16, usize> = BTreeMap::new();
    for (_, statuses) in &answers {
        for s in statuses {
            *sent.entry(*s).or_default() += 1;
        }
    }
    let answered: usize = sent.values().sum();

    // Each line is appended before its answer is sent, so once a later
    // request's line is there, so are all of them.
    let end = marker_line(&app, &log, "/fuzz-end").await;
    let text = std::fs::read_to_string(&log).expect("log");
    let mut logged: BTreeMap<u16, usize> = BTreeMap::new();
    for line in text.lines().skip(start + 1).take(end - start - 1) {
        let l = parse_line(line).unwrap_or_else(|e| panic!("seed {seed}: bad line {line:?}: {e}"));
        *logged.entry(l.status).or_default() += 1;
    }
    assert!(
        answered > CONNECTIONS,
        "seed {seed}: only {answered} answers: too few to mean much"
    );
    assert!(
        sent.contains_key(&400) && sent.contains_key(&302),
        "{sent:?}"
    );
    assert_eq!(
        logged, sent,
        "seed {seed}: statuses logged (left) and sent (right) differ"
    );
}
