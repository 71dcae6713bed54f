//! A code on a label printer's dots: every module a whole number of dots,
//! so the printed edges are where the symbol says, with no grey pixel for a
//! driver to dither or a thermal head to smear.
//!
//! Pure: [`layout`] decides the geometry, [`LabelBitmap`] holds the dots,
//! and [`LabelBitmap::to_png`] writes them as a 1-bit PNG that carries its
//! resolution, so a driver prints it at the label's size, not scaled.

use png::{BitDepth, ColorType, PixelDimensions, Unit};
use qrcode::{Color, QrCode};

use crate::qr::media::{Media, um_to_dots};

/// The printer resolution when `--dpi` is not given: Brother QL and Dymo
/// LabelWriter print at 300, and so do the 300 dpi Zebra models.
pub const DEFAULT_DPI: u32 = 300;
/// The range `--dpi` accepts: below 150 no short URL fits a small label at a
/// readable module size; 1200 is past any label printer sold.
pub const MIN_DPI: u32 = 150;
pub const MAX_DPI: u32 = 1200;

/// The smallest module qrtag prints, in micrometres: 0.33 mm, the size
/// below which phone cameras start to need the code held close and still
/// (the same floor as the sheets of `qrtag print`).
pub const MIN_MODULE_UM: u32 = 330;

/// The quiet zone the standard asks for, in modules on each side.
pub const QUIET_ZONE: u32 = 4;

/// Where the code goes on one label, in dots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub dpi: u32,
    /// The label, whole dots.
    pub width: u32,
    pub height: u32,
    /// Dots per module.
    pub module: u32,
    /// Modules across the symbol, quiet zone not included.
    pub modules: u32,
    /// The symbol's top-left dot (its quiet zone lies around it).
    pub x: u32,
    pub y: u32,
}

impl Layout {
    /// Dots across the symbol itself.
    pub fn symbol_dots(&self) -> u32 {
        self.modules * self.module
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LabelError {
    #[error(
        "the code would have modules of {module} dots ({module_mm:.2} mm) on {media} at {dpi} dpi, \
         below the readable minimum of {min_mm:.2} mm ({min} dots): use a larger label, a higher --dpi or a shorter key"
    )]
    ModuleTooSmall {
        media: &'static str,
        dpi: u32,
        module: u32,
        module_mm: f64,
        min: u32,
        min_mm: f64,
    },
    #[error("PNG encoding failed: {0}")]
    Png(String),
}

/// The least dots a module may have at `dpi` ([`MIN_MODULE_UM`], rounded up).
pub fn min_module_dots(dpi: u32) -> u32 {
    let dots = um_to_dots(MIN_MODULE_UM, dpi);
    if dots * 25_400 < MIN_MODULE_UM * dpi {
        dots + 1
    } else {
        dots
    }
}

/// The largest whole-dot module that fits a `modules`-wide symbol on
/// `media` at `dpi`: symbol and quiet zone inside the label, the symbol
/// itself inside the printable area; centred (to the dot, rounded left and
/// up). Refused below [`MIN_MODULE_UM`].
pub fn layout(media: &Media, dpi: u32, modules: u32) -> Result<Layout, LabelError> {
    let (width, height) = media.dots(dpi);
    let short_side = width.min(height);
    let printable = short_side.saturating_sub(2 * media.margin_dots(dpi));
    let module = (short_side / (modules + 2 * QUIET_ZONE)).min(printable / modules.max(1));
    let min = min_module_dots(dpi);
    if module < min {
        let mm = |dots: u32| f64::from(dots) * 25.4 / f64::from(dpi);
        return Err(LabelError::ModuleTooSmall {
            media: media.name,
            dpi,
            module,
            module_mm: mm(module),
            min,
            min_mm: f64::from(MIN_MODULE_UM) / 1000.0,
        });
    }
    let side = modules * module;
    Ok(Layout {
        dpi,
        width,
        height,
        module,
        modules,
        x: (width - side) / 2,
        y: (height - side) / 2,
    })
}

