//! Cost of `decide` on the redirect hot path, next to a baseline (a bare
//! HashMap lookup plus `Url::parse` of the destination, the least any
//! validating redirector must do) so results read as ratios across machines.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use qrtag::redirect::policy::{Decision, decide};
use url::Url;

const ORIGIN: &str = "https://0x1f.ie";
#[path = "support/short_keys.rs"]
mod short_keys;
use short_keys::key;

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

    // Issue 19, item 3: the work per request must grow linearly with the
    // parameters merged and the segments matched. Read each figure against
    // the 16-item case of its group: linear is about 16 times at 256.
    let mut group = c.benchmark_group("resolver_growth");
    for n in [16, 64, 256] {
        // Every name twice in the destination, then set by the request.
        let destination = format!(
            "https://a.example/?{}",
            (0..n)
                .map(|i| format!("p{i}=d&p{i}=e"))
                .collect::<Vec<_>>()
                .join("&")
        );
        let query = (0..n)
            .map(|i| format!("p{i}=r"))
            .collect::<Vec<_>>()
            .join("&");
        let merge_rules = |k: &str| (k == "m").then_some(destination.as_str());
        group.bench_function(format!("query_params_{n}"), |b| {
            b.iter(|| decide(ORIGIN, "/m", Some(black_box(&query)), merge_rules))
        });
        let deep = format!("/{hit}{}", "/segment".repeat(n.min(127)));
        group.bench_function(format!("path_segments_{}", n.min(127)), |b| {
            b.iter(|| decide(ORIGIN, black_box(&deep), None, lookup))
        });
    }
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
