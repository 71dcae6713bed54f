//! `/api/v1/links`: create (one or a bulk of up to [`super::MAX_BULK`]), get,
//! list, edit, and the QR images of a link. Requests are parsed into the
//! same types the CLI and the console use (`Destination`, `LinkKey`,
//! `Notes`, `expiry`), and written through [`crate::links`].

use std::sync::Arc;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::problem::{self, Kind};
use super::{MAX_BULK, RestState, admit, json_body, read};
use crate::console::list::{self, At, By, Cursor, Sort, StateFilter};
use crate::link::{self, Document, Link, Notes, Title};
use crate::link::{Author, Via};
use crate::links::{self as write, LinkError};
use crate::print::tag_image::ImageFormat;
use crate::store::StoreError;
use crate::store::couch::cluster::WriteWatch;
use crate::values::destination::Destination;
use crate::values::expiry;
use crate::values::link_key::LinkKey;

/// The most rows a list page holds.
pub const MAX_PAGE: usize = 1000;
const DEFAULT_PAGE: usize = 100;

/// A new link. Every field but `url` may be left out.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewLink {
    /// An absolute http(s) URL or a path starting with a single `/`.
    pub url: String,
    /// A chosen key or slug (`docs/api`); a random 5-character key if left out.
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub inactive: bool,
    /// An RFC 3339 time, a date (its end, UTC), a duration from now
    /// (`30d`), or `never`.
    #[serde(default)]
    pub expires: Option<String>,
    #[serde(default)]
    pub notes: Option<String>,
    /// Where scans go while the link is disabled or expired, instead of a
    /// 404: an absolute http(s) URL (issue 33). Left out or `""`: none.
    #[serde(default)]
    pub fallback_url: Option<String>,
    /// The name lists show beside the key: one line, at most 200
    /// characters (issue 33).
    #[serde(default)]
    pub title: Option<String>,
    /// The link's rules, in order (issue 34): the first whose conditions
    /// all hold for a scan gives its destination, otherwise `url` does.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub rules: Option<Value>,
}

/// Changes to a link; a field left out is left as it is.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkEdit {
    /// The new destination (a repoint).
    #[serde(default)]
    pub url: Option<String>,
    /// `true` disables the link, `false` enables it.
    #[serde(default)]
    pub inactive: Option<bool>,
    /// A new expiry as for a new link; `""` or `never` clears it.
    #[serde(default)]
    pub expires: Option<String>,
    /// New notes; `""` clears them.
    #[serde(default)]
    pub notes: Option<String>,
    /// A new fallback (an absolute http(s) URL); `""` clears it.
    #[serde(default)]
    pub fallback_url: Option<String>,
    /// A new title; `""` clears it.
    #[serde(default)]
    pub title: Option<String>,
    /// New rules, replacing all of them (issue 34); `[]` removes them.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub rules: Option<Value>,
}

/// A link as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct LinkView {
    pub key: String,
    /// The URL the tag encodes.
    pub short_url: String,
    pub url: String,
    pub inactive: bool,
    pub expires: Option<String>,
    pub notes: Option<String>,
    pub title: Option<String>,
    pub created_at: Option<String>,
    pub changed_at: Option<String>,
    /// Where scans go while the link is disabled or expired (issue 33).
    pub fallback_url: Option<String>,
    /// By which surface the link was made (issue 33): `cli`, `edit`
    /// (`qrtag edit`), `console`, `api` (this API), `didcomm` or `import`;
    /// null for a link written before qrtag recorded it.
    pub created_via: Option<String>,
    /// By which surface the link was last changed, as `created_via`.
    pub changed_via: Option<String>,
    /// The link's rules as stored, in order (issue 34); `[]` for none.
    #[schema(value_type = Vec<Object>)]
    pub rules: Vec<Value>,
    /// The revision, as in the `ETag` header: send it back in `If-Match`.
    pub rev: String,
    /// Only on a write's answer, and only when CouchDB stored the write
    /// with fewer copies than the database's n (HTTP 202: cluster nodes are
    /// down). The write is saved and served; it reaches the other nodes
    /// once they are back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Issue 37: clicks another shortener counted before the move, where
    /// it kept only a total (Bitly, Dub, Kutt): apart from the scans qrtag
    /// counts, and in none of them. Only on a link that has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported_clicks: Option<u64>,
}

/// Up to [`MAX_BULK`] new links.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkCreate {
    pub links: Vec<NewLink>,
}

/// What became of each link of a bulk create, in the order sent: a link
/// or a problem.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkResult {
    pub results: Vec<BulkItem>,
    /// As a link's `warning`: some of these writes were stored with fewer
    /// copies than the database's n (HTTP 202).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BulkItem {
    pub link: Option<LinkView>,
    pub problem: Option<problem::Problem>,
}

/// One page of links, each as a single read answers it.
#[derive(Debug, Serialize, ToSchema)]
pub struct LinkPage {
    pub links: Vec<LinkView>,
    /// Give as `after` for the next page; absent on the last.
    pub next: Option<String>,
    /// Give as `before` for the previous page; absent on the first.
    pub prev: Option<String>,
}

