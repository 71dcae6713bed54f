//! End-to-end checks of the QR encoder: minimality against an independent
//! brute force, decodability of every rendered image, and output formats.

#[path = "support/qr_decode.rs"]
mod qr_decode;

use std::collections::HashSet;

use proptest::prelude::*;
use qr_decode::{attr, decode_symbol, modules_from_path};
use qrcode::bits::Bits;
use qrcode::{Color, QrCode, Version};
use qrtag::qr::{
    EcLevel, Mode, QrError, RenderOptions, SHEET_FULL_SIZE_CAPACITY, build, encode,
    optimal_segments, plan, render_png, render_sheet_svg, render_svg, short_url_text,
};

// ---------------------------------------------------------------------------
// Decoding helpers

/// Decodes a PNG the way a scanner would see it and returns the version and
/// text of the single symbol in it.
fn decode_png(png: &[u8]) -> (usize, String) {
    let image = image::load_from_memory(png).expect("PNG loads").to_luma8();
    decode_symbol(image)
}

fn version_of(code: &QrCode) -> u8 {
    match code.version() {
        Version::Normal(v) => u8::try_from(v).expect("normal versions are 1..=40"),
        Version::Micro(_) => panic!("never builds micro QR"),
    }
}

fn png_of(text: &str, ec: EcLevel) -> Vec<u8> {
    let code = encode(text, ec).expect("short URL fits");
    render_png(&code, &RenderOptions::default()).expect("PNG encodes")
}

// ---------------------------------------------------------------------------
// Independent brute force for the minimal version
//
// Nothing here uses the library's planner. Segment costs come from pushing
// data into `qrcode`'s own `Bits`, the character sets are restated from the
// standard, and the search enumerates every per-character mode assignment.
// Reading consecutive characters of one mode as one segment loses nothing:
// splitting a run in two costs a whole extra header (at least 12 bits) and
// saves at most the rounding of one partial group.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum M {
    N,
    A,
    B,
}

/// Modes a byte may be encoded in (ISO/IEC 18004 Table 5 for A).
fn choices(b: u8) -> &'static [M] {
    match b {
        b'0'..=b'9' => &[M::N, M::A, M::B],
        b'A'..=b'Z' | b' ' | b'$' | b'%' | b'*' | b'+' | b'-' | b'.' | b'/' | b':' => &[M::A, M::B],
        _ => &[M::B],
    }
}

/// Bits of one segment as `qrcode` itself writes it; `version` picks the
/// count-indicator widths. A length the count indicator cannot express is
/// infinitely expensive.
fn qrcode_segment_bits(mode: M, len: usize, version: i16) -> usize {
    let mut bits = Bits::new(Version::Normal(version));
    let pushed = match mode {
        M::N => bits.push_numeric_data(&vec![b'7'; len]),
        M::A => bits.push_alphanumeric_data(&vec![b'Q'; len]),
        M::B => bits.push_byte_data(&vec![b'q'; len]),
    };
    match pushed {
        Ok(()) => bits.len(),
        Err(_) => usize::MAX,
    }
}

/// Segment costs for every mode and length up to `max_len`, per version
/// class (represented by versions 1, 10 and 27).
struct CostTable {
    bits: Vec<[Vec<usize>; 3]>,
}

const CLASS_VERSIONS: [i16; 3] = [1, 10, 27];

impl CostTable {
    fn new(max_len: usize) -> Self {
        let bits = CLASS_VERSIONS
            .iter()
            .map(|&v| {
                [M::N, M::A, M::B].map(|m| {
                    (0..=max_len)
                        .map(|n| qrcode_segment_bits(m, n, v))
                        .collect()
                })
            })
            .collect();
        Self { bits }
    }

    fn seg(&self, class: usize, mode: M, len: usize) -> usize {
        let m = match mode {
            M::N => 0,
            M::A => 1,
            M::B => 2,
        };
        self.bits[class][m][len]
    }
}

/// Where an assignment of the prefix leaves off: bits of its finished
/// segments, and the mode and length of the run still open. Every full
/// assignment's cost is determined by this plus the key's assignment, so
/// keeping the distinct ones is the same as keeping them all.
type Open = (usize, M, usize);

