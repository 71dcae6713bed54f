//! Accounts on the embedded store (issue 35): the `users` and `invitations`
//! tables, beside the links, so a backup of the database carries them.
//!
//! Only hashes are kept: a password's argon2 PHC string (hashed by the
//! caller, `console::password`, off the async workers) and an invitation
//! token's SHA-256. Each rule that spans rows (the last admin, an
//! invitation used once) is checked and written in one transaction, so two
//! processes (the CLI and a server) cannot both pass it.
//!
//! `sessions` is a counter each console node compares with the one its
//! sessions of that user started under: bumped by a reset, a new password
//! and "log out everywhere", it ends those sessions on every node sharing
//! the file within the nodes' refresh bound.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::SqliteStore;
use crate::store::StoreError;
use crate::values::role::Role;
use crate::values::timestamp::time_text;
use crate::values::user_name::UserName;

/// The `meta` row of the single console password before accounts: moved
/// onto the user [`FIRST_ADMIN`] when the database is opened for writing.
pub const OLD_PASSWORD_META: &str = "console_password";

/// The name the old single password (and the first-run setup, and `qrtag
/// console-password`) logs in as.
pub const FIRST_ADMIN: &str = "admin";

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS users (
        name       TEXT PRIMARY KEY,
        role       TEXT NOT NULL,
        hash       TEXT,
        created_at TEXT NOT NULL,
        sessions   INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS invitations (
        hash       TEXT PRIMARY KEY,
        name       TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        used_at    TEXT
    );";

/// Makes the tables and moves an old single password onto the user
/// `admin` (created an admin, or its hash replaced), in one transaction
/// with the `meta` row's removal, so nothing is lost or kept twice.
pub(super) fn prepare(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(SCHEMA)?;
    // Issue 36: the domains a user may see in the console (NULL: every
    // domain), added to a users table made before there were domains.
    let has_domains: i64 = tx.query_row(
        "SELECT count(*) FROM pragma_table_info('users') WHERE name = 'domains'",
        [],
        |r| r.get(0),
    )?;
    if has_domains == 0 {
        tx.execute_batch("ALTER TABLE users ADD COLUMN domains TEXT")?;
    }
    let old: Option<String> = tx
        .query_row(
            "SELECT value FROM meta WHERE name = ?1",
            params![OLD_PASSWORD_META],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(hash) = old {
        tx.execute(
            "INSERT INTO users (name, role, hash, created_at) VALUES (?1, 'admin', ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET hash = excluded.hash, sessions = sessions + 1",
            params![FIRST_ADMIN, hash, time_text(Utc::now())],
        )?;
        tx.execute(
            "DELETE FROM meta WHERE name = ?1",
            params![OLD_PASSWORD_META],
        )?;
    }
    tx.commit()
}

/// A user as `qrtag user list` and the console's users page show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    pub name: String,
    pub role: Role,
    /// Has chosen a password (else: invited, the invitation pending).
    pub active: bool,
    pub created_at: String,
    /// Issue 36: the domains the user may see; `None`: every domain.
    pub domains: Option<Vec<String>>,
}

impl UserRow {
    pub fn state(&self) -> &'static str {
        if self.active { "active" } else { "invited" }
    }
}

/// What a login needs of a user.
#[derive(Debug, Clone)]
pub struct Account {
    pub role: Role,
    /// The PHC string; `None` while the user is invited.
    pub hash: Option<String>,
    pub sessions: i64,
    /// Issue 36: the domains the user may see; `None`: every domain.
    pub domains: Option<Vec<String>>,
}

/// Issue 36: a user's domains as stored: hosts separated by spaces, or
/// NULL for every domain.
fn domains_text(domains: Option<&[String]>) -> Option<String> {
    domains.map(|d| d.join(" "))
}

fn domains_of(text: Option<String>) -> Option<Vec<String>> {
    text.map(|t| t.split_whitespace().map(str::to_owned).collect())
}

