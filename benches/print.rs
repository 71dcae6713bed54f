//! 10,000 tags on Avery L7163 as one PDF (`qrtag print`'s path), next to
//! rendering the same codes as SVG, so the figure is quoted as a ratio from
//! one run. The target: under 5 s on two cores, under 2 KB a tag.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use qrtag::print::{Job, Options, Tag, Target, render};
use qrtag::qr::{EcLevel, RenderOptions, encode, render_svg};

const TAGS: usize = 10_000;

fn tags() -> Vec<Tag> {
    (0..TAGS)
        .map(|i| {
            let url = format!("https://0x1f.ie/k{i:04}");
            Tag {
                text: url.clone(),
                caption: url,
            }
        })
        .collect()
}

fn pdf(tags: &[Tag]) -> Vec<u8> {
    let job = Job {
        target: Target::Sheet("L7163".parse().expect("built in")),
        tags: tags.to_vec(),
        options: Options::default(),
    };
    render(&job).expect("renders")
}

fn svgs(tags: &[Tag]) -> usize {
    tags.iter()
        .map(|t| {
            let code = encode(&t.text, EcLevel::L).expect("fits");
            render_svg(&code, &RenderOptions::default()).len()
        })
        .sum()
}

/// Seconds of one call.
fn seconds<T>(f: impl FnOnce() -> T) -> f64 {
    let start = Instant::now();
    black_box(f());
    start.elapsed().as_secs_f64()
}

fn bench(c: &mut Criterion) {
    let tags = tags();
    let bytes = pdf(&tags).len();
    // The figure the issue asks for, as a ratio from this run: the fastest
    // of three, PDF and SVG taking turns so a burst of load hits both.
    let (mut pdf_s, mut svg_s) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        pdf_s = pdf_s.min(seconds(|| pdf(&tags)));
        svg_s = svg_s.min(seconds(|| svgs(&tags)));
    }
    eprintln!(
        "{TAGS} tags on L7163: {bytes} bytes ({} a tag); PDF {pdf_s:.2} s, \
         the same codes as SVG {svg_s:.2} s: ratio {:.2}",
        bytes / TAGS,
        pdf_s / svg_s
    );
    let mut group = c.benchmark_group("print_10k_l7163");
    group.sample_size(10);
    group.throughput(Throughput::Elements(TAGS as u64));
    group.bench_function("pdf", |b| b.iter(|| pdf(black_box(&tags))));
    group.bench_function("svg_baseline", |b| b.iter(|| svgs(black_box(&tags))));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
