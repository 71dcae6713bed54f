//! Slow clients against the public listener, over real sockets: every
//! request (head and body) has a deadline, not only a connection's first, and
//! one address cannot hold all the connections. Bounded: a few dozen
//! connections, each test over in seconds.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::{poll, spawn_with, test_settings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

async fn app(timeout: Duration, per_ip: usize) -> support::TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.request_timeout = timeout;
    settings.max_connections_per_ip = per_ip;
    let app = spawn_with(settings, dir).await;
    app.link("abcde", "https://example.com/").await;
    app.wait_for_status("/abcde", 302).await;
    app
}

async fn connect_from(source: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("addr"))
        .expect("bind the source address");
    socket.connect(to).await.expect("connect")
}

/// Reads one whole response (status line to the end of its headers; these
/// redirects have no body); `None` when the server closed instead.
async fn response(conn: &mut TcpStream) -> Option<String> {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        match tokio::time::timeout(Duration::from_secs(5), conn.read(&mut byte)).await {
            Ok(Ok(1)) => got.push(byte[0]),
            Ok(_) => return None,
            Err(_) => panic!("no answer and no close within 5 s"),
        }
    }
    Some(String::from_utf8_lossy(&got).into_owned())
}

/// Sends `start`, then one more byte every 200 ms; returns how long after
/// `start` the server closed the connection (it must, well before the 8 s
/// this client would go on for).
async fn trickle(mut conn: TcpStream, start: Vec<u8>) -> Duration {
    conn.write_all(&start).await.expect("send");
    let began = Instant::now();
    let mut buf = [0u8; 512];
    for _ in 0..40 {
        let closed = tokio::select! {
            r = conn.read(&mut buf) => matches!(r, Ok(0) | Err(_)),
            // The pace of a slowloris client, not a wait for the server.
            () = tokio::time::sleep(Duration::from_millis(200)) => false,
        };
        if closed || conn.write_all(b"x").await.is_err() {
            return began.elapsed();
        }
    }
    panic!("still open after 8 s");
}

/// A listener under test: where it is, a request it answers and how.
#[derive(Clone, Copy)]
struct Target {
    addr: SocketAddr,
    path: &'static str,
    status: &'static str,
}

impl Target {
    fn public(app: &support::TestApp) -> Self {
        Self {
            addr: app.public,
            path: "/abcde",
            status: "302",
        }
    }

    /// The admin listener (issue 18: it had none of these guards).
    fn admin(app: &support::TestApp) -> Self {
        Self {
            addr: app.admin,
            path: "/healthz",
            status: "200",
        }
    }

    fn request(&self) -> Vec<u8> {
        format!("GET {} HTTP/1.1\r\nHost: a\r\n\r\n", self.path).into_bytes()
    }
}

