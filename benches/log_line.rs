//! Cost of one access log line: writing (on every request's path) and parsing.
//!
//! `cargo bench --bench log_line -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use qrtag::access_log::format::{Record, parse_line, write_record};
use qrtag::tracking::id::TrackingId;

const IPHONE: &[u8] = b"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

fn bench(c: &mut Criterion) {
    let id = TrackingId::generate();
    let v4 = Record {
        time: Utc::now(),
        client_ip: Some(IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7))),
        tracking: Some(&id),
        user_agent: Some(IPHONE),
        target: b"/H83if?utm_source=qr",
        status: 302,
        location: Some("https://example.com/whelans/?p=14"),
        fallback: false,
        method: "GET",
        referer: Some(b"https://search.example/?q=whelans"),
    };
    let v6 = Record {
        client_ip: Some(IpAddr::V6(Ipv6Addr::new(
            0x2001, 0xdb8, 0, 0, 0x8a2e, 0x370, 0x7334, 1,
        ))),
        ..v4
    };

    let mut g = c.benchmark_group("log_line");
    let mut out = Vec::with_capacity(512);
    g.bench_function("write_record (IPv4)", |b| {
        b.iter(|| {
            out.clear();
            write_record(black_box(&v4), &mut out);
        })
    });
    g.bench_function("write_record (IPv6)", |b| {
        b.iter(|| {
            out.clear();
            write_record(black_box(&v6), &mut out);
        })
    });
    g.bench_function("write_record with Utc::now()", |b| {
        b.iter(|| {
            out.clear();
            let rec = Record {
                time: Utc::now(),
                ..v4
            };
            write_record(black_box(&rec), &mut out);
        })
    });
    out.clear();
    write_record(&v4, &mut out);
    let line = String::from_utf8(out.clone()).unwrap_or_default();
    eprintln!("line: {} bytes", line.len());
    g.bench_function("parse_line", |b| {
        b.iter(|| parse_line(black_box(&line)).is_ok())
    });
    g.finish();
}

criterion_group! {
    name = benches;
    // Figures only: criterion is built without its plotters backend
    // (Cargo.toml), and a gnuplot found on the machine would only slow runs.
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
