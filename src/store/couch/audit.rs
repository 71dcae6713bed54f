//! The audit log on CouchDB (issue 35): one document an entry in a
//! database of its own, `LINKS-audit` beside the links (`qrtag setup` makes
//! it), its ID the entry's (time-ordered, random-suffixed, so two nodes
//! never write the same one), read newest first through `_all_docs`.
//!
//! Why a database of its own: its `_security` admits the qrtag roles but
//! no other member of the links database, and its validation
//! (`assets/couchdb/validate_audit.js`) refuses any change or deletion of
//! an existing entry, from anyone, admins included: append-only is
//! enforced by CouchDB, not only by qrtag. The service's reader account is
//! a member because a failed login, which has no user to write as, is
//! recorded with it; CouchDB has no write-only membership, so that
//! account can read the log too (it holds no secret).

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::CouchHttp;
use crate::store::StoreError;
use crate::values::audit::{AuditEntry, AuditQuery};
use crate::values::couch::CouchDbName;

/// What the audit database's name adds to the links database's.
pub const SUFFIX: &str = "-audit";

/// Above every entry's ID (they start with a digit) and below `_design/`.
const ABOVE_ENTRIES: &str = "A";

/// The audit database beside `links`.
pub fn database_name(links: &CouchDbName) -> Result<CouchDbName, StoreError> {
    CouchDbName::parse(&format!("{links}{SUFFIX}")).map_err(|_| {
        StoreError::Other(format!(
            "the database name {links} leaves no room for its audit database \
             ({links}{SUFFIX} is over CouchDB's 238 characters); choose a shorter --couchdb-db"
        ))
    })
}

pub(crate) struct AuditDb {
    http: CouchHttp,
}

#[derive(Deserialize)]
struct Rows {
    rows: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    id: String,
    #[serde(default)]
    doc: Option<Value>,
}

impl AuditDb {
    pub(crate) fn beside(links: &CouchHttp) -> Result<Self, StoreError> {
        Ok(Self {
            http: links.for_db(database_name(links.db())?),
        })
    }

    pub(crate) async fn append(&self, entry: &AuditEntry) -> Result<(), StoreError> {
        let doc = document_of(entry)?;
        let req = self
            .http
            .request(Method::PUT, self.http.db_url(&[entry.id.as_str()]))
            .json(&doc);
        let resp = self.http.send(req).await?;
        let status = resp.status().as_u16();
        match status {
            201 | 202 => {
                self.http.cluster().wrote(status);
                Ok(())
            }
            404 => Err(self.http.missing_db()),
            409 => Err(StoreError::Conflict(format!("audit entry {}", entry.id))),
            _ => Err(self.http.refusal(resp, "writing an audit entry").await),
        }
    }

    pub(crate) async fn read(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let (lower, upper) = query.id_bounds();
        let mut url = self.http.db_url(&["_all_docs"]);
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("include_docs", "true");
            q.append_pair("descending", "true");
            // `startkey` is inclusive: one more row, the page's bound dropped.
            q.append_pair("limit", &query.limit.saturating_add(1).to_string());
            let start = upper.unwrap_or(ABOVE_ENTRIES);
            q.append_pair("startkey", &Value::String(start.to_owned()).to_string());
            if let Some(lower) = lower {
                q.append_pair("endkey", &Value::String(lower).to_string());
            }
        }
        let what = format!("database {} (_all_docs)", self.http.db());
        let resp = self.http.send(self.http.request(Method::GET, url)).await?;
        if resp.status().as_u16() == 404 {
            return Err(self.http.missing_db());
        }
        if !resp.status().is_success() {
            return Err(self.http.refusal(resp, &what).await);
        }
        let rows: Rows = self.http.read_json(resp, &what).await?;
        rows.rows
            .into_iter()
            .filter(|r| Some(r.id.as_str()) != upper && !r.id.starts_with('_'))
            .take(query.limit)
            .map(|r| entry_of(r.id, r.doc.unwrap_or(Value::Null)))
            .collect()
    }
}

/// The stored document of `entry`: its fields, the ID as `_id`.
fn document_of(entry: &AuditEntry) -> Result<Map<String, Value>, StoreError> {
    let Value::Object(mut doc) =
        serde_json::to_value(entry).map_err(|e| StoreError::Other(e.to_string()))?
    else {
        return Err(StoreError::Other("an audit entry is not an object".into()));
    };
    doc.shift_remove("id");
    doc.insert("_id".into(), Value::String(entry.id.clone()));
    Ok(doc)
}

fn entry_of(id: String, doc: Value) -> Result<AuditEntry, StoreError> {
    let Value::Object(mut doc) = doc else {
        return Err(StoreError::Other(format!(
            "the audit document {id:?} is not an object"
        )));
    };
    doc.shift_remove("_id");
    doc.shift_remove("_rev");
    doc.insert("id".into(), Value::String(id.clone()));
    serde_json::from_value(Value::Object(doc))
        .map_err(|e| StoreError::Other(format!("the audit document {id:?} is unreadable: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::actor::Actor;
    use crate::values::audit::{Event, Surface};

    #[test]
    fn an_entry_round_trips_through_its_document() {
        let entry = AuditEntry::new(
            chrono::Utc::now(),
            Actor::Console { user: "ann".into() },
            Surface::Console,
            Event::Logout,
        );
        let doc = document_of(&entry).expect("document");
        assert_eq!(doc["_id"], entry.id.as_str());
        assert!(!doc.contains_key("id"));
        let mut stored = Value::Object(doc);
        stored["_rev"] = "1-a".into();
        assert_eq!(entry_of(entry.id.clone(), stored).expect("entry"), entry);
        assert!(entry.id.as_str() < ABOVE_ENTRIES && ABOVE_ENTRIES < "_design/qrtag");
    }
}
