//! The public URL recorded with a CouchDB database's links: the origin
//! every later tag is printed with, so it is kept where only an admin can
//! write it, the `public_url` field of the design document `qrtag setup`
//! owns (`_design/qrtag`; CouchDB lets only database admins write design
//! documents).
//!
//! It used to be kept in `_local/qrtag-service`, which every member of the
//! database may write, the reader account `serve` uses included: a reader
//! could have pointed every label printed afterwards at another origin
//! (issue 30). A URL found only there is refused, never used; `qrtag setup`,
//! run by an admin, moves it into the design document and says so.

use reqwest::Method;
use serde_json::{Map, Value};

use super::CouchHttp;
use super::setup::DESIGN_ID;
use crate::store::StoreError;

/// The design document's field.
const FIELD: &str = "public_url";
/// Where earlier versions recorded it.
const LEGACY: [&str; 2] = ["_local", "qrtag-service"];
const DESIGN: [&str; 2] = ["_design", "qrtag"];
/// Re-reads after a conflicting write of the design document.
const ATTEMPTS: usize = 5;

/// A document and its revision; `None` when it does not exist.
async fn read(
    http: &CouchHttp,
    segments: &[&str],
) -> Result<Option<Map<String, Value>>, StoreError> {
    let what = format!("reading {}", segments.join("/"));
    let resp = http
        .send(http.request(Method::GET, http.db_url(segments)))
        .await?;
    match resp.status().as_u16() {
        200..=299 => http.read_json(resp, &what).await.map(Some),
        404 => {
            http.check_db().await?;
            Ok(None)
        }
        _ => Err(http.refusal(resp, &what).await),
    }
}

fn url_in(doc: Option<&Map<String, Value>>) -> Option<String> {
    doc?.get(FIELD)?.as_str().map(str::to_owned)
}

/// The recorded public URL. One found only in the legacy local document is
/// refused with what to do.
pub async fn recorded(http: &CouchHttp) -> Result<Option<String>, StoreError> {
    if let Some(url) = url_in(read(http, &DESIGN).await?.as_ref()) {
        return Ok(Some(url));
    }
    match url_in(read(http, &LEGACY).await?.as_ref()) {
        None => Ok(None),
        Some(url) => Err(StoreError::Other(format!(
            "the public URL {url} is recorded in _local/qrtag-service, which any member of \
             database {} may write, so it is not used: have a CouchDB admin run qrtag setup, \
             which moves it into {DESIGN_ID} (check the URL it prints)",
            http.db()
        ))),
    }
}

/// Records `url` in the design document: only if none is recorded yet, or
/// with `replace` whatever was. Says whether it wrote. Needs a database
/// admin; anyone else is refused by CouchDB, and that is said plainly.
pub async fn record(http: &CouchHttp, url: &str, replace: bool) -> Result<bool, StoreError> {
    for _ in 0..ATTEMPTS {
        let mut doc = read(http, &DESIGN).await?.unwrap_or_default();
        if !replace && url_in(Some(&doc)).is_some() {
            return Ok(false);
        }
        doc.insert("_id".into(), Value::String(DESIGN_ID.into()));
        doc.insert(FIELD.into(), Value::String(url.to_owned()));
        let resp = http
            .send(http.request(Method::PUT, http.db_url(&DESIGN)).json(&doc))
            .await?;
        match resp.status().as_u16() {
            200..=299 => return Ok(true),
            // Written in between (by setup, or another first record): read again.
            409 => continue,
            401 | 403 => {
                return Err(StoreError::Refused {
                    status: resp.status().as_u16(),
                    detail: format!(
                        "only an admin of database {} can record the public URL (it is kept in \
                         {DESIGN_ID}): run this once with an admin's credentials",
                        http.db()
                    ),
                });
            }
            _ => return Err(http.refusal(resp, "recording the public URL").await),
        }
    }
    Err(StoreError::Conflict(DESIGN_ID.into()))
}

/// For `qrtag setup` (an admin): a URL only the legacy local document
/// holds is moved into the design document and the local document removed;
/// returns the URL moved, for setup to print. A URL the design document
/// already holds wins, and the legacy document is removed all the same.
pub async fn move_legacy(http: &CouchHttp) -> Result<Option<String>, StoreError> {
    let Some(legacy) = read(http, &LEGACY).await? else {
        return Ok(None);
    };
    let moved = match url_in(Some(&legacy)) {
        Some(url) if record(http, &url, false).await? => Some(url),
        _ => None,
    };
    if let Some(rev) = legacy.get("_rev").and_then(Value::as_str) {
        let mut url = http.db_url(&LEGACY);
        url.query_pairs_mut().append_pair("rev", rev);
        let resp = http.send(http.request(Method::DELETE, url)).await?;
        if !resp.status().is_success() && resp.status().as_u16() != 404 {
            return Err(http.refusal(resp, "removing _local/qrtag-service").await);
        }
    }
    Ok(moved)
}