/// The console's filters and cursors.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Keys starting with this.
    pub prefix: Option<String>,
    /// Destinations containing this (instead of `prefix`: not both).
    pub url_contains: Option<String>,
    /// Keys, titles, notes or destinations containing this, ignoring case
    /// (instead of `prefix` and `url_contains`; issue 33).
    pub q: Option<String>,
    /// `all` (the default), `active`, `inactive`, `expiring` (an expiry
    /// still ahead) or `expired`.
    pub state: Option<String>,
    /// `key`, `created`, `created-oldest`, `changed`, `changed-oldest`.
    pub sort: Option<String>,
    /// A page's `next`: the page after it (not with `before`).
    pub after: Option<String>,
    /// A page's `prev`: the page before it (not with `after`).
    pub before: Option<String>,
    /// Rows per page, 1 to 1000 (100 if left out); a page holds fewer
    /// when their keys, URLs and notes pass 1 MiB, and `next` goes on from
    /// there.
    pub limit: Option<usize>,
    /// Issue 36: read by [`super::domain`].
    pub domain: Option<String>,
}

fn time(t: Option<chrono::DateTime<Utc>>) -> Option<String> {
    t.map(crate::values::timestamp::time_text)
}

pub(super) fn view(state: &RestState, key: &LinkKey, doc: &Document, rev: String) -> LinkView {
    let text = |f: &str| doc.get(f).and_then(Value::as_str).map(str::to_owned);
    LinkView {
        key: key.to_string(),
        short_url: crate::print::tag_image::tag_text(&state.public_url.load(), key, false),
        url: text("url").unwrap_or_default(),
        inactive: doc
            .get("inactive")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        expires: text("expires"),
        notes: link::notes(doc).map(|n| n.into_owned()),
        title: link::title(doc).map(str::to_owned),
        created_at: time(link::created_at(doc)),
        changed_at: time(link::changed_at(doc)),
        fallback_url: text(link::FALLBACK_URL),
        created_via: link::created_via(doc).map(|v| v.as_str().to_owned()),
        changed_via: link::changed_via(doc).map(|v| v.as_str().to_owned()),
        rules: super::rules::shown(doc),
        rev,
        warning: None,
        imported_clicks: link::imported::imported_clicks(doc),
    }
}

fn etag(rev: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{rev}\"")).unwrap_or(HeaderValue::from_static("\"\""))
}

pub(super) fn with_etag(mut res: HttpResponse, rev: &str) -> HttpResponse {
    res.headers_mut().insert(header::ETAG, etag(rev));
    res
}

/// The document checked and built from a [`NewLink`], with its key.
fn new_document(new: &NewLink) -> Result<(Document, Option<LinkKey>), (Kind, String)> {
    let url = Destination::parse(&new.url).map_err(|e| (Kind::InvalidUrl, format!("url: {e}")))?;
    let key = new
        .key
        .as_deref()
        .map(LinkKey::parse)
        .transpose()
        .map_err(|e| (Kind::BadRequest, format!("key: {e}")))?;
    let expires = match new.expires.as_deref() {
        Some(s) => expiry::parse_future(s, Utc::now(), chrono_tz::UTC)
            .map_err(|e| (Kind::BadRequest, format!("expires: {e}")))?,
        None => None,
    };
    let notes = Notes::parse(new.notes.as_deref().unwrap_or_default())
        .map_err(|e| (Kind::BadRequest, format!("notes: {e}")))?;
    let fallback = fallback(new.fallback_url.as_deref())?;
    let title = Title::parse(new.title.as_deref().unwrap_or_default())
        .map_err(|e| (Kind::BadRequest, format!("title: {e}")))?;
    let mut doc = Link::new_document(&url, new.inactive);
    link::set_expires(&mut doc, expires);
    link::set_notes(&mut doc, &notes);
    link::set_fallback_url(&mut doc, fallback.as_ref());
    link::set_title(&mut doc, &title);
    Ok((doc, key))
}

/// A `fallback_url` as sent: `""` (or none) is no fallback, anything else
/// an absolute http(s) URL or an `invalid-url` problem naming the field.
fn fallback(sent: Option<&str>) -> Result<Option<Destination>, (Kind, String)> {
    match sent.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => Destination::parse_absolute(s)
            .map(Some)
            .map_err(|e| (Kind::InvalidUrl, format!("fallback_url: {e}"))),
    }
}

// --- Issue 34: a link's rules ---

/// A new link's `rules`, checked as a PATCH's are (none when left out).
fn new_rules(
    state: &RestState,
    new: &NewLink,
) -> Result<crate::link::rules::Rules, (Kind, String)> {
    match &new.rules {
        None => Ok(Default::default()),
        Some(sent) => super::rules::parse(state, new.key.as_deref(), sent),
    }
}

// --- Issue 33: a fallback that would loop back to its own link ---

