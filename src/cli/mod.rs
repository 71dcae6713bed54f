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
use crate::settings::{
    AccessLogTarget, ApiSettings, CouchDbName, CouchSettings, CouchUrl, PublicUrl, Secret,
    Settings, StoreSettings, TrackingSettings, WriterOptions,
};
use crate::tracking_cookie::CookieName;

mod didcomm;
mod links;
mod qr;
mod resolve;
mod serve;
mod setup;
mod transfer;

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

    /// Keep the links in this CouchDB server instead, e.g. http://127.0.0.1:5984.
    #[arg(
        long,
        global = true,
        env = "QRTAG_COUCHDB_URL",
        value_name = "URL",
        value_parser = CouchUrlParser
    )]
    pub couchdb_url: Option<CouchUrl>,

    /// The CouchDB database holding the links.
    #[arg(
        long,
        global = true,
        env = "QRTAG_COUCHDB_DB",
        value_name = "NAME",
        default_value = "links"
    )]
    pub couchdb_db: CouchDbName,

    /// CouchDB account: a reader for `serve`, an editor for link commands,
    /// an admin for `setup`.
    #[arg(long, global = true, env = "QRTAG_COUCHDB_USER", value_name = "USER")]
    pub couchdb_user: Option<String>,

    /// Password of --couchdb-user. Prefer the environment variable: command
    /// lines are visible to every user of the machine.
    #[arg(
        long,
        global = true,
        env = "QRTAG_COUCHDB_PASSWORD",
        hide_env_values = true,
        value_name = "PASSWORD"
    )]
    pub couchdb_password: Option<Secret>,
}

impl StoreArgs {
    pub fn settings(&self) -> StoreSettings {
        match &self.couchdb_url {
            Some(url) => {
                let couch = CouchSettings::new(url.clone(), self.couchdb_db.clone());
                StoreSettings::CouchDb(match &self.couchdb_user {
                    Some(user) => couch.with_credentials(user, self.couchdb_password.clone()),
                    None => couch,
                })
            }
            None => StoreSettings::Sqlite {
                path: self.db.clone(),
            },
        }
    }
}

/// Parses `--couchdb-url` without echoing the value in errors, as clap's own
/// message would: a mistyped URL may hold a password.
#[derive(Clone)]
struct CouchUrlParser;