/// One bit a dot, rows padded to whole bytes, most significant bit first,
/// 1 for a printed (dark) dot: the layout of ZPL's `^GF` and, inverted, of
/// a 1-bit grayscale PNG.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bits {
    pub width: u32,
    pub height: u32,
    pub row_bytes: usize,
    pub data: Vec<u8>,
}

impl Bits {
    fn blank(width: u32, height: u32) -> Self {
        let row_bytes = (width as usize).div_ceil(8);
        Self {
            width,
            height,
            row_bytes,
            data: vec![0; row_bytes * height as usize],
        }
    }

    /// Marks `len` dots of row `y` from `x` as printed.
    fn set_run(&mut self, x: u32, y: u32, len: u32) {
        let row = y as usize * self.row_bytes;
        for dot in x..x + len {
            self.data[row + dot as usize / 8] |= 0x80 >> (dot % 8);
        }
    }

    pub fn is_dark(&self, x: u32, y: u32) -> bool {
        self.data[y as usize * self.row_bytes + x as usize / 8] & (0x80 >> (x % 8)) != 0
    }
}

/// The symbol alone, `module` dots a module: what ZPL's graphic field
/// holds, placed at the layout's `(x, y)`.
pub fn symbol_bits(code: &QrCode, module: u32) -> Bits {
    let n = code.width() as u32;
    let mut bits = Bits::blank(n * module, n * module);
    for my in 0..n {
        for mx in 0..n {
            if code[(mx as usize, my as usize)] == Color::Dark {
                for dy in 0..module {
                    bits.set_run(mx * module, my * module + dy, module);
                }
            }
        }
    }
    bits
}

/// The whole label: the symbol at its place, every other dot blank.
pub fn label_bits(code: &QrCode, layout: &Layout) -> Bits {
    let symbol = symbol_bits(code, layout.module);
    let mut label = Bits::blank(layout.width, layout.height);
    for y in 0..symbol.height {
        for x in 0..symbol.width {
            if symbol.is_dark(x, y) {
                label.set_run(layout.x + x, layout.y + y, 1);
            }
        }
    }
    label
}

