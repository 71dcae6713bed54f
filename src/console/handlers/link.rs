//! One link: its page, its edits, and its tag downloads.

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;

use crate::console::ConsoleState;
use crate::console::domains::Domain;
use crate::console::http::{
    Form, checked_write, html, link_path, logged_in, plain, problem, see_other, viewer,
    write_failure,
};
use crate::console::pages::chart::Period;
use crate::console::pages::print_form::{self, Refusal};
use crate::console::pages::{self, BASE, Refused};
use crate::console::rule_form::{Fault, RuleForm};
use crate::console::rule_tester;
use crate::console::scans::ScanCounts;
use crate::console::session::{Current, User};
use crate::link::rules::Rules;
use crate::link::{self, Document, Link, Notes, Title};
use crate::links::chain;
use crate::links::{self, LinkError};
use crate::print::tag_image::{ImageFormat, ImageSpec};
use crate::values::destination::Destination;
use crate::values::expiry::parse_future;
use crate::values::link_key::LinkKey;

/// The parameters the link page and the download read besides the QR ones
/// (`days`: the scan chart's period, which the download ignores).
const OWN_PARAMS: [&str; 4] = ["key", "format", "days", crate::console::shown::FIELD];

/// What a link page shows besides the link: the tag's image parameters and
/// the scan chart's period.
#[derive(Debug, Clone, Default)]
pub(super) struct Shown {
    spec: ImageSpec,
    period: Period,
    /// Issue 34: the rule tester's question, when the page answers one.
    pub(super) tried: Option<crate::console::rule_tester::Described>,
}

/// `key`, the image parameters and the chart's period of a link page or
/// download query.
fn key_and_spec(query: &str, uppercase_prefix: bool) -> Result<(LinkKey, Shown), String> {
    let mut key = None;
    let mut format = ImageFormat::default();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        match &*name {
            "key" => key = Some(LinkKey::parse(&value).map_err(|e| format!("bad key: {e}"))?),
            "format" => format = value.parse().map_err(|e| format!("bad format: {e}"))?,
            _ => {}
        }
    }
    let key = key.ok_or("no key given")?;
    // The form's colour fields left empty are the defaults, not bad colours.
    let query: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            form_urlencoded::parse(query.as_bytes())
                .filter(|(name, value)| !(value.is_empty() && (name == "dark" || name == "light"))),
        )
        .finish();
    let spec =
        crate::print::image_query::spec_from_query(&query, format, uppercase_prefix, &OWN_PARAMS)
            .map_err(|e| e.to_string())?;
    let period = super::period(&query)?;
    Ok((
        key,
        Shown {
            spec,
            period,
            tried: None,
        },
    ))
}

/// Issue 34: the page with the rule tester's question answered.
pub(super) fn shown_trying(tried: crate::console::rule_tester::Described) -> Shown {
    Shown {
        tried: Some(tried),
        ..Shown::default()
    }
}

/// Where a page's document came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The user's store: the whole document, as written.
    Store,
    /// The snapshot, because the store did not answer: only the fields the
    /// redirect path keeps (no notes).
    Snapshot,
}

/// The document as the user's store has it now (so a page after an edit
/// shows the edit), or the snapshot's view when the store is away.
async fn read(user: &User, key: &LinkKey) -> Result<(Document, Source), LinkError> {
    match links::get(user.store.as_ref(), key).await {
        Ok(doc) => Ok((doc, Source::Store)),
        Err(LinkError::Store(e)) => {
            tracing::warn!(error = %e, "console reading the snapshot instead of the store");
            let table = user.domain.snapshot.load();
            let view = table
                .get(key.as_str())
                .ok_or_else(|| LinkError::NotFound(key.clone()))?;
            let mut doc = Document::new();
            doc.insert("url".into(), view.url.into());
            doc.insert("inactive".into(), view.inactive.into());
            let expires = view
                .expires_ms
                .and_then(chrono::DateTime::from_timestamp_millis);
            link::set_expires(&mut doc, expires);
            if let Some(f) = view.fallback {
                doc.insert(link::FALLBACK_URL.into(), f.into());
            }
            Ok((doc, Source::Snapshot))
        }
        Err(e) => Err(e),
    }
}

