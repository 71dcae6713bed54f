//! What the per-request extras (tracking cookie, access log line) cost next to
//! the redirect itself, measured in the same run so the ratio is meaningful:
//!
//! - `handler/answer`: the handler's own work without the extras (snapshot
//!   lookup, policy, response headers): the baseline.
//! - `handler/handle`: the full handler, with cookie and log line.
//! - `extras/*`: the parts on their own, including what the public
//!   listener's connection wrapper (`server::request_line`) spends on a
//!   phone's request: scanning it (`request_line_scan`, every request) and
//!   rewriting one with a raw non-ASCII target (`request_line_encode`, rare).
//!
//! Neither includes actix's own per-request work (parsing, dispatch, writing
//! the response), which a bare actix-web handler also pays; the ratio here is
//! therefore an upper bound on the ratio at the server. The log goes to
//! /dev/null, so the flusher's write costs little and the numbers show what a
//! request pays, not the disk.
//!
//! Run briefly with: cargo bench --bench redirect -- --warm-up-time 1 --measurement-time 3

use std::hint::black_box;
use std::net::SocketAddr;

use actix_web::http::header::HeaderValue;
use actix_web::test::TestRequest;
use actix_web::{HttpRequest, web};
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use serde_json::json;

use qrtag::access_log::{AccessLog, AccessLogTarget, Record, WriterOptions, write_record};
use qrtag::server::public::{self, PublicState};
use qrtag::server::request_line::RequestLines;
use qrtag::snapshot::{Change, Snapshot};
use qrtag::tracking::cookie::{CookieName, Presented, TrackingCookie};
use qrtag::tracking::id::TrackingId;
use qrtag::tracking::secret::TrackingKeys;
use qrtag::values::public_url::PublicUrl;

const ID: &str = "0Vh3kY2s4fLq9ZxA01b";

/// The benchmark's secret: any fixed one will do.
fn keys() -> TrackingKeys {
    TrackingKeys::from_secrets(&[[7; 32]]).expect("a secret")
}

/// The cookie value a returning phone sends: the ID and its MAC.
fn signed_id() -> String {
    keys().value(&TrackingId::parse(ID).expect("id"))
}
const UA: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

fn state(log: AccessLog) -> web::Data<PublicState> {
    let snapshot = Snapshot::new();
    let doc = match json!({"url": "https://example.com/whelans/?p=14"}) {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    };
    snapshot.apply(
        vec![Change::Upsert {
            key: "H83if".into(),
            doc,
        }],
        None,
    );
    snapshot.mark_loaded();
    // Issue 36: one site, no domains: as a single-domain server is built.
    let site = qrtag::server::sites::Site {
        host: None,
        snapshot,
        public_url: qrtag::store::live_url::LiveUrl::new(
            PublicUrl::parse("https://0x1f.ie").expect("url"),
        ),
        access_log: log,
        tracking: Some(TrackingCookie::new(CookieName::default(), true, keys())),
        dead_tag: Default::default(),
        root: None,
    };
    web::Data::new(PublicState {
        sites: qrtag::server::sites::Sites::new(site, Vec::new(), Default::default()),
        geoip: None,
        trusted_proxies: Vec::new(),
        client_ip_mode: Default::default(),
        metrics: Default::default(),
    })
}

fn request() -> HttpRequest {
    let peer: SocketAddr = "203.0.113.7:51234".parse().expect("addr");
    TestRequest::get()
        .uri("/H83if")
        .peer_addr(peer)
        .insert_header(("user-agent", UA))
        .insert_header(("cookie", format!("_ga=GA1.2.3; qrtag={}", signed_id())))
        .insert_header(("referer", "https://www.example.org/"))
        .to_http_request()
}

/// The bytes of a request as a phone's browser sends it after a scan.
fn phone_request(target: &[u8]) -> Vec<u8> {
    let mut r = b"GET ".to_vec();
    r.extend_from_slice(target);
    r.extend_from_slice(b" HTTP/1.1\r\nHost: 0x1f.ie\r\nAccept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nUser-Agent: ");
    r.extend_from_slice(UA.as_bytes());
    r.extend_from_slice(format!("\r\nAccept-Language: en-IE,en;q=0.9\r\nAccept-Encoding: gzip, deflate, br\r\nCookie: _ga=GA1.2.3; qrtag={}\r\nConnection: keep-alive\r\n\r\n", signed_id()).as_bytes());
    r
}