/// Twenty slow clients on `to` (a second request on a keep-alive connection,
/// or a slow body), each cut off at the 1 s deadline, while others are
/// answered meanwhile.
async fn slow_requests_are_cut_off(app: &support::TestApp, to: Target) {
    let mut slow = Vec::new();
    for i in 0..20 {
        let mut conn = TcpStream::connect(to.addr).await.expect("connect");
        let start: Vec<u8> = if i % 2 == 0 {
            conn.write_all(&to.request()).await.expect("send");
            let first = response(&mut conn).await.expect("the first is answered");
            assert!(
                first.starts_with(&format!("HTTP/1.1 {}", to.status)),
                "{first}"
            );
            format!("GET {} HTTP/1.1\r\nHo", to.path).into_bytes()
        } else {
            format!(
                "GET {} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n",
                to.path
            )
            .into_bytes()
        };
        slow.push(tokio::spawn(trickle(conn, start)));
    }
    // Others are served while the slow ones hang on.
    for _ in 0..5 {
        let r = app
            .client
            .get(format!("http://{}{}", to.addr, to.path))
            .send()
            .await
            .expect("answered");
        assert!(r.status().as_str() == to.status, "{}", r.status());
    }
    for task in slow {
        let took = task.await.expect("join");
        assert!(
            took < Duration::from_secs(4),
            "a slow client kept its connection for {took:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_requests_are_cut_off_and_others_are_answered_meanwhile() {
    let app = app(Duration::from_secs(1), 0).await;
    slow_requests_are_cut_off(&app, Target::public(&app)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_requests_to_the_admin_listener_are_cut_off_too() {
    let app = app(Duration::from_secs(1), 0).await;
    slow_requests_are_cut_off(&app, Target::admin(&app)).await;
}

/// With a share of 4 connections a network: a fifth from 127.0.3.3 is
/// closed unanswered, another network is served, and a slot comes back.
async fn one_address_gets_its_share(to: Target) {
    // The harness's own client keeps connections from 127.0.0.1: this test's
    // client comes from another /24 (issue 30: the cap is per /24).
    let request = to.request();
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut conn = connect_from("127.0.3.3", to.addr).await;
        conn.write_all(&request).await.expect("send");
        assert!(response(&mut conn).await.is_some(), "within its share");
        held.push(conn);
    }
    let mut fifth = connect_from("127.0.3.3", to.addr).await;
    let _ = fifth.write_all(&request).await;
    assert_eq!(response(&mut fifth).await, None, "closed without an answer");
    // Another network is not affected.
    let mut other = connect_from("127.0.2.2", to.addr).await;
    other.write_all(&request).await.expect("send");
    assert!(response(&mut other).await.is_some());
    // A connection that ends gives its slot back.
    drop(held.pop());
    poll::until(Duration::from_secs(5), "a slot to come back", || async {
        let mut conn = connect_from("127.0.3.3", to.addr).await;
        conn.write_all(&request).await.ok()?;
        response(&mut conn).await
    })
    .await;
}

/// Issue 19, item 1: a first request whose framing was padded past what the
/// request-line adapter judged (actix reads it fine) turned the adapter off,
/// and with it every later request's deadline and the encoding of raw
/// targets: a trickled second request stayed open 40 s, and `/café` got a
/// 400 logged as `- - - 400`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn padded_framing_keeps_the_deadline_and_the_encoding() {
    let app = app(Duration::from_secs(1), 0).await;
    let zeros = "0".repeat(70);
    let spaces = " ".repeat(60);
    let firsts = [
        format!("GET /abcde HTTP/1.1\r\nHost: a\r\nContent-Length: {zeros}\r\n\r\n"),
        format!("GET /abcde HTTP/1.1\r\nHost: a\r\nContent-Length:{spaces}0\r\n\r\n"),
        format!(
            "GET /abcde HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:{spaces}chunked\r\n\r\n0\r\n\r\n"
        ),
        "GET /abcde HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
         00000000000000000000\r\n\r\n"
            .to_owned(),
    ];
    let mut slow = Vec::new();
    for first in &firsts {
        // On one connection: a raw non-ASCII target is still encoded (404
        // for an unknown key, not actix's own 400).
        let mut conn = TcpStream::connect(app.public).await.expect("connect");
        conn.write_all(first.as_bytes()).await.expect("send");
        let answer = response(&mut conn).await.expect("the first is answered");
        assert!(answer.starts_with("HTTP/1.1 302"), "{first:?}: {answer}");
        conn.write_all(b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .expect("send");
        let answer = response(&mut conn).await.expect("the second is answered");
        assert!(answer.starts_with("HTTP/1.1 404"), "{first:?}: {answer}");
        // On another: a trickled second request is cut at the deadline.
        let mut conn = TcpStream::connect(app.public).await.expect("connect");
        conn.write_all(first.as_bytes()).await.expect("send");
        let answer = response(&mut conn).await.expect("the first is answered");
        assert!(answer.starts_with("HTTP/1.1 302"), "{first:?}: {answer}");
        slow.push(tokio::spawn(trickle(
            conn,
            b"GET /abcde HTTP/1.1\r\nHo".to_vec(),
        )));
    }
    for task in slow {
        let took = task.await.expect("join");
        assert!(
            took < Duration::from_secs(4),
            "a padded connection kept a slow request open for {took:?}"
        );
    }
    // The 404s were logged with their targets, not as `- - - 400`.
    let log = app.dir.path().join("access.log");
    poll::until(
        Duration::from_secs(5),
        "the 404 lines in the log",
        || async {
            let text = std::fs::read_to_string(&log).ok()?;
            (text.matches(" /caf%C3%A9 404 ").count() == firsts.len()).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_hold_every_connection() {
    let app = app(Duration::from_secs(30), 4).await;
    one_address_gets_its_share(Target::public(&app)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_hold_every_admin_connection() {
    let app = app(Duration::from_secs(30), 4).await;
    one_address_gets_its_share(Target::admin(&app)).await;
}