/// Whether a scan of `key` meets a chain the resolver refuses (a loop of
/// internal redirects, too many hops), said as the CLI says it after a
/// write. Run on every render rather than remembered from the edit, so the
/// warning is right after a reload and also covers loops others made.
async fn chain_warning(user: &User, key: &LinkKey) -> Option<String> {
    match chain::check(
        user.store.as_ref(),
        user.domain.public_url.get().origin(),
        key,
    )
    .await
    {
        Ok(broken) => broken.map(|b| b.warning(key)),
        Err(e) => {
            tracing::warn!(error = %e, %key, "console could not check where a link leads");
            None
        }
    }
}

pub async fn page(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let back = format!("{BASE}/links");
    let (key, shown) = match key_and_spec(req.query_string(), state.uppercase_prefix) {
        Ok(ok) => ok,
        Err(msg) => return problem(&session, &user, StatusCode::BAD_REQUEST, &msg, &back),
    };
    render(&state, &session, &user, &key, shown, StatusCode::OK, None).await
}

/// A form of the link page the server refused.
pub(super) enum PageRefusal<'a> {
    /// An edit: why, and what was typed into its field.
    Edit(Refused<'a>, &'a str),
    /// A PDF form, with what was sent.
    Pdf(Refusal<'a>),
    /// Issue 34: the add-a-rule form, as typed, and why not.
    Rule(&'a RuleForm, &'a Fault),
    /// Issue 34: a rule's remove or move, and why not.
    Rules(&'a str),
    /// Issue 35 (i35-timeline): a revert, and why not.
    History(&'a str),
}

/// The link's page as it is in the store now, with a form the server
/// refused shown again with what was typed.
pub(super) async fn render(
    state: &ConsoleState,
    session: &Current,
    user: &User,
    key: &LinkKey,
    shown: Shown,
    status: StatusCode,
    refused: Option<PageRefusal<'_>>,
) -> HttpResponse {
    // Issue 34: the rule forms' refusals, apart from the others.
    let (rule_refused, rules_problem) = match &refused {
        Some(PageRefusal::Rule(typed, fault)) => (Some((*typed, *fault)), None),
        Some(PageRefusal::Rules(msg)) => (None, Some(*msg)),
        _ => (None, None),
    };
    // Issue 35 (i35-timeline): a refused revert, said above the timeline.
    let history_problem = match &refused {
        Some(PageRefusal::History(msg)) => Some(*msg),
        _ => None,
    };
    let (refused, pdf) = match refused {
        None | Some(PageRefusal::Rule(..) | PageRefusal::Rules(_) | PageRefusal::History(_)) => {
            (None, None)
        }
        Some(PageRefusal::Edit(r, typed)) => (Some((r, typed)), None),
        Some(PageRefusal::Pdf(r)) => (None, Some(r)),
    };
    let back = format!("{BASE}/links");
    let (doc, source) = match read(user, key).await {
        Ok(read) => read,
        Err(e) => {
            let (status, msg) = write_failure(&e);
            return problem(session, user, status, &msg, &back);
        }
    };
    let link = match Link::from_document(&doc) {
        Ok(link) => link,
        Err(e) => {
            let msg = format!("{key} is not a valid link document: {e}");
            return problem(session, user, StatusCode::UNPROCESSABLE_ENTITY, &msg, &back);
        }
    };
    let chain_warning = match source {
        Source::Store => chain_warning(user, key).await,
        Source::Snapshot => None,
    };
    let notes = link::notes(&doc);
    // Read on every render, like the chain warning: the page after a
    // write says it, and so does a reload while it is recent.
    let copies_warning = user.store.cluster().and_then(|c| c.recent_fewer_copies());
    // One query for the year: the first screen's 7, 30 and 365 days, and
    // the chart's period cut from it.
    let today = Utc::now().date_naive();
    // Issue 38: asked of ClickHouse first with --scans-from.
    let counts = crate::console::scans_from::for_link(
        &user.domain.scans,
        key.as_str(),
        Period::Year.since(today),
    )
    .await;
    let year = counts.scans.key(key.as_str(), Period::Year.since(today));
    let recent = year.as_ref().map(|s| pages::link::recent(&s.daily, today));
    let scans = year.map(|mut s| {
        let since = shown.period.since(today);
        s.daily.retain(|(day, _)| *day >= since);
        s
    });
    let public_url = user.domain.public_url.load();
    // Issue 34: the rules, what a scan gets now, and the tester's answer.
    let stored_rules = Rules::from_stored(&doc);
    let no_rules = Rules::default();
    let rules = stored_rules.as_ref().unwrap_or(&no_rules);
    let now = Utc::now();
    let live_at =
        |ms: i64| !link.inactive && link.expires.is_none_or(|e| ms < e.timestamp_millis());
    let tester_link = rule_tester::Link {
        key: key.as_str(),
        url: link.url.as_str(),
        rules,
        live_at: &live_at,
        fallback: link.fallback.as_ref().map(Destination::as_str),
    };
    let table = user.domain.snapshot.load();
    let other = |k: &str, ms: i64| table.live_url(k, ms).map(str::to_owned);
    let answer = shown.tried.as_ref().map(|d| {
        rule_tester::answer(
            d,
            &tester_link,
            &other,
            public_url.origin(),
            state.time_zone,
            state.geoip,
            now,
        )
    });
    // A described scan the tester cannot try is the client's mistake.
    let status = match answer {
        Some(Err(_)) if status == StatusCode::OK => StatusCode::BAD_REQUEST,
        _ => status,
    };
    let viewer_of = viewer(session, user);
    let rules_section = pages::link_rules::Section {
        key: key.as_str(),
        rules: stored_rules.as_ref().map_err(ToString::to_string),
        can_edit: viewer_of.can_edit,
        csrf: viewer_of.token(),
        geoip: state.geoip,
        zone: state.time_zone,
        refused: rule_refused,
        list_problem: rules_problem,
        tried: shown
            .tried
            .as_ref()
            .zip(answer.as_ref().map(Result::as_ref)),
        schedule: rule_tester::schedule(&tester_link, now),
        store_away: source == Source::Snapshot,
    };
    // Issue 35 (i35-timeline): the history and its Revert forms.
    let loaded = crate::console::history::load(state, user, key).await;
    let history = pages::link_history::Section {
        key: key.as_str(),
        kept: match &loaded {
            crate::console::history::Loaded::Entries(h, _) => pages::link_history::Kept::Entries(h),
            crate::console::history::Loaded::Unreadable => pages::link_history::Kept::Unreadable,
        },
        can_revert: viewer_of.can_edit && !link::is_tombstone(&doc),
        csrf: viewer_of.token(),
        rev: match &loaded {
            crate::console::history::Loaded::Entries(_, rev) => rev.as_deref(),
            _ => None,
        },
        zone: state.time_zone,
        problem: history_problem,
    };
    let view = pages::link::View {
        viewer: viewer(session, user),
        key: key.as_str(),
        short_url: public_url.short_url(key.as_str()),
        tag_text: crate::qr::short_url_text(
            public_url.origin(),
            key.as_str(),
            state.uppercase_prefix,
        ),
        created: link::created_at(&doc),
        changed: link::changed_at(&doc),
        created_via: link::created_via(&doc),
        changed_via: link::changed_via(&doc),
        recent,
        url: link.url.as_str(),
        inactive: link.inactive,
        expires: link.expires,
        notes: notes.as_deref(),
        title: link::title(&doc),
        store_away: source == Source::Snapshot,
        chain_warning: chain_warning.as_deref(),
        copies_warning: copies_warning.as_deref(),
        spec: shown.spec,
        period: shown.period,
        scans,
        shares: counts.scans.key_shares(key.as_str()),
        now: Utc::now(),
        deleted: link::is_tombstone(&doc).then(|| link::deleted_at(&doc)),
        refused,
        pdf: pdf.as_ref(),
        fallback: link.fallback.as_ref().map(Destination::as_str),
        rules: rules_section,
        destinations: destinations(counts.scans.as_ref(), key.as_str(), &doc, &link),
        history,
        imported_clicks: link::imported::imported_clicks(&doc),
        // Issue 38.
        scans_away: counts.away,
    };
    html(status, pages::link::page(&view))
}

/// Issue 34: the link's scans per destination, each named by what sends
/// scans there today (a stored document's rules that do not read are
/// none, as the snapshot serves the `url` alone then).
fn destinations(
    scans: &dyn ScanCounts,
    key: &str,
    doc: &Document,
    link: &Link,
) -> Option<Vec<pages::destinations::Row>> {
    let scans = scans.key_destinations(key)?;
    let rules = link::rules::Rules::from_stored(doc).ok();
    let today = pages::destinations::Today {
        key,
        url: &link.url,
        rules: rules.as_ref(),
        fallback: link.fallback.as_ref(),
    };
    Some(pages::destinations::rows(scans, &today))
}

/// The link page's breakdowns as CSV, what the page shows.
pub async fn breakdowns_csv(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let user = match logged_in(&req, &state) {
        Ok((_, user)) => user,
        Err(to_login) => return *to_login,
    };
    let key = match key_and_spec(req.query_string(), state.uppercase_prefix) {
        Ok((key, _)) => key,
        Err(msg) => return plain(StatusCode::BAD_REQUEST, &msg),
    };
    // Issue 38: asked of ClickHouse first with --scans-from.
    let today = Utc::now().date_naive();
    let counts =
        crate::console::scans_from::for_link(&user.domain.scans, key.as_str(), today).await;
    match counts.scans.key_shares(key.as_str()) {
        Some(shares) => super::csv_file(
            &format!("{}-breakdowns.csv", key.as_str().replace('/', "_")),
            // Issue 33: the link's fallback answers, of all time as its
            // breakdowns are, in their own row.
            pages::breakdowns::with_fallback(
                pages::breakdowns::link_csv(
                    key.as_str(),
                    user.domain
                        .snapshot
                        .load()
                        .texts(key.as_str())
                        .and_then(|t| t.title),
                    &shares,
                ),
                counts
                    .scans
                    .fallback_of(&[key.as_str()])
                    .and_then(|f| f.first().copied())
                    .unwrap_or_default(),
            ),
        ),
        None => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "breakdowns are not available (the scan index is still reading the log, or keeps none)",
        ),
    }
}

/// The tag as a file, the bytes `qrtag qr` writes for the same parameters.
pub async fn download(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let user = match logged_in(&req, &state) {
        Ok((_, user)) => user,
        Err(to_login) => return *to_login,
    };
    let (key, Shown { spec, .. }) = match key_and_spec(req.query_string(), state.uppercase_prefix) {
        Ok(ok) => ok,
        Err(msg) => return plain(StatusCode::BAD_REQUEST, &msg),
    };
    // The store, as the link's page reads it: a link created a moment ago
    // is downloadable before the snapshot the redirects use has it.
    match read(&user, &key).await {
        Ok((doc, _)) if link::is_tombstone(&doc) => {
            return plain(StatusCode::NOT_FOUND, "this link was deleted");
        }
        Ok(_) => {}
        Err(LinkError::NotFound(_)) => return plain(StatusCode::NOT_FOUND, "no such link"),
        Err(e) => {
            return plain(
                write_failure(&e).0,
                "the link cannot be read now; try again",
            );
        }
    }
    let file_key = key.clone();
    match state
        .renders
        .render(user.domain.public_url.get(), key, spec)
        .await
    {
        Ok(body) => HttpResponse::Ok()
            .content_type(spec.format.content_type())
            .insert_header((
                header::CONTENT_DISPOSITION,
                format!(
                    "attachment; filename=\"{}.{}\"",
                    file_key.as_str().replace('/', "_"),
                    spec.format
                ),
            ))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .body(body),
        Err(e) => crate::print::answer::refused(&e),
    }
}

/// The link's tag as a print-ready PDF: a label on stock at a position
/// (`form=label`) or a poster (`form=poster`), the options through the
/// CLI's parsers; a refused one is the link page again with the message
/// beside its field.
pub async fn pdf(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    use super::pdf::{self as make, Refused as Not};
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let key = form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(n, _)| n == "key")
        .map(|(_, v)| LinkKey::parse(&v));
    let key = match key {
        Some(Ok(key)) => key,
        Some(Err(e)) => return plain(StatusCode::BAD_REQUEST, &format!("bad key: {e}")),
        None => return plain(StatusCode::BAD_REQUEST, "no key given"),
    };
    let kind = make::kind(&req, print_form::Kind::Label);
    let doc = match read(&user, &key).await {
        Ok((doc, _)) if link::is_tombstone(&doc) => {
            return plain(StatusCode::NOT_FOUND, "this link was deleted");
        }
        Ok((doc, _)) => doc,
        Err(LinkError::NotFound(_)) => return plain(StatusCode::NOT_FOUND, "no such link"),
        Err(e) => {
            return plain(
                write_failure(&e).0,
                "the link cannot be read now; try again",
            );
        }
    };
    let file = format!("{}-{}.pdf", key.as_str().replace('/', "_"), kind.name());
    let made = match make::options(&req, "key") {
        Ok(options) => {
            let text = options.caption_text(&doc);
            make::render(&state, &user, &options, &[(key.clone(), text)], &file).await
        }
        Err(not) => Err(not),
    };
    match made {
        Ok(pdf) => pdf,
        Err(Not::Answer(res)) => *res,
        Err(Not::Form { field, message }) => {
            let refusal = Refusal {
                kind,
                refused: Refused {
                    field,
                    message: &message,
                },
                query: req.query_string(),
            };
            render(
                &state,
                &session,
                &user,
                &key,
                Shown::default(),
                StatusCode::BAD_REQUEST,
                Some(PageRefusal::Pdf(refusal)),
            )
            .await
        }
    }
}

