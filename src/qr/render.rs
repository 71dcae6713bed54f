//! PNG and SVG images of one symbol.

use std::fmt::Write as _;

use image::ExtendedColorType;
use image::ImageEncoder;
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use qrcode::{Color, QrCode};

use super::QrError;

/// Validated image geometry. The fields are private so an out-of-range value
/// can only come in through [`RenderOptions::new`], which is where a request
/// parameter gets turned down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderOptions {
    scale: u32,
    margin: u32,
}

impl RenderOptions {
    /// One pixel per module leaves nothing for a scanner to threshold on a
    /// resampled image; two is the least that survives.
    pub const MIN_SCALE: u32 = 2;
    /// Caps memory and CPU per request: a version-40 symbol with the widest
    /// margin is 209 modules, so 64 px/module is at most 13 376 px square.
    pub const MAX_SCALE: u32 = 64;
    /// The standard asks for 4 modules; more than 16 is just blank paper.
    pub const MAX_MARGIN: u32 = 16;
    pub const DEFAULT_SCALE: u32 = 8;
    pub const DEFAULT_MARGIN: u32 = 4;

    pub fn new(scale: u32, margin: u32) -> Result<Self, QrError> {
        if !(Self::MIN_SCALE..=Self::MAX_SCALE).contains(&scale) {
            return Err(QrError::ScaleOutOfRange(scale));
        }
        if margin > Self::MAX_MARGIN {
            return Err(QrError::MarginOutOfRange(margin));
        }
        Ok(Self { scale, margin })
    }

    /// Pixels per module.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    /// Quiet zone width in modules.
    pub fn margin(&self) -> u32 {
        self.margin
    }

    /// Modules across the whole image, quiet zone included.
    fn modules(&self, code: &QrCode) -> usize {
        code.width() + 2 * self.margin as usize
    }

    /// Pixels a side of the PNG of `code`: what its render holds in memory
    /// (one byte a pixel) and works through.
    pub fn png_side(&self, code: &QrCode) -> usize {
        self.modules(code) * self.scale as usize
    }

    /// Refuses a PNG of `code` wider than `max` pixels, saying which scale
    /// would fit, so a caller can ask again instead of guessing.
    pub fn check_png_side(&self, code: &QrCode, max: usize) -> Result<(), QrError> {
        let side = self.png_side(code);
        if side <= max {
            return Ok(());
        }
        let fitting = max / self.modules(code);
        let advice = if fitting >= Self::MIN_SCALE as usize {
            format!("use scale {fitting} or less for this key")
        } else {
            "use a smaller margin, or the SVG".to_owned()
        };
        Err(QrError::TooLarge { side, max, advice })
    }
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            scale: Self::DEFAULT_SCALE,
            margin: Self::DEFAULT_MARGIN,
        }
    }
}

/// Widest pixel row (in bytes) that deflates smaller unfiltered.
///
/// Measured on versions 2–11 at scales 4–16 with best compression: unfiltered
/// rows win by 10–30 % while a repeated row is short enough for deflate to
/// copy cheaply; past about 500 bytes Paeth, which turns repeated rows into
/// zeros, wins by as much. Near the threshold the two are within 2 %.
const UNFILTERED_MAX_ROW: usize = 512;

/// Renders an 8-bit grayscale PNG, black on white.
///
/// 8-bit because `image`'s PNG encoder has no 1-bit mode; with maximum
/// compression the repeated rows and runs deflate to almost nothing anyway.
/// The output depends only on the symbol and the options, so it can be cached
/// and compared byte for byte.
pub fn render_png(code: &QrCode, opts: &RenderOptions) -> Result<Vec<u8>, QrError> {
    let scale = opts.scale as usize;
    let margin = opts.margin as usize;
    let side = opts.png_side(code);
    let mut pixels = vec![u8::MAX; side * side];
    for y in 0..code.width() {
        let top = (y + margin) * scale * side;
        let row = &mut pixels[top..top + side];
        for x in 0..code.width() {
            if code[(x, y)] == Color::Dark {
                let left = (x + margin) * scale;
                row[left..left + scale].fill(0);
            }
        }
        for copy in 1..scale {
            pixels.copy_within(top..top + side, top + copy * side);
        }
    }

    let filter = if side <= UNFILTERED_MAX_ROW {
        FilterType::NoFilter
    } else {
        FilterType::Paeth
    };
    let side = u32::try_from(side).map_err(|e| QrError::Png(e.to_string()))?;
    let mut png = Vec::new();
    PngEncoder::new_with_quality(&mut png, CompressionType::Best, filter)
        .write_image(&pixels, side, side, ExtendedColorType::L8)
        .map_err(|e| QrError::Png(e.to_string()))?;
    Ok(png)
}

