//! `qrtag console-password`: sets the password of the console user `admin`
//! on the embedded store (issue 35: made an admin if there is none). Read without echo from a terminal (twice, to catch a
//! typo), or one line from standard input in a script; stored as an argon2
//! hash, and the password itself never printed or logged.

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;

use anyhow::Context;

use super::Cli;
use crate::console::password;
use crate::store::Access;
use crate::store::sqlite::SqliteStore;
use crate::values::usage::UsageError;

pub async fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    if cli.store.couchdb_url.is_some() {
        return Err(UsageError(
            "with CouchDB the console logs in with CouchDB accounts: there is no console password to set"
                .into(),
        )
        .into());
    }
    let password = if std::io::stdin().is_terminal() {
        let first =
            rpassword::prompt_password("New console password: ").context("reading the password")?;
        let again = rpassword::prompt_password("Once more: ").context("reading the password")?;
        if first != again {
            anyhow::bail!("the two passwords differ; nothing changed");
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the password from standard input")?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    };
    let store = SqliteStore::open_with(&cli.store.db, Access::Write)?;
    password::set(&store, &password).await?;
    // Issue 35: which setting, never the password.
    let event = crate::values::audit::Event::SettingsChanged {
        setting: "console_password".into(),
    };
    super::audit::record(&store, event).await;
    eprintln!(
        "qrtag: console password of the user admin set in {}; it applies to the next login",
        cli.store.db.display()
    );
    Ok(ExitCode::SUCCESS)
}