impl clap::builder::TypedValueParser for CouchUrlParser {
    type Value = CouchUrl;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<CouchUrl, clap::Error> {
        let invalid = |msg: String| {
            cmd.clone()
                .error(clap::error::ErrorKind::ValueValidation, msg)
        };
        let s = value
            .to_str()
            .ok_or_else(|| invalid("--couchdb-url must be UTF-8".into()))?;
        CouchUrl::parse(s).map_err(|e| invalid(format!("--couchdb-url: {e}")))
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the redirect service.
    // QRTAG_LOG is read before clap runs, so no option carries it; named
    // here so an operator (and deploy/env.example) finds it in --help.
    #[command(
        after_help = "Environment: QRTAG_LOG filters what the server logs on stderr \
                      (tracing's EnvFilter syntax; default: info,actix_http::h1=warn)."
    )]
    Serve(Box<ServeArgs>),
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
    /// Prepare a CouchDB database for qrtag (needs an admin account):
    /// create it, install the validation, grant the reader and editor roles.
    /// Safe to run again.
    Setup,
    /// Resolve URLs against a rules file offline and print each result.
    Resolve {
        /// A JSON object of {key: value}, as in the resolution draft's examples.
        #[arg(long)]
        rules: PathBuf,
        #[arg(required = true)]
        urls: Vec<String>,
    },
    /// Scan counts per key from access logs (plain or gzip, any order).
    Stats(crate::stats::StatsArgs),
    /// Write every link document as JSON lines, from one consistent read.
    ///
    /// One document per line, `_id` (the key) first and then its fields in
    /// stored order, sorted by key. Deleted and design documents are left out.
    Export(transfer::ExportArgs),
    /// Add links from JSON lines (as `export` writes them) or CSV.
    ///
    /// The format is told by the first line: `{` for JSON lines, else CSV
    /// with a header naming key and url (optional: inactive, expires). The
    /// whole input is checked first: a bad line, a duplicate key or (without
    /// --update) a key that exists, and nothing is written.
    Import(transfer::ImportArgs),
    /// The DIDComm url-shortener's identity.
    Didcomm {
        #[command(subcommand)]
        command: DidcommCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum DidcommCommand {
    /// Print the service's did:peer:2, creating its keys on first use.
    Did(DidcommIdentityArgs),
}

/// Where the service's DIDComm identity lives and where agents reach it:
/// both go into its DID, so `serve` and `didcomm did` read the same options.
#[derive(Debug, Clone, Args)]
pub struct DidcommIdentityArgs {
    /// The DIDComm listener (POST /didcomm); off when unset.
    #[arg(long, env = "QRTAG_API_LISTEN", value_name = "ADDR")]
    pub api_listen: Option<String>,
    /// The origin agents reach the DIDComm listener at; the service DID's
    /// endpoint is this plus /didcomm. Default: http:// and --api-listen.
    #[arg(long, env = "QRTAG_API_PUBLIC_URL", value_name = "URL")]
    pub api_public_url: Option<PublicUrl>,
    /// The service's DIDComm keys (created with mode 0600 on first use).
    /// Copy it to every node so that all are the same DID. Default: beside
    /// the database, `DB.didcomm-keys.json`.
    #[arg(long, env = "QRTAG_DIDCOMM_KEY_FILE", value_name = "PATH")]
    pub didcomm_key_file: Option<PathBuf>,
}

impl DidcommIdentityArgs {
    pub fn key_file(&self, db: &std::path::Path) -> PathBuf {
        self.didcomm_key_file
            .clone()
            .unwrap_or_else(|| crate::didcomm::identity::default_key_file(db))
    }
}

/// The DIDComm listener's rules (`serve` only).
#[derive(Debug, Clone, Args)]
pub struct DidcommServeArgs {
    /// Bearer token that admits plaintext DIDComm messages (v1 JSON, v2
    /// plain). Prefer the environment variable.
    #[arg(
        long,
        env = "QRTAG_API_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub api_token: Option<Secret>,
    /// Seconds a DIDComm link lives when the request names no validity; 0 is forever.
    #[arg(
        long,
        env = "QRTAG_DIDCOMM_DEFAULT_VALIDITY",
        value_name = "SECONDS",
        default_value_t = 0
    )]
    pub didcomm_default_validity: u64,
    /// The longest validity granted (and no links without expiry).
    #[arg(long, env = "QRTAG_DIDCOMM_MAX_VALIDITY", value_name = "SECONDS")]
    pub didcomm_max_validity: Option<u64>,
    /// Refuse short_url_slug (slugs_not_supported).
    #[arg(
        long,
        env = "QRTAG_DIDCOMM_NO_SLUGS",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub didcomm_no_slugs: bool,
    /// A sender DID that may request short URLs. Repeatable; the variable
    /// takes a comma list.
    #[arg(
        long = "didcomm-allow",
        value_name = "DID",
        env = "QRTAG_DIDCOMM_ALLOW",
        value_delimiter = ','
    )]
    pub didcomm_allow: Vec<crate::didcomm::did::Did>,
    /// Any authenticated sender may request short URLs.
    #[arg(
        long,
        env = "QRTAG_DIDCOMM_ALLOW_ANY",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub didcomm_allow_any: bool,
    /// A DID that may request, and invalidate any DIDComm link. Repeatable.
    #[arg(
        long = "didcomm-admin",
        value_name = "DID",
        env = "QRTAG_DIDCOMM_ADMIN",
        value_delimiter = ','
    )]
    pub didcomm_admin: Vec<crate::didcomm::did::Did>,
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
    /// Access log file, appended to; `-` for standard output. SIGHUP reopens it.
    #[arg(long, env = "QRTAG_ACCESS_LOG", default_value = "access.log")]
    pub access_log: AccessLogTarget,
    /// Milliseconds between access log writes: what a SIGKILL or a power cut
    /// can lose (SIGTERM and SIGINT lose nothing). Lower costs more writes.
    #[arg(
        long,
        env = "QRTAG_ACCESS_LOG_FLUSH_MS",
        value_name = "MS",
        default_value_t = 50,
        value_parser = clap::value_parser!(u64).range(1..=60_000)
    )]
    pub access_log_flush_ms: u64,
    /// Name of the tracking cookie.
    #[arg(long, env = "QRTAG_COOKIE_NAME", default_value = crate::tracking_cookie::DEFAULT_NAME)]
    pub cookie_name: CookieName,
    /// Set no tracking cookie; the log's tracking field becomes `-`.
    #[arg(
        long,
        env = "QRTAG_NO_TRACKING",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub no_tracking: bool,
    /// The secrets that sign tracking cookies: 64 hex digits a line, the
    /// current one first, older ones (still accepted) after it. Created with
    /// one fresh secret, mode 0600, if missing. Every node of one service must
    /// use the same file. Default: beside the database
    /// (`qrtag.db.tracking-secret`), or `qrtag-couchdb-DB.tracking-secret` in
    /// the working directory with CouchDB. Not read with --no-tracking.
    #[arg(long, env = "QRTAG_TRACKING_SECRET_FILE", value_name = "PATH")]
    pub tracking_secret_file: Option<PathBuf>,
    /// A proxy (address or CIDR block) whose X-Forwarded-For is believed when
    /// logging client addresses. Repeatable; the variable takes a comma list.
    #[arg(
        long = "trusted-proxy",
        value_name = "CIDR",
        env = "QRTAG_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_parser = crate::client_ip::parse_trusted_proxy
    )]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Seconds a request may take on the public listener from its first
    /// byte to its last (head and body); a slower client is disconnected.
    #[arg(
        long,
        env = "QRTAG_REQUEST_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub request_timeout: u64,
    /// Open connections one client address may hold on the public listener;
    /// more are closed at once. Behind a proxy every client has its address:
    /// raise this or give 0 (no cap).
    #[arg(
        long,
        env = "QRTAG_MAX_CONNECTIONS_PER_IP",
        value_name = "N",
        default_value_t = 256
    )]
    pub max_connections_per_ip: usize,
    /// Open connections on the public listener in all; past it new ones
    /// wait to be accepted.
    #[arg(
        long,
        env = "QRTAG_MAX_CONNECTIONS",
        value_name = "N",
        default_value_t = 25_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_connections: u64,
    /// The server's copy of the links, read at start so a restart serves at
    /// once (then catches up with the store), rewritten in the background.
    /// Default: beside the database (`qrtag.db.snapshot`), or
    /// `qrtag-couchdb-DB.snapshot` in the working directory with CouchDB.
    #[arg(long, env = "QRTAG_SNAPSHOT_FILE", value_name = "PATH")]
    pub snapshot_file: Option<PathBuf>,
    /// Keep no snapshot file: every start loads all links from the store.
    #[arg(
        long,
        env = "QRTAG_NO_SNAPSHOT_FILE",
        conflicts_with = "snapshot_file",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub no_snapshot_file: bool,
    /// Keep scan counts current from the access log, with their checkpoint
    /// at PATH. Hidden until the console that shows them exists.
    #[arg(long, value_name = "PATH", hide = true)]
    pub scan_index_file: Option<PathBuf>,
    #[command(flatten)]
    pub didcomm: DidcommIdentityArgs,
    #[command(flatten)]
    pub didcomm_rules: DidcommServeArgs,
}