fn prefix_states(prefix: &[u8], table: &CostTable, class: usize) -> HashSet<Open> {
    let mut states = HashSet::new();
    let mut stack: Vec<(usize, Option<Open>)> = vec![(0, None)];
    while let Some((i, open)) = stack.pop() {
        if i == prefix.len() {
            if let Some(open) = open {
                states.insert(open);
            }
            continue;
        }
        for &mode in choices(prefix[i]) {
            let next = match open {
                None => (0, mode, 1),
                Some((closed, m, len)) if m == mode => (closed, m, len + 1),
                Some((closed, m, len)) => {
                    (closed.saturating_add(table.seg(class, m, len)), mode, 1)
                }
            };
            stack.push((i + 1, Some(next)));
        }
    }
    states
}

fn all_assignments(text: &[u8]) -> Vec<Vec<M>> {
    let mut out = vec![Vec::new()];
    for &b in text {
        out = out
            .into_iter()
            .flat_map(|a| {
                choices(b).iter().map(move |&m| {
                    let mut a = a.clone();
                    a.push(m);
                    a
                })
            })
            .collect();
    }
    out
}

/// Fewest bits for `prefix + key` in one version class, by exhaustion.
fn brute_bits(states: &HashSet<Open>, key: &[M], table: &CostTable, class: usize) -> usize {
    states
        .iter()
        .map(|&(mut closed, mut mode, mut len)| {
            for &m in key {
                if m == mode {
                    len += 1;
                } else {
                    closed = closed.saturating_add(table.seg(class, mode, len));
                    mode = m;
                    len = 1;
                }
            }
            closed.saturating_add(table.seg(class, mode, len))
        })
        .min()
        .expect("a non-empty prefix has assignments")
}

fn class_of(version: i16) -> usize {
    match version {
        1..=9 => 0,
        10..=26 => 1,
        _ => 2,
    }
}

fn qrcode_capacity(version: i16, ec: EcLevel) -> usize {
    Bits::new(Version::Normal(version))
        .max_len(ec.into())
        .expect("normal versions support every level")
}

/// The 3^5 digit/uppercase/lowercase patterns of a five-character key.
fn key_patterns() -> Vec<String> {
    const DIGITS: &[u8] = b"83017";
    const UPPER: &[u8] = b"HQZKA";
    const LOWER: &[u8] = b"ifnxb";
    (0..243u32)
        .map(|mut p| {
            (0..5)
                .map(|i| {
                    let c = [DIGITS, UPPER, LOWER][(p % 3) as usize][i];
                    p /= 3;
                    char::from(c)
                })
                .collect()
        })
        .collect()
}

