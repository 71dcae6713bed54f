//! Who may log in, by store: the embedded store has one console password
//! (set with `qrtag console-password`); CouchDB has its own accounts, and a
//! console user logs in with theirs (`POST /_session`) so that every write
//! is made as them and CouchDB's roles and validation decide it.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::password;
use super::session::User;
use crate::links::served::Served;
use crate::snapshot::Snapshot;
use crate::store::couch::CouchStore;
use crate::store::options::CouchSettings;
use crate::store::sqlite::SqliteStore;
use crate::store::{ClusterStats, LinkStore};
use crate::values::role::Role;
use crate::values::secret::Secret;

/// The name shown for the embedded store's one account.
pub const PASSWORD_USER: &str = "admin";

/// A test seam (issue 35), until the embedded store has accounts of its
/// own: in a debug build, `QRTAG_TEST_PASSWORD_ROLE` (viewer, editor)
/// lowers the role the one password logs in with, so tests meet a
/// viewer's and an editor's console through the real server. It can only
/// lower the role, and a release build never reads it.
fn password_role() -> Role {
    #[cfg(debug_assertions)]
    if let Some(role) = std::env::var("QRTAG_TEST_PASSWORD_ROLE")
        .ok()
        .and_then(|r| Role::parse(&r).ok())
    {
        return role.min(Role::Admin);
    }
    Role::Admin
}

pub enum Accounts {
    /// One password, its hash in the database's `meta` table.
    Password {
        db: SqliteStore,
        store: Arc<dyn LinkStore>,
    },
    /// CouchDB's own accounts.
    Couch {
        settings: CouchSettings,
        http: reqwest::Client,
        /// What a user's writes wait for ([`Served`]).
        snapshot: Arc<Snapshot>,
        /// The service's cluster stats, shared by every user's store, so
        /// that `/readyz` counts the console's writes with fewer copies.
        cluster: Option<Arc<ClusterStats>>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The embedded store's one password did not match (there is no
    /// user name to get wrong).
    #[error("wrong password")]
    WrongPassword,
    /// CouchDB refused the user name and password (it does not say which).
    #[error("wrong user name or password")]
    Wrong,
    #[error(
        "no console password is set yet: open the setup link qrtag serve printed in its \
         terminal, or run qrtag console-password on the server"
    )]
    NoPassword,
    #[error(transparent)]
    Busy(#[from] super::check_gate::Busy),
    #[error("cannot check the login now: {0}")]
    Unavailable(String),
}

#[derive(Deserialize)]
struct SessionAnswer {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    roles: Vec<String>,
}

impl Accounts {
    pub fn couch(
        settings: CouchSettings,
        snapshot: &Arc<Snapshot>,
        cluster: Option<Arc<ClusterStats>>,
    ) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self::Couch {
            settings,
            http,
            snapshot: Arc::clone(snapshot),
            cluster,
        })
    }

    /// The database holding the one console password, when logins are by
    /// it (not CouchDB's accounts): where the first-run setup stores it.
    pub fn password_db(&self) -> Option<&SqliteStore> {
        match self {
            Self::Password { db, .. } => Some(db),
            Self::Couch { .. } => None,
        }
    }

    /// Whether logins are by the console password and none is set yet: the
    /// first run, when `serve` offers a setup link.
    pub async fn password_missing(&self) -> Result<bool, crate::store::StoreError> {
        match self.password_db() {
            Some(db) => Ok(!password::is_set(db).await?),
            None => Ok(false),
        }
    }

    /// The user the console password logs in as; `None` on CouchDB.
    pub fn password_user(&self) -> Option<User> {
        match self {
            Self::Password { store, .. } => Some(User {
                name: PASSWORD_USER.into(),
                role: password_role(),
                store: Arc::clone(store),
            }),
            Self::Couch { .. } => None,
        }
    }

    /// The name a login form's attempt is for: the typed one on CouchDB,
    /// the one account on the embedded store.
    pub fn login_name<'a>(&self, typed: &'a str) -> std::borrow::Cow<'a, str> {
        match self {
            Self::Password { .. } => PASSWORD_USER.into(),
            Self::Couch { .. } => typed.into(),
        }
    }

    /// Whether the login form asks for a user name.
    pub fn has_user_names(&self) -> bool {
        matches!(self, Self::Couch { .. })
    }

    pub async fn login(&self, name: &str, password: &str) -> Result<User, LoginError> {
        match self {
            Self::Password { db, .. } => {
                let stored = db
                    .meta(password::META_NAME)
                    .await
                    .map_err(|e| LoginError::Unavailable(e.to_string()))?
                    .ok_or(LoginError::NoPassword)?;
                let ok = password::verify_off_workers(stored, password)
                    .await
                    .map_err(|e| match e {
                        password::PasswordError::Busy(busy) => LoginError::Busy(busy),
                        e => LoginError::Unavailable(e.to_string()),
                    })?;
                if !ok {
                    return Err(LoginError::WrongPassword);
                }
                self.password_user().ok_or(LoginError::WrongPassword)
            }
            Self::Couch {
                settings,
                http,
                snapshot,
                cluster,
            } => {
                if name.is_empty() {
                    return Err(LoginError::Wrong);
                }
                // CouchDB hashes (PBKDF2) on its side: bounded all the same.
                let _turn = super::check_gate::PASSWORD_CHECKS.enter().await?;
                let mut url = settings.url.as_url().clone();
                if let Ok(mut path) = url.path_segments_mut() {
                    path.clear().push("_session");
                }
                let answer = http
                    .post(url)
                    .json(&serde_json::json!({"name": name, "password": password}))
                    .send()
                    .await
                    .map_err(|e| LoginError::Unavailable(format!("CouchDB unreachable: {e}")))?;
                match answer.status().as_u16() {
                    200 => {}
                    401 | 403 => return Err(LoginError::Wrong),
                    other => {
                        return Err(LoginError::Unavailable(format!("CouchDB answered {other}")));
                    }
                }
                let session: SessionAnswer = answer
                    .json()
                    .await
                    .map_err(|e| LoginError::Unavailable(format!("CouchDB's answer: {e}")))?;
                let role = Role::from_couch_roles(&session.roles);
                let as_user = settings
                    .clone()
                    .with_credentials(name, Some(Secret::new(password)));
                let store = CouchStore::new(&as_user)
                    .map_err(|e| LoginError::Unavailable(e.to_string()))?;
                let store = match cluster {
                    Some(c) => store.sharing(Arc::clone(c)),
                    None => store,
                };
                Ok(User {
                    name: session.name.unwrap_or_else(|| name.to_owned()),
                    role,
                    store: Served::wrap(Arc::new(store), Arc::clone(snapshot)),
                })
            }
        }
    }
}
