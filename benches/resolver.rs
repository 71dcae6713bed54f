//! Cost of `decide` on the redirect hot path, next to a baseline (a bare
//! HashMap lookup plus `Url::parse` of the destination, the least any
//! validating redirector must do) so results read as ratios across machines.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use qrtag::redirect_policy::{Decision, decide};
use url::Url;

const ORIGIN: &str = "https://0x1f.ie";
const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Five base-62 digits, spread over the key space like real short IDs.
fn key(i: u64) -> String {
    let mut n = i.wrapping_mul(2_654_435_761) % 62u64.pow(5);
    let mut digits = [0u8; 5];
    for d in digits.iter_mut().rev() {
        *d = ALPHABET[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8_lossy(&digits).into_owned()
}

fn ruleset() -> HashMap<String, String> {
    (0..10_000u64)
        .map(|i| {
            (
                key(i),
                format!("https://www.example.com/campaigns/{i}/landing?utm_source=qr&id={i}"),
            )
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let rules = ruleset();
    let lookup = |k: &str| rules.get(k).map(String::as_str);
    let hit = key(4_242);
    let path = format!("/{hit}");
    let long_path = format!("/{hit}/extra/segment");
    assert!(matches!(
        decide(ORIGIN, &path, None, lookup),
        Decision::Redirect { .. }
    ));

    let mut group = c.benchmark_group("resolver");
    group.bench_function("baseline_lookup_and_url_parse", |b| {
        b.iter(|| {
            let value = rules.get(black_box(&path[1..])).map(String::as_str);
            value.and_then(|v| Url::parse(v).ok())
        })
    });
    group.bench_function("decide_hit", |b| {
        b.iter(|| decide(ORIGIN, black_box(&path), None, lookup))
    });
    group.bench_function("decide_hit_path_and_query", |b| {
        b.iter(|| {
            decide(
                ORIGIN,
                black_box(&long_path),
                Some("utm_medium=print&x=1"),
                lookup,
            )
        })
    });
    group.bench_function("decide_miss", |b| {
        b.iter(|| decide(ORIGIN, black_box("/zzzzz"), None, lookup))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    // Figures only: criterion is built without its plotters backend
    // (Cargo.toml), and a gnuplot found on the machine would only slow runs.
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