/// A `fallback_url` at the link's own short URL on the public origin:
/// while the link is dead its scans would be sent back to it, for ever.
fn refuse_looping_fallback(
    state: &RestState,
    key: &str,
    sent: Option<&str>,
) -> Result<(), (Kind, String)> {
    let Some(fallback) = fallback(sent)? else {
        return Ok(());
    };
    link::fallback_loop::check(&fallback, key, state.public_url.load().origin())
        .map_err(|e| (Kind::InvalidUrl, format!("fallback_url: {e}")))
}

/// A write's key checked (a write key, within its rate), then its body;
/// the key is the write's author (issue 35).
pub(super) async fn write_body<T: serde::de::DeserializeOwned>(
    req: &HttpRequest,
    payload: web::Payload,
    state: &RestState,
) -> Result<(T, Author), HttpResponse> {
    let caller = admit(req, state, super::needs::WRITE).await?;
    Ok((
        json_body(req.headers(), payload).await?,
        api_author(&caller),
    ))
}

// Issue 35 (history): a REST write's author.
/// The API key behind a write, and the user it belongs to.
pub(super) fn api_author(caller: &super::auth::Caller) -> Author {
    Author::new(
        Via::Api,
        crate::values::actor::Actor::ApiKey {
            key: caller.id.clone(),
            user: Some(caller.user.clone()),
        },
    )
}

/// Creates one link and reads it back (its revision is the `ETag`).
async fn create_one(
    state: &RestState,
    author: &Author,
    new: &NewLink,
) -> Result<LinkView, HttpResponse> {
    let (mut doc, key) = new_document(new).map_err(|(kind, msg)| problem::respond(kind, msg))?;
    if let Some(key) = &key {
        refuse_looping_fallback(state, key.as_str(), new.fallback_url.as_deref())
            .map_err(|(kind, msg)| problem::respond(kind, msg))?;
    }
    new_rules(state, new)
        .map_err(|(kind, msg)| problem::respond(kind, msg))?
        .write_to(&mut doc);
    let store = state.store.as_ref();
    let key = write::create_document(store, author, &doc, key.as_ref())
        .await
        .map_err(|e| problem::from_link_error(&e))?;
    read(state, &key).await
}

