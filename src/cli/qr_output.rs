//! What `qrtag qr` makes besides the served image: a label printer's PNG or
//! ZPL (`--printer`), and branded codes (`--dark`, `--light`, `--logo`).
//! The decisions live in `qr::dots`, `qr::zpl` and `qr::brand`; this is the
//! shell that reads the options and the logo file.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use image::RgbaImage;

use crate::print::tag_image::{self, ImageFormat, ImageSpec, SizeLimit};
use crate::qr::EcLevel;
use crate::qr::brand::{self, Branded, Colour, Palette};
use crate::qr::dots::{self, DEFAULT_DPI, MAX_DPI, MIN_DPI};
use crate::qr::media::Media;
use crate::qr::{RenderOptions, encode, zpl};
use crate::values::link_key::LinkKey;
use crate::values::public_url::PublicUrl;
use crate::values::usage::UsageError;

/// What the code encodes; shared by `qr` and `batch`.
#[derive(Debug, Clone, Args)]
pub struct TagArgs {
    /// Error correction: L (the default: smallest code), M, Q or H.
    #[arg(long, value_name = "L|M|Q|H", default_value_t = EcLevel::L)]
    pub ec: EcLevel,
    /// Scheme and host in capitals (a smaller code; some phone cameras
    /// mishandle it, see docs/src/printing.md). Same variable as `serve --qr-uppercase-prefix`.
    #[arg(
        long,
        env = "QRTAG_QR_UPPERCASE_PREFIX",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub uppercase_prefix: bool,
}

#[derive(Debug, Clone, Args)]
pub struct LabelArgs {
    /// Label printer stock: a PNG (or ZPL) exactly the label's size in the
    /// printer's dots, every module whole dots. NAME: brother-62,
    /// brother-29, brother-62x29, dymo-25x54, zebra-4x6, zebra-2x1.
    #[arg(
        long,
        value_name = "NAME",
        value_parser = parse_media,
        conflicts_with_all = ["scale", "margin"]
    )]
    pub printer: Option<&'static Media>,
    /// The printer's resolution in dots per inch (203, 300 or 600 are common).
    #[arg(
        long,
        value_name = "N",
        requires = "printer",
        default_value_t = DEFAULT_DPI,
        value_parser = clap::value_parser!(u32).range(i64::from(MIN_DPI)..=i64::from(MAX_DPI))
    )]
    pub dpi: u32,
    /// ZPL: the printer's own QR command (^BQ, modules of at most 10 dots,
    /// version chosen by the printer) instead of the exact dots (^GFA).
    #[arg(long, requires = "printer")]
    pub zpl_native: bool,
}

#[derive(Debug, Clone, Args)]
pub struct BrandArgs {
    /// Colour of the dark modules, CSS hex (#rgb or #rrggbb) [default: #000].
    #[arg(long, value_name = "COLOR", value_parser = parse_colour, conflicts_with = "printer")]
    pub dark: Option<Colour>,
    /// Colour of the light modules and the quiet zone [default: #fff].
    #[arg(long, value_name = "COLOR", value_parser = parse_colour, conflicts_with = "printer")]
    pub light: Option<Colour>,
    /// Accept a --dark colour lighter than the light one (many scanners
    /// read such codes only when told to).
    #[arg(long, requires = "dark", conflicts_with = "printer")]
    pub allow_inverted: bool,
    /// A PNG logo in the centre; error correction is raised to what it covers.
    #[arg(long, value_name = "FILE.png", conflicts_with = "printer")]
    pub logo: Option<PathBuf>,
    /// The logo's square, as a percentage of the code's side.
    #[arg(
        long,
        value_name = "PCT",
        requires = "logo",
        default_value_t = crate::print::request::DEFAULT_LOGO_SIZE,
        value_parser = clap::value_parser!(u32).range(crate::print::request::logo_sizes_for_clap())
    )]
    pub logo_size: u32,
}

fn parse_media(name: &str) -> Result<&'static Media, String> {
    crate::print::stock::printer(name).ok_or_else(|| {
        format!(
            "unknown label printer stock {name:?}, expected one of {}",
            crate::print::stock::printer_names()
        )
    })
}

fn parse_colour(s: &str) -> Result<Colour, String> {
    s.parse().map_err(|e: brand::BrandError| e.to_string())
}

