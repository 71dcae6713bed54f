//! The console's PDF downloads (a link's label or poster, a print run's
//! sheets): the options read by [`PrintOptions::from_query`], the job
//! rendered through the admin listener's gate, so the file is the one
//! `qrtag print` and `/qr/KEY.pdf` make for the same options.

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};

use crate::console::ConsoleState;
use crate::console::http::{plain, write_failure};
use crate::console::pages::print_form::Kind;
use crate::console::session::User;
use crate::link;
use crate::links::{self, LinkError};
use crate::print::tag_image::RenderError;
use crate::print::{PrintOptions, Spelling, request};
use crate::values::link_key::LinkKey;

/// Why no PDF was made.
pub enum Refused {
    /// The form's to change: shown again with `message` beside `field`
    /// (`None`: above it).
    Form {
        field: Option<&'static str>,
        message: String,
    },
    /// Anything else (the store away, the gate busy): the answer itself.
    Answer(Box<HttpResponse>),
}

/// The form a PDF request came from (the hidden `form` field), `default`
/// when it names none.
pub fn kind(req: &HttpRequest, default: Kind) -> Kind {
    form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(n, _)| n == "form")
        .and_then(|(_, v)| Kind::from_name(&v))
        .unwrap_or(default)
}

/// The options of a console PDF request; `own` are the handler's own
/// parameters (`key`, `batch`), which the options parser skips.
pub fn options(req: &HttpRequest, own: &str) -> Result<PrintOptions, Refused> {
    PrintOptions::from_query(
        req.query_string(),
        &[own, "form", crate::console::shown::FIELD],
    )
    .map_err(|e| Refused::Form {
        field: (!e.field.is_empty()).then_some(e.field),
        message: e.message,
    })
}

/// The PDF of `keys` (`notes` of each, read already, when the caption
/// needs them), as an attachment named `file`.
pub async fn render(
    state: &ConsoleState,
    user: &User,
    options: &PrintOptions,
    keys: &[(LinkKey, Option<String>)],
    file: &str,
) -> Result<HttpResponse, Refused> {
    let tags = keys
        .iter()
        .map(|(key, notes)| {
            options.tag(
                &user.domain.public_url.load(),
                key,
                state.uppercase_prefix,
                notes.as_deref(),
            )
        })
        .collect();
    let job = options
        .job(tags, Spelling::Param, state.renders.print_logo())
        .map_err(|e| Refused::Form {
            field: Some(e.field),
            message: e.message,
        })?;
    match state.renders.render_pdf(job).await {
        Ok(body) => Ok(HttpResponse::Ok()
            .content_type("application/pdf")
            .insert_header((
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file}\""),
            ))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .body(body)),
        Err(RenderError::Print(e)) if e.is_usage() => Err(Refused::Form {
            field: request::field_of(&e),
            message: e.message(Spelling::Param),
        }),
        Err(e) => Err(Refused::Answer(Box::new(crate::print::answer::refused(&e)))),
    }
}

/// Each key with its notes, read through the user's store when the caption
/// prints them; otherwise each key is looked up in the served table, which
/// a deleted link has left. A deleted or missing link is the answer (404),
/// not a form fault: a deleted key's tag is never printed again.
pub async fn with_notes(
    user: &User,
    options: &PrintOptions,
    keys: Vec<LinkKey>,
) -> Result<Vec<(LinkKey, Option<String>)>, Refused> {
    let mut out = Vec::with_capacity(keys.len());
    let table = user.domain.snapshot.load();
    for key in keys {
        if !options.needs_notes() && table.get(key.as_str()).is_none() {
            let msg = format!("{key} was deleted or is not served; it is not printed");
            return Err(Refused::Answer(Box::new(plain(
                StatusCode::NOT_FOUND,
                &msg,
            ))));
        }
        let notes = if options.needs_notes() {
            match links::get(user.store.as_ref(), &key).await {
                Ok(doc) if link::is_tombstone(&doc) => {
                    let msg = format!("{key} was deleted");
                    return Err(Refused::Answer(Box::new(plain(
                        StatusCode::NOT_FOUND,
                        &msg,
                    ))));
                }
                Ok(doc) => options.caption_text(&doc),
                Err(e @ LinkError::NotFound(_)) => {
                    return Err(Refused::Answer(Box::new(plain(
                        StatusCode::NOT_FOUND,
                        &e.to_string(),
                    ))));
                }
                Err(e) => {
                    let (status, msg) = write_failure(&e);
                    return Err(Refused::Answer(Box::new(plain(status, &msg))));
                }
            }
        } else {
            None
        };
        out.push((key, notes));
    }
    Ok(out)
}
