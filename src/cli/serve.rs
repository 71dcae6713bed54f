//! `qrtag serve`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::settings::Settings;
use crate::startup::Application;

pub async fn run(cli: &super::Cli, mut settings: Settings) -> anyhow::Result<ExitCode> {
    crate::startup::before_any_write(&settings).context("starting the server")?;
    let (chosen, record, follow) = super::public_url::for_serve(cli).await?;
    settings.public_url = chosen;
    // Issue 36: the recorded public URL too must be on the default
    // domain's host.
    if let (Some(host), Some(url)) = (&settings.domains.default_host, &settings.public_url)
        && !crate::settings::domains::on_host(url, host)
    {
        return Err(crate::values::usage::UsageError(
            crate::settings::domains::DomainError::OtherHost {
                host: host.clone(),
                url: url.to_string(),
            }
            .to_string(),
        )
        .into());
    }
    settings.follow_recorded_url = follow;
    let node = settings.node_name.clone();
    let app = match Application::build(settings).await {
        // Issue 36: an account without the certificates role is the
        // operator's to fix: one line, exit 2.
        Err(e @ crate::startup::StartupError::AcmeAccess(_))
        // Issue 38: ClickHouse refused the user, or its schema is not this qrtag's.
        | Err(e @ crate::startup::StartupError::ScanSink(_)) => {
            return Err(crate::values::usage::UsageError(e.to_string()).into());
        }
        other => other.context("starting the server")?,
    };
    let public_url = app.public_url().clone();
    if record {
        super::public_url::record_after_start(cli, &public_url).await;
    }
    if let Some(line) = app.connection_warning() {
        eprintln!("{line}");
    }
    if public_url.is_local() {
        eprintln!(
            "qrtag: warning: serving with the local public URL {public_url}: tags for it work only on this machine or its network ({})",
            cli.origin.how_to_set("public_url")
        );
    }
    tracing::info!(
        public = %app.public_addr(),
        admin = %app.admin_addr(),
        %public_url,
        node = %node.as_ref().map_or("-", |n| n.as_str()),
        "qrtag is serving"
    );
    // For scripts and tests that start on port 0: one plain line, stable
    // format, whatever the tracing configuration.
    let mut line = crate::startup::listening_line(app.public_addr(), app.admin_addr());
    if let Some(api) = app.api_addr() {
        line.push_str(&format!(" api={api}"));
    }
    // Issue 36: the plain listener beside HTTPS.
    if let Some(http) = app.http_addr() {
        line.push_str(&format!(" http={http}"));
    }
    if let Some(did) = app.didcomm_did().filter(|_| app.didcomm_on()) {
        tracing::info!(%did, "DIDComm listener on");
    }
    eprintln!("{line}");
    if let Some(url) = app.console_setup_url() {
        tokio::spawn(announce_setup(url.to_owned(), app.snapshot()));
    }
    app.run_until_stopped().await.context("serving")?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the console's one-time setup link once the start has settled, so
/// it is the last thing on a person's terminal rather than lost among the
/// log lines of the start: after the links are loaded (their line is logged
/// before they are marked so; with the embedded store, the only one with a
/// setup link, that is milliseconds), and a moment for the listeners' own
/// start lines. Bounded, so a slow load still shows the link.
async fn announce_setup(url: String, snapshot: std::sync::Arc<crate::snapshot::Snapshot>) {
    const TICK: Duration = Duration::from_millis(20);
    let give_up = Instant::now() + Duration::from_secs(5);
    while !snapshot.is_loaded() && Instant::now() < give_up {
        tokio::time::sleep(TICK).await;
    }
    tokio::time::sleep(5 * TICK).await;
    eprintln!("{}", crate::console::setup::framed(&url));
}
