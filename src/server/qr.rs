//! `GET /qr/{key}.png`, `/qr/{key}.svg` and `/qr/{key}.pdf` (a print-ready
//! PDF, [`crate::print`]) on the admin listener.
//!
//! Links are looked up with [`LinkTable::get`](crate::snapshot::LinkTable::get),
//! not the redirect path's live lookup, so tags can be printed before they go
//! live. Nothing here is a scan, so nothing is logged per request.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};

use crate::print::tag_image::{ImageFormat, ImageSpec, RenderError, RenderGate};
use crate::print::{PrintError, PrintOptions, Spelling};
use crate::qr::brand::{Colour, Palette};
use crate::qr::{EcLevel, QrError, RenderOptions};
use crate::snapshot::Snapshot;
use crate::store::LinkStore;
use crate::values::link_key::LinkKey;
use crate::values::public_url::PublicUrl;

pub struct QrState {
    pub snapshot: Arc<Snapshot>,
    /// Read only for a PDF captioned with the link's notes, which the
    /// snapshot does not keep.
    pub store: Arc<dyn LinkStore>,
    /// The current public URL ([`LiveUrl`]), read once per answer.
    pub public_url: crate::store::live_url::LiveUrl,
    pub uppercase_prefix: bool,
    pub renders: crate::metrics::QrRenders,
    /// Shared with the console's downloads.
    pub gate: RenderGate,
}

const PREFIX: &str = "/qr/";

/// An image or PDF is not kept past its link: a cache asks again on every
/// use ([`super::etag`]), so a deleted link's tag is a 404 at once and an
/// unchanged one a `304` that renders nothing.
const CACHEABLE: HeaderValue = super::etag::NO_CACHE;
/// Errors are not cached: a key unknown now may be created a second later.
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

/// The resource, carrying its own state so the admin app gains one line.
pub fn service(state: web::Data<QrState>) -> actix_web::Resource {
    web::resource("/qr/{tail:.*}")
        .app_data(state)
        .route(web::get().to(image))
}

async fn image(req: HttpRequest, state: web::Data<QrState>) -> HttpResponse {
    // The raw path, as on the public listener: keys need no percent-encoding,
    // so an encoded one is not a key.
    let (key, wanted) = match req.path().strip_prefix(PREFIX).map(split_extension) {
        Some(Ok(found)) => found,
        Some(Err(BadTail::Format(ext))) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("unsupported format {ext:?}: use .png, .svg or .pdf\n"),
            );
        }
        Some(Err(BadTail::NotAKey)) | None => return not_found(),
    };
    if !state.snapshot.is_loaded() {
        return super::public::links_loading();
    }
    if state.snapshot.load().get(key.as_str()).is_none() {
        return not_found();
    }
    // One value for the whole answer, its tag included, even if the
    // recorded one changes meanwhile.
    let public_url = state.public_url.get();
    let format = match wanted {
        Wanted::Image(format) => format,
        Wanted::Pdf => return pdf(&req, &state, &public_url, key).await,
    };
    let spec = match spec_from_query(req.query_string(), format, state.uppercase_prefix, &[]) {
        Ok(spec) => spec,
        Err(bad) => return plain(StatusCode::BAD_REQUEST, &format!("{bad}\n")),
    };
    let tag = answer_tag(&req, state.as_ref(), &public_url, None);
    if super::etag::matches(&req, &tag) {
        return super::etag::not_modified(tag);
    }
    let rendered = state.gate.render(public_url, key, spec).await;
    match rendered {
        Ok(body) => {
            state.renders.rendered(format);
            HttpResponse::Ok()
                .content_type(format.content_type())
                .insert_header((header::CACHE_CONTROL, CACHEABLE))
                .insert_header((header::ETAG, tag))
                .body(body)
        }
        Err(e) => refused(&e),
    }
}

