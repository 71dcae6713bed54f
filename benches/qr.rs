//! Renders per second of a typical short URL, next to `qrcode`'s own path
//! (`QrCode::new` at level M, its `Luma`/SVG renderers, `image`'s default PNG
//! settings) so the figures can be quoted as ratios from one run.

use std::hint::black_box;
use std::io::Cursor;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use image::{ImageFormat, Luma};
use qrcode::QrCode;
use qrcode::render::svg;
use qrtag::qr::{EcLevel, RenderOptions, encode, render_png, render_svg, short_url_text};

fn url() -> String {
    short_url_text("https://0x1f.ie", "H83if", false)
}

fn qrtag_png(text: &str) -> Vec<u8> {
    let code = encode(text, EcLevel::L).expect("short URL fits");
    render_png(&code, &RenderOptions::default()).expect("PNG encodes")
}

fn qrtag_svg(text: &str) -> String {
    let code = encode(text, EcLevel::L).expect("short URL fits");
    render_svg(&code, &RenderOptions::default())
}

fn baseline_png(text: &str) -> Vec<u8> {
    let code = QrCode::new(text).expect("short URL fits");
    let image = code.render::<Luma<u8>>().build();
    let mut out = Cursor::new(Vec::new());
    image
        .write_to(&mut out, ImageFormat::Png)
        .expect("PNG encodes");
    out.into_inner()
}

fn baseline_svg(text: &str) -> String {
    let code = QrCode::new(text).expect("short URL fits");
    code.render::<svg::Color>().build()
}

fn bench(c: &mut Criterion) {
    let text = url();
    eprintln!(
        "{text}: qrtag PNG {} bytes, SVG {} bytes; baseline PNG {} bytes, SVG {} bytes",
        qrtag_png(&text).len(),
        qrtag_svg(&text).len(),
        baseline_png(&text).len(),
        baseline_svg(&text).len(),
    );

    let mut png = c.benchmark_group("png");
    png.throughput(Throughput::Elements(1));
    png.bench_function("qrtag", |b| b.iter(|| qrtag_png(black_box(&text))));
    png.bench_function("baseline", |b| b.iter(|| baseline_png(black_box(&text))));
    png.finish();

    let mut svg = c.benchmark_group("svg");
    svg.throughput(Throughput::Elements(1));
    svg.bench_function("qrtag", |b| b.iter(|| qrtag_svg(black_box(&text))));
    svg.bench_function("baseline", |b| b.iter(|| baseline_svg(black_box(&text))));
    svg.finish();
}

criterion_group! {
    name = benches;
    // Figures only: criterion is built without its plotters backend
    // (Cargo.toml), and a gnuplot found on the machine would only slow runs.
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
