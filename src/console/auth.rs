//! Who may log in, by store: the embedded store has its own accounts
//! (issue 35: users by name, `qrtag user`; the password of earlier
//! versions is the user `admin`); CouchDB has its own accounts, and a
//! console user logs in with theirs (`POST /_session`) so that every write
//! is made as them and CouchDB's roles and validation decide it.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::domains::Domains;
use super::password;
use super::session::User;
use super::shown::DomainAccess;
use crate::links::served::Served;
use crate::store::ClusterStats;
use crate::store::couch::CouchStore;
use crate::store::options::CouchSettings;
use crate::store::sqlite::SqliteStore;
use crate::values::role::Role;
use crate::values::secret::Secret;

/// The account the first-run setup, `qrtag console-password` and the
/// single password of earlier versions log in as; a login form sent with
/// no user name is for it, so old bookmarks and scripts keep working.
pub const PASSWORD_USER: &str = crate::store::sqlite::users::FIRST_ADMIN;

/// What a login gives: the user, and on the embedded store the user's
/// session counter at login, which ends the session when it moves
/// ([`super::user_sync`]).
pub struct LoggedIn {
    pub user: User,
    pub mark: Option<i64>,
}

pub enum Accounts {
    /// The embedded store's users (`store::sqlite::users`), writing to
    /// each domain through its own `Served` writes.
    Password {
        db: SqliteStore,
        domains: Arc<Domains>,
    },
    /// CouchDB's own accounts.
    Couch {
        /// Issue 36: each domain's database, in [`Domains::all`]'s order
        /// (`None`: a domain on the embedded store, written as the service).
        settings: Vec<Option<CouchSettings>>,
        http: reqwest::Client,
        /// What a user's writes wait for ([`Served`]), and where they go.
        domains: Arc<Domains>,
        /// The service's cluster stats, shared by every user's store, so
        /// that `/readyz` counts the console's writes with fewer copies.
        cluster: Option<Arc<ClusterStats>>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The embedded store's one password did not match (before accounts).
    #[error("wrong password")]
    WrongPassword,
    /// The user name and password did not match (neither says which).
    #[error("wrong user name or password")]
    Wrong,
    #[error(
        "no console password is set yet: open the setup link qrtag serve printed in its \
         terminal, or run qrtag console-password on the server"
    )]
    NoPassword,
    /// Issue 36: the password was right, and the account may open none of
    /// the service's domains (on CouchDB: no domain's database admits it).
    #[error("this account may open none of this service's domains: ask an admin to give it one")]
    NoDomain,
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

/// Issue 36: whether CouchDB lets `name` read the database `db` (its
/// `_security` names them, a role of theirs, or no one): a `GET` of the
/// database with their credentials.
async fn admits(
    http: &reqwest::Client,
    db: &CouchSettings,
    name: &str,
    password: &str,
) -> Result<bool, LoginError> {
    let mut url = db.url.as_url().clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.clear().push(db.db.as_str());
    }
    let answer = http
        .get(url)
        .basic_auth(name, Some(password))
        .send()
        .await
        .map_err(|e| LoginError::Unavailable(format!("CouchDB unreachable: {e}")))?;
    match answer.status().as_u16() {
        200 => Ok(true),
        401 | 403 | 404 => Ok(false),
        other => Err(LoginError::Unavailable(format!(
            "CouchDB answered {other} for the database {}",
            db.db.as_str()
        ))),
    }
}

/// A user on their first domain; `None` when they may see none.
fn user_of(name: String, role: Role, access: DomainAccess, domains: &Domains) -> Option<User> {
    let at = access.allowed().next()?;
    Some(User {
        name,
        role,
        store: Arc::clone(access.store(at)?),
        domain: Arc::clone(domains.all().get(at)?),
        access: Arc::new(access),
        switcher: None,
    })
}