impl Cli {
    pub fn serve_settings(&self, args: &ServeArgs) -> Settings {
        Settings {
            request_timeout: std::time::Duration::from_secs(args.request_timeout),
            max_connections_per_ip: args.max_connections_per_ip,
            max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
            listen: args.listen.clone(),
            qr_uppercase_prefix: args.qr_uppercase_prefix,
            admin_listen: args.admin_listen.clone(),
            public_url: self.public_url.clone(),
            store: self.store.settings(),
            workers: args.workers,
            access_log: args.access_log.clone(),
            access_log_options: WriterOptions {
                flush_interval: std::time::Duration::from_millis(args.access_log_flush_ms),
                ..WriterOptions::default()
            },
            tracking: (!args.no_tracking).then(|| TrackingSettings {
                cookie_name: args.cookie_name.clone(),
                secret_file: args.tracking_secret_file.clone().unwrap_or_else(|| {
                    match &self.store.couchdb_url {
                        Some(_) => PathBuf::from(format!(
                            "qrtag-couchdb-{}.tracking-secret",
                            self.store.couchdb_db.as_str().replace('/', "_")
                        )),
                        None => crate::settings::default_tracking_secret_file(&self.store.db),
                    }
                }),
            }),
            trusted_proxies: args.trusted_proxies.clone(),
            snapshot_file: (!args.no_snapshot_file).then(|| {
                args.snapshot_file
                    .clone()
                    .unwrap_or_else(|| match &self.store.couchdb_url {
                        Some(_) => PathBuf::from(format!(
                            "qrtag-couchdb-{}.snapshot",
                            self.store.couchdb_db.as_str().replace('/', "_")
                        )),
                        None => crate::settings::default_snapshot_file(&self.store.db),
                    })
            }),
            scan_index: args.scan_index_file.as_ref().map(|path| {
                crate::scan_index::ScanIndexSettings {
                    checkpoint: path.clone(),
                    ..crate::scan_index::ScanIndexSettings::beside(path)
                }
            }),
            api: args.didcomm.api_listen.as_ref().map(|listen| {
                let rules = &args.didcomm_rules;
                ApiSettings {
                    listen: listen.clone(),
                    public_url: args.didcomm.api_public_url.clone(),
                    token: rules.api_token.clone(),
                    key_file: args.didcomm.key_file(&self.store.db),
                    policy: crate::didcomm::protocol::Policy {
                        default_validity: rules.didcomm_default_validity,
                        max_validity: rules.didcomm_max_validity,
                        slugs: !rules.didcomm_no_slugs,
                        allow: rules.didcomm_allow.clone(),
                        allow_any: rules.didcomm_allow_any,
                        admins: rules.didcomm_admin.clone(),
                    },
                }
            }),
        }
    }
}

