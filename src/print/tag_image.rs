//! A link's tag image, made one way for both the admin listener and
//! `qrtag qr`, so that a file written by the CLI and an image fetched over
//! HTTP are the same bytes for the same parameters.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::qr::brand::{self, BrandError, Branded, Palette};
use crate::qr::{self, EcLevel, QrError, RenderOptions};
use crate::values::link_key::LinkKey;
use crate::values::public_url::PublicUrl;

/// The two image formats a tag is served in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    /// For screens and quick printing.
    #[default]
    Png,
    /// For print shops: stays crisp at any size.
    Svg,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown image format {0:?}, expected png or svg")]
pub struct UnknownFormat(pub String);

impl ImageFormat {
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Svg => "svg",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Svg => "image/svg+xml",
        }
    }

    /// The format a file name asks for; `None` when its extension names
    /// neither, so the caller can ask instead of guessing.
    pub fn from_path(path: &Path) -> Option<Self> {
        path.extension()?.to_str()?.parse().ok()
    }
}

/// Case-insensitive, because file names (`TAG.PNG`) arrive either way.
impl FromStr for ImageFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("png") {
            Ok(ImageFormat::Png)
        } else if s.eq_ignore_ascii_case("svg") {
            Ok(ImageFormat::Svg)
        } else {
            Err(UnknownFormat(s.to_owned()))
        }
    }
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// Every parameter an image depends on besides the public URL and the key.
/// Two equal specs give byte-identical images, which is what lets the HTTP
/// answer be cached for a day.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageSpec {
    pub format: ImageFormat,
    pub ec: EcLevel,
    pub options: RenderOptions,
    pub uppercase_prefix: bool,
    /// Colours other than black on white (`qr::brand`): checked for
    /// contrast when made, decoded before the image is returned.
    pub palette: Option<Palette>,
    /// The server's logo (`serve --print-logo`) in the centre, its square
    /// this percentage of the code's side: drawn as `qrtag qr --logo` draws
    /// it, and decoded first.
    pub logo: Option<u32>,
}

/// `serve --print-logo`: the decoded image every surface draws, and the
/// file's bytes an SVG embeds.
#[derive(Debug)]
pub struct ServerLogo {
    pub image: Arc<image::RgbaImage>,
    pub png: Vec<u8>,
}

/// What the tag for `key` encodes: the short URL, with scheme and host in
/// capitals when asked (see [`qr::short_url_text`]).
pub fn tag_text(public_url: &PublicUrl, key: &LinkKey, uppercase_prefix: bool) -> String {
    qr::short_url_text(public_url.origin(), key.as_str(), uppercase_prefix)
}

/// The widest PNG a server renders, in pixels a side. A render holds one
/// byte a pixel while it deflates them, so this bounds one render to 16 MiB
/// (a version-40 symbol at the default scale and margin is 1,480 pixels; a
/// short key fits at scale 64). An SVG has no pixels to hold: its size
/// follows the modules, whatever the scale says.
pub const MAX_PNG_SIDE: usize = 4096;

/// Pixels a module at which a code in colours without a logo is decoded
/// before it is served or written.
const BRANDED_CHECK_SCALE: u32 = 4;

/// How large a PNG [`render`] may make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeLimit {
    /// [`MAX_PNG_SIDE`]: the admin listener and the console, where anyone
    /// who reaches them may ask for many at once.
    Served,
    /// Any size the options allow: `qrtag qr` runs one render for the
    /// person who asked, on their machine.
    Unbounded,
}

/// Renders the tag for `key`. Fails for a key too long for any QR code
/// (hierarchical keys have no overall length limit), for a PNG over `limit`,
/// or if PNG encoding does.
pub fn render(
    public_url: &PublicUrl,
    key: &LinkKey,
    spec: &ImageSpec,
    limit: SizeLimit,
) -> Result<Vec<u8>, QrError> {
    render_with(public_url, key, spec, limit, None)
}

