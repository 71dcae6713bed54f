//! `qrtag api-key create|list|revoke`: the bearer keys of `/api/v1`.

use std::io::Write;
use std::process::ExitCode;

use chrono::Utc;
use clap::Subcommand;

use super::Cli;
use crate::store::Access;
use crate::values::api_key::{KeyId, NewKey, Scope};
use crate::values::audit::Event;

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
    },
    /// Every key's ID, scope, name, creation and revocation time.
    List,
    /// Refuse a key from the next request on.
    Revoke {
        /// The key's ID, as `list` shows it (the 8 characters after `qrt_`).
        id: String,
    },
}

pub async fn run(cli: &Cli, command: &ApiKeyCommand) -> anyhow::Result<ExitCode> {
    match command {
        ApiKeyCommand::Create { name, scope } => {
            let name = name.trim();
            if name.is_empty() {
                return Err(
                    crate::values::usage::UsageError("--name must not be empty".into()).into(),
                );
            }
            let store = cli.open_store(Access::Create)?;
            let key = NewKey::generate(name, *scope, Utc::now());
            store.put_api_key(&key.record).await?;
            // Issue 35: the audit log names the key by ID, never its secret.
            let event = Event::ApiKeyCreated {
                key: key.record.id.clone(),
                name: key.record.name.clone(),
                scope: scope.name().to_owned(),
                user: None,
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
                    "{}\t{}\t{}\t{}\t{}",
                    r.id,
                    r.scope.name(),
                    r.created_at,
                    revoked,
                    r.name
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