/// Renders a standalone SVG: a white background and one `<path>` holding
/// every dark module, in module units so it stays crisp at any print size.
pub fn render_svg(code: &QrCode, opts: &RenderOptions) -> String {
    let modules = opts.modules(code);
    let px = modules * opts.scale as usize;
    let path = dark_path(code, opts.margin as usize);
    format!(
        concat!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1""#,
            r#" width="{px}" height="{px}" viewBox="0 0 {n} {n}" shape-rendering="crispEdges">"#,
            r##"<rect width="{n}" height="{n}" fill="#fff"/>"##,
            r##"<path fill="#000" d="{d}"/></svg>"##,
        ),
        px = px,
        n = modules,
        d = path
    )
}

/// Path data for the dark modules, offset by `offset` modules on both axes.
///
/// Horizontal runs become one rectangle each, which keeps the path several
/// times shorter than one square per module; the sheet reuses it.
pub(crate) fn dark_path(code: &QrCode, offset: usize) -> String {
    dark_path_where(code, offset, |_, _| true)
}

/// [`dark_path`] of the dark modules at which `keep(x, y)` holds: a
/// branded code leaves out the ones under its logo.
pub(crate) fn dark_path_where(
    code: &QrCode,
    offset: usize,
    keep: impl Fn(usize, usize) -> bool,
) -> String {
    let width = code.width();
    let dark = |x: usize, y: usize| code[(x, y)] == Color::Dark && keep(x, y);
    let mut d = String::with_capacity(width * width);
    for y in 0..width {
        let mut x = 0;
        while x < width {
            if !dark(x, y) {
                x += 1;
                continue;
            }
            let start = x;
            while x < width && dark(x, y) {
                x += 1;
            }
            let run = x - start;
            // Writing into a String cannot fail.
            let _ = write!(d, "M{} {}h{run}v1h-{run}z", start + offset, y + offset);
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_validate_their_ranges() {
        assert_eq!(RenderOptions::new(1, 4), Err(QrError::ScaleOutOfRange(1)));
        assert_eq!(RenderOptions::new(0, 4), Err(QrError::ScaleOutOfRange(0)));
        assert_eq!(RenderOptions::new(65, 4), Err(QrError::ScaleOutOfRange(65)));
        assert_eq!(
            RenderOptions::new(8, 17),
            Err(QrError::MarginOutOfRange(17))
        );
        let opts = RenderOptions::new(2, 0).expect("lower bounds are valid");
        assert_eq!((opts.scale(), opts.margin()), (2, 0));
        let opts = RenderOptions::new(64, 16).expect("upper bounds are valid");
        assert_eq!((opts.scale(), opts.margin()), (64, 16));
        assert_eq!(
            RenderOptions::default(),
            RenderOptions::new(8, 4).expect("valid")
        );
    }

    #[test]
    fn a_png_over_the_bound_is_refused_with_a_scale_that_fits() {
        let code = QrCode::new(b"https://0x1f.ie/H83if").expect("fits");
        let modules = code.width() + 2 * 4;
        let opts = RenderOptions::new(8, 4).expect("valid");
        assert_eq!(opts.png_side(&code), modules * 8);
        assert_eq!(opts.check_png_side(&code, modules * 8), Ok(()));
        let err = opts
            .check_png_side(&code, modules * 8 - 1)
            .expect_err("one pixel over");
        assert_eq!(
            err,
            QrError::TooLarge {
                side: modules * 8,
                max: modules * 8 - 1,
                advice: "use scale 7 or less for this key".into(),
            }
        );
        let err = opts.check_png_side(&code, modules).expect_err("over");
        assert!(
            err.to_string()
                .ends_with("use a smaller margin, or the SVG"),
            "{err}"
        );
    }

    #[test]
    fn path_covers_exactly_the_dark_modules() {
        let code = QrCode::with_bits(
            {
                let mut bits = qrcode::bits::Bits::new(qrcode::Version::Normal(1));
                bits.push_byte_data(b"x").expect("fits");
                bits.push_terminator(qrcode::EcLevel::L).expect("fits");
                bits
            },
            qrcode::EcLevel::L,
        )
        .expect("valid symbol");
        let dark_modules = code
            .to_colors()
            .iter()
            .filter(|c| **c == Color::Dark)
            .count();
        let path = dark_path(&code, 4);
        let covered: usize = path
            .split('h')
            .skip(1)
            .step_by(2)
            .map(|n| {
                n.split('v')
                    .next()
                    .and_then(|n| n.parse::<usize>().ok())
                    .unwrap_or(0)
            })
            .sum();
        assert_eq!(covered, dark_modules);
        assert!(
            path.starts_with("M4 4h7v1h-7z"),
            "finder pattern first: {path}"
        );
    }
}
