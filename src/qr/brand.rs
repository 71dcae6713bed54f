//! Branded codes: colours and a centred logo, each checked before a code is
//! written. Plain black on white at the smallest version stays the default
//! (`render_png`/`render_svg`); this module is only reached when asked.
//!
//! Three rules, each a pure function with its tests:
//! - colours: a WCAG luminance contrast ratio of at least [`MIN_CONTRAST`],
//!   dark darker than light unless inversion is asked for ([`Palette::new`]);
//! - error correction for a logo ([`plan_logo`], rule below);
//! - every branded code is decoded from its own pixels before it is
//!   written ([`Branded::check`]), and refused with the reason if it does
//!   not read back.
//!
//! The error-correction rule: a logo hides a centred square of modules, and
//! a decoder, not knowing where, counts each codeword it touches as an
//! error. Each level restores a nominal share of the codewords (ISO/IEC
//! 18004: L 7 %, M 15 %, Q 25 %, H 30 %). A logo may use at most half of
//! that share, the other half being kept for what error correction is for:
//! scuffs, dirt, glare, a curved surface. So the lowest level with
//! `2 × covered area ≤ share` is taken, from M up (a logo never gets L: its
//! 7 % is what print wear alone can use): M up to 7.5 % of the symbol's
//! area, Q up to 12.5 %, H above. The area is that of the cleared square
//! on the actual symbol, which grows in whole modules; so each level is
//! tried on its own smallest symbol and the first that keeps the rule is
//! used, which grows the symbol only as far as the logo needs. A logo past
//! what H allows is still tried at H, and the decode check decides.

use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

use base64::Engine as _;
use image::{ExtendedColorType, ImageEncoder, Rgb, RgbImage, RgbaImage};
use qrcode::{Color, QrCode};

use super::render::dark_path_where;
use super::{EcLevel, QrError, RenderOptions, encode};

/// The least luminance contrast ratio (WCAG 2 formula) a branded code may
/// have: phone cameras threshold the image, and below about 4:1 a shadow or
/// a glossy label is enough to lose modules.
pub const MIN_CONTRAST: f64 = 4.0;

/// A colour as CSS writes it in hex: `#rgb` or `#rrggbb` (the `#` may be
/// left out, as shells make it awkward).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Colour(pub [u8; 3]);

impl Colour {
    pub const BLACK: Colour = Colour([0, 0, 0]);
    pub const WHITE: Colour = Colour([255, 255, 255]);

    /// Relative luminance (WCAG 2, sRGB linearised with IEC 61966-2-1's
    /// 0.04045 threshold), 0 for black, 1 for white.
    pub fn luminance(self) -> f64 {
        let linear = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        let [r, g, b] = self.0;
        0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)
    }
}

impl FromStr for Colour {
    type Err = BrandError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s.strip_prefix('#').unwrap_or(s);
        let digit = |i: usize| hex.get(i..=i).and_then(|d| u8::from_str_radix(d, 16).ok());
        let bad = || BrandError::BadColour(s.to_owned());
        if !hex.is_ascii() {
            return Err(bad());
        }
        let channels: Option<Vec<u8>> = match hex.len() {
            3 => (0..3).map(|i| digit(i).map(|d| d * 17)).collect(),
            6 => (0..3)
                .map(|i| Some(digit(2 * i)? * 16 + digit(2 * i + 1)?))
                .collect(),
            _ => None,
        };
        match channels.as_deref() {
            Some(&[r, g, b]) => Ok(Colour([r, g, b])),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Colour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [r, g, b] = self.0;
        write!(f, "#{r:02x}{g:02x}{b:02x}")
    }
}

/// WCAG 2 contrast ratio, `(L1 + 0.05) / (L2 + 0.05)` with L1 the lighter:
/// 1 for equal colours, 21 for black on white. Symmetric.
pub fn contrast_ratio(a: Colour, b: Colour) -> f64 {
    let (la, lb) = (a.luminance(), b.luminance());
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// The two colours of a branded code, checked; only [`Palette::new`] makes
/// one, so a render never meets colours a camera cannot read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Palette {
    dark: Colour,
    light: Colour,
}