impl Accounts {
    /// `settings`: each domain's CouchDB database, in [`Domains::all`]'s
    /// order.
    pub fn couch(
        settings: Vec<Option<CouchSettings>>,
        domains: &Arc<Domains>,
        cluster: Option<Arc<ClusterStats>>,
    ) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self::Couch {
            settings,
            http,
            domains: Arc::clone(domains),
            cluster,
        })
    }

    /// Every domain, the default first.
    pub fn domains(&self) -> &Arc<Domains> {
        match self {
            Self::Password { domains, .. } | Self::Couch { domains, .. } => domains,
        }
    }

    /// The database holding the one console password, when logins are by
    /// it (not CouchDB's accounts): where the first-run setup stores it.
    pub fn password_db(&self) -> Option<&SqliteStore> {
        match self {
            Self::Password { db, .. } => Some(db),
            Self::Couch { .. } => None,
        }
    }

    /// Whether logins are by the embedded store's accounts and there is no
    /// user yet: the first run, when `serve` offers a setup link.
    pub async fn password_missing(&self) -> Result<bool, crate::store::StoreError> {
        match self.password_db() {
            Some(db) => Ok(!password::is_set(db).await?),
            None => Ok(false),
        }
    }

    /// The embedded store's user `name` with `role`, on the domains
    /// `only` names (issue 36; `None`: every domain); `None` on CouchDB,
    /// or when none of their domains is served.
    pub fn embedded_user(&self, name: &str, role: Role, only: Option<&[String]>) -> Option<User> {
        match self {
            Self::Password { domains, .. } => {
                let access = match only {
                    None => DomainAccess::every(domains),
                    Some(hosts) => DomainAccess::only(domains, |d| {
                        hosts.iter().any(|h| d.name().eq_ignore_ascii_case(h))
                    }),
                };
                user_of(name.to_owned(), role, access, domains)
            }
            Self::Couch { .. } => None,
        }
    }

    /// The first admin, as the first-run setup logs in; `None` on CouchDB.
    pub fn password_user(&self) -> Option<User> {
        self.embedded_user(PASSWORD_USER, Role::Admin, None)
    }

    /// The name a login form's attempt is for: the typed one, or on the
    /// embedded store [`PASSWORD_USER`] when none was typed.
    pub fn login_name<'a>(&self, typed: &'a str) -> std::borrow::Cow<'a, str> {
        match self {
            Self::Password { .. } if typed.is_empty() => PASSWORD_USER.into(),
            _ => typed.into(),
        }
    }

    /// Whether the login form asks for a user name: on both stores now
    /// (issue 35); the embedded store's form takes an empty one as
    /// [`PASSWORD_USER`].
    pub fn has_user_names(&self) -> bool {
        true
    }

    /// Whether the login form's user name is CouchDB's.
    pub fn is_couch(&self) -> bool {
        matches!(self, Self::Couch { .. })
    }

    pub async fn login(&self, name: &str, password: &str) -> Result<LoggedIn, LoginError> {
        match self {
            Self::Password { db, .. } => {
                let unavailable =
                    |e: crate::store::StoreError| LoginError::Unavailable(e.to_string());
                let name = self.login_name(name);
                let account = db.account(&name).await.map_err(unavailable)?;
                let stored = match &account {
                    Some(crate::store::sqlite::users::Account {
                        hash: Some(hash), ..
                    }) => hash.clone(),
                    // An unknown or invited user costs the same check as a
                    // wrong password, so the time taken names no user.
                    _ => {
                        if !db.has_users().await.map_err(unavailable)? {
                            return Err(LoginError::NoPassword);
                        }
                        password::stand_in().to_owned()
                    }
                };
                let ok = password::verify_off_workers(stored, password)
                    .await
                    .map_err(|e| match e {
                        password::PasswordError::Busy(busy) => LoginError::Busy(busy),
                        e => LoginError::Unavailable(e.to_string()),
                    })?;
                match account {
                    Some(account) if ok && account.hash.is_some() => Ok(LoggedIn {
                        user: self
                            .embedded_user(&name, account.role, account.domains.as_deref())
                            .ok_or(LoginError::NoDomain)?,
                        mark: Some(account.sessions),
                    }),
                    _ => Err(LoginError::Wrong),
                }
            }
            Self::Couch {
                settings,
                http,
                domains,
                cluster,
            } => {
                if name.is_empty() {
                    return Err(LoginError::Wrong);
                }
                // CouchDB hashes (PBKDF2) on its side: bounded all the same.
                let _turn = super::check_gate::PASSWORD_CHECKS.enter().await?;
                let Some(Some(home)) = settings.first() else {
                    return Err(LoginError::Unavailable("no CouchDB database".into()));
                };
                let mut url = home.url.as_url().clone();
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
                // Issue 36: the user's own account on each domain's
                // database, so CouchDB's `_security` and validation judge
                // every write on every domain.
                let mut stores = Vec::with_capacity(settings.len());
                for (at, (domain, db)) in domains.all().iter().zip(settings).enumerate() {
                    let Some(db) = db else {
                        stores.push(Some(Arc::clone(&domain.writes)));
                        continue;
                    };
                    // The user's domains are the databases whose
                    // `_security` admits them, asked once at login.
                    if !admits(http, db, name, password).await? {
                        stores.push(None);
                        continue;
                    }
                    let as_user = db
                        .clone()
                        .with_credentials(name, Some(Secret::new(password)));
                    let store = CouchStore::new(&as_user)
                        .map_err(|e| LoginError::Unavailable(e.to_string()))?;
                    let store = match cluster {
                        Some(c) if at == 0 => store.sharing(Arc::clone(c)),
                        _ => store,
                    };
                    stores.push(Some(Served::wrap(
                        Arc::new(store),
                        Arc::clone(&domain.snapshot),
                    )));
                }
                let name = session.name.unwrap_or_else(|| name.to_owned());
                let user = user_of(name, role, DomainAccess::from_stores(stores), domains)
                    .ok_or(LoginError::NoDomain)?;
                Ok(LoggedIn { user, mark: None })
            }
        }
    }
}