/// [`render`] with the server's logo for a spec that asks for it (a spec
/// asking for one with `logo` none is [`QrError::Unreadable`]'s caller's
/// to refuse first: see [`RenderGate::render`]).
pub fn render_with(
    public_url: &PublicUrl,
    key: &LinkKey,
    spec: &ImageSpec,
    limit: SizeLimit,
    logo: Option<&ServerLogo>,
) -> Result<Vec<u8>, QrError> {
    let text = tag_text(public_url, key, spec.uppercase_prefix);
    if let (Some(percent), Some(logo)) = (spec.logo, logo) {
        let unreadable = |e: BrandError| match e {
            BrandError::DoesNotDecode(why) => QrError::Unreadable(why),
            BrandError::Qr(e) => e,
            other => QrError::Unreadable(other.to_string()),
        };
        let (code, side) = brand::plan_logo(&text, percent, spec.ec)?;
        if spec.format == ImageFormat::Png && limit == SizeLimit::Served {
            spec.options.check_png_side(&code, MAX_PNG_SIDE)?;
        }
        let branded = Branded {
            code,
            palette: spec.palette.unwrap_or_default(),
            options: spec.options,
            logo: Some((&logo.image, side)),
        };
        // As `qrtag qr --logo`: a PNG checked in its own pixels, an SVG at
        // the scale a viewer shows it at.
        return match spec.format {
            ImageFormat::Png => branded.checked_png(&text).map_err(unreadable),
            ImageFormat::Svg => {
                branded
                    .check(&text, RenderOptions::DEFAULT_SCALE)
                    .map_err(unreadable)?;
                Ok(branded.svg(Some(&logo.png)).into_bytes())
            }
        };
    }
    let code = qr::encode(&text, spec.ec)?;
    if let Some(palette) = spec.palette {
        if spec.format == ImageFormat::Png && limit == SizeLimit::Served {
            spec.options.check_png_side(&code, MAX_PNG_SIDE)?;
        }
        let branded = Branded {
            code,
            palette,
            options: spec.options,
            logo: None,
        };
        // Without a logo the geometry is the plain code's at any scale, so
        // it is checked at a small one; the colours are what is tested.
        branded
            .check(&text, BRANDED_CHECK_SCALE)
            .map_err(|e| match e {
                BrandError::DoesNotDecode(why) => QrError::Unreadable(why),
                other => QrError::Unreadable(other.to_string()),
            })?;
        return match spec.format {
            ImageFormat::Png => branded.png(),
            ImageFormat::Svg => Ok(branded.svg(None).into_bytes()),
        };
    }
    match spec.format {
        ImageFormat::Png => {
            if limit == SizeLimit::Served {
                spec.options.check_png_side(&code, MAX_PNG_SIDE)?;
            }
            qr::render_png(&code, &spec.options)
        }
        ImageFormat::Svg => Ok(qr::render_svg(&code, &spec.options).into_bytes()),
    }
}

/// Why a served render gave no image.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Qr(#[from] QrError),
    /// Every render slot is taken: the caller is asked to come back rather
    /// than queued, so a burst costs neither memory nor blocking threads.
    #[error("too many images are being rendered; try again in a moment")]
    Busy,
    #[error("rendering did not finish: {0}")]
    Aborted(String),
    /// A print-ready PDF the layout refused (or failed to write).
    #[error(transparent)]
    Print(#[from] crate::print::PrintError),
    /// `logo=true` on a server started without `--print-logo`.
    #[error(
        "bad logo: this server has no logo: its operator sets one with `qrtag serve --print-logo FILE.png`"
    )]
    NoLogo,
}