impl Default for Palette {
    fn default() -> Self {
        Self {
            dark: Colour::BLACK,
            light: Colour::WHITE,
        }
    }
}

impl Palette {
    pub fn new(dark: Colour, light: Colour, allow_inverted: bool) -> Result<Self, BrandError> {
        let ratio = contrast_ratio(dark, light);
        if ratio < MIN_CONTRAST {
            return Err(BrandError::LowContrast { dark, light, ratio });
        }
        if dark.luminance() > light.luminance() && !allow_inverted {
            return Err(BrandError::Inverted { dark, light });
        }
        Ok(Self { dark, light })
    }

    pub fn dark(&self) -> Colour {
        self.dark
    }

    pub fn light(&self) -> Colour {
        self.light
    }

    /// Light modules on a dark ground: many scanners read these only when
    /// told to look for them.
    pub fn is_inverted(&self) -> bool {
        self.dark.luminance() > self.light.luminance()
    }
}

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum BrandError {
    #[error("{0:?} is not a colour: give CSS hex, #rgb or #rrggbb")]
    BadColour(String),
    #[error(
        "dark {dark} on light {light} has a contrast ratio of {ratio:.2}:1, below the {MIN_CONTRAST}:1 phone cameras read reliably"
    )]
    LowContrast {
        dark: Colour,
        light: Colour,
        ratio: f64,
    },
    #[error(
        "dark {dark} is lighter than light {light}: an inverted code, which many scanners do not read; swap them (the command line takes --allow-inverted)"
    )]
    Inverted { dark: Colour, light: Colour },
    #[error("the branded code does not read back: {0}")]
    DoesNotDecode(String),
    #[error(transparent)]
    Qr(#[from] QrError),
}

/// The nominal share of codewords a level restores (ISO/IEC 18004).
pub fn restores(ec: EcLevel) -> f64 {
    match ec {
        EcLevel::L => 0.07,
        EcLevel::M => 0.15,
        EcLevel::Q => 0.25,
        EcLevel::H => 0.30,
    }
}

/// Whether a logo covering `area` of the symbol keeps half of `ec`'s
/// restoring share free (see the module's rule).
pub fn level_allows(ec: EcLevel, area: f64) -> bool {
    2.0 * area <= restores(ec)
}

/// The cleared square for a logo `percent` of the symbol's side wide on a
/// `modules`-wide symbol: whole modules, at least the asked share, centred
/// exactly (same parity as the symbol).
pub fn logo_box(modules: u32, percent: u32) -> u32 {
    let side = (modules * percent).div_ceil(100).clamp(1, modules);
    if (modules - side).is_multiple_of(2) {
        side
    } else {
        side + 1
    }
}

/// The symbol for `text` with a logo `percent` of its side wide: the lowest
/// level at least `min_ec` (and at least M) whose own smallest symbol keeps
/// the rule, else H. Returns the symbol and the cleared square in modules.
pub fn plan_logo(text: &str, percent: u32, min_ec: EcLevel) -> Result<(QrCode, u32), QrError> {
    let start = min_ec.max(EcLevel::M);
    let mut last = None;
    for ec in EcLevel::ALL.into_iter().filter(|&ec| ec >= start) {
        let code = encode(text, ec)?;
        let n = code.width() as u32;
        let side = logo_box(n, percent);
        let area = f64::from(side * side) / f64::from(n * n);
        if level_allows(ec, area) {
            return Ok((code, side));
        }
        last = Some((code, side));
    }
    // `ALL` ends with H, so the loop ran at least once.
    last.ok_or(QrError::DataTooLong { len: text.len() })
}

/// A branded code ready to draw: symbol, colours and an optional logo in a
/// cleared centre square.
pub struct Branded<'a> {
    pub code: QrCode,
    pub palette: Palette,
    pub options: RenderOptions,
    /// The logo and the side of its cleared square, in modules.
    pub logo: Option<(&'a RgbaImage, u32)>,
}