fn benches(c: &mut Criterion) {
    let log = AccessLog::open(
        &AccessLogTarget::Path("/dev/null".into()),
        WriterOptions::default(),
    )
    .expect("open /dev/null");
    let data = state(log.clone());
    let req = request();

    let mut g = c.benchmark_group("handler");
    g.bench_function("answer", |b| {
        b.iter(|| {
            black_box(public::answer(
                black_box(&req),
                &data,
                data.sites.default_site(),
                chrono::Utc::now(),
            ))
        })
    });
    g.bench_function("handle", |b| {
        b.iter(|| {
            black_box(
                public::handle(req.clone(), data.clone())
                    .now_or_never()
                    .expect("the handler never waits"),
            )
        })
    });
    g.finish();

    let cookie = TrackingCookie::new(CookieName::default(), true, keys());
    let header =
        HeaderValue::from_str(&format!("_ga=GA1.2.3; qrtag={}", signed_id())).expect("header");
    // The echo bench measures a returning phone: its cookie must verify.
    assert_eq!(
        cookie.find(std::iter::once(header.as_bytes())),
        Presented::Valid(TrackingId::parse(ID).expect("id"))
    );
    let mut g = c.benchmark_group("extras");
    g.bench_function("cookie_echo", |b| {
        b.iter(|| {
            let id = cookie
                .find(std::iter::once(black_box(header.as_bytes())))
                .id_to_send();
            let mut v = Vec::with_capacity(cookie.set_cookie_len());
            cookie.write_set_cookie(&id, &mut v);
            black_box(HeaderValue::from_maybe_shared(web::Bytes::from(v)).expect("valid"))
        })
    });
    g.bench_function("cookie_new_id", |b| {
        b.iter(|| {
            let id = cookie.find(std::iter::empty()).id_to_send();
            let mut v = Vec::with_capacity(cookie.set_cookie_len());
            cookie.write_set_cookie(&id, &mut v);
            black_box(HeaderValue::from_maybe_shared(web::Bytes::from(v)).expect("valid"))
        })
    });
    let id = TrackingId::parse(ID).expect("id");
    let rec = Record {
        time: chrono::Utc::now(),
        client_ip: Some("203.0.113.7".parse().expect("ip")),
        tracking: Some(&id),
        user_agent: Some(UA.as_bytes()),
        target: b"/H83if",
        status: 302,
        location: Some("https://example.com/whelans/?p=14"),
        fallback: false,
        method: "GET",
        referer: Some(b"https://www.example.org/"),
    };
    let mut buf = Vec::with_capacity(1024);
    g.bench_function("write_record", |b| {
        b.iter(|| {
            buf.clear();
            write_record(black_box(&rec), &mut buf);
            black_box(buf.len())
        })
    });
    g.bench_function("append_record", |b| {
        b.iter(|| log.append_record(black_box(&rec)))
    });
    g.bench_function("utc_now", |b| b.iter(|| black_box(chrono::Utc::now())));
    let ascii = phone_request(b"/H83if");
    g.bench_function("request_line_scan", |b| {
        b.iter(|| RequestLines::new().pass(black_box(&ascii)))
    });
    let raw = phone_request(b"/docs/caf\xc3\xa9");
    let mut out = Vec::with_capacity(1024);
    g.bench_function("request_line_encode", |b| {
        b.iter(|| {
            out.clear();
            RequestLines::new().rewrite(black_box(&raw), &mut out);
            black_box(out.len())
        })
    });
    g.finish();

    let stats = log.stats();
    eprintln!(
        "access log: {} lines appended, {} written, {} waits for room, {} dropped",
        stats.lines_appended, stats.lines_written, stats.backpressure_waits, stats.lines_dropped
    );
}

criterion_group! {
    name = redirect;
    // Figures only: criterion is built without its plotters backend
    // (Cargo.toml), and a gnuplot found on the machine would only slow runs.
    config = Criterion::default().without_plots();
    targets = benches
}
criterion_main!(redirect);