#[test]
fn version_is_minimal_for_every_key_pattern() {
    let public_urls = [
        "https://0x1f.ie",
        "http://0x1f.ie",
        "http://localhost:8080",
        "HTTP://0X1F.IE",
        "https://tags.example-company.com/qr",
    ];
    let table = CostTable::new(64);
    let patterns = key_patterns();
    assert_eq!(patterns.iter().collect::<HashSet<_>>().len(), 243);
    let mut checked = 0;
    let mut beats_qrcode = 0;
    for public_url in public_urls {
        let prefix = format!("{public_url}/");
        let states: Vec<HashSet<Open>> = (0..3)
            .map(|class| prefix_states(prefix.as_bytes(), &table, class))
            .collect();
        for key in &patterns {
            let text = format!("{prefix}{key}");
            let best: Vec<usize> =
                all_assignments(key.as_bytes())
                    .iter()
                    .fold(vec![usize::MAX; 3], |best, a| {
                        (0..3)
                            .map(|c| best[c].min(brute_bits(&states[c], a, &table, c)))
                            .collect()
                    });
            for (class, &v) in CLASS_VERSIONS.iter().enumerate() {
                let version = u8::try_from(v).expect("small");
                assert_eq!(
                    optimal_segments(text.as_bytes(), version).1,
                    best[class],
                    "bits of {text:?} in class of version {v}"
                );
            }
            for ec in EcLevel::ALL {
                let brute_version = (1..=40i16)
                    .find(|&v| best[class_of(v)] <= qrcode_capacity(v, ec))
                    .expect("short URLs fit");
                let plan = plan(text.as_bytes(), ec).expect("short URL fits");
                assert_eq!(
                    i16::from(plan.version),
                    brute_version,
                    "version of {text:?} at {ec}"
                );
                let greedy = qrcode::bits::encode_auto(text.as_bytes(), ec.into())
                    .expect("short URL fits")
                    .version();
                let Version::Normal(greedy) = greedy else {
                    panic!("qrcode picked a micro version")
                };
                assert!(brute_version <= greedy);
                beats_qrcode += usize::from(brute_version < greedy);
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 5 * 243 * 4);
    assert!(beats_qrcode > 0, "the greedy optimizer is known to miss");
    eprintln!("{beats_qrcode} of {checked} texts are a version smaller than qrcode's choice");
}

/// The plan's segments, pushed through `qrcode`'s `Bits`, take exactly the
/// bits the planner claims, and the symbol is built at the planned version.
#[test]
fn plan_bits_are_what_qrcode_writes() {
    for key in key_patterns() {
        for public_url in ["https://0x1f.ie", "HTTP://LOCALHOST:8080"] {
            let text = format!("{public_url}/{key}");
            let plan = plan(text.as_bytes(), EcLevel::M).expect("fits");
            let mut bits = Bits::new(Version::Normal(i16::from(plan.version)));
            for s in &plan.segments {
                let data = &text.as_bytes()[s.range.clone()];
                match s.mode {
                    Mode::Numeric => bits.push_numeric_data(data),
                    Mode::Alphanumeric => bits.push_alphanumeric_data(data),
                    Mode::Byte => bits.push_byte_data(data),
                }
                .expect("segment fits");
            }
            assert_eq!(bits.len(), plan.data_bits, "{text}");
        }
    }
    let text = "https://0x1f.ie/H83if";
    let plan = plan(text.as_bytes(), EcLevel::Q).expect("fits");
    let code = build(text.as_bytes(), &plan, EcLevel::Q).expect("builds");
    assert_eq!(version_of(&code), plan.version);
}

#[test]
fn build_rejects_a_plan_that_lies_about_its_modes() {
    let text = b"ab";
    let plan = qrtag::qr::Plan {
        version: 1,
        segments: vec![qrtag::qr::Segment {
            mode: Mode::Numeric,
            range: 0..2,
        }],
        data_bits: 21,
    };
    assert!(matches!(
        build(text, &plan, EcLevel::L),
        Err(QrError::Symbol(_))
    ));
    let plan = qrtag::qr::Plan {
        segments: vec![qrtag::qr::Segment {
            mode: Mode::Byte,
            range: 0..3,
        }],
        ..plan
    };
    assert!(build(text, &plan, EcLevel::L).is_err());
}

// ---------------------------------------------------------------------------
// Known cases

#[test]
fn greedy_misses_get_the_smaller_version() {
    for (text, ec) in [
        ("http://0x1f.ie/8301n", EcLevel::Q),
        ("http://localhost:8080/c1091", EcLevel::M),
    ] {
        let greedy = QrCode::with_error_correction_level(text, ec.into()).expect("fits");
        assert_eq!(
            greedy.version(),
            Version::Normal(3),
            "qrcode's choice for {text}"
        );
        let code = encode(text, ec).expect("fits");
        assert_eq!(version_of(&code), 2, "{text} at {ec}");
        let (version, decoded) = decode_png(&png_of(text, ec));
        assert_eq!((version, decoded.as_str()), (2, text));
    }
}

#[test]
fn uppercase_prefix_saves_a_version() {
    let upper = short_url_text("http://0x1f.ie", "H83if", true);
    let lower = short_url_text("http://0x1f.ie", "H83if", false);
    assert_eq!(upper, "HTTP://0X1F.IE/H83if");
    assert_eq!(lower, "http://0x1f.ie/H83if");
    assert_eq!(version_of(&encode(&upper, EcLevel::L).expect("fits")), 1);
    assert_eq!(version_of(&encode(&lower, EcLevel::L).expect("fits")), 2);
    assert_eq!(decode_png(&png_of(&upper, EcLevel::L)), (1, upper));
    assert_eq!(decode_png(&png_of(&lower, EcLevel::L)), (2, lower));
}

#[test]
fn every_level_decodes_for_keys_and_slugs() {
    let keys = [
        "H83if",
        "00000",
        "ZZZZZ",
        "a",
        "spring-sale/2025_b",
        "x/y/z",
    ];
    for (i, key) in keys.iter().enumerate() {
        for ec in EcLevel::ALL {
            let text = short_url_text("https://0x1f.ie", key, i % 2 == 0);
            let code = encode(&text, ec).expect("fits");
            let (version, decoded) = decode_png(&png_of(&text, ec));
            assert_eq!(decoded, text);
            assert_eq!(version, usize::from(version_of(&code)));
        }
    }
}

#[test]
fn non_ascii_text_round_trips_as_utf8_bytes() {
    let text = "https://0x1f.ie/größe";
    assert_eq!(decode_png(&png_of(text, EcLevel::M)).1, text);
}

#[test]
fn too_long_text_is_a_typed_error() {
    let text = "a".repeat(3000);
    assert_eq!(
        encode(&text, EcLevel::L).map(|c| c.width()),
        Err(QrError::DataTooLong { len: 3000 })
    );
    let text = "a".repeat(2953); // version 40-L byte capacity
    assert_eq!(version_of(&encode(&text, EcLevel::L).expect("fits")), 40);
}

// ---------------------------------------------------------------------------
// Images

#[test]
fn png_is_grayscale_black_on_white_with_the_requested_geometry() {
    let text = "https://0x1f.ie/H83if";
    let code = encode(text, EcLevel::L).expect("fits");
    for (scale, margin) in [(2, 4), (8, 4), (3, 0), (5, 16)] {
        let opts = RenderOptions::new(scale, margin).expect("valid");
        let png = render_png(&code, &opts).expect("encodes");
        let image = image::load_from_memory(&png).expect("loads");
        assert_eq!(image.color(), image::ColorType::L8);
        let luma = image.to_luma8();
        let side = (code.width() as u32 + 2 * margin) * scale;
        assert_eq!(luma.dimensions(), (side, side));
        assert!(luma.pixels().all(|p| p.0 == [0] || p.0 == [255]));
        // Pixel (x, y) is the module it falls in.
        for (x, y, p) in luma.enumerate_pixels() {
            let (mx, my) = (x / scale, y / scale);
            let in_code = |m: u32| m >= margin && m < margin + code.width() as u32;
            let dark = in_code(mx)
                && in_code(my)
                && code[((mx - margin) as usize, (my - margin) as usize)] == Color::Dark;
            assert_eq!(p.0[0] == 0, dark, "pixel {x},{y}");
        }
        if margin >= 1 {
            assert_eq!(decode_symbol(luma).1, text);
        }
    }
}

#[test]
fn rendering_is_deterministic() {
    let text = "https://0x1f.ie/H83if";
    let a = encode(text, EcLevel::L).expect("fits");
    let b = encode(text, EcLevel::L).expect("fits");
    let opts = RenderOptions::default();
    let png = render_png(&a, &opts).expect("encodes");
    assert_eq!(png, render_png(&b, &opts).expect("encodes"));
    assert_eq!(png, render_png(&a, &opts).expect("encodes"));
    assert_eq!(render_svg(&a, &opts), render_svg(&b, &opts));
    let items = vec![("H83if".to_string(), a)];
    assert_eq!(render_sheet_svg(&items), render_sheet_svg(&items));
}

#[test]
fn scale_and_margin_are_validated() {
    assert_eq!(RenderOptions::new(1, 4), Err(QrError::ScaleOutOfRange(1)));
    assert_eq!(RenderOptions::new(65, 4), Err(QrError::ScaleOutOfRange(65)));
    assert_eq!(
        RenderOptions::new(8, 17),
        Err(QrError::MarginOutOfRange(17))
    );
    assert!(RenderOptions::new(2, 0).is_ok());
    assert!(RenderOptions::new(64, 16).is_ok());
    let opts = RenderOptions::default();
    assert_eq!((opts.scale(), opts.margin()), (8, 4));
    assert!(QrError::ScaleOutOfRange(65).to_string().contains("2..=64"));
}

fn grid_of(code: &QrCode, margin: usize) -> Vec<Vec<bool>> {
    let side = code.width() + 2 * margin;
    let mut grid = vec![vec![false; side]; side];
    for (y, row) in grid.iter_mut().enumerate().skip(margin).take(code.width()) {
        for (x, cell) in row.iter_mut().enumerate().skip(margin).take(code.width()) {
            *cell = code[(x - margin, y - margin)] == Color::Dark;
        }
    }
    grid
}

#[test]
fn svg_is_one_crisp_path_in_module_units() {
    let code = encode("https://0x1f.ie/H83if", EcLevel::L).expect("fits");
    let opts = RenderOptions::new(10, 4).expect("valid");
    let svg = render_svg(&code, &opts);
    let n = code.width() + 8;
    assert_eq!(svg.matches("<path").count(), 1);
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.ends_with("</svg>"));
    assert_eq!(attr(&svg, "viewBox"), format!("0 0 {n} {n}"));
    assert_eq!(attr(&svg, "width"), (n * 10).to_string());
    assert_eq!(attr(&svg, "height"), (n * 10).to_string());
    assert_eq!(attr(&svg, "shape-rendering"), "crispEdges");
    let path = &svg[svg.find("<path").expect("path")..];
    assert_eq!(modules_from_path(attr(path, "d"), n), grid_of(&code, 4));
}

#[test]
fn sheet_of_24_codes_all_decode() {
    let keys: Vec<String> = key_patterns().into_iter().step_by(10).take(24).collect();
    assert_eq!(keys.len(), SHEET_FULL_SIZE_CAPACITY);
    let items: Vec<(String, QrCode)> = keys
        .iter()
        .map(|k| {
            let text = short_url_text("https://0x1f.ie", k, false);
            (k.clone(), encode(&text, EcLevel::L).expect("fits"))
        })
        .collect();
    let sheet = render_sheet_svg(&items);
    assert!(sheet.contains(r#"width="210mm" height="297mm""#));
    assert_eq!(sheet.matches("<path").count(), 24);
    assert_eq!(sheet.matches("<text").count(), 24);
    assert!(sheet.contains(r#"font-family="monospace""#));

    let paths: Vec<&str> = sheet.split("<path").skip(1).collect();
    let labels: Vec<&str> = sheet.split("<text").skip(1).collect();
    let mut origins = HashSet::new();
    for (i, (key, code)) in items.iter().enumerate() {
        let path = paths[i];
        let label = labels[i];
        // The label under the code is its key.
        let text = &label
            [label.find('>').expect("text opens") + 1..label.find("</text>").expect("text closes")];
        assert_eq!(text, key);

        // The code drawn on the sheet is the symbol, quiet zone included.
        let side = code.width() + 8;
        assert_eq!(modules_from_path(attr(path, "d"), side), grid_of(code, 4));

        // It sits inside the page, above its label, and does not overlap
        // another code.
        let transform = attr(path, "transform");
        let nums: Vec<f64> = transform
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().expect("number"))
            .collect();
        let [x, y, scale] = nums[..] else {
            panic!("translate(x y) scale(s): {transform}")
        };
        let box_side = scale * side as f64;
        assert!(x >= 10.0 && y >= 10.0 && x + box_side <= 200.0 && y + box_side <= 287.0);
        assert!((35.0..45.0).contains(&box_side), "{box_side} mm");
        let label_y: f64 = attr(label, "y").parse().expect("label y");
        assert!(label_y > y + box_side && label_y <= 287.0);
        assert!(origins.insert(((x * 10.0) as i64, (y * 10.0) as i64)));

        // And a scanner reads it, from the sheet's own geometry and from the
        // PNG renderer.
        let px = 4;
        let grid = modules_from_path(attr(path, "d"), side);
        let image = image::GrayImage::from_fn((side * px) as u32, (side * px) as u32, |x, y| {
            let dark = grid[y as usize / px][x as usize / px];
            image::Luma([if dark { 0 } else { 255 }])
        });
        let url = short_url_text("https://0x1f.ie", key, false);
        assert_eq!(decode_symbol(image).1, url);
        let png = render_png(code, &RenderOptions::default()).expect("encodes");
        assert_eq!(decode_png(&png).1, url);
    }
}

#[test]
fn oversized_sheet_shrinks_onto_one_page() {
    let code = encode("https://0x1f.ie/H83if", EcLevel::L).expect("fits");
    let items: Vec<(String, QrCode)> = (0..60).map(|i| (format!("k{i}"), code.clone())).collect();
    let sheet = render_sheet_svg(&items);
    assert_eq!(sheet.matches("<path").count(), 60);
    assert_eq!(sheet.matches("<text").count(), 60);
    for path in sheet.split("<path").skip(1) {
        let transform = attr(path, "transform");
        let nums: Vec<f64> = transform
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().expect("number"))
            .collect();
        let side = nums[2] * (code.width() + 8) as f64;
        assert!(nums[0] + side <= 200.0 && nums[1] + side <= 287.0);
        assert!(side < 35.0);
    }
}

// ---------------------------------------------------------------------------
// Properties on arbitrary text

/// Shortest path over segment boundaries with closed-form-free costs taken
/// from `qrcode`: a second, structurally different optimum to compare with.
fn boundary_dp(text: &[u8], table: &CostTable, class: usize) -> usize {
    let n = text.len();
    let mut best = vec![usize::MAX; n + 1];
    best[0] = 0;
    for start in 0..n {
        if best[start] == usize::MAX {
            continue;
        }
        for mode in [M::N, M::A, M::B] {
            for end in start + 1..=n {
                if !choices(text[end - 1]).contains(&mode) {
                    break;
                }
                let bits = best[start].saturating_add(table.seg(class, mode, end - start));
                best[end] = best[end].min(bits);
            }
        }
    }
    best[n]
}

/// The short-URL sweep never leaves versions 1–9, so the count-indicator
/// widths of the larger classes are checked where the version crosses into
/// them (9→10 at every level, 26→27 at H where the text stays short enough
/// for the quadratic brute force), against the boundary shortest path.
#[test]
fn version_is_minimal_across_count_indicator_classes() {
    let table = CostTable::new(1600);
    let patterns: [&[u8]; 4] = [
        b"abcdefghij",
        b"0123456789",
        b"HTTP://Q0X1F.IE/",
        b"ab12CD345:x/Y",
    ];
    let text = |pattern: &[u8], len: usize| -> Vec<u8> {
        pattern.iter().copied().cycle().take(len).collect()
    };
    let version = |text: &[u8], ec| plan(text, ec).map_or(41, |p| i16::from(p.version));
    let mut checked = 0;
    for pattern in patterns {
        for ec in EcLevel::ALL {
            let classes: &[i16] = if ec == EcLevel::H { &[9, 26] } else { &[9] };
            for &last_of_class in classes {
                // Appending a character never makes the optimum smaller, so
                // the version grows with the length and bisection finds the
                // first length past the class.
                let (mut lo, mut hi) = (1, 3000);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if version(&text(pattern, mid), ec) > last_of_class {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                assert_eq!(version(&text(pattern, lo), ec), last_of_class + 1);
                for len in [lo - 1, lo, lo + 1] {
                    let text = text(pattern, len);
                    let best: Vec<usize> = (0..3).map(|c| boundary_dp(&text, &table, c)).collect();
                    let brute = (1..=40i16)
                        .find(|&v| best[class_of(v)] <= qrcode_capacity(v, ec))
                        .expect("fits");
                    assert_eq!(version(&text, ec), brute, "{len} bytes at {ec}");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 4 * 5 * 3);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn segmentation_is_optimal_on_arbitrary_text(text in "[0-9A-Z a-z:/.$%*+_-]{0,60}|[0-9]{0,40}[A-Z]{0,20}[a-zä]{0,5}") {
        // Up to 70 bytes: 'ä' is two.
        let table = CostTable::new(80);
        for (class, &v) in CLASS_VERSIONS.iter().enumerate() {
            let version = u8::try_from(v).expect("small");
            let (segments, bits) = optimal_segments(text.as_bytes(), version);
            prop_assert_eq!(bits, boundary_dp(text.as_bytes(), &table, class));
            let total: usize = segments.iter().map(|s| {
                let m = match s.mode { Mode::Numeric => M::N, Mode::Alphanumeric => M::A, Mode::Byte => M::B };
                table.seg(class, m, s.range.len())
            }).sum();
            prop_assert_eq!(total, bits);
        }
        for ec in EcLevel::ALL {
            let plan = plan(text.as_bytes(), ec).expect("short text fits");
            prop_assert!(plan.data_bits <= qrcode_capacity(i16::from(plan.version), ec));
            let best: Vec<usize> = (0..3).map(|c| boundary_dp(text.as_bytes(), &table, c)).collect();
            for smaller in 1..i16::from(plan.version) {
                prop_assert!(best[class_of(smaller)] > qrcode_capacity(smaller, ec));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_short_urls_decode(
        key in "[A-Za-z0-9]{5}|[A-Za-z0-9_-]{1,12}(/[A-Za-z0-9_-]{1,8})?",
        url in prop::sample::select(vec!["https://0x1f.ie", "http://localhost:8080", "https://qr.example.org/t"]),
        upper in any::<bool>(),
        ec in prop::sample::select(EcLevel::ALL.to_vec()),
        scale in 2u32..6,
    ) {
        let text = short_url_text(url, &key, upper);
        let code = encode(&text, ec).expect("short URL fits");
        let png = render_png(&code, &RenderOptions::new(scale, 4).expect("valid")).expect("encodes");
        let (version, decoded) = decode_png(&png);
        prop_assert_eq!(decoded, text);
        prop_assert_eq!(version, usize::from(version_of(&code)));
    }
}
