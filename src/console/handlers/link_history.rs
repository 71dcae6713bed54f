//! The link page's history and its Revert form (issue 35): the same read
//! and revert as `qrtag history`/`revert` and the REST API
//! (`links::history`), made at the revision the page showed, so that a
//! change someone made meanwhile is said rather than overwritten.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use super::link::{PageRefusal, render};
use crate::console::ConsoleState;
use crate::console::http::{checked_write, link_path, plain, problem, see_other, write_failure};
use crate::link::history::RevertError;
use crate::links::LinkError;
use crate::links::history::{self as history, RevertFailed};
use crate::store::StoreError;
use crate::values::link_key::LinkKey;

/// An entry number as the form sends it: 1 or more.
fn entry_number(given: &str) -> Option<u64> {
    given.trim().parse::<u64>().ok().filter(|n| *n >= 1)
}

/// Puts the link back as it was after the entry posted, at the revision
/// the page was made from; back to the timeline, or the page again saying
/// why not.
pub async fn revert(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
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
    let given = form.get("to").unwrap_or_default();
    let (status, msg) = match (entry_number(given), form.text("rev")) {
        (None, _) => (
            StatusCode::BAD_REQUEST,
            format!("Nothing was reverted: {given:?} is no entry number (1 or more)."),
        ),
        (Some(_), None) => (
            StatusCode::BAD_REQUEST,
            "Nothing was reverted: the form gave no revision; revert from the link's page."
                .to_owned(),
        ),
        (Some(to), Some(rev)) => {
            match history::revert(user.store.as_ref(), &user.author(), &key, to, Some(rev)).await
            {
                Ok(_) => return see_other(&format!("{back}#history")),
                Err(RevertFailed::Revert(
                    e @ (RevertError::NoEntry { .. }
                    | RevertError::NoHistory { .. }
                    | RevertError::Dropped { .. }),
                )) => (StatusCode::NOT_FOUND, format!("Nothing was reverted: {e}.")),
                Err(RevertFailed::Revert(e)) => {
                    (StatusCode::CONFLICT, format!("Nothing was reverted: {e}."))
                }
                Err(RevertFailed::Link(LinkError::Store(StoreError::Conflict(_)))) => (
                    StatusCode::CONFLICT,
                    "Nothing was reverted: someone changed this link meanwhile. Here it is as it is now; look at its history again and revert from there."
                        .to_owned(),
                ),
                Err(RevertFailed::Link(e @ LinkError::NotFound(_))) => {
                    let (status, msg) = write_failure(&e);
                    return problem(&session, &user, status, &msg, &back);
                }
                Err(RevertFailed::Link(e)) => write_failure(&e),
            }
        }
    };
    render(
        &state,
        &session,
        &user,
        &key,
        Default::default(),
        status,
        Some(PageRefusal::History(&msg)),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_number_is_a_whole_number_from_one() {
        assert_eq!(entry_number("3"), Some(3));
        assert_eq!(entry_number(" 12 "), Some(12));
        for bad in ["0", "-1", "two", "1.5", "", "99999999999999999999999"] {
            assert_eq!(entry_number(bad), None, "{bad:?}");
        }
    }
}