/// The renders a server runs at once, one gate for the whole process:
/// shared by the admin listener's `/qr/`, the console's downloads and the
/// REST API (issue 30: the API had its own, so twice the cap ran at once).
/// Each one is CPU work of up to [`MAX_PNG_SIDE`]² bytes or a print job's
/// budget ([`crate::print::budget`]), so more of them than cores only adds
/// memory and slows every other answer.
#[derive(Clone, Debug)]
pub struct RenderGate {
    slots: Arc<Semaphore>,
    capacity: usize,
    /// The logo `serve --print-logo` gives the print surfaces (`logo=true`),
    /// decoded once at start: a server's brand is the operator's, not
    /// uploaded with every request.
    print_logo: Option<Arc<ServerLogo>>,
    /// SHA-256 of the logo's size and pixels (empty without one), for the
    /// ETag of a PDF drawn with it: another logo after a restart is another
    /// answer.
    print_logo_digest: Vec<u8>,
}

impl RenderGate {
    /// At most this many at once, however many cores: the bound on memory
    /// ([`MAX_PNG_SIDE`]² bytes each) is what the gate is for.
    pub const MAX_SLOTS: usize = 4;

    pub fn new(slots: usize) -> Self {
        let capacity = slots.max(1);
        Self {
            slots: Arc::new(Semaphore::new(capacity)),
            capacity,
            print_logo: None,
            print_logo_digest: Vec::new(),
        }
    }

    /// The gate with the server's print logo.
    pub fn with_print_logo(mut self, logo: Option<Arc<ServerLogo>>) -> Self {
        use sha2::Digest as _;
        self.print_logo_digest = logo.as_ref().map_or_else(Vec::new, |l| {
            let mut hash = sha2::Sha256::new();
            hash.update(&l.png);
            hash.finalize().to_vec()
        });
        self.print_logo = logo;
        self
    }

    /// What identifies the print logo in an ETag (empty without one).
    pub fn print_logo_digest(&self) -> &[u8] {
        &self.print_logo_digest
    }

    /// The logo a print job's `logo=true` draws, if the server has one.
    pub fn print_logo(&self) -> Option<&Arc<image::RgbaImage>> {
        self.print_logo.as_ref().map(|l| &l.image)
    }

    /// How many renders may run at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many are running now (read by `/metrics`).
    pub fn in_flight(&self) -> usize {
        self.capacity.saturating_sub(self.slots.available_permits())
    }

