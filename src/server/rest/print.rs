//! Print-ready PDFs over the API: `GET /api/v1/links/{key}/print.pdf` for
//! one link and `POST /api/v1/print.pdf` for a print run's keys. The
//! options are the query string the admin listener's `/qr/KEY.pdf` takes
//! ([`PrintOptions::from_query`]), rendered through the same gate, so the
//! bytes are `qrtag print`'s for the same options.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use utoipa::ToSchema;

use super::problem::{self, Kind};
use super::{MAX_BULK, read};
use super::{RestState, admit, json_body};
use crate::print::tag_image::RenderError;
use crate::print::{PrintOptions, Spelling, Tag};
use crate::values::link_key::LinkKey;

/// The links of a print run, in the order they go on the sheets.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PrintKeys {
    /// 1 to 1000 keys of existing links (inactive ones too).
    pub keys: Vec<String>,
}

#[utoipa::path(
    get, path = "/api/v1/links/{key}/print.pdf", tag = "qr", operation_id = "print_link_pdf",
    params(
        ("key" = String, Path, description = "The link's key", example = "spring"),
        ("template" = Option<String>, Query, description = "Label stock: a built-in name (`qrtag print --list-templates`) or `custom:paper=A4,label=40x40mm,cols=4,rows=6`; this or `poster`", example = "L7163"),
        ("poster" = Option<String>, Query, description = "One code a page: A0 to A6, Letter, Legal, Tabloid or WxH (`500x700mm`)"),
        ("skip" = Option<u32>, Query, description = "Labels already used on the first sheet"),
        ("caption" = Option<String>, Query, description = "`url` (the default), `key`, `notes`, `title` or `none`"),
        ("font-size" = Option<f64>, Query, description = "The caption's size in points, 2 to 500"),
        ("code-size" = Option<String>, Query, description = "The code's side without its quiet zone (`25mm`, `1in`); the largest that fits if left out"),
        ("outline" = Option<bool>, Query, description = "Draw every label's border (an alignment page)"),
        ("bleed" = Option<String>, Query, description = "Bleed around a poster (`3mm`)"),
        ("crop-marks" = Option<bool>, Query, description = "Crop marks outside a poster's bleed"),
        ("ec" = Option<String>, Query, description = "Error correction: L, M, Q or H"),
        ("dark" = Option<String>, Query, description = "The codes' dark colour, CSS hex (`#1e3a8a`); at least 4:1 contrast with `light`"),
        ("light" = Option<String>, Query, description = "The codes' light colour and quiet zone, CSS hex"),
        ("logo" = Option<bool>, Query, description = "The server's logo (`serve --print-logo`) in each code's centre, error correction raised; each code is decoded with it first (422 if one does not read back)"),
        ("logo-size" = Option<u32>, Query, description = "The logo's square as a percentage of the code's side, 5 to 60 (default 20)"),
    ),
    responses(
        (status = 200, description = "The PDF `qrtag print` writes for the same options", content_type = "application/pdf", body = Vec<u8>),
        (status = 400, body = problem::Problem, content_type = "application/problem+json"),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 404, body = problem::Problem, content_type = "application/problem+json"),
        (status = 422, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
#[allow(dead_code)]
fn print_pdf_doc() {}

/// The query's options. An empty value is refused, as the document
/// declares: the console's forms send empty fields, which
/// [`PrintOptions::from_query`] reads as left out, but an API client that
/// sends `caption=` has a bug the answer should name.
fn options(query: &str) -> Result<PrintOptions, HttpResponse> {
    if let Some((name, _)) =
        form_urlencoded::parse(query.as_bytes()).find(|(_, value)| value.trim().is_empty())
    {
        return Err(problem::respond(
            Kind::BadRequest,
            format!("{name}: give a value, or leave the parameter out"),
        ));
    }
    PrintOptions::from_query(query, &["domain"])
        .map_err(|bad| problem::respond(Kind::BadRequest, bad))
}

/// One link's PDF (the caller has been admitted and the path parsed).
pub(super) async fn of_link(req: &HttpRequest, state: &RestState, key: LinkKey) -> HttpResponse {
    let options = match options(req.query_string()) {
        Ok(options) => options,
        Err(res) => return res,
    };
    let tag = match tag(state, &options, key).await {
        Ok(tag) => tag,
        Err(res) => return res,
    };
    render(state, &options, vec![tag]).await
}

#[utoipa::path(
    post, path = "/api/v1/print.pdf", tag = "qr", operation_id = "print_run_pdf",
    params(
        ("template" = Option<String>, Query, description = "As for one link's print.pdf", example = "L7163"),
        ("poster" = Option<String>, Query),
        ("skip" = Option<u32>, Query),
        ("caption" = Option<String>, Query),
        ("font-size" = Option<f64>, Query),
        ("code-size" = Option<String>, Query),
        ("outline" = Option<bool>, Query),
        ("bleed" = Option<String>, Query),
        ("crop-marks" = Option<bool>, Query),
        ("ec" = Option<String>, Query),
        ("dark" = Option<String>, Query),
        ("light" = Option<String>, Query),
        ("logo" = Option<bool>, Query),
        ("logo-size" = Option<u32>, Query),
    ),
    request_body = PrintKeys,
    responses(
        (status = 200, description = "Every link's tag in one PDF, in the order given: `qrtag print KEY...`'s bytes", content_type = "application/pdf", body = Vec<u8>),
        (status = 400, body = problem::Problem, content_type = "application/problem+json"),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 404, body = problem::Problem, content_type = "application/problem+json"),
        (status = 413, body = problem::Problem, content_type = "application/problem+json"),
        (status = 422, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn sheet(
    req: HttpRequest,
    payload: web::Payload,
    state: super::domain::InDomain,
) -> HttpResponse {
    if let Err(res) = admit(&req, &state, super::needs::READ).await {
        return res;
    }
    let options = match options(req.query_string()) {
        Ok(options) => options,
        Err(res) => return res,
    };
    let body: PrintKeys = match json_body(req.headers(), payload).await {
        Ok(body) => body,
        Err(res) => return res,
    };
    if body.keys.is_empty() {
        return problem::respond(Kind::BadRequest, "keys: give at least one key");
    }
    if body.keys.len() > MAX_BULK {
        return problem::respond(
            Kind::PayloadTooLarge,
            format!("{} keys: at most {MAX_BULK} in one PDF", body.keys.len()),
        );
    }
    // Every key checked before any is read.
    let mut keys = Vec::with_capacity(body.keys.len());
    for k in &body.keys {
        match LinkKey::parse(k) {
            Ok(key) => keys.push(key),
            Err(e) => return problem::respond(Kind::BadRequest, format!("keys: {e}")),
        }
    }
    let mut tags = Vec::with_capacity(keys.len());
    for key in keys {
        match tag(&state, &options, key).await {
            Ok(tag) => tags.push(tag),
            Err(res) => return res,
        }
    }
    render(&state, &options, tags).await
}

/// The link read from the store (404 for none or a deleted one) and made
/// into its tag.
async fn tag(state: &RestState, options: &PrintOptions, key: LinkKey) -> Result<Tag, HttpResponse> {
    let view = read(state, &key).await?;
    Ok(options.tag(
        &state.public_url.load(),
        &key,
        state.uppercase_prefix,
        match options.caption {
            crate::print::request::CaptionKind::Title => view.title.as_deref(),
            _ => view.notes.as_deref(),
        },
    ))
}

async fn render(state: &RestState, options: &PrintOptions, tags: Vec<Tag>) -> HttpResponse {
    let job = match options.job(tags, Spelling::Param, state.gate.print_logo()) {
        Ok(job) => job,
        Err(bad) => return problem::respond(Kind::BadRequest, bad),
    };
    match state.gate.render_pdf(job).await {
        Ok(body) => crate::print::answer::pdf_response(body, HeaderValue::from_static("no-store")),
        Err(e) => refused(&e),
    }
}

/// A render that gave nothing, as a problem: the admin listener's status
/// and line ([`crate::print::answer::refusal`]).
pub fn refused(e: &RenderError) -> HttpResponse {
    let (status, message) = crate::print::answer::refusal(e);
    match status {
        StatusCode::BAD_REQUEST => problem::respond(Kind::BadRequest, message),
        StatusCode::UNPROCESSABLE_ENTITY => problem::respond(Kind::Unprintable, message),
        StatusCode::SERVICE_UNAVAILABLE => {
            let mut res = problem::respond(Kind::Unavailable, message);
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            res
        }
        _ => crate::print::answer::refused(e),
    }
}
