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

use crate::print::answer::{pdf_response, refused};
use crate::print::image_query::spec_from_query;
use crate::print::tag_image::{ImageFormat, RenderGate};
use crate::print::{PrintOptions, Spelling};
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
    /// Issue 36: every domain; `?domain=HOST` renders that domain's tag
    /// (its links, its public URL), the fields above being the default's.
    pub domains: Option<Arc<crate::console::domains::Domains>>,
}

/// Issue 36: the domain the query names (`?domain=HOST`); `None` when it
/// names none (the default's fields above); an unknown one is the 400's
/// line naming it.
fn domain_of(
    req: &HttpRequest,
    state: &QrState,
) -> Result<Option<Arc<crate::console::domains::Domain>>, String> {
    let asked = form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(name, _)| name == "domain")
        .map(|(_, value)| value.into_owned());
    match (&state.domains, asked) {
        (_, None) => Ok(None),
        (Some(domains), Some(asked)) => domains
            .get(Some(&asked))
            .map(|d| Some(Arc::clone(d)))
            .map_err(|e| format!("domain: {e}\n")),
        (None, Some(asked)) => Err(format!("domain: no domain {asked} here\n")),
    }
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
    let domain = match domain_of(&req, &state) {
        Ok(domain) => domain,
        Err(line) => return plain(StatusCode::BAD_REQUEST, &line),
    };
    let (snapshot, store, live_url) = match &domain {
        Some(d) => (&d.snapshot, &d.writes, &d.public_url),
        None => (&state.snapshot, &state.store, &state.public_url),
    };
    if !snapshot.is_loaded() {
        return super::public::links_loading();
    }
    if snapshot.load().get(key.as_str()).is_none() {
        return not_found();
    }
    // One value for the whole answer, its tag included, even if the
    // recorded one changes meanwhile.
    let public_url = live_url.get();
    let format = match wanted {
        Wanted::Image(format) => format,
        Wanted::Pdf => return pdf(&req, &state, store.as_ref(), &public_url, key).await,
    };
    let spec = match spec_from_query(
        req.query_string(),
        format,
        state.uppercase_prefix,
        &["domain"],
    ) {
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
    store: &dyn LinkStore,
    public_url: &PublicUrl,
    key: LinkKey,
) -> HttpResponse {
    let options = match PrintOptions::from_query(req.query_string(), &["domain"]) {
        Ok(options) => options,
        Err(bad) => return plain(StatusCode::BAD_REQUEST, &format!("{bad}\n")),
    };
    // Notes change without a restart, so a PDF that prints them is read
    // from the store and its tag covers them; the others depend only on
    // what an image depends on.
    let notes = if options.needs_notes() {
        match store.get(&key).await {
            Ok(Some(stored)) => options.caption_text(&stored.doc),
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
}