/// A 1-bit grayscale PNG of the label, its `pHYs` chunk saying the dpi
/// (in dots per metre, as PNG counts), so it prints at the label's size.
pub fn label_png(code: &QrCode, layout: &Layout) -> Result<Vec<u8>, LabelError> {
    let bits = label_bits(code, layout);
    // PNG's 1-bit gray is 0 for black: the printed dots inverted.
    let data: Vec<u8> = bits.data.iter().map(|b| !b).collect();
    let png_err = |e: png::EncodingError| LabelError::Png(e.to_string());
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, bits.width, bits.height);
    encoder.set_color(ColorType::Grayscale);
    encoder.set_depth(BitDepth::One);
    encoder.set_compression(png::Compression::High);
    let per_metre = (f64::from(layout.dpi) / 0.0254).round() as u32;
    encoder.set_pixel_dims(Some(PixelDimensions {
        xppu: per_metre,
        yppu: per_metre,
        unit: Unit::Meter,
    }));
    let mut writer = encoder.write_header().map_err(png_err)?;
    writer.write_image_data(&data).map_err(png_err)?;
    writer.finish().map_err(png_err)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::print::stock::{printer, printers};
    use crate::qr::{EcLevel, encode};

    fn media(name: &str) -> &'static Media {
        printer(name).expect("known media")
    }

    #[test]
    fn the_least_module_is_0_33_mm_rounded_up_to_dots() {
        assert_eq!(min_module_dots(203), 3);
        assert_eq!(min_module_dots(300), 4);
        assert_eq!(min_module_dots(600), 8);
        assert_eq!(min_module_dots(1200), 16);
        for dpi in MIN_DPI..=MAX_DPI {
            let dots = min_module_dots(dpi);
            assert!(dots * 25_400 >= MIN_MODULE_UM * dpi, "{dpi}");
            assert!((dots - 1) * 25_400 < MIN_MODULE_UM * dpi, "{dpi}");
        }
    }

    #[test]
    fn the_module_is_the_largest_whole_number_of_dots_that_fits() {
        // A version-2 symbol, 25 modules, 33 with its quiet zone.
        let l = layout(media("brother-29"), 300, 25).expect("fits");
        // 342 dots across: 342 / 33 = 10; printable 306 / 25 = 12.
        assert_eq!((l.width, l.height, l.module), (342, 342, 10));
        assert_eq!((l.x, l.y), (46, 46));
        let l = layout(media("zebra-2x1"), 203, 25).expect("fits");
        // 203 dots tall: 203 / 33 = 6; printable 203 - 2·8 = 187 / 25 = 7.
        assert_eq!((l.width, l.height, l.module), (406, 203, 6));
        assert_eq!((l.x, l.y), (128, 26));
        // The printable area can be the bound: 62 × 29 die-cut loses 3 mm a
        // side; the quiet zone alone would allow 342 / 65 = 5.
        let l = layout(media("brother-62x29"), 300, 57).expect("fits");
        assert_eq!(l.module, (342 - 2 * 36) / 57);
        assert_eq!(l.module, 4);
    }

    #[test]
    fn every_media_and_dpi_keeps_the_code_and_quiet_zone_on_the_label() {
        for media in printers() {
            for dpi in [203, 300, 600] {
                for modules in (21..=177).step_by(4) {
                    let Ok(l) = layout(media, dpi, modules) else {
                        continue;
                    };
                    let quiet = QUIET_ZONE * l.module;
                    assert!(
                        l.x >= quiet && l.y >= quiet,
                        "{} {dpi} {modules}",
                        media.name
                    );
                    assert!(l.x + l.symbol_dots() + quiet <= l.width);
                    assert!(l.y + l.symbol_dots() + quiet <= l.height);
                    assert!(l.module >= min_module_dots(dpi));
                    // Centred to the dot.
                    assert!((l.width - l.symbol_dots() - 2 * l.x) <= 1);
                    assert!((l.height - l.symbol_dots() - 2 * l.y) <= 1);
                    // One more dot per module would not fit.
                    assert!(
                        (modules + 2 * QUIET_ZONE) * (l.module + 1) > l.width.min(l.height)
                            || modules * (l.module + 1)
                                > l.width.min(l.height) - 2 * media.margin_dots(dpi)
                    );
                }
            }
        }
    }

    #[test]
    fn a_module_below_the_minimum_is_refused_naming_it() {
        // Version 30 (137 modules) on a 29 mm tape at 300 dpi: 2 dots.
        let err = layout(media("brother-29"), 300, 137).expect_err("too small");
        assert!(matches!(
            err,
            LabelError::ModuleTooSmall {
                module: 2,
                min: 4,
                ..
            }
        ));
        let msg = err.to_string();
        assert!(msg.contains("0.33 mm (4 dots)"), "{msg}");
        assert!(msg.contains("brother-29 at 300 dpi"), "{msg}");
    }

    #[test]
    fn the_bitmap_holds_each_module_as_a_square_of_dots() {
        let code = encode("HTTPS://0X1F.IE/H83if", EcLevel::L).expect("fits");
        let l = layout(media("zebra-2x1"), 203, code.width() as u32).expect("fits");
        let bits = label_bits(&code, &l);
        assert_eq!((bits.width, bits.height, bits.row_bytes), (406, 203, 51));
        for y in 0..bits.height {
            for x in 0..bits.width {
                let inside = (l.x..l.x + l.symbol_dots()).contains(&x)
                    && (l.y..l.y + l.symbol_dots()).contains(&y);
                let want = inside && {
                    let mx = ((x - l.x) / l.module) as usize;
                    let my = ((y - l.y) / l.module) as usize;
                    code[(mx, my)] == Color::Dark
                };
                assert_eq!(bits.is_dark(x, y), want, "dot {x},{y}");
            }
        }
    }
}