/// `/qr/KEY.pdf?template=L7163&skip=3...`: the PDF `qrtag print KEY
/// --template L7163 --skip 3` writes, the options read by
/// [`PrintOptions::from_query`].
async fn pdf(
    req: &HttpRequest,
    state: &QrState,
    public_url: &PublicUrl,
    key: LinkKey,
) -> HttpResponse {
    let options = match PrintOptions::from_query(req.query_string(), &[]) {
        Ok(options) => options,
        Err(bad) => return plain(StatusCode::BAD_REQUEST, &format!("{bad}\n")),
    };
    // Notes change without a restart, so a PDF that prints them is read
    // from the store and its tag covers them; the others depend only on
    // what an image depends on.
    let notes = if options.needs_notes() {
        match state.store.get(&key).await {
            Ok(Some(stored)) => crate::link::notes(&stored.doc).map(|n| n.into_owned()),
            Ok(None) => return not_found(),
            Err(e) => {
                tracing::warn!(error = %e, "reading a link's notes for its PDF");
                return plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the link store did not answer; try again\n",
                );
            }
        }
    } else {
        None
    };
    let etag = answer_tag(req, state, public_url, notes.as_deref());
    if super::etag::matches(req, &etag) {
        return super::etag::not_modified(etag);
    }
    let tag = options.tag(public_url, &key, state.uppercase_prefix, notes.as_deref());
    let job = match options.job(vec![tag], Spelling::Param, state.gate.print_logo()) {
        Ok(job) => job,
        Err(bad) => return plain(StatusCode::BAD_REQUEST, &format!("{bad}\n")),
    };
    match state.gate.render_pdf(job).await {
        Ok(body) => {
            state.renders.rendered_pdf();
            let mut res = pdf_response(body, CACHEABLE);
            res.headers_mut().insert(header::ETAG, etag);
            res
        }
        Err(e) => refused(&e),
    }
}

/// The tag of a `/qr/` answer: what it is rendered from besides the build
/// (the public URL, the uppercase setting, the path and query, a PDF's
/// notes). Whether the link still exists is asked before, on every request.
fn answer_tag(
    req: &HttpRequest,
    state: &QrState,
    public_url: &PublicUrl,
    notes: Option<&str>,
) -> HeaderValue {
    let url = public_url.to_string();
    super::etag::of(&[
        url.as_bytes(),
        &[u8::from(state.uppercase_prefix)],
        req.path().as_bytes(),
        req.query_string().as_bytes(),
        notes.map_or(&[][..], str::as_bytes),
        &[u8::from(notes.is_some())],
        state.gate.print_logo_digest(),
    ])
}

/// A PDF as the admin listener and the REST API answer it.
pub fn pdf_response(body: Vec<u8>, cache: HeaderValue) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/pdf")
        .insert_header((header::CACHE_CONTROL, cache))
        .body(body)
}

/// The answer to a render that gave no image, for `/qr/` and the console's
/// downloads alike: a busy gate is 503 with `Retry-After`, an image over the
/// bound a 400 naming it, a key no QR code holds a 422.
pub fn refused(e: &RenderError) -> HttpResponse {
    let (status, message) = refusal(e);
    let mut res = plain(status, &format!("{message}\n"));
    if status == StatusCode::SERVICE_UNAVAILABLE {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    res
}

/// The status and the one line for a render that gave nothing: what
/// [`refused`] answers in plain text and the REST API as a problem.
pub fn refusal(e: &RenderError) -> (StatusCode, String) {
    match e {
        RenderError::Busy => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        RenderError::Qr(QrError::TooLarge { .. }) => {
            (StatusCode::BAD_REQUEST, format!("bad scale: {e}"))
        }
        RenderError::Qr(QrError::DataTooLong { .. })
        | RenderError::Print(PrintError::Qr(QrError::DataTooLong { .. })) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "this key is too long for a QR code".to_owned(),
        ),
        RenderError::NoLogo => (StatusCode::BAD_REQUEST, e.to_string()),
        // A logo the code does not read back with: the request's to change.
        RenderError::Qr(QrError::Unreadable(why)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("the branded code does not read back: {why}")
                .replace("--logo-size", "logo-size"),
        ),
        RenderError::Print(p) if p.is_usage() => {
            (StatusCode::BAD_REQUEST, p.message(Spelling::Param))
        }
        // A logo the code does not read back with: the request's to change.
        RenderError::Print(PrintError::Brand(b)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            b.to_string().replace("--logo-size", "logo-size"),
        ),
        RenderError::Qr(_) | RenderError::Aborted(_) | RenderError::Print(_) => {
            tracing::error!(error = %e, "rendering failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "rendering failed".to_owned(),
            )
        }
    }
}

/// Why a `/qr/` path names no image.
#[derive(Debug, PartialEq, Eq)]
enum BadTail {
    /// No extension, or not a key before it: no such link.
    NotAKey,
    /// An extension other than the two served, named back to the caller.
    Format(String),
}

/// What a `/qr/` path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    Image(ImageFormat),
    Pdf,
}