/// The formats `--format` takes: the two images, and ZPL for a printer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QrFormat {
    #[default]
    Png,
    Svg,
    Zpl,
}

impl QrFormat {
    /// The format a file name asks for, if its extension names one.
    pub fn from_path(path: &std::path::Path) -> Option<Self> {
        path.extension()?.to_str()?.parse().ok()
    }
}

impl std::str::FromStr for QrFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "png" => Ok(QrFormat::Png),
            "svg" => Ok(QrFormat::Svg),
            "zpl" => Ok(QrFormat::Zpl),
            _ => Err(format!("unknown format {s:?}, expected png, svg or zpl")),
        }
    }
}

/// A logo read and decoded, with the bytes an SVG embeds.
pub struct Logo {
    image: RgbaImage,
    png: Vec<u8>,
    percent: u32,
}

/// What one `qrtag qr` run makes, decided before the store is opened.
pub enum Job {
    /// The served image, in colours if asked: the same bytes as
    /// `/qr/KEY.png|svg` with the same parameters.
    Plain {
        format: ImageFormat,
        palette: Option<Palette>,
    },
    Label {
        media: &'static Media,
        dpi: u32,
        zpl: Option<bool>,
    },
    /// A logo: only the command line draws one.
    Logo {
        format: ImageFormat,
        palette: Palette,
        logo: Logo,
    },
}

impl Job {
    /// Checks the combination and reads the logo; a wrong combination or
    /// colours a camera cannot read are usage errors.
    pub fn plan(format: QrFormat, label: &LabelArgs, brand: &BrandArgs) -> anyhow::Result<Job> {
        let usage = |msg: &str| anyhow::Error::new(UsageError(msg.to_owned()));
        if let Some(media) = label.printer {
            return match format {
                QrFormat::Png => Ok(Job::Label {
                    media,
                    dpi: label.dpi,
                    zpl: None,
                }),
                QrFormat::Zpl => Ok(Job::Label {
                    media,
                    dpi: label.dpi,
                    zpl: Some(label.zpl_native),
                }),
                QrFormat::Svg => Err(usage(
                    "--printer makes a png or zpl file (the PDF for a label printer is `qrtag print`)",
                )),
            };
        }
        let format = match format {
            QrFormat::Png => ImageFormat::Png,
            QrFormat::Svg => ImageFormat::Svg,
            QrFormat::Zpl => {
                return Err(usage(
                    "--format zpl is for a Zebra label: give --printer NAME for its size",
                ));
            }
        };
        let palette = if brand.dark.is_none() && brand.light.is_none() {
            None
        } else {
            Some(
                Palette::new(
                    brand.dark.unwrap_or(Colour::BLACK),
                    brand.light.unwrap_or(Colour::WHITE),
                    brand.allow_inverted,
                )
                .map_err(|e| usage(&e.to_string()))?,
            )
        };
        Ok(match &brand.logo {
            Some(path) => Job::Logo {
                format,
                palette: palette.unwrap_or_default(),
                logo: read_logo(path, brand.logo_size)?,
            },
            None => Job::Plain { format, palette },
        })
    }

    /// The file for `key`'s tag. A plain image goes through `qr_image`, the
    /// server's path, so it stays byte-identical to the served one.
    pub fn render(
        &self,
        public_url: &PublicUrl,
        key: &LinkKey,
        tag: &TagArgs,
        options: RenderOptions,
    ) -> anyhow::Result<Vec<u8>> {
        let text = tag_image::tag_text(public_url, key, tag.uppercase_prefix);
        let (text, ec) = (text.as_str(), tag.ec);
        match self {
            Job::Plain { format, palette } => {
                let spec = ImageSpec {
                    format: *format,
                    ec,
                    options,
                    uppercase_prefix: tag.uppercase_prefix,
                    palette: *palette,
                    logo: None,
                };
                Ok(tag_image::render(
                    public_url,
                    key,
                    &spec,
                    SizeLimit::Unbounded,
                )?)
            }
            Job::Label { media, dpi, zpl } => {
                let code = encode(text, ec)?;
                let layout = dots::layout(media, *dpi, code.width() as u32)
                    .map_err(|e| UsageError(e.to_string()))?;
                Ok(match zpl {
                    None => dots::label_png(&code, &layout)?,
                    Some(false) => zpl::graphic_label(&code, &layout).into_bytes(),
                    Some(true) => zpl::native_label(text, ec, &layout).into_bytes(),
                })
            }
            Job::Logo {
                format,
                palette,
                logo,
            } => {
                let (code, side) = brand::plan_logo(text, logo.percent, ec)?;
                let branded = Branded {
                    code,
                    palette: *palette,
                    options,
                    logo: Some((&logo.image, side)),
                };
                // A PNG is checked in the pixels written; an SVG has none,
                // so at the default scale a viewer shows it at.
                Ok(match format {
                    ImageFormat::Png => branded.checked_png(text)?,
                    ImageFormat::Svg => {
                        branded.check(text, RenderOptions::DEFAULT_SCALE)?;
                        branded.svg(Some(&logo.png)).into_bytes()
                    }
                })
            }
        }
    }
}