impl Branded<'_> {
    fn modules(&self) -> u32 {
        self.code.width() as u32 + 2 * self.options.margin()
    }

    /// The cleared square's first module (symbol coordinates) and side.
    fn box_span(&self) -> Option<(u32, u32)> {
        let n = self.code.width() as u32;
        self.logo.map(|(_, side)| ((n - side) / 2, side))
    }

    fn in_box(&self, x: u32, y: u32) -> bool {
        self.box_span().is_some_and(|(start, side)| {
            (start..start + side).contains(&x) && (start..start + side).contains(&y)
        })
    }

    /// The image at `scale` pixels a module: what the PNG holds and what
    /// the check decodes.
    pub fn raster(&self, scale: u32) -> RgbImage {
        let side = self.modules() * scale;
        let margin = self.options.margin();
        let (dark, light) = (Rgb(self.palette.dark.0), Rgb(self.palette.light.0));
        let mut img = RgbImage::from_pixel(side, side, light);
        let n = self.code.width() as u32;
        for y in 0..n {
            for x in 0..n {
                if self.code[(x as usize, y as usize)] == Color::Dark && !self.in_box(x, y) {
                    for py in 0..scale {
                        for px in 0..scale {
                            img.put_pixel(
                                (x + margin) * scale + px,
                                (y + margin) * scale + py,
                                dark,
                            );
                        }
                    }
                }
            }
        }
        if let (Some((logo, _)), Some((start, box_side))) = (self.logo, self.box_span()) {
            let (x, y, w, h) = fit(logo, box_side, start + margin, scale);
            let resized =
                image::imageops::resize(logo, w, h, image::imageops::FilterType::Triangle);
            for (px, py, p) in resized.enumerate_pixels() {
                let under = img.get_pixel(x + px, y + py).0;
                let a = u16::from(p.0[3]);
                let mix = |i: usize| {
                    ((u16::from(p.0[i]) * a + u16::from(under[i]) * (255 - a)) / 255) as u8
                };
                img.put_pixel(x + px, y + py, Rgb([mix(0), mix(1), mix(2)]));
            }
        }
        img
    }

    /// The PNG at the options' scale: with a logo, RGB; without, two
    /// indexed colours at one bit a pixel (a served image's memory bound
    /// is one byte a pixel, and this stays under it).
    pub fn png(&self) -> Result<Vec<u8>, QrError> {
        if self.logo.is_none() {
            return self.indexed_png();
        }
        rgb_png(&self.raster(self.options.scale()))
    }

    /// The PNG, decoded first from the very pixels it holds (one raster,
    /// not two: at a large scale a logo code's raster is the bulk of the
    /// memory a run takes).
    pub fn checked_png(&self, text: &str) -> Result<Vec<u8>, BrandError> {
        if self.logo.is_none() {
            self.check(text, self.options.scale())?;
            return Ok(self.indexed_png()?);
        }
        let img = self.raster(self.options.scale());
        self.check_image(&img, text)?;
        Ok(rgb_png(&img)?)
    }

    fn indexed_png(&self) -> Result<Vec<u8>, QrError> {
        let scale = self.options.scale();
        let margin = self.options.margin();
        let side = self.modules() * scale;
        let row_bytes = (side as usize).div_ceil(8);
        // Index 0 light, 1 dark.
        let mut data = vec![0u8; row_bytes * side as usize];
        let n = self.code.width() as u32;
        for y in 0..n {
            for x in 0..n {
                if self.code[(x as usize, y as usize)] != Color::Dark {
                    continue;
                }
                for py in 0..scale {
                    let row = ((y + margin) * scale + py) as usize * row_bytes;
                    for px in 0..scale {
                        let dot = (x + margin) * scale + px;
                        data[row + dot as usize / 8] |= 0x80 >> (dot % 8);
                    }
                }
            }
        }
        let png_err = |e: png::EncodingError| QrError::Png(e.to_string());
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, side, side);
        encoder.set_color(png::ColorType::Indexed);
        encoder.set_depth(png::BitDepth::One);
        encoder.set_palette([self.palette.light.0, self.palette.dark.0].concat());
        encoder.set_compression(png::Compression::High);
        let mut writer = encoder.write_header().map_err(png_err)?;
        writer.write_image_data(&data).map_err(png_err)?;
        writer.finish().map_err(png_err)?;
        Ok(out)
    }

    /// A standalone SVG: ground, the dark modules outside the cleared
    /// square as one path, the logo's own PNG bytes embedded as a data URI
    /// at the place and size the PNG draws it.
    pub fn svg(&self, logo_png: Option<&[u8]>) -> String {
        let modules = self.modules();
        let px = modules * self.options.scale();
        let margin = self.options.margin();
        let d = dark_path_where(&self.code, margin as usize, |x, y| {
            !self.in_box(x as u32, y as u32)
        });
        let mut svg = format!(
            concat!(
                r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.1""#,
                r#" width="{px}" height="{px}" viewBox="0 0 {n} {n}" shape-rendering="crispEdges">"#,
                r#"<rect width="{n}" height="{n}" fill="{light}"/>"#,
                r#"<path fill="{dark}" d="{d}"/>"#,
            ),
            px = px,
            n = modules,
            light = self.palette.light,
            dark = self.palette.dark,
            d = d
        );
        if let (Some((logo, _)), Some((start, side)), Some(bytes)) =
            (self.logo, self.box_span(), logo_png)
        {
            // In module units, from the same fit the PNG uses at a fine scale.
            const FINE: u32 = 1000;
            let (x, y, w, h) = fit(logo, side, start + margin, FINE);
            let unit = |v: u32| f64::from(v) / f64::from(FINE);
            let _ = write!(
                svg,
                r#"<image x="{}" y="{}" width="{}" height="{}" xlink:href="data:image/png;base64,{}"/>"#,
                unit(x),
                unit(y),
                unit(w),
                unit(h),
                base64::engine::general_purpose::STANDARD.encode(bytes)
            );
        }
        svg.push_str("</svg>");
        svg
    }

    /// Decodes the code from its own pixels at `scale` and compares the
    /// text with `text`: the promise that a branded code reads.
    pub fn check(&self, text: &str, scale: u32) -> Result<(), BrandError> {
        self.check_image(&self.raster(scale), text)
    }

    fn check_image(&self, img: &RgbImage, text: &str) -> Result<(), BrandError> {
        let mut gray = image::imageops::grayscale(img);
        if self.palette.is_inverted() {
            image::imageops::invert(&mut gray);
        }
        let mut prepared = rqrr::PreparedImage::prepare(gray);
        let grids = prepared.detect_grids();
        let Some(grid) = grids.first() else {
            return Err(BrandError::DoesNotDecode(
                "no code is found in it (the logo hides too much of it): use a smaller --logo-size"
                    .into(),
            ));
        };
        match grid.decode() {
            Ok((_, read)) if read == text => Ok(()),
            Ok((_, read)) => Err(BrandError::DoesNotDecode(format!(
                "it reads {read:?}, not {text:?}"
            ))),
            Err(e) => {
                let why = match e {
                    rqrr::DeQRError::DataEcc => format!(
                        "the logo hides more codewords than error correction {} restores",
                        level_letter(self.code.error_correction_level())
                    ),
                    rqrr::DeQRError::FormatEcc => "the logo hides its format information".into(),
                    other => format!("the decoder says {other:?}"),
                };
                Err(BrandError::DoesNotDecode(format!(
                    "{why}: use a smaller --logo-size"
                )))
            }
        }
    }
}

