//! Print runs: N new inactive links, as `qrtag batch` makes them, and their
//! A4 SVG sheets, 24 full-size codes each, or a PDF on any label stock
//! (`qrtag batch --template`, [`super::pdf`]).

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::console::ConsoleState;
use crate::console::http::{
    checked_write, html, logged_in, plain, problem, see_other, viewer, write_failure,
};
use crate::console::pages::print_form::{self, Refusal};
use crate::console::pages::{self, BASE, Refused};
use crate::console::session::{BATCHES, PrintRun};
use crate::console::session::{Current, User};
use crate::links;
use crate::print::tag_image;
use crate::qr::{self, EcLevel, SHEET_FULL_SIZE_CAPACITY};
use crate::values::destination::Destination;
use crate::values::link_key::LinkKey;

/// As `qrtag batch`: a typo of an extra zero is caught.
pub const MAX: u16 = 1000;

/// A whole-number query parameter: `Ok(None)` when absent, an error that
/// names it when it is not a number.
fn number_param(req: &HttpRequest, name: &str) -> Result<Option<u64>, String> {
    match form_urlencoded::parse(req.query_string().as_bytes()).find(|(n, _)| n == name) {
        None => Ok(None),
        Some((_, v)) => v
            .parse()
            .map(Some)
            .map_err(|_| format!("bad {name}: `{v}` is not a whole number")),
    }
}

/// Why a print run's number names nothing to show, as one line.
fn not_kept(run: &PrintRun) -> String {
    match run {
        PrintRun::Evicted => format!(
            "This print run is no longer kept (a session keeps its last {BATCHES} runs); \
             make a new one. Its links are still in the list."
        ),
        _ => "There is no such print run in this session.".to_owned(),
    }
}

pub async fn page(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let back = format!("{BASE}/sheet");
    let number = match number_param(&req, "batch") {
        Ok(number) => number,
        Err(msg) => return problem(&session, &user, StatusCode::BAD_REQUEST, &msg, &back),
    };
    if let Some(elsewhere) = number.and_then(|n| on_its_domain(&req, &state, &session, &user, n)) {
        return elsewhere;
    }
    run_page(&state, &session, &user, number, None)
}

/// Issue 36: a print run's page, on the domain it was made on.
fn run_path(number: u64, user: &User) -> String {
    format!(
        "{BASE}/sheet?batch={number}&{}={}",
        crate::console::shown::FIELD,
        pages::q(&user.domain.name())
    )
}

/// Issue 36: a print run's tags carry the public URL of the domain it was
/// made on; asked for on another domain, the same address on that one.
fn on_its_domain(
    req: &HttpRequest,
    state: &ConsoleState,
    session: &Current,
    user: &User,
    number: u64,
) -> Option<HttpResponse> {
    use crate::console::shown::FIELD;
    let made_on = state.sessions.batch_domain(&session.id, number)?;
    if made_on == user.domain.name() {
        return None;
    }
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            form_urlencoded::parse(req.query_string().as_bytes()).filter(|(name, _)| name != FIELD),
        )
        .append_pair(FIELD, &made_on)
        .finish();
    Some(see_other(&format!("{}?{query}", req.path())))
}

/// The print sheet with run `number` (if given) and `pdf`, its PDF form
/// refused; 404 for a run the session does not keep, 400 with a refusal.
fn run_page(
    state: &ConsoleState,
    session: &Current,
    user: &User,
    number: Option<u64>,
    pdf: Option<&Refusal<'_>>,
) -> HttpResponse {
    let (status, kept, missing) = match number.map(|n| (n, state.sessions.batch(&session.id, n))) {
        None => (StatusCode::OK, None, None),
        Some((n, PrintRun::Kept(keys))) => {
            let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
            (StatusCode::OK, Some((n, keys)), None)
        }
        Some((_, gone)) => (StatusCode::NOT_FOUND, None, Some(not_kept(&gone))),
    };
    let status = if pdf.is_some() && status == StatusCode::OK {
        StatusCode::BAD_REQUEST
    } else {
        status
    };
    let batch = kept.as_ref().map(|(number, keys)| pages::sheet::Batch {
        number: *number,
        keys,
        sheets: keys.len().div_ceil(SHEET_FULL_SIZE_CAPACITY),
    });
    html(
        status,
        pages::sheet::page(
            &viewer(session, user),
            MAX,
            batch.as_ref(),
            missing.as_deref(),
            None,
            pdf,
        ),
    )
}

