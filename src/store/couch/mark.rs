//! The markers of the database states snapshot files were taken from, kept
//! in CouchDB.
//!
//! One local document, `_local/qrtag-snapshot-marks`, lists the random
//! markers of the latest saves of every server on the database; each save
//! adds its own and drops the one its previous save added. Local documents
//! are not replicated and not in `_changes`, but they are in the database's
//! own files. So a database restored from a backup taken before a save lacks
//! that save's marker, and one rebuilt by replication or re-created lacks
//! all: the file is not believed for it (the follower loads every link
//! instead), even once it has been edited past the file's sequence. A list
//! rather than one value per server, because the servers of one database
//! all default to the same file path, and a copy of one server's file is a
//! valid start for another. CouchDB 3's `instance_start_time` is always
//! `"0"`, so it cannot tell a restored database from the one saved.

use std::collections::VecDeque;

use reqwest::Method;
use serde::{Deserialize, Serialize};

use super::CouchHttp;
use crate::store::StoreError;

const DOC: [&str; 2] = ["_local", "qrtag-snapshot-marks"];

/// Markers kept: about one per server, plus one per restart that never
/// saved again. Past it the oldest go, and a file saved with one of those
/// is not believed: a full load, never a wrong table.
pub const MAX_MARKS: usize = 500;

/// Attempts at adding a marker when other servers write the document at
/// the same moment.
const ATTEMPTS: usize = 8;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Marks {
    #[serde(rename = "_rev", skip_serializing_if = "Option::is_none", default)]
    rev: Option<String>,
    #[serde(default)]
    marks: VecDeque<String>,
}

/// The document, or an empty one with no revision.
async fn read(http: &CouchHttp) -> Result<Marks, StoreError> {
    let req = http.request(Method::GET, http.db_url(&DOC));
    let resp = http.send(req).await?;
    if resp.status().as_u16() == 404 {
        http.check_db().await?;
        return Ok(Marks::default());
    }
    if !resp.status().is_success() {
        return Err(http.refusal(resp, "reading the snapshot markers").await);
    }
    http.read_json(resp, "reading the snapshot markers").await
}

/// Whether `mark`, read from a snapshot file, is one the database holds.
/// Asked of CouchDB even for a file saved without one (by an older
/// version), so the answer waits for CouchDB like any other.
pub(crate) async fn holds(http: &CouchHttp, mark: Option<&str>) -> Result<bool, StoreError> {
    let marks = read(http).await?.marks;
    Ok(mark.is_some_and(|mark| marks.iter().any(|m| m == mark)))
}

/// The list after a save that replaces `previous` (its own last marker)
/// with `mark`: pure, so the bound and the order are tested without a server.
fn with_mark(mut marks: VecDeque<String>, previous: Option<&str>, mark: &str) -> VecDeque<String> {
    if let Some(previous) = previous {
        marks.retain(|m| m != previous);
    }
    marks.push_back(mark.to_owned());
    while marks.len() > MAX_MARKS {
        marks.pop_front();
    }
    marks
}

/// Adds a fresh marker (in place of `previous`, this server's last one) and
/// returns it; retried when another server wrote the document meanwhile.
pub(crate) async fn renew(http: &CouchHttp, previous: Option<&str>) -> Result<String, StoreError> {
    let mark = format!("{:032x}", rand::random::<u128>());
    for _ in 0..ATTEMPTS {
        let doc = read(http).await?;
        let doc = Marks {
            rev: doc.rev,
            marks: with_mark(doc.marks, previous, &mark),
        };
        let req = http.request(Method::PUT, http.db_url(&DOC)).json(&doc);
        let resp = http.send(req).await?;
        if resp.status().as_u16() == 409 {
            continue;
        }
        if !resp.status().is_success() {
            return Err(http
                .refusal(resp, "recording the snapshot file's marker")
                .await);
        }
        return Ok(mark);
    }
    Err(StoreError::Other(format!(
        "recording the snapshot file's marker: the document changed under {ATTEMPTS} attempts in a row"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(marks: &[&str]) -> VecDeque<String> {
        marks.iter().map(|m| m.to_string()).collect()
    }

    #[test]
    fn a_save_replaces_its_own_previous_marker_only() {
        let marks = with_mark(list(&["a1", "b1"]), Some("a1"), "a2");
        assert_eq!(marks, list(&["b1", "a2"]));
        let marks = with_mark(marks, None, "c1");
        assert_eq!(marks, list(&["b1", "a2", "c1"]));
    }

    #[test]
    fn the_oldest_markers_go_past_the_bound() {
        let mut marks = VecDeque::new();
        for i in 0..MAX_MARKS + 3 {
            marks = with_mark(marks, None, &i.to_string());
        }
        assert_eq!(marks.len(), MAX_MARKS);
        assert_eq!(marks.front().map(String::as_str), Some("3"));
        assert_eq!(
            marks.back().map(String::as_str),
            Some((MAX_MARKS + 2).to_string().as_str())
        );
    }
}