/// The change an edit asks for, applied to the stored document.
type Change = Box<dyn Fn(&mut Document) + Send + Sync>;

/// The shape of every edit: the gate, the key, the change (or why not),
/// the write through [`links::update`], then back to the link's page; a
/// refused edit shows the page again with what was typed in `field` (the
/// form's one text field, by `name`; `None` for the state buttons).
async fn edit(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
    field: Option<&'static str>,
    change: impl Fn(&Form, &Domain) -> Result<Change, String>,
) -> HttpResponse {
    let (session, user, form) = match checked_write(&req, &state, &body) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let key = match form.text("key").map(LinkKey::parse) {
        Some(Ok(key)) => key,
        Some(Err(e)) => return plain(StatusCode::BAD_REQUEST, &format!("bad key: {e}")),
        None => return plain(StatusCode::BAD_REQUEST, "no key given"),
    };
    let back = link_path(key.as_str());
    let (status, at_fault, msg) = match change(&form, &user.domain) {
        Ok(apply) => {
            match links::update(user.store.as_ref(), &user.author(), &key, |d| apply(d)).await {
                Ok(_) => return see_other(&back),
                Err(e @ LinkError::NotFound(_)) => {
                    let (status, msg) = write_failure(&e);
                    return problem(&session, &user, status, &msg, &back);
                }
                Err(e) => {
                    let (status, msg) = write_failure(&e);
                    (status, None, msg)
                }
            }
        }
        Err(msg) => (StatusCode::BAD_REQUEST, field, msg),
    };
    let refused = Refused {
        field: at_fault,
        message: &msg,
    };
    let typed = field.and_then(|f| form.get(f)).unwrap_or_default();
    render(
        &state,
        &session,
        &user,
        &key,
        Shown::default(),
        status,
        Some(PageRefusal::Edit(refused, typed)),
    )
    .await
}