/// A print run's tags as one PDF on label stock: the form's options
/// through the CLI's parsers; a refused one is the page again with the
/// message beside its field.
pub async fn pdf(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    use super::pdf::{self as make, Refused as Not};
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let number = match number_param(&req, "batch") {
        Ok(Some(number)) => number,
        Ok(None) => return plain(StatusCode::BAD_REQUEST, "give batch"),
        Err(msg) => return plain(StatusCode::BAD_REQUEST, &msg),
    };
    if let Some(elsewhere) = on_its_domain(&req, &state, &session, &user, number) {
        return elsewhere;
    }
    let keys = match state.sessions.batch(&session.id, number) {
        PrintRun::Kept(keys) => keys,
        missing => return plain(StatusCode::NOT_FOUND, &not_kept(&missing)),
    };
    let made = match make::options(&req, "batch") {
        Ok(options) => match make::with_notes(&user, &options, keys).await {
            Ok(keys) => {
                let file = format!("qrtag-run-{number}.pdf");
                make::render(&state, &user, &options, &keys, &file).await
            }
            Err(not) => Err(not),
        },
        Err(not) => Err(not),
    };
    match made {
        Ok(pdf) => pdf,
        Err(Not::Answer(res)) => *res,
        Err(Not::Form { field, message }) => {
            let refusal = Refusal {
                kind: print_form::Kind::Run,
                refused: Refused {
                    field,
                    message: &message,
                },
                query: req.query_string(),
            };
            run_page(&state, &session, &user, Some(number), Some(&refusal))
        }
    }
}

pub async fn create(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (session, user, form) = match checked_write(&req, &state, &body) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let back = format!("{BASE}/sheet");
    // The form again, with the number typed and why it was not made.
    let again = |status: StatusCode, field: Option<&str>, msg: &str| {
        let refused = Refused {
            field,
            message: msg,
        };
        let typed = form.get("count").unwrap_or_default();
        let page = pages::sheet::page(
            &viewer(&session, &user),
            MAX,
            None,
            None,
            Some((refused, typed)),
            None,
        );
        html(status, page)
    };
    let count = match form.text("count").and_then(|c| c.parse::<u16>().ok()) {
        Some(n) if (1..=MAX).contains(&n) => n,
        _ => {
            let msg = format!("How many: a whole number from 1 to {MAX}.");
            return again(StatusCode::BAD_REQUEST, Some("count"), &msg);
        }
    };
    // The service's own root, which answers 404: a tag enabled before its
    // destination is set leads nowhere rather than to someone else's site.
    let Ok(placeholder) = Destination::parse(&format!("{}/", user.domain.public_url.load())) else {
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the public URL is not a destination",
        );
    };
    let mut keys: Vec<LinkKey> = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        match links::create(
            user.store.as_ref(),
            &user.author(),
            &placeholder,
            None,
            true,
        )
        .await
        {
            Ok(key) => keys.push(key),
            Err(e) => {
                let (status, msg) = write_failure(&e);
                if keys.is_empty() {
                    return again(status, None, &msg);
                }
                // What was made is a run of its own, so its sheets can
                // still be printed: the way back leads to it.
                let made = keys.len();
                let back = state
                    .sessions
                    .add_batch(&session.id, keys, &user.domain.name())
                    .map_or(back, |n| run_path(n, &user));
                let msg = format!(
                    "{msg} ({made} links were made before this: Back leads to their sheets.)"
                );
                return problem(&session, &user, status, &msg, &back);
            }
        }
    }
    match state
        .sessions
        .add_batch(&session.id, keys, &user.domain.name())
    {
        Some(n) => see_other(&run_path(n, &user)),
        None => plain(StatusCode::FORBIDDEN, "log in again"),
    }
}

/// One A4 sheet of a print run, as `qrtag batch --sheet` writes it.
pub async fn download(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let params = number_param(&req, "batch").and_then(|b| Ok((b, number_param(&req, "page")?)));
    let (number, page) = match params {
        Ok((Some(number), Some(page))) => (number, page),
        Ok(_) => return plain(StatusCode::BAD_REQUEST, "give batch and page"),
        Err(msg) => return plain(StatusCode::BAD_REQUEST, &msg),
    };
    if let Some(elsewhere) = on_its_domain(&req, &state, &session, &user, number) {
        return elsewhere;
    }
    let keys = match state.sessions.batch(&session.id, number) {
        PrintRun::Kept(keys) => keys,
        missing => return plain(StatusCode::NOT_FOUND, &not_kept(&missing)),
    };
    let sheet = usize::try_from(page)
        .ok()
        .and_then(|p| keys.chunks(SHEET_FULL_SIZE_CAPACITY).nth(p));
    let Some(chunk) = sheet else {
        return plain(StatusCode::NOT_FOUND, "no such sheet in this print run");
    };
    let mut items = Vec::with_capacity(chunk.len());
    for key in chunk {
        let text = tag_image::tag_text(&user.domain.public_url.load(), key, state.uppercase_prefix);
        match qr::encode(&text, EcLevel::L) {
            Ok(code) => items.push((key.to_string(), code)),
            Err(e) => return plain(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
        }
    }
    HttpResponse::Ok()
        .content_type("image/svg+xml")
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!(
                "attachment; filename=\"qrtag-sheet-{number}-{}.svg\"",
                page + 1
            ),
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(qr::render_sheet_svg(&items))
}
