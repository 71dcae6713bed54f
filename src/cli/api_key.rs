//! `qrtag api-key create|list|revoke`: the bearer keys of `/api/v1`.

use std::io::Write;
use std::process::ExitCode;

use chrono::Utc;
use clap::Subcommand;

use super::Cli;
use crate::store::{Access, KeyOwner, LinkStore};
use crate::values::api_key::{KeyId, LEGACY_OWNER, NewKey, Scope};
use crate::values::audit::Event;
use crate::values::usage::UsageError;
use crate::values::user_name::UserName;

#[derive(Debug, Subcommand)]
pub enum ApiKeyCommand {
    /// Make a key and print it once (only its hash is kept).
    Create {
        /// Who or what uses the key, for `list`.
        #[arg(long)]
        name: String,
        /// `read`: links, QR images and scans; `write`: those and every edit.
        #[arg(long, value_enum)]
        scope: Scope,
        /// The user the key belongs to (issue 35): it never does more than
        /// their role allows, and is refused once they are removed. Default:
        /// the user admin on the embedded store (none before any user
        /// exists); with CouchDB a `_users` account, whose roles each request
        /// checks once `qrtag setup` opened them (Apache CouchDB).
        #[arg(long, value_name = "NAME")]
        user: Option<String>,
    },
    /// Every key's ID, scope, creation and revocation time, name and user.
    List,
    /// Refuse a key from the next request on.
    Revoke {
        /// The key's ID, as `list` shows it (the 8 characters after `qrt_`).
        id: String,
    },
}

pub async fn run(cli: &Cli, command: &ApiKeyCommand) -> anyhow::Result<ExitCode> {
    match command {
        ApiKeyCommand::Create { name, scope, user } => {
            let name = name.trim();
            if name.is_empty() {
                return Err(
                    crate::values::usage::UsageError("--name must not be empty".into()).into(),
                );
            }
            let user = user
                .as_deref()
                .map(UserName::parse)
                .transpose()
                .map_err(|e| UsageError(e.to_string()))?;
            let store = cli.open_store(Access::Create)?;
            let owner = owner(cli, store.as_ref(), user.as_ref(), *scope).await?;
            let mut key = NewKey::generate(name, *scope, Utc::now());
            key.record.user = owner;
            store.put_api_key(&key.record).await?;
            // Issue 35: the audit log names the key by ID, never its secret.
            let event = Event::ApiKeyCreated {
                key: key.record.id.clone(),
                name: key.record.name.clone(),
                scope: scope.name().to_owned(),
                user: Some(key.record.owner().to_owned()),
            };
            super::audit::record(&*store, event).await;
            writeln!(std::io::stdout().lock(), "{}", key.text)?;
            eprintln!(
                "qrtag: API key {} ({}, {}) created; it is shown only now",
                key.record.id,
                scope.name(),
                key.record.name
            );
        }
        ApiKeyCommand::List => {
            let store = cli.open_store(Access::Read)?;
            let mut out = std::io::stdout().lock();
            for r in store.api_keys().await? {
                let revoked = r.revoked_at.as_deref().unwrap_or("-");
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    r.id,
                    r.scope.name(),
                    r.created_at,
                    revoked,
                    r.name,
                    r.owner()
                )?;
            }
        }
        ApiKeyCommand::Revoke { id } => {
            let Some(key_id) = KeyId::parse(id) else {
                return Err(crate::values::usage::UsageError(format!(
                    "{id:?} is not an API key ID (8 letters and digits, as `qrtag api-key list` shows)"
                ))
                .into());
            };
            let store = cli.open_store(Access::Write)?;
            let Some(mut record) = store.api_key(&key_id).await? else {
                anyhow::bail!("no API key with ID {key_id}");
            };
            if record.revoked_at.is_none() {
                record.revoked_at = Some(crate::values::timestamp::time_text(Utc::now()));
                store.put_api_key(&record).await?;
                let event = Event::ApiKeyRevoked {
                    key: key_id.to_string(),
                };
                super::audit::record(&*store, event).await;
            }
            eprintln!("qrtag: API key {key_id} revoked");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Issue 35 (i35-users): the user a new key is recorded as belonging to.
/// On the embedded store the user must exist (an unknown one is a usage
/// error); without `--user` it is `admin`, or none before any user exists
/// (then it belongs to the first admin, as keys made before users do).
/// On CouchDB the name is kept as given: each REST request reads the
/// account's roles (`store::couch::users`) where `qrtag setup` opened them.
async fn owner(
    cli: &Cli,
    store: &dyn LinkStore,
    user: Option<&UserName>,
    scope: Scope,
) -> anyhow::Result<Option<String>> {
    if cli.store.couchdb_url.is_some() {
        return Ok(user.map(ToString::to_string));
    }
    let name = user.map_or(LEGACY_OWNER, UserName::as_str);
    match (store.key_owner(name).await?, user) {
        (KeyOwner::Role(role), _) => {
            if scope.may_write() && !role.may_edit() {
                eprintln!(
                    "qrtag: warning: {name} is a {role}: the key may only read while that lasts"
                );
            }
            Ok(Some(name.to_owned()))
        }
        (KeyOwner::Unchecked, None) => Ok(None),
        (_, Some(_)) => Err(UsageError(format!(
            "there is no user {name} (qrtag user list shows them; qrtag user add makes one)"
        ))
        .into()),
        (KeyOwner::Gone, None) => Err(UsageError(format!(
            "give --user NAME: there is no user {LEGACY_OWNER} to own the key"
        ))
        .into()),
    }
}
