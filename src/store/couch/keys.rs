//! API keys on CouchDB: one document a key in a database of their own,
//! `LINKS-keys` beside the links database `LINKS` (`qrtag setup` makes it).
//!
//! Why not the links database: CouchDB cannot hide one document from a
//! database's members, so the service's reader account would read every
//! key record; and a `_local` document, which `validate_doc_update` never
//! sees, is writable by any member, so a reader could mint itself a write
//! key. A database of its own has its own `_security`: its members are
//! the `qrtag_editor` and `qrtag_admin` roles only, so a reader (the account `qrtag serve`
//! follows the links with) can neither read nor write a key, and its own
//! validation (`assets/couchdb/validate_api_key.js`) lets an editor create
//! a key and revoke it, never change or un-revoke one (only an admin may).
//! The records hold a SHA-256 of a 190-bit random secret, so even a
//! member who reads one learns nothing that lets them guess the key.
//!
//! A key is read on every API request (one `GET` by ID), never cached, so
//! a revocation holds from the next request on every node.

use reqwest::Method;
use serde_json::{Map, Value};

use super::CouchHttp;
use crate::store::StoreError;
use crate::values::api_key::{KeyId, KeyRecord};
use crate::values::couch::CouchDbName;

/// What the API keys database's name adds to the links database's.
pub const SUFFIX: &str = "-keys";

/// How many times a key is re-read after a conflicting write.
const ATTEMPTS: usize = 5;

/// The API keys database beside `links`.
pub fn database_name(links: &CouchDbName) -> Result<CouchDbName, StoreError> {
    CouchDbName::parse(&format!("{links}{SUFFIX}")).map_err(|_| {
        StoreError::Other(format!(
            "the database name {links} leaves no room for its API keys database \
             ({links}{SUFFIX} is over CouchDB's 238 characters); choose a shorter --couchdb-db"
        ))
    })
}

/// The API keys database, spoken to with the account of `links`.
pub(crate) struct KeyDb {
    http: CouchHttp,
}

impl KeyDb {
    pub(crate) fn beside(links: &CouchHttp) -> Result<Self, StoreError> {
        Ok(Self {
            http: links.for_db(database_name(links.db())?),
        })
    }

    /// The record under `id`; `None` when there is none (the database
    /// missing is an error, naming `qrtag setup`).
    pub(crate) async fn get(&self, id: &KeyId) -> Result<Option<KeyRecord>, StoreError> {
        Ok(self.read(id).await?.map(|(record, _)| record))
    }

    /// The record under `id` and its revision.
    async fn read(&self, id: &KeyId) -> Result<Option<(KeyRecord, String)>, StoreError> {
        let what = format!("reading API key {id}");
        let resp = self
            .http
            .send(
                self.http
                    .request(Method::GET, self.http.db_url(&[id.as_str()])),
            )
            .await?;
        match resp.status().as_u16() {
            200 => {
                let doc: Value = self.http.read_json(resp, &what).await?;
                let rev = doc
                    .get("_rev")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                Ok(Some((record_of(doc)?, rev)))
            }
            404 => {
                self.http.check_db().await?;
                Ok(None)
            }
            _ => Err(self.http.refusal(resp, &what).await),
        }
    }

    /// Every record, by ID.
    pub(crate) async fn all(&self) -> Result<Vec<KeyRecord>, StoreError> {
        let mut docs = Vec::new();
        self.http
            .each_page(|page| docs.extend(page.into_iter().map(|(_, doc)| doc)))
            .await?;
        docs.into_iter()
            .map(|doc| record_of(doc.map_err(StoreError::Other)?))
            .collect()
    }

    /// Writes `record` over whatever is stored under its ID, at the
    /// revision read just before (read again after a conflict).
    pub(crate) async fn put(&self, record: &KeyRecord) -> Result<(), StoreError> {
        let id = KeyId::parse(&record.id)
            .ok_or_else(|| StoreError::Other(format!("{:?} is not an API key ID", record.id)))?;
        let what = format!("writing API key {id}");
        for _ in 0..ATTEMPTS {
            let mut doc = document_of(record)?;
            if let Some((_, rev)) = self.read(&id).await? {
                doc.insert("_rev".into(), Value::String(rev));
            }
            let req = self
                .http
                .request(Method::PUT, self.http.db_url(&[id.as_str()]))
                .json(&doc);
            let resp = self.http.send(req).await?;
            let status = resp.status().as_u16();
            match status {
                201 | 202 => {
                    self.http.cluster().wrote(status);
                    return Ok(());
                }
                409 => continue,
                404 => return Err(self.http.missing_db()),
                _ => return Err(self.http.refusal(resp, &what).await),
            }
        }
        Err(StoreError::Conflict(format!("API key {id}")))
    }
}

/// The stored document of `record`: its fields, the ID as `_id`.
fn document_of(record: &KeyRecord) -> Result<Map<String, Value>, StoreError> {
    let Value::Object(mut doc) =
        serde_json::to_value(record).map_err(|e| StoreError::Other(e.to_string()))?
    else {
        return Err(StoreError::Other(
            "an API key record is not an object".into(),
        ));
    };
    doc.shift_remove("id");
    doc.insert("_id".into(), Value::String(record.id.clone()));
    Ok(doc)
}

/// The record a stored document holds.
fn record_of(doc: Value) -> Result<KeyRecord, StoreError> {
    let Value::Object(mut doc) = doc else {
        return Err(StoreError::Other(
            "an API key document is not an object".into(),
        ));
    };
    let id = doc.shift_remove("_id").unwrap_or(Value::Null);
    doc.shift_remove("_rev");
    let shown = id.as_str().unwrap_or("?").to_owned();
    doc.insert("id".into(), id);
    serde_json::from_value(Value::Object(doc)).map_err(|e| {
        StoreError::Other(format!("the API key document {shown:?} is unreadable: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::api_key::{NewKey, Scope};

    #[test]
    fn a_record_round_trips_through_its_document() {
        let mut record = NewKey::generate("shop", Scope::Write, chrono::Utc::now()).record;
        let doc = document_of(&record).expect("document");
        assert_eq!(doc["_id"], record.id.as_str());
        assert!(!doc.contains_key("id") && !doc.contains_key("revoked_at"));
        let mut stored = Value::Object(doc);
        stored["_rev"] = "1-a".into();
        assert_eq!(record_of(stored).expect("record"), record);
        record.revoked_at = Some("2026-11-26T10:00:00Z".into());
        let doc = document_of(&record).expect("document");
        assert_eq!(record_of(Value::Object(doc)).expect("record"), record);
        let err = record_of(serde_json::json!({"_id": "Ab3dE5gH", "scope": "all"}))
            .expect_err("not a record");
        assert!(err.to_string().contains("\"Ab3dE5gH\""), "{err}");
    }

    #[test]
    fn the_keys_database_is_named_after_the_links_one() {
        let links = CouchDbName::parse("qr/links").expect("name");
        assert_eq!(
            database_name(&links).expect("fits").as_str(),
            "qr/links-keys"
        );
        let long = CouchDbName::parse(&"a".repeat(236)).expect("name");
        assert!(database_name(&long).is_err());
    }
}
