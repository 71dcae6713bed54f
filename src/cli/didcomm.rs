//! `qrtag didcomm did`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use super::{Cli, DidcommCommand};
use crate::didcomm::identity::{self, ServiceIdentity};

pub fn run(cli: &Cli, command: &DidcommCommand) -> anyhow::Result<ExitCode> {
    match command {
        DidcommCommand::Did(args) => {
            let endpoint = match (&args.api_public_url, &args.api_listen) {
                (Some(url), _) => format!("{url}/didcomm"),
                (None, Some(listen)) => format!("http://{listen}/didcomm"),
                (None, None) => anyhow::bail!(
                    "the DID names the DIDComm endpoint: give --api-public-url (or QRTAG_API_PUBLIC_URL)"
                ),
            };
            let path = args.key_file(&cli.store.db);
            let keys = identity::load_or_create(&path)
                .with_context(|| format!("reading or creating {}", path.display()))?;
            let me = ServiceIdentity::new(keys, Some(&endpoint));
            writeln!(std::io::stdout().lock(), "{}", me.did())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