/// Runs the command line; `main` is just this.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(msg) = check_usage(&cli) {
        eprintln!("qrtag: {msg}");
        return ExitCode::from(2);
    }
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

/// Usage errors clap cannot express (its `requires` misses global arguments
/// given before the subcommand), reported in one line with exit code 2.
fn check_usage(cli: &Cli) -> Result<(), &'static str> {
    if cli.store.couchdb_password.is_some() && cli.store.couchdb_user.is_none() {
        return Err("a CouchDB password needs a user: give --couchdb-user (or QRTAG_COUCHDB_USER)");
    }
    if matches!(cli.command, Command::Setup) && cli.store.couchdb_url.is_none() {
        return Err("setup prepares a CouchDB database: give --couchdb-url (or QRTAG_COUCHDB_URL)");
    }
    Ok(())
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Qr(args) => qr::qr(&cli, args).await,
        Command::Batch(args) => qr::batch(&cli, args).await,
        Command::Serve(args) => serve::run(cli.serve_settings(args)).await,
        Command::Resolve { rules, urls } => resolve::run(rules, urls),
        Command::Stats(args) => {
            crate::stats::run(args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Setup => setup::run(&cli.store.settings()).await,
        Command::Export(args) => transfer::export(&cli, args).await,
        Command::Import(args) => transfer::import(&cli, args).await,
        Command::Didcomm { command } => didcomm::run(&cli, command),
        _ => links::run(&cli).await,
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("QRTAG_LOG")
        // actix-http logs every malformed request at ERROR; anyone could
        // flood the log that way, so its request parser speaks only at WARN.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,actix_http::h1=warn"));
    // Ignore a second init (tests may call `main` paths more than once).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, not for journald or files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(args: &[&str]) -> Result<Settings, clap::Error> {
        let cli = Cli::try_parse_from(["qrtag", "serve"].iter().chain(args))?;
        match &cli.command {
            Command::Serve(a) => Ok(cli.serve_settings(a)),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn didcomm_flags() {
        assert!(
            serve(&[]).expect("defaults").api.is_none(),
            "off unless --api-listen"
        );
        let s = serve(&[
            "--api-listen",
            "127.0.0.1:0",
            "--api-public-url",
            "https://api.example",
            "--api-token",
            "hunter2-token",
            "--didcomm-allow",
            "did:peer:2.Ez6LSa,did:key:z6Mkb",
            "--didcomm-admin",
            "did:peer:2.Ez6LSc",
            "--didcomm-max-validity",
            "60",
            "--didcomm-default-validity",
            "30",
            "--didcomm-no-slugs",
        ])
        .expect("flags");
        let api = s.api.expect("on");
        assert_eq!(api.listen, "127.0.0.1:0");
        assert_eq!(
            api.public_url.as_ref().map(|u| u.to_string()),
            Some("https://api.example".into())
        );
        assert_eq!(
            api.token.as_ref().map(Secret::expose),
            Some("hunter2-token")
        );
        assert!(
            !format!("{api:?}").contains("hunter2"),
            "the token in Debug"
        );
        assert_eq!(api.key_file, PathBuf::from("qrtag.db.didcomm-keys.json"));
        let p = api.policy;
        assert_eq!(p.allow.len(), 2);
        assert_eq!(p.admins.len(), 1);
        assert_eq!(
            (p.max_validity, p.default_validity, p.slugs, p.allow_any),
            (Some(60), 30, false, false)
        );
        for bad in [
            &["--api-listen", "x", "--didcomm-allow", "alice"][..],
            &["--api-listen", "x", "--didcomm-admin", "did:peer:2.E#key-1"],
            &["--api-listen", "x", "--didcomm-max-validity", "-1"],
            &[
                "--api-listen",
                "x",
                "--api-public-url",
                "https://a.example/path",
            ],
        ] {
            assert!(serve(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn access_log_and_tracking_flags() {
        let s = serve(&[]).expect("defaults");
        assert_eq!(s.access_log, AccessLogTarget::Path("access.log".into()));
        assert_eq!(
            s.tracking.map(|t| t.cookie_name.to_string()),
            Some("qrtag".into())
        );
        assert!(s.trusted_proxies.is_empty());

        let s = serve(&[
            "--access-log",
            "-",
            "--no-tracking",
            "--trusted-proxy",
            "10.0.0.0/8,192.0.2.1",
            "--trusted-proxy",
            "::1",
        ])
        .expect("flags");
        assert_eq!(s.access_log, AccessLogTarget::Stdout);
        assert!(s.tracking.is_none());
        let proxies: Vec<String> = s.trusted_proxies.iter().map(|n| n.to_string()).collect();
        assert_eq!(proxies, ["10.0.0.0/8", "192.0.2.1/32", "::1/128"]);

        let s = serve(&["--cookie-name", "tid"]).expect("name");
        assert_eq!(
            s.tracking.map(|t| t.cookie_name.to_string()),
            Some("tid".into())
        );

        let s = serve(&[]).expect("defaults");
        assert_eq!(
            s.tracking.map(|t| t.secret_file),
            Some(PathBuf::from("qrtag.db.tracking-secret"))
        );
        let s = serve(&["--tracking-secret-file", "/etc/qrtag/secret"]).expect("file");
        assert_eq!(
            s.tracking.map(|t| t.secret_file),
            Some(PathBuf::from("/etc/qrtag/secret"))
        );

        for bad in [
            &["--cookie-name", "a b"][..],
            &["--trusted-proxy", "example.com"],
            &["--access-log", ""],
        ] {
            assert!(serve(bad).is_err(), "{bad:?} accepted");
        }
    }
}
