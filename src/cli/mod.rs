//! The `qrtag` command line: argument parsing and the one-line error edge.
//!
//! Values are parsed into domain types by clap itself (`Destination`,
//! `LinkKey`, `PublicUrl`), so a bad argument is reported by clap as one line
//! with exit code 2 before any command runs.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::destination::Destination;
use crate::link_key::LinkKey;
use crate::settings::{PublicUrl, Settings, StoreSettings};

mod links;
mod qr;
mod resolve;
mod serve;

#[derive(Debug, Parser)]
#[command(
    name = "qrtag",
    version,
    about = "QR-tag short URLs: create, repoint, redirect, count"
)]
pub struct Cli {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The origin short URLs are printed with.
    #[arg(
        long,
        global = true,
        env = "QRTAG_PUBLIC_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub public_url: PublicUrl,

    #[command(subcommand)]
    pub command: Command,
}

/// Where the links live.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// The embedded link database (SQLite file), used when no CouchDB is configured.
    #[arg(long, global = true, env = "QRTAG_DB", default_value = "qrtag.db")]
    pub db: PathBuf,
}

impl StoreArgs {
    pub fn settings(&self) -> StoreSettings {
        StoreSettings::Sqlite {
            path: self.db.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the redirect service.
    Serve(ServeArgs),
    /// Create a link and print its short URL.
    New {
        /// Destination: an absolute http(s) URL or a /path on this service.
        url: Destination,
        /// Use this key instead of a random 5-character ID.
        #[arg(long)]
        key: Option<LinkKey>,
        /// Create it inactive (404 until `qrtag enable`).
        #[arg(long)]
        inactive: bool,
    },
    /// Repoint a link.
    Set { key: LinkKey, url: Destination },
    /// Make a link answer 404 (its document is kept).
    Disable { key: LinkKey },
    /// Make a disabled link redirect again.
    Enable { key: LinkKey },
    /// Print a link's document as JSON.
    Show { key: LinkKey },
    /// Write a link's QR code (PNG or SVG), the same bytes the admin listener serves.
    Qr(qr::QrArgs),
    /// Create N inactive links with random keys and an A4 sheet of their QR codes.
    Batch(qr::BatchArgs),
    /// List every link: key, destination, state.
    List,
    /// Resolve URLs against a rules file offline and print each result.
    Resolve {
        /// A JSON object of {key: value}, as in the resolution draft's examples.
        #[arg(long)]
        rules: PathBuf,
        #[arg(required = true)]
        urls: Vec<String>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Public listener (every path is a redirect request).
    #[arg(long, env = "QRTAG_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Admin QR codes write scheme and host in capitals (a smaller code; see README).
    #[arg(
        long,
        env = "QRTAG_QR_UPPERCASE_PREFIX",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub qr_uppercase_prefix: bool,
    /// Admin listener (health, readiness); keep it off the public network.
    #[arg(long, env = "QRTAG_ADMIN_LISTEN", default_value = "127.0.0.1:8081")]
    pub admin_listen: String,
    /// Worker threads for the public listener (default: one per core).
    #[arg(long, env = "QRTAG_WORKERS")]
    pub workers: Option<usize>,
}

impl Cli {
    pub fn serve_settings(&self, args: &ServeArgs) -> Settings {
        Settings {
            listen: args.listen.clone(),
            qr_uppercase_prefix: args.qr_uppercase_prefix,
            admin_listen: args.admin_listen.clone(),
            public_url: self.public_url.clone(),
            store: self.store.settings(),
            workers: args.workers,
        }
    }
}

/// Runs the command line; `main` is just this.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let result = actix_web::rt::System::new().block_on(run(cli));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("qrtag: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Qr(args) => qr::qr(&cli, args).await,
        Command::Batch(args) => qr::batch(&cli, args).await,
        Command::Serve(args) => serve::run(cli.serve_settings(args)).await,
        Command::Resolve { rules, urls } => resolve::run(rules, urls),
        _ => links::run(&cli).await,
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("QRTAG_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Ignore a second init (tests may call `main` paths more than once).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
