//! `qrtag serve`.

use std::process::ExitCode;

use anyhow::Context;

use crate::settings::Settings;
use crate::startup::Application;

pub async fn run(cli: &super::Cli, mut settings: Settings) -> anyhow::Result<ExitCode> {
    let (chosen, record) = super::public_url::for_serve(cli).await?;
    settings.public_url = chosen;
    let node = settings.node_name.clone();
    let app = Application::build(settings)
        .await
        .context("starting the server")?;
    let public_url = app.public_url().clone();
    if record {
        super::public_url::record_after_start(cli, &public_url).await;
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
    if let Some(did) = app.didcomm_did() {
        tracing::info!(%did, "DIDComm listener on");
    }
    eprintln!("{line}");
    if let Some(url) = app.console_setup_url() {
        eprintln!("{}", crate::console::setup::announcement(url));
    }
    app.run_until_stopped().await.context("serving")?;
    Ok(ExitCode::SUCCESS)
}