/// An 8-bit RGB PNG at the best compression.
fn rgb_png(img: &RgbImage) -> Result<Vec<u8>, QrError> {
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new_with_quality(
        &mut png,
        image::codecs::png::CompressionType::Best,
        image::codecs::png::FilterType::Adaptive,
    )
    .write_image(
        img.as_raw(),
        img.width(),
        img.height(),
        ExtendedColorType::Rgb8,
    )
    .map_err(|e| QrError::Png(e.to_string()))?;
    Ok(png)
}

fn level_letter(ec: qrcode::EcLevel) -> &'static str {
    match ec {
        qrcode::EcLevel::L => "L",
        qrcode::EcLevel::M => "M",
        qrcode::EcLevel::Q => "Q",
        qrcode::EcLevel::H => "H",
    }
}

/// The logo scaled to fit its square less half a module each side (so
/// the modules around keep a light edge), aspect kept, centred: pixel
/// position and size at `scale` pixels a module. `start` is the square's
/// first module in image coordinates (margin included).
fn fit(logo: &RgbaImage, box_side: u32, start: u32, scale: u32) -> (u32, u32, u32, u32) {
    let room = (box_side * scale).saturating_sub(scale).max(1);
    let (lw, lh) = (logo.width().max(1), logo.height().max(1));
    let (w, h) = if lw >= lh {
        (
            room,
            (u64::from(room) * u64::from(lh) / u64::from(lw)).max(1) as u32,
        )
    } else {
        (
            (u64::from(room) * u64::from(lw) / u64::from(lh)).max(1) as u32,
            room,
        )
    };
    let origin = start * scale;
    let square = box_side * scale;
    (origin + (square - w) / 2, origin + (square - h) / 2, w, h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Colour {
        s.parse().expect("a colour")
    }

    #[test]
    fn colours_parse_as_css_hex() {
        assert_eq!(c("#000"), Colour::BLACK);
        assert_eq!(c("fff"), Colour::WHITE);
        assert_eq!(c("#1A2b3C"), Colour([0x1a, 0x2b, 0x3c]));
        assert_eq!(c("#abc"), Colour([0xaa, 0xbb, 0xcc]));
        assert_eq!(c("#1a2b3c").to_string(), "#1a2b3c");
        for bad in [
            "",
            "#",
            "#12",
            "#1234",
            "#ggg",
            "red",
            "#12345g",
            "#ＡＢＣ",
            "+12",
        ] {
            assert!(bad.parse::<Colour>().is_err(), "{bad}");
        }
    }

    #[test]
    fn contrast_follows_wcag() {
        assert!((contrast_ratio(Colour::BLACK, Colour::WHITE) - 21.0).abs() < 1e-9);
        assert!((contrast_ratio(c("#777"), c("#777")) - 1.0).abs() < 1e-9);
        // WCAG's own examples: #767676 on white is the darkest grey under 4.5:1.
        let grey = contrast_ratio(c("#767676"), Colour::WHITE);
        assert!((grey - 4.54).abs() < 0.01, "{grey}");
        assert_eq!(
            contrast_ratio(c("#123456"), c("#fedcba")),
            contrast_ratio(c("#fedcba"), c("#123456"))
        );
        // Pure red on white: 4.0, the bound itself.
        let red = contrast_ratio(c("#f00"), Colour::WHITE);
        assert!((red - 4.0).abs() < 0.01, "{red}");
    }

    #[test]
    fn a_palette_needs_contrast_and_its_dark_darker() {
        assert!(Palette::new(c("#1e3a8a"), c("#fefce8"), false).is_ok());
        let err = Palette::new(c("#999"), Colour::WHITE, false).expect_err("too light");
        assert!(matches!(err, BrandError::LowContrast { .. }));
        assert!(err.to_string().contains("2.85:1, below the 4:1"), "{err}");
        assert!(
            err.to_string().starts_with("dark #999999 on light #ffffff"),
            "{err}"
        );
        let err = Palette::new(Colour::WHITE, c("#123"), false).expect_err("inverted");
        assert!(matches!(err, BrandError::Inverted { .. }));
        let inverted = Palette::new(Colour::WHITE, c("#123"), true).expect("asked for");
        assert!(inverted.is_inverted());
        assert!(
            Palette::new(Colour::WHITE, c("#eee"), true).is_err(),
            "contrast still applies"
        );
        assert!(!Palette::default().is_inverted());
    }

    #[test]
    fn the_level_follows_the_covered_area() {
        // M up to 7.5 %, Q up to 12.5 %, H above.
        assert!(level_allows(EcLevel::M, 0.075));
        assert!(!level_allows(EcLevel::M, 0.076));
        assert!(level_allows(EcLevel::Q, 0.125));
        assert!(!level_allows(EcLevel::Q, 0.126));
        assert!(level_allows(EcLevel::H, 0.15));
        assert!(!level_allows(EcLevel::L, 0.04));
    }

    #[test]
    fn the_logo_square_is_whole_modules_and_centred() {
        for n in (21..=177).step_by(4) {
            for percent in 5..=50 {
                let side = logo_box(n, percent);
                assert_eq!((n - side) % 2, 0);
                assert!(side * 100 >= n * percent, "{n} {percent}");
                assert!(side <= (n * percent).div_ceil(100) + 1);
            }
        }
    }

    #[test]
    fn a_logo_raises_the_level_only_as_far_as_needed() {
        let text = "HTTPS://0X1F.IE/H83if";
        let (small, side) = plan_logo(text, 15, EcLevel::L).expect("fits");
        assert_eq!(small.error_correction_level(), qrcode::EcLevel::M);
        let n = small.width() as u32;
        assert!(level_allows(
            EcLevel::M,
            f64::from(side * side) / f64::from(n * n)
        ));
        let (large, _) = plan_logo(text, 33, EcLevel::L).expect("fits");
        assert_eq!(large.error_correction_level(), qrcode::EcLevel::H);
        // The symbol is the smallest at its level: nothing grown for nothing.
        assert_eq!(
            large.version(),
            encode(text, EcLevel::H).expect("fits").version()
        );
        let (asked, _) = plan_logo(text, 15, EcLevel::Q).expect("fits");
        assert_eq!(asked.error_correction_level(), qrcode::EcLevel::Q);
    }

    fn logo() -> RgbaImage {
        RgbaImage::from_fn(40, 20, |x, _| {
            image::Rgba([200, 30, 30, if x < 30 { 255 } else { 0 }])
        })
    }

    #[test]
    fn a_branded_code_reads_back_and_an_overgrown_logo_does_not() {
        let text = "https://0x1f.ie/H83if";
        let logo = logo();
        let palette = Palette::new(c("#1e3a8a"), c("#fefce8"), false).expect("readable");
        let (code, side) = plan_logo(text, 25, EcLevel::L).expect("fits");
        let branded = Branded {
            code,
            palette,
            options: RenderOptions::default(),
            logo: Some((&logo, side)),
        };
        branded.check(text, 4).expect("decodes");
        assert!(branded.png().expect("png").starts_with(b"\x89PNG"));
        let svg = branded.svg(Some(b"PNG"));
        assert!(
            svg.contains(r##"fill="#1e3a8a""##) && svg.contains("data:image/png;base64,UE5H"),
            "{svg}"
        );
        let (code, side) = plan_logo(text, 60, EcLevel::L).expect("fits");
        let overgrown = Branded {
            code,
            palette,
            options: RenderOptions::default(),
            logo: Some((&logo, side)),
        };
        let err = overgrown.check(text, 4).expect_err("too much hidden");
        assert!(err.to_string().contains("--logo-size"), "{err}");
    }

    #[test]
    fn an_inverted_code_is_checked_as_inverted() {
        let text = "https://0x1f.ie/H83if";
        let palette = Palette::new(Colour::WHITE, Colour::BLACK, true).expect("asked for");
        let branded = Branded {
            code: encode(text, EcLevel::L).expect("fits"),
            palette,
            options: RenderOptions::default(),
            logo: None,
        };
        branded.check(text, 4).expect("decodes inverted");
    }
}