/// `docs/api.png` → (`docs/api`, PNG). Keys cannot contain a dot, so the
/// last one always starts the extension.
fn split_extension(tail: &str) -> Result<(LinkKey, Wanted), BadTail> {
    let (key, ext) = tail.rsplit_once('.').ok_or(BadTail::NotAKey)?;
    // Exactly as written in the docs: `/qr/K.PNG` is not a second spelling.
    let format = match ext {
        "png" => Wanted::Image(ImageFormat::Png),
        "svg" => Wanted::Image(ImageFormat::Svg),
        "pdf" => Wanted::Pdf,
        other => return Err(BadTail::Format(other.to_owned())),
    };
    let key = LinkKey::parse(key).map_err(|_| BadTail::NotAKey)?;
    Ok((key, format))
}

/// A query parameter that was refused, named so the caller can fix it.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadParam {
    #[error("bad {0}: given more than once")]
    Repeated(&'static str),
    #[error("bad {0}: {1:?} is not a whole number")]
    NotANumber(&'static str, String),
    #[error("bad {0}: {1}")]
    Invalid(&'static str, QrError),
    /// A colour that is not CSS hex, or a pair a camera cannot read; kept
    /// as text so the error stays comparable.
    #[error("bad {0}: {1}")]
    Colours(&'static str, String),
    #[error(
        "unknown parameter {0:?}: use scale, margin, ec, dark, light, logo, logo-size (and v, ignored, to bust caches)"
    )]
    Unknown(String),
}

/// Reads `scale`, `margin` and `ec`, and ignores `v` (a cache buster) and
/// the names in `also_ignored` (parameters the caller reads itself, such as
/// the console's `key`); anything else is refused by name, so a typo
/// (`scal=2`) is not silently a default-sized image.
pub fn spec_from_query(
    query: &str,
    format: ImageFormat,
    uppercase_prefix: bool,
    also_ignored: &[&str],
) -> Result<ImageSpec, BadParam> {
    let (mut scale, mut margin, mut ec) = (None, None, None);
    let (mut dark, mut light) = (None, None);
    let (mut logo, mut logo_size) = (None, None);
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        let (name, slot) = match &*name {
            "scale" => ("scale", &mut scale),
            "margin" => ("margin", &mut margin),
            "ec" => ("ec", &mut ec),
            "dark" => ("dark", &mut dark),
            "light" => ("light", &mut light),
            "logo" => ("logo", &mut logo),
            "logo-size" => ("logo-size", &mut logo_size),
            "v" => continue,
            other if also_ignored.contains(&other) => continue,
            other => return Err(BadParam::Unknown(other.to_owned())),
        };
        if slot.replace(value.into_owned()).is_some() {
            return Err(BadParam::Repeated(name));
        }
    }
    let number = |name: &'static str, value: Option<String>, default: u32| match value {
        None => Ok(default),
        Some(v) => v.parse::<u32>().map_err(|_| BadParam::NotANumber(name, v)),
    };
    let scale = number("scale", scale, RenderOptions::DEFAULT_SCALE)?;
    let margin = number("margin", margin, RenderOptions::DEFAULT_MARGIN)?;
    let options = RenderOptions::new(scale, margin).map_err(|e| match e {
        QrError::MarginOutOfRange(_) => BadParam::Invalid("margin", e),
        _ => BadParam::Invalid("scale", e),
    })?;
    let ec = match ec {
        None => EcLevel::default(),
        Some(v) => v.parse().map_err(|e| BadParam::Invalid("ec", e))?,
    };
    let logo = match logo.as_deref() {
        None | Some("false") => None,
        Some("" | "true" | "on") => Some(match &logo_size {
            None => crate::print::request::DEFAULT_LOGO_SIZE,
            Some(v) => crate::print::request::logo_size(v)
                .map_err(|e| BadParam::Colours("logo-size", e))?,
        }),
        Some(other) => {
            return Err(BadParam::Colours(
                "logo",
                format!("{other:?}: expected true or false"),
            ));
        }
    };
    if logo.is_none() && logo_size.is_some() {
        return Err(BadParam::Colours(
            "logo-size",
            "the size of a logo: give logo=true".into(),
        ));
    }
    Ok(ImageSpec {
        format,
        ec,
        options,
        uppercase_prefix,
        palette: palette_from(dark, light)?,
        logo,
    })
}

/// `dark` and `light` as CSS hex (`%23` for the `#`, or none), checked for
/// contrast; neither given is the plain black on white. Inverted pairs are
/// refused here: the command line's `--allow-inverted` has no parameter.
fn palette_from(dark: Option<String>, light: Option<String>) -> Result<Option<Palette>, BadParam> {
    if dark.is_none() && light.is_none() {
        return Ok(None);
    }
    let colour = |name: &'static str, value: Option<String>, default: Colour| match value {
        None => Ok(default),
        Some(v) => v
            .parse::<Colour>()
            .map_err(|e| BadParam::Colours(name, e.to_string())),
    };
    let dark = colour("dark", dark, Colour::BLACK)?;
    let light = colour("light", light, Colour::WHITE)?;
    Palette::new(dark, light, false)
        .map(Some)
        .map_err(|e| BadParam::Colours("dark", e.to_string()))
}

