//! `qrtag setup`: prepare the CouchDB database.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use crate::settings::StoreSettings;
use crate::store::couch_setup::{self, DESIGN_ID, EDITOR_ROLE, READER_ROLE};

pub async fn run(store: &StoreSettings) -> anyhow::Result<ExitCode> {
    let StoreSettings::CouchDb(couch) = store else {
        anyhow::bail!("setup prepares a CouchDB database: give --couchdb-url");
    };
    let report = couch_setup::setup(couch)
        .await
        .with_context(|| format!("setting up {} on {}", couch.db, couch.url))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "database {}: {}", couch.db, report.database)?;
    writeln!(out, "{DESIGN_ID} (validation): {}", report.design)?;
    writeln!(
        out,
        "_security (members: roles {READER_ROLE}, {EDITOR_ROLE}): {}",
        report.security
    )?;
    Ok(ExitCode::SUCCESS)
}