pub async fn destination(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    edit(req, state, body, Some("url"), |form, _| {
        let url = form.text("url").ok_or("Give a destination.")?;
        let url = Destination::parse(url).map_err(|e| format!("Destination: {e}"))?;
        Ok(Box::new(move |d| link::set_url(d, &url)))
    })
    .await
}

pub async fn set_state(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    edit(req, state, body, None, |form, _| {
        let inactive = match form.get("active") {
            Some("true") => false,
            Some("false") => true,
            _ => return Err("active must be true or false".into()),
        };
        Ok(Box::new(move |d| link::set_inactive(d, inactive)))
    })
    .await
}

pub async fn expiry(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let tz = state.time_zone;
    edit(req, state, body, Some("expires"), move |form, _| {
        // An empty field clears the expiry, as `never` does; a form without
        // the field at all is not one of ours, and must not clear it.
        let given = form.get("expires").ok_or("Give the expires field.")?;
        let expires = parse_future(given, Utc::now(), tz).map_err(|e| format!("Expires: {e}"))?;
        Ok(Box::new(move |d| link::set_expires(d, expires)))
    })
    .await
}

/// Deletes the link, once the form's box says so (deleting is for good:
/// the key is never used again); its page then says when.
pub async fn delete(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    edit(req, state, body, None, |form, _| {
        if form.get("confirm") != Some("yes") {
            return Err(format!(
                "{} was not deleted: tick the box to confirm (deleting is for good, the key is never used again).",
                form.get("key").unwrap_or_default()
            ));
        }
        Ok(Box::new(|d| link::set_deleted(d, Utc::now())))
    })
    .await
}