fn plain(status: StatusCode, body: &str) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, NO_STORE))
        .content_type("text/plain; charset=utf-8")
        .body(body.to_owned())
}

fn not_found() -> HttpResponse {
    plain(StatusCode::NOT_FOUND, "no such link\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_picks_the_format_and_the_rest_is_the_key() {
        let ok = |tail: &str| split_extension(tail).map(|(k, f)| (k.to_string(), f));
        assert_eq!(
            ok("H83if.png"),
            Ok(("H83if".into(), Wanted::Image(ImageFormat::Png)))
        );
        assert_eq!(
            ok("docs/api.svg"),
            Ok(("docs/api".into(), Wanted::Image(ImageFormat::Svg)))
        );
        assert_eq!(ok("docs/api.pdf"), Ok(("docs/api".into(), Wanted::Pdf)));
        for bad in [
            "H83if",
            ".png",
            "a.b.png",
            "a//b.png",
            "%41.png",
            "docs/.png",
        ] {
            assert_eq!(ok(bad), Err(BadTail::NotAKey), "{bad:?}");
        }
        // Another format is named, whether the key exists or not.
        for (bad, ext) in [("H83if.", ""), ("H83if.PDF", "PDF"), ("a.b.gif", "gif")] {
            assert_eq!(ok(bad), Err(BadTail::Format(ext.into())), "{bad:?}");
        }
    }

    #[test]
    fn query_defaults_and_overrides() {
        let spec = spec_from_query("", ImageFormat::Svg, true, &[]).expect("defaults");
        assert_eq!(
            spec,
            ImageSpec {
                format: ImageFormat::Svg,
                ec: EcLevel::L,
                options: RenderOptions::default(),
                uppercase_prefix: true,
                palette: None,
                logo: None,
            }
        );
        let logo =
            spec_from_query("logo=true&logo-size=30", ImageFormat::Png, false, &[]).expect("valid");
        assert_eq!(logo.logo, Some(30));
        for bad in ["logo=maybe", "logo-size=30", "logo&logo-size=4"] {
            assert!(
                spec_from_query(bad, ImageFormat::Png, false, &[]).is_err(),
                "{bad}"
            );
        }
        let spec = spec_from_query("ec=h&scale=2&margin=0&v=3", ImageFormat::Png, false, &[])
            .expect("valid");
        assert_eq!(spec.ec, EcLevel::H);
        assert_eq!(spec.options, RenderOptions::new(2, 0).expect("valid"));
        let spec = spec_from_query("dark=%231e3a8a", ImageFormat::Png, false, &[])
            .expect("readable colours");
        let navy = "#1e3a8a".parse().expect("a colour");
        let want = Palette::new(navy, Colour::WHITE, false).expect("readable");
        assert_eq!(spec.palette, Some(want));
        let spec = spec_from_query("light=fefce8", ImageFormat::Png, false, &[]).expect("valid");
        assert_eq!(spec.palette.map(|p| p.dark()), Some(Colour::BLACK));
    }

    #[test]
    fn every_refusal_names_its_parameter() {
        assert_eq!(
            spec_from_query("foo=1", ImageFormat::Svg, false, &[]),
            Err(BadParam::Unknown("foo".into()))
        );
        for (query, name) in [
            ("scale=1", "scale"),
            ("scale=65", "scale"),
            ("scale=", "scale"),
            ("scale=8px", "scale"),
            ("scale=-2", "scale"),
            ("scale=99999999999", "scale"),
            ("margin=17", "margin"),
            ("margin=x", "margin"),
            ("ec=X", "ec"),
            ("ec=", "ec"),
            ("ec=LL", "ec"),
            ("ec=L&ec=L", "ec"),
            ("scale=4&margin=1&scale=4", "scale"),
            ("dark=navy", "dark"),
            ("light=%23ffff", "light"),
            ("dark=%23999", "dark"),
            ("dark=%23fff&light=%23000", "dark"),
            ("dark=%23000&dark=%23000", "dark"),
        ] {
            let err = spec_from_query(query, ImageFormat::Png, false, &[]).expect_err(query);
            assert!(
                err.to_string().starts_with(&format!("bad {name}: ")),
                "{query}: {err}"
            );
        }
    }
}
