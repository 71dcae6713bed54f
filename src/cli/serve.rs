//! `qrtag serve`.

use std::process::ExitCode;

use anyhow::Context;

use crate::settings::Settings;
use crate::startup::Application;

pub async fn run(settings: Settings) -> anyhow::Result<ExitCode> {
    let public_url = settings.public_url.clone();
    let app = Application::build(settings)
        .await
        .context("starting the server")?;
    tracing::info!(
        public = %app.public_addr(),
        admin = %app.admin_addr(),
        %public_url,
        "qrtag is serving"
    );
    app.run_until_stopped().await.context("serving")?;
    Ok(ExitCode::SUCCESS)
}