/// Sets or clears the fallback (issue 33): an absolute http(s) URL, or
/// an empty field for none.
pub async fn fallback(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    // Issue 33: one at the link's own short URL would loop while it is dead.
    edit(
        req,
        state,
        body,
        Some("fallback_url"),
        move |form, domain| {
            let origin = domain.public_url.load().origin().to_owned();
            // A form without the field at all is not one of ours.
            let given = form
                .get("fallback_url")
                .ok_or("Give the fallback_url field.")?
                .trim();
            let fallback = match given {
                "" => None,
                s => Some(Destination::parse_absolute(s).map_err(|e| format!("Fallback: {e}."))?),
            };
            if let (Some(f), Some(key)) = (&fallback, form.get("key")) {
                link::fallback_loop::check(f, key, &origin)
                    .map_err(|e| format!("Fallback: {e}."))?;
            }
            Ok(Box::new(move |d| {
                link::set_fallback_url(d, fallback.as_ref())
            }))
        },
    )
    .await
}

pub async fn notes(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    edit(req, state, body, Some("notes"), |form, _| {
        // Empty notes clear the field; a form without the field at all is
        // not one of ours, and must not clear anything.
        let notes = form.get("notes").ok_or("Give the notes field.")?;
        let notes = Notes::parse(notes).map_err(|e| format!("Notes: {e}."))?;
        Ok(Box::new(move |d| link::set_notes(d, &notes)))
    })
    .await
}

/// Sets or clears the title (issue 33), by the one rule every writer keeps.
pub async fn title(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    edit(req, state, body, Some("title"), |form, _| {
        let title = form.get("title").ok_or("Give the title field.")?;
        let title = Title::parse(title).map_err(|e| format!("Title: {e}."))?;
        Ok(Box::new(move |d| link::set_title(d, &title)))
    })
    .await
}