#[utoipa::path(
    post, path = "/api/v1/links", tag = "links",
    request_body = NewLink,
    responses(
        (status = 201, description = "Created", body = LinkView, headers(("ETag" = String), ("Location" = String))),
        (status = 400, body = problem::Problem, content_type = "application/problem+json"),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 403, body = problem::Problem, content_type = "application/problem+json"),
        (status = 409, body = problem::Problem, content_type = "application/problem+json"),
        (status = 413, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create(
    req: HttpRequest,
    payload: web::Payload,
    state: super::domain::InDomain,
) -> HttpResponse {
    let (new, author): (NewLink, _) = match write_body(&req, payload, &state).await {
        Ok(new) => new,
        Err(res) => return res,
    };
    let watch = WriteWatch::new(state.store.as_ref());
    match create_one(&state, &author, &new).await {
        Ok(mut view) => {
            view.warning = watch.warning();
            let location = format!("/api/v1/links/{}", view.key);
            let rev = view.rev.clone();
            with_etag(
                HttpResponse::Created()
                    .insert_header((header::LOCATION, location))
                    .json(view),
                &rev,
            )
        }
        Err(res) => res,
    }
}

#[utoipa::path(
    post, path = "/api/v1/links/bulk", tag = "links",
    request_body = BulkCreate,
    responses(
        (status = 200, description = "Each link's outcome, in order", body = BulkResult),
        (status = 400, body = problem::Problem, content_type = "application/problem+json"),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 403, body = problem::Problem, content_type = "application/problem+json"),
        (status = 413, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn bulk(
    req: HttpRequest,
    payload: web::Payload,
    state: super::domain::InDomain,
) -> HttpResponse {
    // Issue 35: the caller is kept, to name its key in the audit log.
    let caller = match admit(&req, &state, super::needs::WRITE).await {
        Ok(caller) => caller,
        Err(res) => return res,
    };
    let author = api_author(&caller);
    let bulk: BulkCreate = match json_body(req.headers(), payload).await {
        Ok(b) => b,
        Err(res) => return res,
    };
    if bulk.links.len() > MAX_BULK {
        return problem::respond(
            Kind::PayloadTooLarge,
            format!(
                "{} links: at most {MAX_BULK} in one request",
                bulk.links.len()
            ),
        );
    }
    let watch = WriteWatch::new(state.store.as_ref());
    let mut results = Vec::with_capacity(bulk.links.len());
    for new in &bulk.links {
        results.push(
            match new_document(new).and_then(|_| new_rules(&state, new)) {
                Err((kind, msg)) => BulkItem {
                    link: None,
                    problem: Some(problem::Problem::new(kind, msg)),
                },
                Ok(_) => match create_one(&state, &author, new).await {
                    Ok(view) => BulkItem {
                        link: Some(view),
                        problem: None,
                    },
                    Err(res) => {
                        // A store that is away fails the whole request.
                        if res.status().is_server_error() {
                            return res;
                        }
                        let kind = kind_of(res.status());
                        BulkItem {
                            link: None,
                            problem: Some(problem::Problem::new(kind, "the key is taken")),
                        }
                    }
                },
            },
        );
    }
    record_bulk(&state, &caller, &results).await;
    HttpResponse::Ok().json(BulkResult {
        results,
        warning: watch.warning(),
    })
}

/// Issue 35: a bulk create that made links is an audit entry naming them.
async fn record_bulk(state: &RestState, caller: &super::auth::Caller, results: &[BulkItem]) {
    let made: Vec<&str> = results
        .iter()
        .filter_map(|r| r.link.as_ref().map(|l| l.key.as_str()))
        .collect();
    if made.is_empty() {
        return;
    }
    let actor = crate::values::actor::Actor::ApiKey {
        key: caller.id.clone(),
        user: None,
    };
    let event = crate::values::audit::Event::bulk("create", &made);
    let surface = crate::values::audit::Surface::Api;
    crate::store::audit::record(state.keys.as_ref(), actor, surface, event).await;
}

fn kind_of(status: actix_web::http::StatusCode) -> Kind {
    match status.as_u16() {
        404 => Kind::NotFound,
        409 => Kind::KeyTaken,
        422 => Kind::RefusedDestination,
        _ => Kind::BadRequest,
    }
}

/// `links/KEY`, `links/KEY/qr.png`, `links/KEY/qr.svg`,
/// `links/KEY/print.pdf` or `links/KEY/scans`.
enum Target {
    Link(LinkKey),
    Qr(LinkKey, ImageFormat),
    Print(LinkKey),
    Scans(LinkKey),
}

fn target(tail: &str) -> Option<Target> {
    for (suffix, format) in [("/qr.png", ImageFormat::Png), ("/qr.svg", ImageFormat::Svg)] {
        if let Some(key) = tail.strip_suffix(suffix) {
            return LinkKey::parse(key).ok().map(|k| Target::Qr(k, format));
        }
    }
    if let Some(key) = tail.strip_suffix("/print.pdf") {
        return LinkKey::parse(key).ok().map(Target::Print);
    }
    if let Some(key) = tail.strip_suffix("/scans") {
        return LinkKey::parse(key).ok().map(Target::Scans);
    }
    LinkKey::parse(tail).ok().map(Target::Link)
}

/// The methods a `links/{tail}` path takes, as the document declares
/// them: a link's `GET, PATCH`, an image's, PDF's or scans' `GET` alone.
/// A tail that is no key is a link's path (its `GET` is a 404).
pub fn tail_methods(tail: &str) -> &'static str {
    match target(tail) {
        Some(Target::Link(_)) | None => "GET, PATCH",
        Some(Target::Qr(..) | Target::Print(_) | Target::Scans(_)) => "GET",
    }
}

/// The path below `links/`, a `/` of the key written `%2F` or not: the
/// document's `{key}` holds a key's `/`, which a client filling in the
/// path template percent-encodes (RFC 6570).
pub fn tail(req: &HttpRequest) -> String {
    req.match_info()
        .get("tail")
        .unwrap_or_default()
        .replace("%2F", "/")
        .replace("%2f", "/")
}

fn tail_target(req: &HttpRequest) -> Result<Target, HttpResponse> {
    let tail = tail(req);
    target(&tail).ok_or_else(|| problem::respond(Kind::NotFound, format!("no link {tail:?}")))
}

#[utoipa::path(
    get, path = "/api/v1/links/{key}", tag = "links",
    params(("key" = String, Path, description = "The link's key", example = "spring")),
    responses(
        (status = 200, body = LinkView, headers(("ETag" = String))),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 404, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn get(req: HttpRequest, state: super::domain::InDomain) -> HttpResponse {
    if let Err(res) = admit(&req, &state, super::needs::READ).await {
        return res;
    }
    match tail_target(&req) {
        Ok(Target::Link(key)) => match read(&state, &key).await {
            Ok(view) => {
                let rev = view.rev.clone();
                with_etag(HttpResponse::Ok().json(view), &rev)
            }
            Err(res) => res,
        },
        Ok(Target::Qr(key, format)) => qr(&req, &state, key, format).await,
        Ok(Target::Print(key)) => super::print::of_link(&req, &state, key).await,
        Ok(Target::Scans(key)) => super::scans::of_link(&req, &state, key).await,
        Err(res) => res,
    }
}

#[utoipa::path(
    get, path = "/api/v1/links/{key}/qr.png", tag = "qr",
    params(
        ("key" = String, Path, description = "The link's key", example = "spring"),
        ("scale" = Option<u32>, Query), ("margin" = Option<u32>, Query),
        ("ec" = Option<String>, Query), ("dark" = Option<String>, Query), ("light" = Option<String>, Query),
        ("logo" = Option<bool>, Query, description = "The server's logo (`serve --print-logo`) in the centre; 422 if the code does not read back"),
        ("logo-size" = Option<u32>, Query, description = "The logo's square as a percentage of the code's side, 5 to 60"),
    ),
    responses(
        (status = 200, content_type = "image/png", body = Vec<u8>),
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
fn qr_png_doc() {}

#[utoipa::path(
    get, path = "/api/v1/links/{key}/qr.svg", tag = "qr",
    params(
        ("key" = String, Path, description = "The link's key", example = "spring"),
        ("scale" = Option<u32>, Query), ("margin" = Option<u32>, Query),
        ("ec" = Option<String>, Query), ("dark" = Option<String>, Query), ("light" = Option<String>, Query),
        ("logo" = Option<bool>, Query, description = "The server's logo (`serve --print-logo`) in the centre; 422 if the code does not read back"),
        ("logo-size" = Option<u32>, Query, description = "The logo's square as a percentage of the code's side, 5 to 60"),
    ),
    responses(
        (status = 200, content_type = "image/svg+xml", body = String),
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
fn qr_svg_doc() {}

/// The image `qrtag qr` and the admin listener's `/qr/` make, with the
/// same query options ([`crate::print::image_query::spec_from_query`]).
async fn qr(
    req: &HttpRequest,
    state: &RestState,
    key: LinkKey,
    format: ImageFormat,
) -> HttpResponse {
    if let Err(res) = read(state, &key).await {
        return res;
    }
    let spec = match crate::print::image_query::spec_from_query(
        req.query_string(),
        format,
        state.uppercase_prefix,
        &["domain"],
    ) {
        Ok(spec) => spec,
        Err(bad) => return problem::respond(Kind::BadRequest, bad),
    };
    match state.gate.render(state.public_url.get(), key, spec).await {
        Ok(body) => HttpResponse::Ok()
            .content_type(format.content_type())
            .body(body),
        Err(e) => super::print::refused(&e),
    }
}

#[utoipa::path(
    patch, path = "/api/v1/links/{key}", tag = "links",
    params(
        ("key" = String, Path, description = "The link's key", example = "spring"),
        ("If-Match" = Option<String>, Header, description = "The ETag read, or a list of ETags (RFC 9110): 412 unless one of them is the current revision"),
    ),
    request_body = LinkEdit,
    responses(
        (status = 200, body = LinkView, headers(("ETag" = String))),
        (status = 400, body = problem::Problem, content_type = "application/problem+json"),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 403, body = problem::Problem, content_type = "application/problem+json"),
        (status = 404, body = problem::Problem, content_type = "application/problem+json"),
        (status = 409, body = problem::Problem, content_type = "application/problem+json"),
        (status = 412, body = problem::Problem, content_type = "application/problem+json"),
        (status = 413, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn edit(
    req: HttpRequest,
    payload: web::Payload,
    state: super::domain::InDomain,
) -> HttpResponse {
    // An image's, a PDF's or scans' path takes no PATCH, whoever asks.
    if tail_methods(&tail(&req)) == "GET" {
        return problem::not_allowed(req.method(), "GET");
    }
    let (edit, author): (LinkEdit, _) = match write_body(&req, payload, &state).await {
        Ok(e) => e,
        Err(res) => return res,
    };
    let key = match tail_target(&req) {
        Ok(Target::Link(key)) => key,
        Ok(Target::Qr(..) | Target::Print(_) | Target::Scans(_)) => {
            return problem::not_allowed(req.method(), "GET");
        }
        Err(res) => return res,
    };
    let apply = match edits(&edit) {
        Ok(apply) => apply,
        Err((kind, msg)) => return problem::respond(kind, msg),
    };
    if let Err((kind, msg)) =
        refuse_looping_fallback(&state, key.as_str(), edit.fallback_url.as_deref())
    {
        return problem::respond(kind, msg);
    }
    // Issue 34: new rules replace the link's, checked before anything is
    // written.
    let rules = match &edit.rules {
        None => None,
        Some(sent) => match super::rules::parse(&state, Some(key.as_str()), sent) {
            Ok(rules) => Some(rules),
            Err((kind, msg)) => return problem::respond(kind, msg),
        },
    };
    let apply = move |d: &mut Document| {
        apply(d);
        if let Some(rules) = &rules {
            rules.write_to(d);
        }
    };
    let if_match = req
        .headers()
        .get(header::IF_MATCH)
        .map(|v| IfMatch::parse(&String::from_utf8_lossy(v.as_bytes())))
        .filter(|m| *m != IfMatch::Any);
    let store = state.store.as_ref();
    let watch = WriteWatch::new(store);
    let written = match &if_match {
        Some(listed) => match store.get(&key).await {
            // The write itself is at the revision read, so a change in
            // between is still a conflict; a tombstone is refused there.
            Ok(Some(stored)) if listed.matches(&stored.rev) || link::is_tombstone(&stored.doc) => {
                write::update_at(store, &author, &key, &stored.rev, |d| apply(d)).await
            }
            Ok(Some(_)) => Err(LinkError::Store(StoreError::Conflict(key.to_string()))),
            Ok(None) => Err(LinkError::NotFound(key.clone())),
            Err(e) => Err(e.into()),
        },
        None => write::update(store, &author, &key, |d| apply(d)).await,
    };
    match written {
        Ok(_) => match read(&state, &key).await {
            Ok(mut view) => {
                view.warning = watch.warning();
                let rev = view.rev.clone();
                with_etag(HttpResponse::Ok().json(view), &rev)
            }
            Err(res) => res,
        },
        Err(LinkError::Store(StoreError::Conflict(_))) if if_match.is_some() => problem::respond(
            Kind::PreconditionFailed,
            format!("the link {key} changed since that revision: read it again"),
        ),
        Err(LinkError::Deleted { .. }) => {
            problem::respond(Kind::NotFound, format!("no link with key {key}"))
        }
        Err(e) => problem::from_link_error(&e),
    }
}

/// What an `If-Match` header asks (RFC 9110 §13.1.1): any current
/// revision (`*`), or one of the listed entity tags, compared strongly, so
/// a weak tag (`W/"…"`) never matches. A bare revision without quotes is
/// taken as one tag, as earlier versions did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum IfMatch {
    Any,
    OneOf(Vec<String>),
}

impl IfMatch {
    pub(super) fn parse(value: &str) -> Self {
        let value = value.trim();
        if value == "*" {
            return Self::Any;
        }
        let mut tags = Vec::new();
        let mut rest = value;
        loop {
            rest = rest.trim_start_matches([' ', '\t', ',']);
            if rest.is_empty() {
                break;
            }
            let (weak, tagged) = match rest.strip_prefix("W/") {
                Some(r) => (true, r),
                None => (false, rest),
            };
            let (tag, after) = match tagged.strip_prefix('"') {
                Some(quoted) => match quoted.find('"') {
                    Some(end) => (&quoted[..end], &quoted[end + 1..]),
                    None => (quoted, ""),
                },
                None => {
                    let end = tagged.find(',').unwrap_or(tagged.len());
                    (tagged[..end].trim(), &tagged[end..])
                }
            };
            if !weak && !tag.is_empty() {
                tags.push(tag.to_owned());
            }
            rest = after;
        }
        Self::OneOf(tags)
    }

    pub(super) fn matches(&self, rev: &str) -> bool {
        match self {
            Self::Any => true,
            Self::OneOf(tags) => tags.iter().any(|t| t == rev),
        }
    }
}

/// One field edit of a [`LinkEdit`].
type Edit = Box<dyn Fn(&mut Document) + Send + Sync>;

/// The edit checked whole before anything is written: the same parsers
/// as the console's link page.
fn edits(edit: &LinkEdit) -> Result<impl Fn(&mut Document) + use<>, (Kind, String)> {
    let mut steps: Vec<Edit> = Vec::new();
    if let Some(url) = &edit.url {
        let url = Destination::parse(url).map_err(|e| (Kind::InvalidUrl, format!("url: {e}")))?;
        steps.push(Box::new(move |d| link::set_url(d, &url)));
    }
    if let Some(inactive) = edit.inactive {
        steps.push(Box::new(move |d| link::set_inactive(d, inactive)));
    }
    if let Some(expires) = &edit.expires {
        let expires = expiry::parse_future(expires, Utc::now(), chrono_tz::UTC)
            .map_err(|e| (Kind::BadRequest, format!("expires: {e}")))?;
        steps.push(Box::new(move |d| link::set_expires(d, expires)));
    }
    if let Some(notes) = &edit.notes {
        let notes = Notes::parse(notes).map_err(|e| (Kind::BadRequest, format!("notes: {e}")))?;
        steps.push(Box::new(move |d| link::set_notes(d, &notes)));
    }
    if let Some(sent) = &edit.fallback_url {
        let f = fallback(Some(sent))?;
        steps.push(Box::new(move |d| link::set_fallback_url(d, f.as_ref())));
    }
    if let Some(title) = &edit.title {
        let title = Title::parse(title).map_err(|e| (Kind::BadRequest, format!("title: {e}")))?;
        steps.push(Box::new(move |d| link::set_title(d, &title)));
    }
    Ok(move |d: &mut Document| steps.iter().for_each(|s| s(d)))
}

#[utoipa::path(
    get, path = "/api/v1/links", tag = "links",
    params(ListQuery),
    responses(
        (status = 200, body = LinkPage),
        (status = 400, body = problem::Problem, content_type = "application/problem+json"),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list(req: HttpRequest, state: super::domain::InDomain) -> HttpResponse {
    if let Err(res) = admit(&req, &state, super::needs::READ).await {
        return res;
    }
    let query = match web::Query::<ListQuery>::from_query(req.query_string()) {
        Ok(q) => q.into_inner(),
        Err(e) => return problem::respond(Kind::BadRequest, e),
    };
    let (query, size) = match list_query(&query) {
        Ok(q) => q,
        Err(msg) => return problem::respond(Kind::BadRequest, msg),
    };
    if !state.snapshot.is_loaded() {
        return problem::respond(Kind::Unavailable, "the links are still loading");
    }
    let work = {
        let state = Arc::clone(&state.clone().into_inner());
        move || {
            let table = Arc::clone(&state.snapshot.load());
            let mut order = state.order.lock().unwrap_or_else(|p| p.into_inner());
            let keys = order.follow(&table);
            let at = At {
                now_ms: Utc::now().timestamp_millis(),
                all_time_scans: &|_| 0,
            };
            list::page(keys, &table, &query, size, &at)
        }
    };
    let page = match web::block(work).await {
        Ok(page) => page,
        Err(e) => {
            tracing::error!(error = %e, "listing links did not finish");
            return problem::respond(Kind::Unavailable, "listing did not finish; try again");
        }
    };
    let mut views = match page_views(&state, page.rows).await {
        Ok(views) => views,
        Err(res) => return res,
    };
    // The snapshot cut the page by its keys and URLs; the notes read since
    // count too, so a page of long notes stays within the same bound, its
    // `next` going on from the last row it keeps.
    let fit = within(&views, list::PAGE_BYTES);
    let next = if fit < views.len() {
        views.truncate(fit);
        views.last().map(|(position, _)| position.clone())
    } else {
        page.next
    };
    HttpResponse::Ok().json(LinkPage {
        links: views.into_iter().map(|(_, v)| v).collect(),
        next,
        prev: page.prev,
    })
}

/// How many leading links hold at most `bytes` of keys, URLs and notes (pure);
/// at least one, so every page moves on.
fn within(views: &[(String, LinkView)], bytes: usize) -> usize {
    let mut total = 0usize;
    views
        .iter()
        .take_while(|(_, v)| {
            let notes = v.notes.as_ref().map_or(0, String::len)
                + v.title.as_ref().map_or(0, String::len)
                + super::rules::page_bytes(&v.rules);
            total = total.saturating_add(v.key.len() + v.url.len() + notes);
            total <= bytes
        })
        .count()
        .max(1)
}

/// The page's links as [`read`] answers them. The snapshot picks the page
/// but keeps neither notes nor revisions (they would grow every served
/// link for a list's sake), so the page's rows are read from the store in
/// one bulk read (`_all_docs` with the keys on CouchDB): O(page), never
/// O(links), and one request however long the page. A link deleted
/// between the two is left out; the cursors still hold.
async fn page_views(
    state: &RestState,
    rows: Vec<list::Row>,
) -> Result<Vec<(String, LinkView)>, HttpResponse> {
    let rows: Vec<(LinkKey, list::Row)> = rows
        .into_iter()
        .filter_map(|row| Some((LinkKey::parse(&row.key).ok()?, row)))
        .collect();
    let keys: Vec<LinkKey> = rows.iter().map(|(key, _)| key.clone()).collect();
    let stored = state
        .store
        .get_all(&keys)
        .await
        .map_err(|e| problem::from_link_error(&LinkError::Store(e)))?;
    Ok(rows
        .into_iter()
        .zip(stored)
        .filter_map(|((key, row), stored)| {
            let stored = stored.filter(|s| !link::is_tombstone(&s.doc))?;
            Some((row.position, view(state, &key, &stored.doc, stored.rev)))
        })
        .collect())
}

/// The console's [`list::Query`] from the API's parameters (pure).
fn list_query(q: &ListQuery) -> Result<(list::Query, usize), String> {
    let (text, by) = match (&q.prefix, &q.url_contains, &q.q) {
        (Some(p), None, None) => (p.clone(), By::Key),
        (None, Some(u), None) => (u.clone(), By::Url),
        (None, None, Some(t)) => (t.trim().to_owned(), By::Any),
        (None, None, None) => (String::new(), By::Key),
        _ => return Err("give one of prefix, url_contains and q".into()),
    };
    let state = match q.state.as_deref() {
        None => StateFilter::default(),
        Some("never-scanned") => {
            return Err("state never-scanned is not offered by the API yet".into());
        }
        Some(s) => StateFilter::parse(s).ok_or_else(|| format!("unknown state {s:?}"))?,
    };
    let sort = match q.sort.as_deref() {
        None => Sort::default(),
        Some(s) => Sort::parse(s).ok_or_else(|| format!("unknown sort {s:?}"))?,
    };
    let cursor = match (&q.after, &q.before) {
        (Some(_), Some(_)) => return Err("give after or before, not both".into()),
        (Some(a), None) => Cursor::After(a.clone()),
        (None, Some(b)) => Cursor::Before(b.clone()),
        (None, None) => Cursor::First,
    };
    let size = q.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&size) {
        return Err(format!("limit must be 1 to {MAX_PAGE}"));
    }
    Ok((
        list::Query {
            text,
            by,
            sort,
            state,
            cursor,
        },
        size,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_the_image_suffix_from_the_key() {
        assert!(matches!(target("abcde"), Some(Target::Link(k)) if k.as_str() == "abcde"));
        assert!(
            matches!(target("docs/api/qr.svg"), Some(Target::Qr(k, ImageFormat::Svg)) if k.as_str() == "docs/api")
        );
        assert!(matches!(
            target("abcde/qr.png"),
            Some(Target::Qr(_, ImageFormat::Png))
        ));
        assert!(
            matches!(target("docs/api/print.pdf"), Some(Target::Print(k)) if k.as_str() == "docs/api")
        );
        assert!(target("../x").is_none());
        assert!(target("").is_none());
    }

    #[test]
    fn a_page_ends_where_its_keys_urls_and_notes_pass_the_budget() {
        let link = |key: &str, notes: Option<&str>| {
            let v = LinkView {
                key: key.into(),
                short_url: String::new(),
                url: "/a".into(),
                inactive: false,
                expires: None,
                notes: notes.map(str::to_owned),
                title: None,
                created_at: None,
                changed_at: None,
                fallback_url: None,
                created_via: None,
                changed_via: None,
                rules: Vec::new(),
                rev: "1".into(),
                warning: None,
                imported_clicks: None,
            };
            (key.to_owned(), v)
        };
        let views = [
            link("a", None),
            link("b", Some("0123456789")),
            link("c", None),
        ];
        // 3 bytes a row, and 10 of notes.
        assert_eq!(within(&views, 100), 3);
        assert_eq!(within(&views, 15), 1);
        assert_eq!(within(&views, 16), 2);
        assert_eq!(within(&views, 0), 1);
    }

    #[test]
    fn list_parameters_map_to_the_console_query() {
        let q = ListQuery {
            prefix: None,
            url_contains: Some("example".into()),
            q: None,
            state: Some("inactive".into()),
            sort: Some("created".into()),
            after: Some("x".into()),
            before: None,
            limit: Some(5),
            domain: None,
        };
        let (query, size) = list_query(&q).expect("valid");
        assert_eq!(
            (query.by, query.state, query.sort, size),
            (By::Url, StateFilter::Inactive, Sort::Created, 5)
        );
        assert_eq!(query.cursor, Cursor::After("x".into()));
        let bad = ListQuery {
            limit: Some(0),
            ..q
        };
        assert!(list_query(&bad).is_err());
    }

    #[test]
    fn if_match_lists_match_any_strong_tag() {
        let tags = |v: &str| match IfMatch::parse(v) {
            IfMatch::OneOf(t) => t,
            IfMatch::Any => vec!["*".to_owned()],
        };
        assert_eq!(tags(r#""1-a""#), ["1-a"]);
        assert_eq!(
            tags(r#" "1-a" , "2-b",W/"3-c", "4,d" "#),
            ["1-a", "2-b", "4,d"]
        );
        assert_eq!(tags("2-b"), ["2-b"], "a bare revision, as before");
        assert_eq!(tags(r#"W/"1-a""#), Vec::<String>::new());
        assert_eq!(tags(" * "), ["*"]);
        assert!(IfMatch::parse(r#""1-a", "2-b""#).matches("2-b"));
        assert!(!IfMatch::parse(r#""1-a", W/"2-b""#).matches("2-b"));
    }

    #[test]
    fn an_edit_is_checked_whole_before_it_applies() {
        let bad = LinkEdit {
            url: Some("javascript:alert(1)".into()),
            inactive: Some(true),
            expires: None,
            notes: None,
            fallback_url: None,
            title: Some("x".repeat(crate::link::MAX_TITLE + 1)),
            rules: None,
        };
        assert!(matches!(edits(&bad), Err((Kind::InvalidUrl, _))));
        let bad = LinkEdit { url: None, ..bad };
        assert!(
            matches!(edits(&bad), Err((Kind::BadRequest, m)) if m.starts_with("title: a title may be at most 200")
            )
        );
        let bad = LinkEdit {
            url: Some("javascript:alert(1)".into()),
            title: None,
            ..bad
        };
        assert!(matches!(edits(&bad), Err((Kind::InvalidUrl, _))));
        let path = LinkEdit {
            url: None,
            inactive: Some(true),
            expires: None,
            notes: None,
            fallback_url: Some("/H83if".into()),
            title: None,
            rules: None,
        };
        assert!(
            matches!(edits(&path), Err((Kind::InvalidUrl, m)) if m.starts_with("fallback_url: "))
        );
        let good = LinkEdit {
            url: Some("https://example.org/".into()),
            inactive: Some(true),
            expires: Some("never".into()),
            notes: Some("".into()),
            fallback_url: Some("https://venue.example/".into()),
            title: Some(" Spring poster ".into()),
            rules: None,
        };
        let apply = edits(&good).expect("valid");
        let mut doc = Link::new_document(
            &Destination::parse("https://a.example/").expect("url"),
            false,
        );
        apply(&mut doc);
        assert_eq!(
            doc.get("url").and_then(Value::as_str),
            Some("https://example.org/")
        );
        assert_eq!(doc.get("inactive"), Some(&Value::Bool(true)));
        assert_eq!(
            doc.get("fallback_url").and_then(Value::as_str),
            Some("https://venue.example/")
        );
        assert_eq!(link::title(&doc), Some("Spring poster"));
    }
}