/// Reads `--logo`: a file that cannot be read is a failure, one that is
/// not a PNG a usage error (SVG logos are not drawn; convert them first).
fn read_logo(path: &std::path::Path, percent: u32) -> anyhow::Result<Logo> {
    let png = std::fs::read(path).with_context(|| format!("reading --logo {}", path.display()))?;
    let image = decode_logo(&png, path)?;
    Ok(Logo {
        image,
        png,
        percent,
    })
}

/// `serve --print-logo`, read and decoded once at start.
#[derive(Clone, Debug)]
pub struct PrintLogo(pub std::sync::Arc<crate::print::tag_image::ServerLogo>);

/// The largest `--print-logo` file and image a server takes: a logo is a
/// few kilobytes, and every print job's PDF embeds its pixels.
pub const MAX_PRINT_LOGO_BYTES: u64 = 1 << 20;
pub const MAX_PRINT_LOGO_SIDE: u32 = 1024;

/// `--print-logo FILE.png`: a PNG within the limits, decoded.
pub fn parse_print_logo(path: &str) -> Result<PrintLogo, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{path}: {e}"))?
        .len();
    if size > MAX_PRINT_LOGO_BYTES {
        return Err(format!(
            "{path} is {size} bytes: a logo may be at most {MAX_PRINT_LOGO_BYTES} (1 MiB)"
        ));
    }
    let png = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let image = image::load_from_memory_with_format(&png, image::ImageFormat::Png)
        .map_err(|_| format!("{path}: not a PNG file (convert an SVG logo to PNG first)"))?
        .to_rgba8();
    if image.width().max(image.height()) > MAX_PRINT_LOGO_SIDE {
        return Err(format!(
            "{path} is {} x {} pixels: a logo may be at most {MAX_PRINT_LOGO_SIDE} a side",
            image.width(),
            image.height()
        ));
    }
    Ok(PrintLogo(std::sync::Arc::new(
        crate::print::tag_image::ServerLogo {
            image: std::sync::Arc::new(image),
            png,
        },
    )))
}

/// `--logo` read and decoded, for `qrtag print`, which embeds the pixels.
pub fn read_logo_image(path: &std::path::Path) -> anyhow::Result<RgbaImage> {
    let png = std::fs::read(path).with_context(|| format!("reading --logo {}", path.display()))?;
    decode_logo(&png, path)
}

fn decode_logo(png: &[u8], path: &std::path::Path) -> anyhow::Result<RgbaImage> {
    Ok(
        image::load_from_memory_with_format(png, image::ImageFormat::Png)
            .map_err(|_| {
                UsageError(format!(
                    "--logo {}: not a PNG file (convert an SVG logo to PNG first)",
                    path.display()
                ))
            })?
            .to_rgba8(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn formats_parse_from_names_and_extensions() {
        assert_eq!("ZPL".parse(), Ok(QrFormat::Zpl));
        assert_eq!("png".parse(), Ok(QrFormat::Png));
        assert!(
            "pdf"
                .parse::<QrFormat>()
                .is_err_and(|e| e.contains("png, svg or zpl"))
        );
        assert_eq!(
            QrFormat::from_path(Path::new("out/label.zpl")),
            Some(QrFormat::Zpl)
        );
        assert_eq!(
            QrFormat::from_path(Path::new("tag.SVG")),
            Some(QrFormat::Svg)
        );
        assert_eq!(QrFormat::from_path(Path::new("tag")), None);
    }
}
