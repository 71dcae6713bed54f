//! Certificates shared by every node through CouchDB, in the admin-only
//! database `LINKS-certs` (`qrtag setup` makes it, see
//! `store::couch::certs`): `account-ID` (the ACME account's credentials),
//! `cert-NAME` (key and chain) and `lease-NAME`, the renewal lease. A lease is
//! taken by writing the document at the revision read (CouchDB's 409 means
//! another node wrote it first) and holds until its `expires_at`, so a node
//! that dies while renewing holds it no longer than the lease's time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use reqwest::Method;
use serde_json::{Value, json};

use super::{CertStore, Lease, StoreError, directory_id};
use crate::acme::CertificateBundle;
use crate::store::StoreError as CouchError;
use crate::store::couch::CouchHttp;
use crate::store::couch::certs;
use crate::store::options::CouchSettings;

pub struct CouchCertStore {
    http: CouchHttp,
}

fn couch(e: CouchError) -> StoreError {
    StoreError::Couch(e.to_string())
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// How a write went: stored at a new revision, or refused as a conflict.
enum Written {
    Stored(String),
    Conflict,
}

impl CouchCertStore {
    /// The certificates database beside `settings.db`, reached with the
    /// account `settings` gives: a server admin's, or (issue 36) one with
    /// the role `qrtag_certs`, which `qrtag setup` admits to it.
    pub fn new(settings: &CouchSettings) -> Result<Self, StoreError> {
        Ok(Self {
            http: certs::client(settings).map_err(couch)?,
        })
    }

    /// Issue 36: whether this account may read the certificates database
    /// (`serve --tls acme` on CouchDB asks before it starts); `Err` is the
    /// one line that says what to do.
    pub async fn check_access(&self, user: &str) -> Result<(), StoreError> {
        let db = self.http.db().to_string();
        let resp = self
            .http
            .send(self.http.request(Method::GET, self.http.db_url(&[])))
            .await
            .map_err(couch)?;
        match resp.status().as_u16() {
            200..=299 => Ok(()),
            401 | 403 => Err(StoreError::Access(format!(
                "the account {user} may not read the certificates database {db}: give it the role {role} (run `qrtag setup` as a server admin first, which admits that role to {db})",
                role = crate::store::couch::setup::CERTS_ROLE
            ))),
            404 => Err(StoreError::Access(format!(
                "there is no certificates database {db}: run `qrtag setup` as a server admin, then give the account {user} the role {role}",
                role = crate::store::couch::setup::CERTS_ROLE
            ))),
            _ => Err(couch(
                self.http.refusal(resp, &format!("reading {db}")).await,
            )),
        }
    }

    async fn get(&self, id: &str) -> Result<Option<Value>, StoreError> {
        let what = format!("reading {id}");
        let resp = self
            .http
            .send(self.http.request(Method::GET, self.http.db_url(&[id])))
            .await
            .map_err(couch)?;
        match resp.status().as_u16() {
            200..=299 => self
                .http
                .read_json(resp, &what)
                .await
                .map(Some)
                .map_err(couch),
            404 => Ok(None),
            _ => Err(couch(self.http.refusal(resp, &what).await)),
        }
    }

    async fn put(
        &self,
        id: &str,
        mut doc: Value,
        rev: Option<&str>,
    ) -> Result<Written, StoreError> {
        if let (Some(rev), Some(object)) = (rev, doc.as_object_mut()) {
            object.insert("_rev".into(), rev.into());
        }
        let what = format!("writing {id}");
        let resp = self
            .http
            .send(
                self.http
                    .request(Method::PUT, self.http.db_url(&[id]))
                    .json(&doc),
            )
            .await
            .map_err(couch)?;
        match resp.status().as_u16() {
            200..=299 => {
                let answer: Value = self.http.read_json(resp, &what).await.map_err(couch)?;
                Ok(Written::Stored(
                    answer["rev"].as_str().unwrap_or_default().to_string(),
                ))
            }
            409 => Ok(Written::Conflict),
            _ => Err(couch(self.http.refusal(resp, &what).await)),
        }
    }

    /// Writes `doc` over whatever `id` holds (a few tries if another writer
    /// comes between the read and the write).
    async fn replace(&self, id: &str, doc: Value) -> Result<(), StoreError> {
        for _ in 0..5 {
            let rev = self
                .get(id)
                .await?
                .and_then(|d| d["_rev"].as_str().map(String::from));
            if let Written::Stored(_) = self.put(id, doc.clone(), rev.as_deref()).await? {
                return Ok(());
            }
        }
        Err(StoreError::Couch(format!(
            "{id} kept changing while written"
        )))
    }
}

#[async_trait]
impl CertStore for CouchCertStore {
    async fn account(&self, directory: &str) -> Result<Option<String>, StoreError> {
        let id = format!("account-{}", directory_id(directory));
        Ok(self
            .get(&id)
            .await?
            .and_then(|doc| doc["credentials"].as_str().map(String::from)))
    }

    async fn put_account(&self, directory: &str, credentials: &str) -> Result<(), StoreError> {
        let id = format!("account-{}", directory_id(directory));
        self.replace(
            &id,
            json!({"directory": directory, "credentials": credentials}),
        )
        .await
    }

    async fn certificate(&self, name: &str) -> Result<Option<CertificateBundle>, StoreError> {
        let id = format!("cert-{name}");
        let Some(doc) = self.get(&id).await? else {
            return Ok(None);
        };
        match (doc["chain_pem"].as_str(), doc["key_pem"].as_str()) {
            (Some(chain), Some(key)) => Ok(Some(CertificateBundle {
                chain_pem: chain.into(),
                key_pem: key.into(),
            })),
            _ => Err(StoreError::Couch(format!(
                "{id} lacks chain_pem or key_pem: not a certificate qrtag stored"
            ))),
        }
    }

    async fn put_certificate(
        &self,
        name: &str,
        bundle: &CertificateBundle,
    ) -> Result<(), StoreError> {
        let id = format!("cert-{name}");
        self.replace(
            &id,
            json!({"chain_pem": bundle.chain_pem, "key_pem": bundle.key_pem}),
        )
        .await
    }

    async fn try_lease(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Box<dyn Lease>>, StoreError> {
        let id = format!("lease-{name}");
        let now = unix_now();
        let current = self.get(&id).await?;
        if let Some(doc) = &current {
            let expires_at = doc["expires_at"].as_i64().unwrap_or(0);
            if expires_at > now && doc["holder"].as_str() != Some(holder) {
                return Ok(None);
            }
        }
        let rev = current.and_then(|d| d["_rev"].as_str().map(String::from));
        let doc = json!({
            "holder": holder,
            "taken_at": now,
            "expires_at": now.saturating_add(ttl.as_secs() as i64),
        });
        match self.put(&id, doc, rev.as_deref()).await? {
            Written::Stored(rev) => Ok(Some(Box::new(CouchLease {
                http: self.http.clone(),
                id,
                rev,
            }))),
            Written::Conflict => Ok(None),
        }
    }

    async fn put_challenge(&self, token: &str, key_authorization: &str) -> Result<(), StoreError> {
        self.replace(
            &format!("challenge-{token}"),
            json!({"key_authorization": key_authorization, "written_at": unix_now()}),
        )
        .await
    }

    async fn remove_challenge(&self, token: &str) -> Result<(), StoreError> {
        let id = format!("challenge-{token}");
        let Some(rev) = self
            .get(&id)
            .await?
            .and_then(|d| d["_rev"].as_str().map(String::from))
        else {
            return Ok(());
        };
        let mut url = self.http.db_url(&[&id]);
        url.query_pairs_mut().append_pair("rev", &rev);
        let what = format!("removing {id}");
        let resp = self
            .http
            .send(self.http.request(Method::DELETE, url))
            .await
            .map_err(couch)?;
        match resp.status().as_u16() {
            200..=299 | 404 | 409 => Ok(()),
            _ => Err(couch(self.http.refusal(resp, &what).await)),
        }
    }

    async fn challenge(&self, token: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .get(&format!("challenge-{token}"))
            .await?
            .and_then(|d| d["key_authorization"].as_str().map(String::from)))
    }
}

/// A lease document at the revision this node wrote.
struct CouchLease {
    http: CouchHttp,
    id: String,
    rev: String,
}

#[async_trait]
impl Lease for CouchLease {
    /// Deletes the document at its revision; a 409 means it lapsed and
    /// another node took it, which is theirs to keep.
    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        let mut url = self.http.db_url(&[&self.id]);
        url.query_pairs_mut().append_pair("rev", &self.rev);
        let what = format!("releasing {}", self.id);
        let resp = self
            .http
            .send(self.http.request(Method::DELETE, url))
            .await
            .map_err(couch)?;
        match resp.status().as_u16() {
            200..=299 | 404 | 409 => Ok(()),
            _ => Err(couch(self.http.refusal(resp, &what).await)),
        }
    }
}
