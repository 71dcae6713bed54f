//! `qrtag qr --printer` and the branded codes as a user runs them: the real
//! binary on a real database, every image measured in its own pixels and
//! read back by two independent decoders, zbar (`zbarimg`) and ZXing
//! (`ZXingReader`), as well as by rqrr.

#[path = "support/qr_decode.rs"]
mod qr_decode;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use image::GrayImage;
use support::{PUBLIC_URL, qrtag_cmd_env};

/// The stock as the manufacturers give it (mm across, mm along), kept here
/// apart from the binary's table so a wrong figure there shows.
const MEDIA: [(&str, f64, f64); 6] = [
    ("brother-62", 62.0, 62.0),
    ("brother-29", 29.0, 29.0),
    ("brother-62x29", 62.0, 29.0),
    ("dymo-25x54", 25.0, 54.0),
    ("zebra-4x6", 101.6, 152.4),
    ("zebra-2x1", 50.8, 25.4),
];

const KEY: &str = "H83if";
/// A hierarchical key long enough for a version-5 symbol.
const LONG_KEY: &str = "warehouse/aisle-12/shelf-b/bin-0042";

struct Db {
    dir: tempfile::TempDir,
    db: PathBuf,
}

impl Db {
    fn with_links() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("links.db");
        for key in [KEY, LONG_KEY] {
            ok(qrtag_cmd_env(
                &db,
                &["new", "https://example.com/", "--key", key],
                &[],
            ));
        }
        Self { dir, db }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `qrtag qr KEY --printer NAME --dpi DPI` into a file named for the
    /// stock, the resolution and the extension (which picks the format).
    fn printer_file(&self, key: &str, name: &str, dpi: u32, ext: &str) -> PathBuf {
        let file = self.path(&format!("{name}-{dpi}.{ext}"));
        let dpi = dpi.to_string();
        ok(self.qr(&[key, "--printer", name, "--dpi", &dpi, "-o", s(&file)]));
        file
    }

    fn qr(&self, args: &[&str]) -> Output {
        let mut all = vec!["qr"];
        all.extend_from_slice(args);
        qrtag_cmd_env(&self.db, &all, &[])
    }
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A refusal: the exit code, one `qrtag: ` line, and that line.
fn refused(out: &Output, code: i32) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(
        err.starts_with("qrtag: ") && err.lines().count() == 1,
        "one line: {err}"
    );
    err
}

fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// The text zbar reads in the image file (its only symbol).
fn zbar(path: &Path) -> String {
    let out = Command::new("zbarimg")
        .args(["-q", "--raw", s(path)])
        .output()
        .expect("zbarimg runs (Debian's zbar-tools)");
    assert!(out.status.success(), "zbarimg found no code in {path:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim_end_matches('\n')
        .to_owned()
}

/// The text ZXing reads in the image file.
fn zxing(path: &Path) -> String {
    let out = Command::new("ZXingReader")
        .args(["-bytes", s(path)])
        .output()
        .expect("ZXingReader runs (Debian's zxing-cpp-tools)");
    assert!(out.status.success(), "ZXingReader failed on {path:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

fn decodes_everywhere(path: &Path, want: &str) {
    assert_eq!(zbar(path), want, "zbar on {path:?}");
    assert_eq!(zxing(path), want, "ZXing on {path:?}");
}

fn expected_dots(mm: f64, dpi: u32) -> u32 {
    (mm * f64::from(dpi) / 25.4 + 1e-9).floor() as u32
}

/// Measures the code in a label image: every pixel black or white, the
/// symbol a square of `17 + 4v` modules of one whole number of dots, every
/// dark run on the module grid, the quiet zone on the label, centred.
/// Returns the dots per module.
fn measure(img: &GrayImage) -> u32 {
    assert!(
        img.pixels().all(|p| p.0[0] == 0 || p.0[0] == 255),
        "no grey (anti-aliased) dot"
    );
    let (w, h) = img.dimensions();
    let dark: Vec<(u32, u32)> = img
        .enumerate_pixels()
        .filter(|(_, _, p)| p.0[0] == 0)
        .map(|(x, y, _)| (x, y))
        .collect();
    let left = dark.iter().map(|d| d.0).min().expect("dark dots");
    let right = dark.iter().map(|d| d.0).max().expect("dark dots");
    let top = dark.iter().map(|d| d.1).min().expect("dark dots");
    let bottom = dark.iter().map(|d| d.1).max().expect("dark dots");
    let side = right - left + 1;
    assert_eq!(side, bottom - top + 1, "a square symbol");
    let (version, _) = qr_decode::decode_symbol(img.clone());
    let modules = 17 + 4 * version as u32;
    assert_eq!(side % modules, 0, "{side} dots over {modules} modules");
    let module = side / modules;
    for y in top..=bottom {
        let mut x = left;
        while x <= right {
            if img.get_pixel(x, y).0[0] != 0 {
                x += 1;
                continue;
            }
            let start = x;
            while x <= right && img.get_pixel(x, y).0[0] == 0 {
                x += 1;
            }
            assert_eq!((start - left) % module, 0, "run at {start},{y} on the grid");
            assert_eq!((x - start) % module, 0, "run at {start},{y} whole modules");
        }
    }
    let quiet = 4 * module;
    assert!(left >= quiet && top >= quiet, "quiet zone on the label");
    assert!(w - 1 - right >= quiet && h - 1 - bottom >= quiet);
    assert!(left.abs_diff(w - 1 - right) <= 1, "centred across");
    assert!(top.abs_diff(h - 1 - bottom) <= 1, "centred along");
    module
}

#[test]
fn printer_pngs_are_the_label_in_whole_dot_modules_and_decode() {
    let db = Db::with_links();
    // Every stock at the default 300 dpi with both keys; the other common
    // resolutions on the smallest and the largest label (a 4 × 6 in label
    // at 600 dpi is 8.6 million dots, slow to measure in a debug build).
    let mut runs: Vec<(&str, f64, f64, u32, &str)> = MEDIA
        .iter()
        .flat_map(|&(name, across, along)| {
            [KEY, LONG_KEY].map(|key| (name, across, along, 300, key))
        })
        .collect();
    for (name, dpi) in [
        ("zebra-2x1", 203),
        ("zebra-4x6", 203),
        ("brother-29", 600),
        ("zebra-2x1", 600),
    ] {
        let &(_, across, along) = MEDIA.iter().find(|m| m.0 == name).expect("listed");
        runs.push((name, across, along, dpi, LONG_KEY));
    }
    for (name, across, along, dpi, key) in runs {
        let file = db.printer_file(key, name, dpi, "png");
        let bytes = std::fs::read(&file).expect("written");
        let img = image::load_from_memory(&bytes).expect("a PNG").to_luma8();
        assert_eq!(
            img.dimensions(),
            (expected_dots(across, dpi), expected_dots(along, dpi)),
            "{name} at {dpi} dpi"
        );
        let module = measure(&img);
        assert!(
            f64::from(module) * 25.4 / f64::from(dpi) >= 0.33,
            "{name} {dpi}: {module} dots"
        );
        decodes_everywhere(&file, &format!("{PUBLIC_URL}/{key}"));
    }
    // The default is 300 dpi, and the PNG says so (pHYs, dots per metre).
    let file = db.path("default.png");
    ok(db.qr(&[KEY, "--printer", "brother-29", "-o", s(&file)]));
    let png = std::fs::read(&file).expect("written");
    let img = image::load_from_memory(&png).expect("a PNG");
    assert_eq!((img.width(), img.height()), (342, 342));
    let phys = png
        .windows(4)
        .position(|w| w == b"pHYs")
        .expect("a pHYs chunk");
    let per_metre = 11_811u32.to_be_bytes(); // 300 dpi
    assert_eq!(&png[phys + 4..phys + 8], &per_metre, "across");
    assert_eq!(&png[phys + 8..phys + 12], &per_metre, "along");
    assert_eq!(png[phys + 12], 1, "unit: metre");
}

#[test]
fn a_module_below_the_minimum_is_refused_naming_it() {
    let db = Db::with_links();
    // The longest key (256 bytes, issue 30) at level H.
    let segments = vec!["k".repeat(64); 4].join("/");
    let long = &segments[..qrtag::values::link_key::MAX_KEY_LEN];
    ok(qrtag_cmd_env(
        &db.db,
        &["new", "https://example.com/", "--key", long],
        &[],
    ));
    let file = db.path("small.png");
    let out = db.qr(&[long, "--ec", "H", "--printer", "brother-29", "-o", s(&file)]);
    let err = refused(&out, 2);
    assert!(err.contains("0.33 mm (4 dots)"), "{err}");
    assert!(!file.exists(), "nothing written");
    // The same code fits a wider label.
    ok(db.qr(&[long, "--ec", "H", "--printer", "zebra-4x6", "-o", s(&file)]));
}

/// The parts of a `^GFA` label: print width, label length, field origin,
/// and the graphic field's counts and data.
struct Zpl {
    width: u32,
    length: u32,
    x: u32,
    y: u32,
    total: usize,
    row_bytes: usize,
    data: Vec<u8>,
}

fn number_after(zpl: &str, command: &str) -> u32 {
    let rest = &zpl[zpl
        .find(command)
        .unwrap_or_else(|| panic!("{command} in {zpl}"))
        + command.len()..];
    rest[..rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len())]
        .parse()
        .unwrap_or_else(|_| panic!("a number after {command}"))
}

fn parse_zpl(zpl: &str) -> Zpl {
    assert!(zpl.starts_with("^XA"), "starts ^XA");
    assert!(zpl.trim_end().ends_with("^XZ"), "ends ^XZ");
    assert_eq!(zpl.matches("^XA").count(), 1, "one label");
    let fo = &zpl[zpl.find("^FO").expect("^FO") + 3..];
    let (x, rest) = fo.split_once(',').expect("x,y");
    let y = &rest[..rest.find('^').expect("a command after")];
    let gf = &zpl[zpl.find("^GFA,").expect("^GFA") + 5..];
    let gf = &gf[..gf.find("^FS").expect("field ends")];
    let fields: Vec<&str> = gf.splitn(4, ',').collect();
    let total: usize = fields[0].parse().expect("byte count");
    let field_count: usize = fields[1].parse().expect("field count");
    let row_bytes: usize = fields[2].parse().expect("bytes per row");
    assert_eq!(total, field_count, "ASCII hex: both counts the same");
    let hex = fields[3].trim();
    assert_eq!(hex.len(), 2 * total, "two hex digits a byte");
    assert_eq!(total % row_bytes, 0, "whole rows");
    let data = (0..total)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    Zpl {
        width: number_after(zpl, "^PW"),
        length: number_after(zpl, "^LL"),
        x: x.parse().expect("x"),
        y: y.parse().expect("y"),
        total,
        row_bytes,
        data,
    }
}

/// The label a printer would print from the ZPL: blank, with the graphic
/// field's 1 bits black at its origin.
fn print_zpl(zpl: &Zpl) -> GrayImage {
    let mut img = GrayImage::from_pixel(zpl.width, zpl.length, image::Luma([255]));
    let rows = zpl.total / zpl.row_bytes;
    for row in 0..rows {
        for col in 0..zpl.row_bytes * 8 {
            let byte = zpl.data[row * zpl.row_bytes + col / 8];
            if byte & (0x80 >> (col % 8)) != 0 {
                img.put_pixel(zpl.x + col as u32, zpl.y + row as u32, image::Luma([0]));
            }
        }
    }
    img
}

#[test]
fn zpl_is_well_formed_and_prints_the_png_exactly() {
    let db = Db::with_links();
    for (name, dpi) in [("zebra-4x6", 203), ("zebra-2x1", 203), ("zebra-2x1", 300)] {
        let zpl_file = db.printer_file(LONG_KEY, name, dpi, "zpl");
        let text = std::fs::read_to_string(&zpl_file).expect("written");
        let zpl = parse_zpl(&text);
        let printed = print_zpl(&zpl);

        let png_file = db.printer_file(LONG_KEY, name, dpi, "png");
        let png = image::open(&png_file).expect("a PNG").to_luma8();
        assert!(
            printed == png,
            "{name} {dpi}: the ZPL prints the PNG's dots"
        );
        measure(&printed);
        let printed_file = db.path("printed.png");
        printed.save(&printed_file).expect("saved");
        decodes_everywhere(&printed_file, &format!("{PUBLIC_URL}/{LONG_KEY}"));
    }
    // ^BQ: the printer's own code, the text escaped, magnification at most 10.
    let out = ok(db.qr(&[
        KEY,
        "--printer",
        "zebra-4x6",
        "--format",
        "zpl",
        "--zpl-native",
    ]));
    let zpl = String::from_utf8(out.stdout).expect("ZPL is text");
    assert!(
        zpl.starts_with("^XA") && zpl.trim_end().ends_with("^XZ"),
        "{zpl}"
    );
    assert!(
        zpl.contains(&format!("^FDLA,{PUBLIC_URL}/{KEY}^FS")),
        "{zpl}"
    );
    assert!(number_after(&zpl, "^BQN,2,") <= 10, "{zpl}");
    assert!(!zpl.contains("^GF"), "{zpl}");
}

#[test]
fn printer_outputs_refuse_what_they_cannot_make() {
    let db = Db::with_links();
    for args in [
        &[KEY, "--format", "zpl"][..],
        &[KEY, "--printer", "brother-62", "--format", "svg"],
        &[KEY, "--printer", "brother"],
        &[KEY, "--printer", "zebra-4x6", "--dpi", "100"],
        &[KEY, "--printer", "zebra-4x6", "--scale", "4"],
        &[KEY, "--printer", "zebra-4x6", "--dark", "#123"],
        &[KEY, "--dpi", "300"],
        &[KEY, "--allow-inverted"],
    ] {
        let out = db.qr(args);
        refused(&out, 2);
    }
    let err = refused(&db.qr(&[KEY, "--printer", "brother"]), 2);
    assert!(err.contains("brother-62"), "names the stock: {err}");
}

/// A red disc on a transparent ground, as a logo comes.
fn write_logo(path: &Path) {
    let logo = image::RgbaImage::from_fn(64, 48, |x, y| {
        let (dx, dy) = (f64::from(x) - 32.0, f64::from(y) - 24.0);
        if dx * dx + dy * dy < 20.0 * 20.0 {
            image::Rgba([220, 40, 40, 255])
        } else {
            image::Rgba([0, 0, 0, 0])
        }
    });
    logo.save(path).expect("logo saved");
}

#[test]
fn branded_codes_decode_and_unreadable_ones_are_refused() {
    let db = Db::with_links();
    let want = format!("{PUBLIC_URL}/{KEY}");
    let logo = db.path("logo.png");
    write_logo(&logo);

    // Colours and a logo: both decoders read it.
    let file = db.path("branded.png");
    ok(db.qr(&[
        KEY,
        "--dark",
        "#1e3a8a",
        "--light",
        "#fefce8",
        "--logo",
        s(&logo),
        "-o",
        s(&file),
    ]));
    decodes_everywhere(&file, &want);
    let img = image::open(&file).expect("a PNG").to_rgb8();
    assert_eq!(img.get_pixel(0, 0).0, [0xfe, 0xfc, 0xe8], "light ground");
    let centre = img.get_pixel(img.width() / 2, img.height() / 2).0;
    assert_eq!(centre, [220, 40, 40], "the logo in the centre");

    // A larger logo still reads; the level rose, so the symbol did not shrink.
    let large = db.path("large.png");
    ok(db.qr(&[
        KEY,
        "--logo",
        s(&logo),
        "--logo-size",
        "30",
        "-o",
        s(&large),
    ]));
    decodes_everywhere(&large, &want);
    let plain = db.path("plain.png");
    ok(db.qr(&[KEY, "-o", s(&plain)]));
    let version =
        |path: &Path| qr_decode::decode_symbol(image::open(path).expect("a PNG").to_luma8()).0;
    assert!(version(&large) >= version(&plain));

    // The SVG: the colours, the logo embedded, the modules still a code.
    let svg_file = db.path("branded.svg");
    ok(db.qr(&[
        KEY,
        "--dark",
        "#1e3a8a",
        "--logo",
        s(&logo),
        "-o",
        s(&svg_file),
    ]));
    let svg = std::fs::read_to_string(&svg_file).expect("written");
    assert!(svg.contains(r##"<path fill="#1e3a8a""##), "{svg}");
    assert!(svg.contains("data:image/png;base64,"), "logo embedded");
    assert_eq!(qr_decode::decode_svg(&svg), want);

    // Colours alone: no logo, no level raised.
    let colours = db.path("colours.png");
    ok(db.qr(&[KEY, "--dark", "#7f1d1d", "-o", s(&colours)]));
    decodes_everywhere(&colours, &want);

    // Too little contrast, or inverted: one line, exit 2, nothing written.
    let grey = db.path("grey.png");
    let err = refused(&db.qr(&[KEY, "--dark", "#999", "-o", s(&grey)]), 2);
    assert!(err.contains("contrast ratio of 2.85:1"), "{err}");
    let err = refused(
        &db.qr(&[KEY, "--dark", "#fff", "--light", "#000", "-o", s(&grey)]),
        2,
    );
    assert!(err.contains("--allow-inverted"), "{err}");
    assert!(!grey.exists());
    ok(db.qr(&[
        KEY,
        "--dark",
        "#fff",
        "--light",
        "#000",
        "--allow-inverted",
        "-o",
        s(&grey),
    ]));

    // A logo too large to read back is refused with the reason.
    let big = db.path("big.png");
    let err = refused(
        &db.qr(&[KEY, "--logo", s(&logo), "--logo-size", "45", "-o", s(&big)]),
        1,
    );
    assert!(
        err.contains("does not read back") && err.contains("--logo-size"),
        "{err}"
    );
    assert!(!big.exists(), "nothing written");

    // A logo that is no PNG, and a bad colour.
    let not_png = db.path("logo.svg");
    std::fs::write(&not_png, "<svg/>").expect("written");
    let err = refused(&db.qr(&[KEY, "--logo", s(&not_png), "-o", s(&big)]), 2);
    assert!(err.contains("not a PNG"), "{err}");
    refused(&db.qr(&[KEY, "--dark", "navy", "-o", s(&big)]), 2);
}

/// The admin listener serves codes in colours (`?dark=&light=`), the same
/// bytes `qrtag qr --dark --light` writes, and refuses an unreadable pair.
#[tokio::test]
async fn colours_over_http_are_the_command_lines_bytes() {
    let app = support::spawn_app().await;
    ok(app.cli(&["new", "https://example.com/", "--key", KEY]));
    app.wait_for_status(&format!("/{KEY}"), 302).await;
    let want = format!("{PUBLIC_URL}/{KEY}");
    for (ext, query, flags) in [
        (
            "png",
            "?dark=%231e3a8a&light=%23fefce8",
            &["--dark", "#1e3a8a", "--light", "#fefce8"][..],
        ),
        (
            "svg",
            "?dark=7f1d1d&scale=4",
            &["--dark", "7f1d1d", "--scale", "4"],
        ),
    ] {
        let r = app
            .admin_get(&format!("/qr/{KEY}.{ext}{query}"))
            .await
            .expect("admin listener answers");
        assert_eq!(r.status(), 200, "{ext}{query}");
        let http = r.bytes().await.expect("body").to_vec();
        let mut args = vec!["qr", KEY, "--format", ext];
        args.extend_from_slice(flags);
        let cli = ok(qrtag_cmd_env(&app.db, &args, &[])).stdout;
        assert!(cli == http, "{ext}: the command line and HTTP differ");
        if ext == "png" {
            let file = app.dir.path().join("http.png");
            std::fs::write(&file, &http).expect("written");
            decodes_everywhere(&file, &want);
            let img = image::load_from_memory(&http).expect("a PNG").to_rgb8();
            assert_eq!(img.get_pixel(0, 0).0, [0xfe, 0xfc, 0xe8]);
        } else {
            let svg = String::from_utf8(http).expect("utf-8");
            assert!(svg.contains(r##"fill="#7f1d1d""##), "{svg}");
            assert_eq!(qr_decode::decode_svg(&svg), want);
        }
    }
    for (query, says) in [
        ("dark=%23999", "contrast ratio of 2.85:1"),
        ("dark=%23fff&light=%23000", "inverted"),
        ("light=pink", "not a colour"),
    ] {
        let r = app
            .admin_get(&format!("/qr/{KEY}.png?{query}"))
            .await
            .expect("admin listener answers");
        assert_eq!(r.status(), 400, "{query}");
        let body = r.text().await.expect("body");
        assert!(
            body.contains(says) && body.lines().count() == 1,
            "{query}: {body}"
        );
    }
}