/// An invitation as stored: the token's SHA-256 (hex) and its end.
#[derive(Debug, Clone)]
pub struct InvitationRecord {
    pub token_hash: String,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("the user name {0} is taken")]
    Taken(String),
    #[error("there is no user {0}")]
    Unknown(String),
    #[error("{0} is the last admin: make another user an admin first")]
    LastAdmin(String),
    #[error(
        "this invitation link is not valid: use the whole link you were given, or ask an admin \
         for a new one (qrtag user reset NAME)"
    )]
    InvitationUnknown,
    #[error("this invitation link was used already: log in, or ask an admin for a new one")]
    InvitationUsed,
    #[error(
        "this invitation link expired at {0}: ask an admin for a new one (qrtag user reset NAME)"
    )]
    InvitationExpired(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn role_of(text: &str) -> Result<Role, StoreError> {
    Role::parse(text).map_err(|e| StoreError::Other(format!("a stored user's role: {e}")))
}

/// Whether no admin (invited or active) but `name` is left.
fn no_other_admin(tx: &rusqlite::Transaction<'_>, name: &str) -> rusqlite::Result<bool> {
    let others: i64 = tx.query_row(
        "SELECT count(*) FROM users WHERE role = 'admin' AND name <> ?1",
        params![name],
        |r| r.get(0),
    )?;
    Ok(others == 0)
}

fn insert_invitation(
    tx: &rusqlite::Transaction<'_>,
    name: &str,
    invitation: &InvitationRecord,
) -> rusqlite::Result<()> {
    tx.execute(
        "DELETE FROM invitations WHERE name = ?1 AND used_at IS NULL",
        params![name],
    )?;
    tx.execute(
        "INSERT INTO invitations (hash, name, expires_at) VALUES (?1, ?2, ?3)",
        params![
            invitation.token_hash,
            name,
            time_text(invitation.expires_at)
        ],
    )?;
    Ok(())
}

impl SqliteStore {
    /// Every user, by name.
    pub async fn users(&self) -> Result<Vec<UserRow>, StoreError> {
        let err = self.sql_err();
        let rows = self
            .with_conn(move |conn| {
                let mut stmt = conn
                    .prepare(
                        "SELECT name, role, hash IS NOT NULL, created_at, domains FROM users \
                         ORDER BY name",
                    )
                    .map_err(&err)?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, bool>(2)?,
                            r.get::<_, String>(3)?,
                            r.get::<_, Option<String>>(4)?,
                        ))
                    })
                    .map_err(&err)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(&err)?;
                Ok(rows)
            })
            .await?;
        rows.into_iter()
            .map(|(name, role, active, created_at, domains)| {
                Ok(UserRow {
                    name,
                    role: role_of(&role)?,
                    active,
                    created_at,
                    domains: domains_of(domains),
                })
            })
            .collect()
    }

    /// Whether any user exists: without one, the console offers its
    /// first-run setup.
    pub async fn has_users(&self) -> Result<bool, StoreError> {
        let err = self.sql_err();
        self.with_conn(move |conn| {
            conn.query_row("SELECT EXISTS (SELECT 1 FROM users)", [], |r| r.get(0))
                .map_err(err)
        })
        .await
    }

    /// The account a login by `name` checks against.
    pub async fn account(&self, name: &str) -> Result<Option<Account>, StoreError> {
        let name = name.to_owned();
        let err = self.sql_err();
        let row = self
            .with_conn(move |conn| {
                conn.query_row(
                    "SELECT role, hash, sessions, domains FROM users WHERE name = ?1",
                    params![name],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, Option<String>>(1)?,
                            r.get::<_, i64>(2)?,
                            r.get::<_, Option<String>>(3)?,
                        ))
                    },
                )
                .optional()
                .map_err(err)
            })
            .await?;
        row.map(|(role, hash, sessions, domains)| {
            Ok(Account {
                role: role_of(&role)?,
                hash,
                sessions,
                domains: domains_of(domains),
            })
        })
        .transpose()
    }

    /// Every user's role and session counter: what the console's sessions
    /// are held against ([`crate::store::sqlite`]'s module note).
    pub async fn session_marks(&self) -> Result<HashMap<String, (Role, i64)>, StoreError> {
        let err = self.sql_err();
        let rows = self
            .with_conn(move |conn| {
                let mut stmt = conn
                    .prepare("SELECT name, role, sessions FROM users")
                    .map_err(&err)?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, i64>(2)?,
                        ))
                    })
                    .map_err(&err)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(&err)?;
                Ok(rows)
            })
            .await?;
        rows.into_iter()
            .map(|(name, role, n)| Ok((name, (role_of(&role)?, n))))
            .collect()
    }

    /// Adds an invited user (no password until the invitation is used).
    pub async fn add_user(
        &self,
        name: &UserName,
        role: Role,
        invitation: &InvitationRecord,
    ) -> Result<(), UserError> {
        let (owned, invitation) = (name.as_str().to_owned(), invitation.clone());
        let err = self.sql_err();
        let added = self
            .with_conn(move |conn| {
                let mut run = || -> rusqlite::Result<bool> {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    let added = tx.execute(
                        "INSERT INTO users (name, role, created_at) VALUES (?1, ?2, ?3)
                         ON CONFLICT(name) DO NOTHING",
                        params![owned, role.as_str(), time_text(Utc::now())],
                    )? == 1;
                    if added {
                        insert_invitation(&tx, &owned, &invitation)?;
                    }
                    tx.commit()?;
                    Ok(added)
                };
                run().map_err(err)
            })
            .await?;
        if added {
            Ok(())
        } else {
            Err(UserError::Taken(name.to_string()))
        }
    }

    /// Changes a user's role; the role it had. Demoting the last admin is
    /// refused.
    pub async fn set_role(&self, name: &str, role: Role) -> Result<Role, UserError> {
        let demotes = role != Role::Admin;
        self.change_user(name, demotes, move |tx, name, old| {
            tx.execute(
                "UPDATE users SET role = ?2 WHERE name = ?1",
                params![name, role.as_str()],
            )?;
            Ok(role_of(old))
        })
        .await?
        .map_err(UserError::Store)
    }

    /// Issue 36: sets the domains a user may see in the console (`None`:
    /// every domain); their sessions end, so the next login takes them.
    pub async fn set_domains(
        &self,
        name: &str,
        domains: Option<&[String]>,
    ) -> Result<(), UserError> {
        let text = domains_text(domains);
        self.change_user(name, false, move |tx, name, _| {
            tx.execute(
                "UPDATE users SET domains = ?2, sessions = sessions + 1 WHERE name = ?1",
                params![name, text],
            )?;
            Ok(())
        })
        .await
    }

    /// Removes a user and their pending invitations. Removing the last
    /// admin is refused.
    pub async fn remove_user(&self, name: &str) -> Result<(), UserError> {
        self.change_user(name, true, |tx, name, _| {
            tx.execute("DELETE FROM users WHERE name = ?1", params![name])?;
            tx.execute("DELETE FROM invitations WHERE name = ?1", params![name])?;
            Ok(())
        })
        .await
    }

    /// A new invitation for an existing user: their password stops working
    /// at once, their sessions end, and an earlier pending invitation is
    /// void.
    pub async fn reset_user(
        &self,
        name: &str,
        invitation: &InvitationRecord,
    ) -> Result<(), UserError> {
        let invitation = invitation.clone();
        self.change_user(name, false, move |tx, name, _| {
            tx.execute(
                "UPDATE users SET hash = NULL, sessions = sessions + 1 WHERE name = ?1",
                params![name],
            )?;
            insert_invitation(tx, name, &invitation)
        })
        .await
    }

    /// One change to an existing user (`change` given the transaction, the
    /// name and the role it has), in a transaction of its own with the
    /// checks it must pass: an unknown user is refused, and so is a change
    /// that `demotes` the last admin. Checked in the transaction that
    /// writes, so two admins demoting each other at once cannot both win.
    async fn change_user<T, F>(&self, name: &str, demotes: bool, change: F) -> Result<T, UserError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>, &str, &str) -> rusqlite::Result<T> + Send + 'static,
    {
        let name = name.to_owned();
        let err = self.sql_err();
        self.with_conn(move |conn| {
            let run = || -> rusqlite::Result<Result<T, UserError>> {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let old: Option<String> = tx
                    .query_row(
                        "SELECT role FROM users WHERE name = ?1",
                        params![name],
                        |r| r.get(0),
                    )
                    .optional()?;
                let Some(old) = old else {
                    return Ok(Err(UserError::Unknown(name.clone())));
                };
                if demotes && old == Role::Admin.as_str() && no_other_admin(&tx, &name)? {
                    return Ok(Err(UserError::LastAdmin(name.clone())));
                }
                let done = change(&tx, &name, &old)?;
                tx.commit()?;
                Ok(Ok(done))
            };
            Ok(run().map_err(&err))
        })
        .await?
        .map_err(UserError::Store)?
    }

    /// Ends every session of a user on every node ("log out everywhere").
    pub async fn end_sessions(&self, name: &str) -> Result<(), UserError> {
        let (name, name_text) = (name.to_owned(), name.to_owned());
        let err = self.sql_err();
        let changed = self
            .with_conn(move |conn| {
                conn.execute(
                    "UPDATE users SET sessions = sessions + 1 WHERE name = ?1",
                    params![name],
                )
                .map_err(err)
            })
            .await?;
        if changed == 0 {
            return Err(UserError::Unknown(name_text));
        }
        Ok(())
    }

    /// The user an unused, unexpired invitation names (it is not spent).
    pub async fn invitation(&self, token_hash: &str) -> Result<String, UserError> {
        let token_hash = token_hash.to_owned();
        let err = self.sql_err();
        self.with_conn(move |conn| {
            let tx = conn.transaction().map_err(&err)?;
            Ok(open_invitation(&tx, &token_hash, Utc::now()).map_err(&err))
        })
        .await?
        .map_err(UserError::Store)?
    }

    /// Spends an invitation and sets its user's password (`hash`, a PHC
    /// string); the user's name and role.
    pub async fn accept_invitation(
        &self,
        token_hash: &str,
        hash: &str,
    ) -> Result<(String, Role, i64), UserError> {
        let (token_hash, hash) = (token_hash.to_owned(), hash.to_owned());
        let err = self.sql_err();
        self.with_conn(move |conn| {
            let mut run = || -> rusqlite::Result<Result<(String, Role, i64), UserError>> {
                let now = Utc::now();
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let name = match open_invitation(&tx, &token_hash, now)? {
                    Ok(name) => name,
                    Err(e) => return Ok(Err(e)),
                };
                tx.execute(
                    "UPDATE invitations SET used_at = ?2 WHERE hash = ?1",
                    params![token_hash, time_text(now)],
                )?;
                tx.execute(
                    "UPDATE users SET hash = ?2 WHERE name = ?1",
                    params![name, hash],
                )?;
                let (role, sessions): (String, i64) = tx.query_row(
                    "SELECT role, sessions FROM users WHERE name = ?1",
                    params![name],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                tx.commit()?;
                Ok(role_of(&role)
                    .map(|role| (name, role, sessions))
                    .map_err(UserError::Store))
            };
            Ok(run().map_err(&err))
        })
        .await?
        .map_err(UserError::Store)?
    }

    /// Sets the password of the user [`FIRST_ADMIN`], made an admin if
    /// there is no such user (`qrtag console-password`); their sessions end.
    pub async fn set_first_admin_password(&self, hash: &str) -> Result<(), StoreError> {
        let hash = hash.to_owned();
        let err = self.sql_err();
        self.with_conn(move |conn| {
            conn.execute(
                "INSERT INTO users (name, role, hash, created_at) VALUES (?1, 'admin', ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET hash = excluded.hash, sessions = sessions + 1",
                params![FIRST_ADMIN, hash, time_text(Utc::now())],
            )
            .map(|_| ())
            .map_err(err)
        })
        .await
    }

    /// Makes [`FIRST_ADMIN`] with this password only if there is no user
    /// at all (the first-run setup page); whether it did.
    pub async fn insert_first_admin(&self, hash: &str) -> Result<bool, StoreError> {
        let hash = hash.to_owned();
        let err = self.sql_err();
        self.with_conn(move |conn| {
            conn.execute(
                "INSERT INTO users (name, role, hash, created_at)
                 SELECT ?1, 'admin', ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM users)",
                params![FIRST_ADMIN, hash, time_text(Utc::now())],
            )
            .map(|n| n == 1)
            .map_err(err)
        })
        .await
    }
}

/// An invitation that may be used now: its user's name, or why not.
fn open_invitation(
    tx: &rusqlite::Transaction<'_>,
    token_hash: &str,
    now: DateTime<Utc>,
) -> rusqlite::Result<Result<String, UserError>> {
    let row: Option<(String, String, Option<String>)> = tx
        .query_row(
            "SELECT i.name, i.expires_at, i.used_at FROM invitations i
             JOIN users u ON u.name = i.name WHERE i.hash = ?1",
            params![token_hash],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    Ok(match row {
        None => Err(UserError::InvitationUnknown),
        Some((_, _, Some(_))) => Err(UserError::InvitationUsed),
        // Both texts are `time_text`'s fixed form, so they compare as times.
        Some((_, expires, None)) if expires.as_str() <= time_text(now).as_str() => {
            Err(UserError::InvitationExpired(expires))
        }
        Some((name, _, None)) => Ok(name),
    })
}
