//! Print runs: N new inactive links, as `qrtag batch` makes them, and their
//! A4 sheets, 24 full-size codes each.

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::console::ConsoleState;
use crate::console::http::{
    checked_write, html, logged_in, plain, problem, see_other, viewer, write_failure,
};
use crate::console::pages::{self, BASE};
use crate::destination::Destination;
use crate::link_key::LinkKey;
use crate::links;
use crate::qr::{self, EcLevel, SHEET_FULL_SIZE_CAPACITY};
use crate::qr_image;

/// As `qrtag batch`: a typo of an extra zero is caught.
pub const MAX: u16 = 1000;

fn batch_param(req: &HttpRequest, name: &str) -> Option<usize> {
    form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| v.parse().ok())
}

pub async fn page(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let number = batch_param(&req, "batch");
    let keys: Option<Vec<String>> = number
        .and_then(|n| state.sessions.batch(&session.id, n))
        .map(|keys| keys.iter().map(ToString::to_string).collect());
    let batch = match (number, &keys) {
        (Some(number), Some(keys)) => Some(pages::sheet::Batch {
            number,
            keys,
            sheets: keys.len().div_ceil(SHEET_FULL_SIZE_CAPACITY),
        }),
        _ => None,
    };
    html(
        StatusCode::OK,
        pages::sheet::page(&viewer(&session, &user), MAX, batch.as_ref()),
    )
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
    let count = match form.text("count").and_then(|c| c.parse::<u16>().ok()) {
        Some(n) if (1..=MAX).contains(&n) => n,
        _ => {
            let msg = format!("How many: a whole number from 1 to {MAX}.");
            return problem(&session, &user, StatusCode::BAD_REQUEST, &msg, &back);
        }
    };
    // The service's own root, which answers 404: a tag enabled before its
    // destination is set leads nowhere rather than to someone else's site.
    let Ok(placeholder) = Destination::parse(&format!("{}/", state.public_url)) else {
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the public URL is not a destination",
        );
    };
    let mut keys: Vec<LinkKey> = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        match links::create(user.store.as_ref(), &placeholder, None, true).await {
            Ok(key) => keys.push(key),
            Err(e) => {
                let (status, msg) = write_failure(&e);
                let made = if keys.is_empty() {
                    String::new()
                } else {
                    format!(" ({} links were made before this.)", keys.len())
                };
                if !keys.is_empty() {
                    state.sessions.add_batch(&session.id, keys);
                }
                return problem(&session, &user, status, &format!("{msg}{made}"), &back);
            }
        }
    }
    match state.sessions.add_batch(&session.id, keys) {
        Some(n) => see_other(&format!("{BASE}/sheet?batch={n}")),
        None => plain(StatusCode::FORBIDDEN, "log in again"),
    }
}

/// One A4 sheet of a print run, as `qrtag batch --sheet` writes it.
pub async fn download(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, _) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let (Some(number), Some(page)) = (batch_param(&req, "batch"), batch_param(&req, "page")) else {
        return plain(StatusCode::BAD_REQUEST, "give batch and page");
    };
    let Some(keys) = state.sessions.batch(&session.id, number) else {
        return plain(StatusCode::NOT_FOUND, "no such print run in this session");
    };
    let Some(chunk) = keys.chunks(SHEET_FULL_SIZE_CAPACITY).nth(page) else {
        return plain(StatusCode::NOT_FOUND, "no such sheet");
    };
    let mut items = Vec::with_capacity(chunk.len());
    for key in chunk {
        let text = qr_image::tag_text(&state.public_url, key, state.uppercase_prefix);
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
                "attachment; filename=\"qrtag-sheet-{}-{}.svg\"",
                number + 1,
                page + 1
            ),
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(qr::render_sheet_svg(&items))
}