    /// One slot per core, at most [`Self::MAX_SLOTS`].
    pub fn for_cores() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Self::new(cores.min(Self::MAX_SLOTS))
    }

    /// Renders within [`SizeLimit::Served`] on the blocking pool (a large
    /// PNG at maximum compression takes a while, and the listener must keep
    /// answering meanwhile), or says [`RenderError::Busy`] at once when
    /// every slot is taken.
    pub async fn render(
        &self,
        public_url: PublicUrl,
        key: LinkKey,
        spec: ImageSpec,
    ) -> Result<Vec<u8>, RenderError> {
        if spec.logo.is_some() && self.print_logo.is_none() {
            return Err(RenderError::NoLogo);
        }
        let logo = self.print_logo.clone();
        self.run(move || render_with(&public_url, &key, &spec, SizeLimit::Served, logo.as_deref()))
            .await
    }

    /// A print job's PDF ([`crate::print::render`]) on the same terms: a
    /// slot of the gate, the blocking pool, [`RenderError::Busy`] at once
    /// when every slot is taken; a job over the served budget
    /// ([`crate::print::budget::SERVED_MODULES`]) is refused before any
    /// code is built.
    pub async fn render_pdf(&self, job: crate::print::Job) -> Result<Vec<u8>, RenderError> {
        use crate::print::budget;
        self.run(move || {
            budget::check(&job, budget::SERVED_MODULES)?;
            crate::print::render(&job)
        })
        .await
    }

    async fn run<E: Into<RenderError>>(
        &self,
        work: impl FnOnce() -> Result<Vec<u8>, E> + Send + 'static,
    ) -> Result<Vec<u8>, RenderError> {
        let slot = Arc::clone(&self.slots)
            .try_acquire_owned()
            .map_err(|_| RenderError::Busy)?;
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            work().map_err(Into::into)
        })
        .await
        .map_err(|e| RenderError::Aborted(e.to_string()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_from_names_and_paths() {
        assert_eq!("png".parse(), Ok(ImageFormat::Png));
        assert_eq!("SVG".parse(), Ok(ImageFormat::Svg));
        assert!("pdf".parse::<ImageFormat>().is_err());
        assert!("".parse::<ImageFormat>().is_err());
        assert_eq!(
            ImageFormat::from_path(Path::new("out/TAG.PNG")),
            Some(ImageFormat::Png)
        );
        assert_eq!(
            ImageFormat::from_path(Path::new("tag.svg")),
            Some(ImageFormat::Svg)
        );
        for none in ["tag", "tag.txt", "svg", ".png.txt"] {
            assert_eq!(ImageFormat::from_path(Path::new(none)), None, "{none}");
        }
        for f in [ImageFormat::Png, ImageFormat::Svg] {
            assert_eq!(f.to_string().parse(), Ok(f));
        }
    }

    #[test]
    fn text_is_the_short_url() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let key = LinkKey::parse("docs/api").expect("valid");
        assert_eq!(tag_text(&url, &key, false), url.short_url("docs/api"));
        assert_eq!(tag_text(&url, &key, true), "HTTPS://0X1F.IE/docs/api");
    }

    #[test]
    fn each_format_has_its_signature() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let key = LinkKey::parse("H83if").expect("valid");
        let png = render(&url, &key, &ImageSpec::default(), SizeLimit::Served).expect("renders");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        let spec = ImageSpec {
            format: ImageFormat::Svg,
            ..ImageSpec::default()
        };
        let svg = render(&url, &key, &spec, SizeLimit::Served).expect("renders");
        assert!(svg.starts_with(b"<svg "));
    }

    /// Since keys are bounded (issue 30), every key has a code at every
    /// level; a key too long for any code was an error, never a panic.
    #[test]
    fn the_longest_key_has_a_code_at_every_level() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let long = vec!["k".repeat(64); 5].join("/");
        let key = LinkKey::parse(&long[..crate::values::link_key::MAX_KEY_LEN]).expect("valid key");
        assert!(LinkKey::parse(&long).is_err());
        for ec in EcLevel::ALL {
            let spec = ImageSpec {
                ec,
                format: ImageFormat::Svg,
                ..ImageSpec::default()
            };
            assert!(render(&url, &key, &spec, SizeLimit::Served).is_ok(), "{ec}");
        }
    }

    #[test]
    fn only_a_served_png_is_bounded() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let long = vec!["k".repeat(64); 5].join("/");
        let key = LinkKey::parse(&long[..crate::values::link_key::MAX_KEY_LEN]).expect("valid key");
        let spec = ImageSpec {
            ec: EcLevel::H,
            options: RenderOptions::new(64, 16).expect("valid"),
            ..ImageSpec::default()
        };
        assert!(matches!(
            render(&url, &key, &spec, SizeLimit::Served),
            Err(QrError::TooLarge {
                max: MAX_PNG_SIDE,
                ..
            })
        ));
        let svg = ImageSpec {
            format: ImageFormat::Svg,
            ..spec
        };
        assert!(render(&url, &key, &svg, SizeLimit::Served).is_ok());
    }

    #[tokio::test]
    async fn a_full_gate_answers_busy_at_once() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let key = LinkKey::parse("H83if").expect("valid");
        let gate = RenderGate::new(1);
        let held = Arc::clone(&gate.slots).try_acquire_owned().expect("free");
        let busy = gate.render(url.clone(), key.clone(), ImageSpec::default());
        assert!(matches!(busy.await, Err(RenderError::Busy)));
        drop(held);
        let png = gate.render(url, key, ImageSpec::default()).await;
        assert!(png.expect("renders").starts_with(b"\x89PNG"));
    }
}
