//! The `qrtag` command line: argument parsing and the one-line error edge.
//!
//! Values are parsed into domain types by clap itself (`Destination`,
//! `LinkKey`, `PublicUrl`), so a bad argument is reported by clap as one line
//! with exit code 2 before any command runs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::server::api::ApiSettings;
use crate::settings::{AccessLogTarget, Settings, WriterOptions};
use crate::store::options::{CouchSettings, StoreSettings};
use crate::tracking::TrackingSettings;
use crate::tracking::cookie::CookieName;
use crate::values::couch::{CouchDbName, CouchUrl};
use crate::values::destination::Destination;
use crate::values::link_key::LinkKey;
use crate::values::public_url::PublicUrl;
use crate::values::secret::Secret;

// Issue 35: who runs a command, for the history.
mod api_key;
mod audit;
pub mod author;
mod clickhouse;
pub mod config;
mod config_file;
mod console;
// Issue 35 (i35-users).
mod didcomm;
pub mod edge;
mod edit;
// Issue 35: `qrtag history` and `qrtag revert`.
mod history;
mod init;
mod links;
mod migrate;
mod print;
mod public_url;
mod qr;
mod qr_output;
pub mod recorded_url;
mod resolve;
mod rule;
mod rule_flags;
mod serve;
mod setup;
mod stats;
mod transfer;
mod try_scan;
mod unknown_key;
mod user;

#[derive(Debug, Parser)]
#[command(
    name = "qrtag",
    version,
    about = "QR-tag short URLs: create, repoint, redirect, count"
)]
pub struct Cli {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The origin short URLs are printed with (and QR codes encode).
    /// Recorded with the links the first time it is set; given on the
    /// command line with another one recorded, it is used once.
    #[arg(
        long,
        global = true,
        env = "QRTAG_PUBLIC_URL",
        help_heading = "Service"
    )]
    pub public_url: Option<PublicUrl>,

    /// Print and encode short URLs whose origin is a local address
    /// (loopback, private range, link-local, localhost): tags that work
    /// only on this machine or its network.
    #[arg(
        long,
        global = true,
        env = "QRTAG_ALLOW_LOCAL_URL",
        help_heading = "Service",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub allow_local_url: bool,

    /// The configuration file (TOML). Default: ./qrtag.toml, else
    /// /etc/qrtag/qrtag.toml, if there is one.
    #[arg(long, global = true, env = "QRTAG_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Where each setting came from (the file, the environment, a flag).
    #[arg(skip)]
    pub origin: config_file::Origin,

    /// What each store the command opened saw of its cluster, so the
    /// command ends with a warning for writes stored with fewer copies.
    #[arg(skip)]
    pub clusters: std::sync::Mutex<Vec<std::sync::Arc<crate::store::ClusterStats>>>,

    /// The time zone dates are read and shown in: a bare --expires date
    /// ends at 23:59:59 there, `list` shows expiry times in it, `stats
    /// --by hour|weekday` counts in it, and `rule add --days/--hours` keeps
    /// it as the rule's zone. An IANA name, e.g. Europe/Dublin.
    #[arg(
        long,
        visible_alias = "tz",
        global = true,
        env = "QRTAG_TIME_ZONE",
        value_name = "ZONE",
        default_value = "UTC",
        value_parser = parse_time_zone,
        help_heading = "Service"
    )]
    pub time_zone: chrono_tz::Tz,

    /// The domain (a `[[domains]]` host in the configuration file) whose
    /// links to work on; default: the default domain.
    #[arg(
        long,
        global = true,
        value_name = "HOST",
        help_heading = "Store",
        value_parser = |s: &str| crate::values::host::Host::parse(s).map_err(|e| e.to_string())
    )]
    pub domain: Option<crate::values::host::Host>,

    #[command(subcommand)]
    pub command: Command,
}

/// Where the links live.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Store")]
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
    /// Create the embedded database and record the public URL with the
    /// links (with CouchDB: record it in a database `qrtag setup` made).
    /// Safe to run again: it says what exists.
    #[command(
        after_help = "Examples:\n  qrtag init --public-url https://0x1f.ie\n  \
                            qrtag init --public-url https://new.example --force"
    )]
    Init {
        /// Replace a public URL already recorded. Tags printed with the old
        /// origin stop working unless it still reaches this service.
        #[arg(long)]
        force: bool,
    },
    /// Print the settings in force, each with where it came from.
    #[command(after_help = "Example:\n  qrtag config")]
    Config,
    /// Run the redirect service.
    // QRTAG_LOG is read before clap runs, so no option carries it; named
    // here so an operator (and deploy/env.example) finds it in --help.
    #[command(
        after_help = "Environment: QRTAG_LOG filters what the server logs on stderr \
                      (tracing's EnvFilter syntax; default: info,actix_http::h1=warn).\n\n\
                      Example:\n  qrtag serve --public-url https://0x1f.ie --listen 0.0.0.0:80"
    )]
    Serve(Box<ServeArgs>),
    /// Create a link and print its short URL.
    #[command(
        after_help = "Examples:\n  qrtag new https://example.com/whelans/?p=14\n  \
                            qrtag new --key docs https://docs.example/ --expires 30d\n  \
                            qrtag new https://example.com/menu --notes 'table 1'\n  \
                            qrtag new https://example.com/spring --title 'Spring poster'"
    )]
    New {
        /// Destination: an absolute http(s) URL or a /path on this service.
        url: Destination,
        /// Use this key instead of a random 5-character ID: 1 to 64 of
        /// A-Z a-z 0-9 _ -, segments joined by /, not starting with _.
        #[arg(long)]
        key: Option<LinkKey>,
        /// Create it inactive (404 until `qrtag enable`).
        #[arg(long)]
        inactive: bool,
        /// Stop redirecting at this time: RFC 3339 (2026-12-31T23:59:59Z), a
        /// date (2026-12-31: the end of that day in --time-zone) or a
        /// duration from now (90m, 12h, 30d, 2w).
        #[arg(long, value_name = "WHEN", value_parser = crate::values::expiry::parse_arg)]
        expires: Option<crate::values::expiry::Expiry>,
        /// Create a --key even when it takes over URLs of a shorter link
        /// (docs/api/v1 while docs/api exists: /docs/api/v1 then leads here,
        /// no longer to docs/api with /v1 appended).
        #[arg(long, requires = "key")]
        take_over: bool,
        /// Take an --expires time in the past (the link answers 404 at once).
        #[arg(long)]
        force: bool,
        /// The link's notes (where the tag hangs, who asked for it), at most
        /// 2000 characters.
        #[arg(long, value_name = "TEXT")]
        notes: Option<crate::link::Notes>,
        /// Where scans go while the link is disabled or expired, instead of
        /// a 404: an absolute http(s) URL (the venue's home page after an
        /// event).
        #[arg(long, value_name = "URL", value_parser = FallbackArg::parse)]
        fallback: Option<FallbackArg>,
        /// The link's title, the name lists show beside its key (one line,
        /// at most 200 characters).
        #[arg(long, value_name = "TEXT")]
        title: Option<crate::link::Title>,
    },
    /// Repoint a link, or change when it expires, its notes or its title.
    #[command(
        after_help = "Examples:\n  qrtag set H83if https://example.com/new\n  \
                            qrtag set H83if --expires never\n  \
                            qrtag set H83if --notes 'bus stop, Main St'\n  \
                            qrtag set H83if --title 'Bus stop poster'"
    )]
    Set {
        /// The link's key, e.g. H83if or docs/api.
        key: LinkKey,
        /// The new destination: an absolute http(s) URL or a /path on this service.
        #[arg(required_unless_present_any = ["expires", "notes", "title", "enable", "fallback"])]
        url: Option<Destination>,
        /// Stop redirecting at this time (RFC 3339, a date for the end of
        /// that day, or a duration from now such as 30d), or `never` to
        /// remove an expiry.
        #[arg(long, value_name = "WHEN", value_parser = crate::values::expiry::parse_arg)]
        expires: Option<crate::values::expiry::Expiry>,
        /// Take an --expires time in the past (the link answers 404 at once).
        #[arg(long)]
        force: bool,
        /// Also make an inactive link redirect again, as `qrtag enable` does.
        #[arg(long)]
        enable: bool,
        /// The link's notes (where the tag hangs, who asked for it), at most
        /// 2000 characters; an empty TEXT removes them.
        #[arg(long, value_name = "TEXT")]
        notes: Option<crate::link::Notes>,
        /// Where scans go while the link is disabled or expired, instead of
        /// a 404: an absolute http(s) URL; an empty URL removes it.
        #[arg(long, value_name = "URL", value_parser = FallbackArg::parse)]
        fallback: Option<FallbackArg>,
        /// The link's title (one line, at most 200 characters); an empty
        /// TEXT removes it.
        #[arg(long, value_name = "TEXT")]
        title: Option<crate::link::Title>,
    },
    /// Edit a link's whole document in $VISUAL or $EDITOR (notes, expiry,
    /// any field), checked before it is saved.
    #[command(after_help = "Example:\n  EDITOR=nano qrtag edit H83if")]
    Edit {
        /// The link's key.
        key: LinkKey,
    },
    // Issue 35 (history). ---------------------------------------------------
    /// Show a link's history: each change, who made it (the console user,
    /// the API key, the DIDComm agent, the OS user and host of a command,
    /// or "outside qrtag"), when, through which surface, and the fields
    /// before and after. The last 200 entries of a link are kept.
    #[command(after_help = "Examples:\n  qrtag history H83if\n  qrtag history --json H83if")]
    History {
        /// The link's key, e.g. H83if or docs/api.
        key: LinkKey,
        /// One JSON object a line, oldest first, instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Put a link back as it was after entry N of its history (destination,
    /// rules, state, expiry, title, notes, fallback). The revert is itself
    /// an entry; a deleted link cannot be reverted.
    #[command(after_help = "Example:\n  qrtag revert H83if --to 3")]
    Revert {
        /// The link's key, e.g. H83if or docs/api.
        key: LinkKey,
        /// The entry's number, as `qrtag history` shows it.
        #[arg(long, value_name = "N")]
        to: u64,
    },
    // End of issue 35 (history). --------------------------------------------
    /// Make a link answer 404 (its document is kept).
    #[command(after_help = "Example:\n  qrtag disable H83if")]
    Disable {
        /// The link's key, e.g. H83if or docs/api.
        key: LinkKey,
    },
    /// Make a disabled link redirect again.
    #[command(after_help = "Example:\n  qrtag enable H83if")]
    Enable {
        /// The link's key, e.g. H83if or docs/api.
        key: LinkKey,
    },
    /// Delete a link: scans answer 404, and the key is kept as a tombstone
    /// so that it is never handed out again (a printed tag must not lead
    /// somewhere else). Asks for confirmation at a terminal.
    #[command(after_help = "Examples:\n  qrtag delete H83if\n  qrtag delete --yes H83if")]
    Delete {
        /// The link's key, e.g. H83if or docs/api.
        key: LinkKey,
        /// Do not ask (for scripts); without a terminal this is required.
        #[arg(long)]
        yes: bool,
    },
    /// Print a link's document as JSON.
    ///
    /// For a link with smart-tag rules, standard error also lists the
    /// rules, what a scan with no particular facts gets now, and the next
    /// scheduled change (`next: from 2026-12-01 09:00 Europe/Dublin: URL`,
    /// in --time-zone).
    #[command(after_help = "Example:\n  qrtag show H83if")]
    Show {
        /// The link's key, e.g. H83if or docs/api.
        key: LinkKey,
    },
    /// Write a link's QR code (PNG or SVG), the same bytes the admin listener
    /// serves; or a label printer's PNG or ZPL, or a branded code.
    #[command(after_help = "Examples:\n  qrtag qr H83if -o H83if.png\n  \
                            qrtag qr H83if --format svg --ec M > H83if.svg\n  \
                            qrtag qr H83if --printer zebra-4x6 --dpi 203 -o H83if.zpl\n  \
                            qrtag qr H83if --dark '#1e3a8a' --logo logo.png -o H83if.png")]
    Qr(qr::QrArgs),
    /// Create N inactive links with random keys and an A4 sheet of their QR codes.
    #[command(
        after_help = "Examples:\n  qrtag batch 24 --sheet posters.svg\n  qrtag batch 140 --template L7163 -o run.pdf"
    )]
    Batch(qr::BatchArgs),
    /// Write links' tags as a print-ready PDF: on label stock, or as posters.
    #[command(
        after_help = "Examples:\n  qrtag print H83if docs/api --template L7163 -o tags.pdf\n  \
                            qrtag list | cut -f1 | qrtag print - --template 5160 --skip 4 -o tags.pdf\n  \
                            qrtag print H83if --poster A3 --bleed 3mm --crop-marks -o poster.pdf"
    )]
    Print(print::PrintArgs),
    /// List every link: key, destination, state (tab-separated).
    ///
    /// The state is `active`, `active until TIME`, `inactive`, `expired
    /// TIME`, `deleted TIME` or `invalid: WHY`; times in --time-zone. A
    /// link with smart-tag rules has `, N rules` after its state.
    /// Deleted links are left out unless asked for.
    #[command(after_help = "Example:\n  qrtag list | grep inactive")]
    List {
        /// Only the deleted links (tombstones).
        #[arg(long, conflicts_with = "all")]
        deleted: bool,
        /// The deleted links too.
        #[arg(long)]
        all: bool,
    },
    /// Prepare a CouchDB database for qrtag (needs an admin account):
    /// create it, install the validation, grant the reader and editor roles.
    /// Safe to run again.
    #[command(
        after_help = "Example:\n  QRTAG_COUCHDB_PASSWORD=... qrtag --couchdb-url http://127.0.0.1:5984 \\\n      \
                            --couchdb-user admin setup --replicas 3 --shards 2"
    )]
    Setup(setup::SetupArgs),
    /// Create or upgrade qrtag's schema in a ClickHouse database (issue 38):
    /// the scans table, the per-link-per-day aggregates, the schema
    /// version. Safe to run again; a table of another shape is refused.
    #[command(
        after_help = "Example:\n  qrtag setup-clickhouse --clickhouse clickhouse://qrtag:PASSWORD@ch.internal:8123/qrtag"
    )]
    SetupClickhouse(clickhouse::SetupClickhouseArgs),
    /// Resolve URLs against a rules file offline and print each result.
    ///
    /// Prints `URL -> RESULT` a line (`URL -> error: WHY` for one that does
    /// not resolve); exit code 1 if any does not.
    #[command(
        after_help = "Example:\n  qrtag resolve --rules rules.json https://0x1f.ie/docs/api/v1"
    )]
    Resolve {
        /// A JSON object of {key: value}, as in the resolution draft's examples.
        #[arg(long)]
        rules: PathBuf,
        /// Print only each result (`-` for a URL that does not resolve, its
        /// error on standard error), for scripts.
        #[arg(long)]
        plain: bool,
        /// URLs to resolve, e.g. https://0x1f.ie/docs/api.
        #[arg(required = true, value_name = "URL")]
        urls: Vec<String>,
    },
    /// Scan counts per key from access logs (plain or gzip, any order).
    #[command(after_help = "Examples:\n  qrtag stats access.log access.log.1.gz\n  \
                            qrtag stats --by week --chart scans.png --since 2026-11-01 access.log*")]
    Stats(crate::stats::StatsArgs),
    /// Write every link document as JSON lines (or CSV), from one consistent read.
    ///
    /// One document per line, `_id` (the key) first and then its fields in
    /// stored order, sorted by key; or with --format csv one record per
    /// link under a header of the columns `import` reads. Deleted links
    /// (tombstones, unless --deleted) and design documents are left out.
    #[command(
        after_help = "Examples:\n  qrtag export -o links.jsonl\n  qrtag export --format csv -o links.csv"
    )]
    Export(transfer::ExportArgs),
    /// Add links from JSON lines (as `export` writes them) or CSV.
    ///
    /// The format is told by the first line: `{` for JSON lines, else CSV
    /// with a header naming url (optional: key, inactive, expires, notes,
    /// created_at, changed_at, deleted_at, fallback_url, title, created_via, changed_via, rules; a key left out or empty is
    /// drawn, and printed as KEY<TAB>URL). The whole input is checked
    /// first: a bad line, a duplicate key or (without --update) a key that
    /// exists, and nothing is written.
    #[command(
        after_help = "Examples:\n  qrtag import links.jsonl\n  qrtag import --update --dry-run links.csv\n  \
                      qrtag --couchdb-url http://127.0.0.1:5984 --couchdb-user admin import --new-database links.jsonl"
    )]
    Import(transfer::ImportArgs),
    /// Set or reset the password of the console user `admin` (made an admin
    /// if there is no such user; embedded store only; with CouchDB the
    /// console takes CouchDB accounts). Read without echo from the terminal,
    /// or one line from standard input; stored as an argon2 hash.
    #[command(
        name = "console-password",
        after_help = "Examples:\n  qrtag console-password\n  \
                      printf '%s\\n' \"$PW\" | qrtag --db /var/lib/qrtag/qrtag.db console-password"
    )]
    ConsolePassword,
    /// API keys for the REST API (`/api/v1` on --api-listen).
    ///
    /// `create` prints the key once; only its hash is stored. A revoked key
    /// is refused from the next request on, on every node.
    #[command(
        name = "api-key",
        after_help = "Examples:\n  qrtag api-key create --name print-shop --scope write\n  \
                      qrtag api-key list\n  qrtag api-key revoke Ab3dE5gH"
    )]
    ApiKey {
        #[command(subcommand)]
        command: api_key::ApiKeyCommand,
    },
    /// The audit log (issue 35): API keys made and revoked, logins and
    /// failed logins, passwords and settings changed, bulk actions, users
    /// and roles; one JSON object a line, oldest first.
    #[command(
        after_help = "Examples:\n  qrtag audit\n  qrtag audit --since 2026-11-01 --limit 100"
    )]
    Audit(audit::AuditArgs),
    /// The console's users on the embedded store (issue 35): invite with a
    /// one-time link, list, change a role, remove, reset a password.
    ///
    /// Roles: viewer (read, print, scans), editor (and create, repoint,
    /// rules, enable, disable), admin (and users, API keys, settings,
    /// delete). The last admin cannot be removed or demoted. With CouchDB,
    /// accounts are CouchDB's own.
    #[command(
        after_help = "Examples:\n  qrtag user add ann --role editor\n  qrtag user list\n  \
                      qrtag user role ann viewer\n  qrtag user reset ann\n  qrtag user remove ann"
    )]
    User {
        #[command(subcommand)]
        command: user::UserCommand,
    },
    /// Smart tags: a link's rules, which send a scan elsewhere than its
    /// url by the scanner's device, country, language, the time or an A/B
    /// split (the first rule whose conditions all hold answers).
    Rule {
        #[command(subcommand)]
        command: rule::RuleCommand,
    },
    /// Which destination a described scan of a link would get, by which
    /// rule, and what changes next and when.
    ///
    /// Prints the `Location` the server would answer (after its resolver:
    /// internal redirects, path and query), then the rule or url that gave
    /// it, and the next scheduled change for this scan. Exit code 1 when
    /// the scan would be answered 404.
    #[command(after_help = "Examples:\n  qrtag try menu --ua iphone\n  \
                            qrtag try menu --lang 'de, en;q=0.8' --at '2026-12-01 12:30' --tz Europe/Dublin\n  \
                            qrtag try promo --cookie 0mE3Yk1zAbCdEfGhIjK\n  \
                            qrtag try menu --ip 203.0.113.7 --geoip-db GeoLite2-Country.mmdb")]
    Try(Box<try_scan::TryArgs>),
    /// The DIDComm url-shortener's identity.
    Didcomm {
        #[command(subcommand)]
        command: DidcommCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum DidcommCommand {
    /// Print the service's did:peer:2, creating its keys on first use.
    #[command(after_help = "Example:\n  qrtag didcomm did --api-listen 127.0.0.1:8082")]
    Did(DidcommIdentityArgs),
}

/// Where the service's DIDComm identity lives and where agents reach it:
/// both go into its DID, so `serve` and `didcomm did` read the same options.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "DIDComm")]
pub struct DidcommIdentityArgs {
    /// The DIDComm listener (POST /didcomm); off when unset.
    #[arg(long, env = "QRTAG_API_LISTEN", value_name = "ADDR", value_parser = parse_listen)]
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
#[command(next_help_heading = "DIDComm")]
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
    /// Post replies to senders' endpoints on loopback, private-range and
    /// link-local addresses too (agents on this host or network); without
    /// it such a reply is the response body.
    #[arg(
        long,
        env = "QRTAG_DIDCOMM_ALLOW_PRIVATE_ENDPOINTS",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub didcomm_allow_private_endpoints: bool,
    /// Requests a second one REST API key may make (`/api/v1`); past it 429
    /// with Retry-After.
    #[arg(
        long,
        env = "QRTAG_API_RATE_LIMIT",
        value_name = "PER_SECOND",
        default_value_t = crate::server::rest::auth::RATE_PER_SECOND,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub api_rate_limit: u32,
    /// With CouchDB: the editor account the API listener writes links
    /// (DIDComm, REST) and reads API keys with, so --couchdb-user can stay
    /// a reader. Default: --couchdb-user does both.
    #[arg(long, env = "QRTAG_API_COUCHDB_USER", value_name = "USER")]
    pub api_couchdb_user: Option<String>,
    /// Password of --api-couchdb-user. Prefer the environment variable.
    #[arg(
        long,
        env = "QRTAG_API_COUCHDB_PASSWORD",
        hide_env_values = true,
        value_name = "PASSWORD"
    )]
    pub api_couchdb_password: Option<Secret>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Public listener (every path is a redirect request).
    #[arg(help_heading = "Listeners", long, env = "QRTAG_LISTEN", default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    pub listen: String,
    /// Admin QR codes write scheme and host in capitals (a smaller code; see docs/src/printing.md).
    #[arg(
        help_heading = "Listeners",
        long,
        env = "QRTAG_QR_UPPERCASE_PREFIX",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub qr_uppercase_prefix: bool,
    /// A PNG logo (at most 1 MiB, 1024 x 1024 pixels) the print surfaces
    /// draw in each code's centre when asked (`logo=true` on /qr/KEY.pdf,
    /// the REST API's print.pdf and the console's print forms).
    #[arg(
        help_heading = "Listeners",
        long,
        env = "QRTAG_PRINT_LOGO",
        value_name = "FILE.png",
        value_hint = clap::ValueHint::FilePath,
        value_parser = qr_output::parse_print_logo
    )]
    pub print_logo: Option<qr_output::PrintLogo>,
    /// Admin listener: /healthz, /readyz and the QR codes (/qr/KEY.png,
    /// /qr/KEY.svg); keep it off the public network.
    #[arg(help_heading = "Listeners", long, env = "QRTAG_ADMIN_LISTEN", default_value = "127.0.0.1:8081", value_parser = parse_listen)]
    pub admin_listen: String,
    /// Worker threads for the public listener (default: one per core).
    #[arg(help_heading = "Listeners", long, env = "QRTAG_WORKERS")]
    pub workers: Option<usize>,
    /// This node's name when several serve one store: shown in the startup
    /// line, /readyz and /metrics (`qrtag_node_info`), never in the access log.
    #[arg(
        help_heading = "Listeners",
        long,
        env = "QRTAG_NODE_NAME",
        value_name = "NAME"
    )]
    pub node_name: Option<crate::values::node_name::NodeName>,
    /// Access log file, appended to; `-` for standard output. SIGHUP reopens it.
    #[arg(
        help_heading = "Access log",
        long,
        env = "QRTAG_ACCESS_LOG",
        value_hint = clap::ValueHint::FilePath,
        default_value = "access.log"
    )]
    pub access_log: AccessLogTarget,
    /// Milliseconds between access log writes: what a SIGKILL or a power cut
    /// can lose (SIGTERM and SIGINT lose nothing). Lower costs more writes.
    #[arg(
        help_heading = "Access log",
        long,
        env = "QRTAG_ACCESS_LOG_FLUSH_MS",
        value_name = "MS",
        default_value_t = 50,
        value_parser = clap::value_parser!(u64).range(1..=60_000)
    )]
    pub access_log_flush_ms: u64,
    /// Name of the tracking cookie.
    #[arg(help_heading = "Tracking", long, env = "QRTAG_COOKIE_NAME", default_value = crate::tracking::cookie::DEFAULT_NAME)]
    pub cookie_name: CookieName,
    /// Set no tracking cookie; the log's tracking field becomes `-`.
    #[arg(
        help_heading = "Tracking",
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
    #[arg(
        help_heading = "Tracking",
        long,
        env = "QRTAG_TRACKING_SECRET_FILE",
        value_name = "PATH"
    )]
    pub tracking_secret_file: Option<PathBuf>,
    /// A proxy (address or CIDR block) whose X-Forwarded-For is believed when
    /// logging client addresses. Repeatable; the variable takes a comma list.
    #[arg(
        help_heading = "Access log",
        long = "trusted-proxy",
        value_name = "CIDR",
        env = "QRTAG_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_parser = crate::tracking::client_ip::parse_trusted_proxy
    )]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// How much of a client's address the access log keeps: `full`,
    /// `truncated` (IPv4 to its /24, IPv6 to its /48, before the line is
    /// written: still enough for a country) or `none` (`-`).
    #[arg(
        help_heading = "Access log",
        long,
        env = "QRTAG_CLIENT_IP",
        value_name = "WHAT",
        value_enum,
        default_value_t = crate::tracking::client_ip::ClientIpMode::Full
    )]
    pub client_ip: crate::tracking::client_ip::ClientIpMode,
    // Issue 38: the scan sink.
    /// Also send each access-log line to ClickHouse as a `scans` row, in
    /// batches (every second or 10,000 rows), as `qrtag stats --load-into`
    /// would load it: clickhouse://[USER[:PASSWORD]@]HOST[:PORT][/DATABASE]
    /// with the schema of `qrtag setup-clickhouse`. Never slows a redirect:
    /// rows wait in a bounded queue while ClickHouse is away, and are
    /// dropped (counted on /metrics and /readyz) when it is full.
    #[arg(
        help_heading = "Access log",
        long,
        env = "QRTAG_SCANS_TO",
        value_name = "URL",
        // The URL may hold a password: `qrtag config` shows `(set)`.
        hide_env_values = true
    )]
    pub scans_to: Option<crate::clickhouse::ClickHouseUrl>,
    /// With --scans-to: the rows that may wait for ClickHouse (queued or
    /// being retried), and 1 KiB of log lines a row; later lines are
    /// dropped until there is room.
    #[arg(
        help_heading = "Access log",
        long,
        env = "QRTAG_SCANS_QUEUE",
        value_name = "ROWS",
        requires = "scans_to",
        default_value_t = crate::clickhouse::sink::DEFAULT_QUEUE_ROWS as u64,
        value_parser = clap::value_parser!(u64).range(1..=100_000_000)
    )]
    pub scans_queue: u64,
    /// Seconds a request may take on every listener (public, admin, DIDComm)
    /// from its first byte to its last (head and body); a slower client is
    /// disconnected.
    #[arg(
        help_heading = "Limits",
        long,
        env = "QRTAG_REQUEST_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub request_timeout: u64,
    /// Seconds between SIGTERM (or SIGINT) and the listeners stopping:
    /// `/readyz` answers 503 "draining" at once while every listener keeps
    /// serving, so a load balancer takes the node out of rotation before
    /// it refuses a connection. Longer than the health check's interval
    /// times its fall count; 0 stops at once. A second signal cuts it short.
    #[arg(
        help_heading = "Listeners",
        long,
        env = "QRTAG_SHUTDOWN_GRACE",
        value_name = "SECONDS",
        default_value_t = 5,
        value_parser = clap::value_parser!(u64).range(0..=600)
    )]
    pub shutdown_grace: u64,
    /// Open connections one client network (IPv4 /24, IPv6 /64) may hold
    /// on each listener; more are closed at once. At most an eighth of the
    /// listener's cap (at least 4). A --trusted-proxy peer counts by its
    /// own address, but every client behind it has that address: raise
    /// this or give 0 (no cap).
    #[arg(
        help_heading = "Limits",
        long,
        env = "QRTAG_MAX_CONNECTIONS_PER_IP",
        value_name = "N",
        default_value_t = 256
    )]
    pub max_connections_per_ip: usize,
    /// Open connections on each listener in all; past it new ones
    /// wait to be accepted. Lowered at start (and said) to what the
    /// open-file limit leaves once the store, logs and admin listener have
    /// their descriptors.
    #[arg(
        help_heading = "Limits",
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
    #[arg(
        help_heading = "Snapshot",
        long,
        env = "QRTAG_SNAPSHOT_FILE",
        value_name = "PATH"
    )]
    pub snapshot_file: Option<PathBuf>,
    /// Keep no snapshot file: every start loads all links from the store.
    #[arg(
        help_heading = "Snapshot",
        long,
        env = "QRTAG_NO_SNAPSHOT_FILE",
        conflicts_with = "snapshot_file",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub no_snapshot_file: bool,
    /// Count the scans of these logs instead of this server's own access
    /// log: a path or a glob (`/var/log/qrtag/nodes/*.log`), each with its
    /// rotations; files a glob matches later are picked up. Repeatable; the
    /// variable takes a comma list. Turns the scan index on.
    #[arg(
        long = "scan-log",
        value_name = "PATTERN",
        help_heading = "Console",
        env = "QRTAG_SCAN_LOGS",
        value_delimiter = ',',
        value_parser = parse_scan_log
    )]
    pub scan_logs: Vec<String>,
    /// Keep scan counts current from the access log, with their checkpoint
    /// at PATH. Default with --console: beside the access log
    /// (`.ACCESS_LOG.scan-index`, hidden so `ACCESS_LOG*` never names it).
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Console",
        env = "QRTAG_SCAN_INDEX_FILE"
    )]
    pub scan_index_file: Option<PathBuf>,
    /// A MaxMind-format database (GeoLite2 Country or City, DB-IP Lite, any
    /// MMDB): the scan index also breaks scans down by country, region and
    /// city, as `qrtag stats --geoip-db` does. Without it, no places.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Console",
        env = "QRTAG_GEOIP_DB",
        value_parser = parse_geoip_db
    )]
    pub geoip_db: Option<GeoIpDb>,
    /// The web console on the admin listener, at /console (login required:
    /// on the embedded store a password chosen through the one-time setup
    /// link serve prints while none is set, or set with `qrtag
    /// console-password`; CouchDB accounts on CouchDB).
    #[arg(
        help_heading = "Console",
        long,
        env = "QRTAG_CONSOLE",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub console: bool,
    /// Mark the console's session cookie Secure: give it when the console
    /// is reached over https (a TLS proxy in front of the admin listener).
    #[arg(
        help_heading = "Console",
        long,
        env = "QRTAG_CONSOLE_SECURE_COOKIE",
        requires = "console",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub console_secure_cookie: bool,
    /// The console's address as people reach it (e.g. behind a TLS proxy,
    /// https://console.example): where the users page's invitation links
    /// point, as `qrtag user add --console-url` does; default: the address
    /// the admin's browser used.
    #[arg(
        help_heading = "Console",
        long,
        env = "QRTAG_CONSOLE_URL",
        value_name = "URL"
    )]
    pub console_url: Option<url::Url>,
    // Issue 38.
    /// Answer the console's scan numbers (link pages, dashboard, links
    /// list) and the REST API's scans (/api/v1/scans,
    /// /api/v1/links/KEY/scans) from ClickHouse (the URL as --scans-to's)
    /// instead of the scan index, which the default domain then does not
    /// run. Breakdowns and destinations are not read from ClickHouse yet.
    #[arg(
        help_heading = "Console",
        long,
        env = "QRTAG_SCANS_FROM",
        value_name = "URL",
        hide_env_values = true
    )]
    pub scans_from: Option<crate::clickhouse::ClickHouseUrl>,
    #[command(flatten)]
    pub didcomm: DidcommIdentityArgs,
    #[command(flatten)]
    pub didcomm_rules: DidcommServeArgs,
    #[command(flatten)]
    pub dead_tags: DeadTagArgs,
    #[command(flatten)]
    pub https: HttpsArgs,
    #[command(flatten)]
    pub domains: DomainArgs,
}

/// Issue 36: HTTPS on the public listener with certificate files managed
/// elsewhere or ordered from an ACME CA. In the configuration file,
/// `tls = { cert = "…", key = "…" }` sets `tls_cert` and `tls_key`,
/// `[acme]`'s keys `acme_email` and the others.
#[derive(Debug, Clone, Args)]
pub struct HttpsArgs {
    /// `acme`: serve the public listener over HTTPS with certificates
    /// ordered from an ACME CA (Let's Encrypt unless --acme-directory), one
    /// for the host of --public-url (an https:// URL naming a DNS name) and
    /// one for each other [[domains]] entry; answered over HTTP-01 on
    /// --http-listen, which the CA reaches on port 80. Kept beside the
    /// database (DB.acme/), or on CouchDB in LINKS-certs (the account needs
    /// the role qrtag_certs), and renewed there.
    /// Handshakes fail until the first certificate is installed. In
    /// qrtag.toml `tls = "acme"`.
    #[arg(help_heading = "HTTPS", long, env = "QRTAG_TLS", value_name = "acme")]
    pub tls: Option<TlsMode>,
    /// With --tls acme: the contact the CA writes to before a certificate
    /// expires unrenewed. In qrtag.toml `[acme] email = "…"`.
    #[arg(
        help_heading = "HTTPS",
        long,
        env = "QRTAG_ACME_EMAIL",
        value_name = "ADDRESS"
    )]
    pub acme_email: Option<String>,
    /// With --tls acme: the CA's directory: `production` (Let's Encrypt,
    /// the default), `staging` (Let's Encrypt's, untrusted certificates)
    /// or an https:// URL. In qrtag.toml `[acme] directory = "…"`.
    #[arg(
        help_heading = "HTTPS",
        long,
        env = "QRTAG_ACME_DIRECTORY",
        value_name = "production|staging|URL"
    )]
    pub acme_directory: Option<String>,
    /// With --tls acme: a PEM root the directory's own HTTPS chains to,
    /// for a CA not in the system's trust store (a test CA, a company's).
    /// In qrtag.toml `[acme] ca_root = "…"`.
    #[arg(
        help_heading = "HTTPS",
        long,
        env = "QRTAG_ACME_CA_ROOT",
        value_name = "PATH",
        value_hint = clap::ValueHint::FilePath
    )]
    pub acme_ca_root: Option<PathBuf>,
    /// With --tls acme: how the CA checks the names are ours: `http-01`
    /// (the default; the CA asks port 80, --http-listen) or `tls-alpn-01`
    /// (the CA asks the HTTPS port itself, offering ALPN acme-tls/1; no
    /// port 80 needed, but the public listener must be what the CA reaches
    /// on port 443). In qrtag.toml `[acme] challenge = "…"`.
    #[arg(
        help_heading = "HTTPS",
        long,
        env = "QRTAG_ACME_CHALLENGE",
        value_name = "http-01|tls-alpn-01"
    )]
    pub acme_challenge: Option<String>,
    /// Serve the public listener over HTTPS with this PEM certificate chain
    /// (end-entity first); needs --tls-key. Read at start and again on
    /// SIGHUP; a file that cannot be served on SIGHUP keeps the old
    /// certificate (and /readyz says so). Leave off behind a TLS proxy. In
    /// qrtag.toml also `tls = { cert = "…", key = "…" }`.
    #[arg(
        help_heading = "HTTPS",
        long,
        env = "QRTAG_TLS_CERT",
        value_name = "PATH",
        value_hint = clap::ValueHint::FilePath
    )]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert (PKCS#8, PKCS#1 or SEC1).
    #[arg(
        help_heading = "HTTPS",
        long,
        env = "QRTAG_TLS_KEY",
        value_name = "PATH",
        value_hint = clap::ValueHint::FilePath
    )]
    pub tls_key: Option<PathBuf>,
    /// With HTTPS: a plain HTTP listener (`:80` in production) that
    /// answers every request with a redirect to the same host and path over
    /// HTTPS, except ACME HTTP-01 challenges. Off unless given.
    #[arg(
        help_heading = "HTTPS",
        long,
        env = "QRTAG_HTTP_LISTEN",
        value_name = "ADDR",
        value_parser = parse_listen
    )]
    pub http_listen: Option<String>,
    /// With HTTPS: send Strict-Transport-Security on HTTPS answers: `true`
    /// (a year), a max-age in seconds, or `false`. Off unless given: a
    /// browser that saw it keeps to HTTPS for that long.
    #[arg(
        help_heading = "HTTPS",
        long,
        env = "QRTAG_HSTS",
        value_name = HSTS_VALUE_NAME,
        value_parser = crate::tls::hsts::HstsArg::parse
    )]
    pub hsts: Option<crate::tls::hsts::HstsArg>,
}

/// `--hsts`'s value name; the configuration file also takes a TOML
/// boolean or integer for an option named so.
pub const HSTS_VALUE_NAME: &str = "true|SECONDS";

/// `--tls`'s one value: the certificate files have options of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TlsMode {
    Acme,
}

impl HttpsArgs {
    /// The settings these options make, or what is missing; `names`: the
    /// hosts an ACME certificate is for (`Err`: why there are none).
    pub fn settings(
        &self,
        names: Result<Vec<String>, String>,
    ) -> Result<Option<crate::tls::TlsSettings>, String> {
        if self.tls == Some(TlsMode::Acme) {
            return self.acme_settings(names).map(Some);
        }
        if self.acme_email.is_some()
            || self.acme_directory.is_some()
            || self.acme_ca_root.is_some()
            || self.acme_challenge.is_some()
        {
            return Err(
                "--acme-email, --acme-directory, --acme-ca-root and --acme-challenge ([acme]) go with --tls acme (tls = \"acme\")".into(),
            );
        }
        self.file_settings().map_err(str::to_owned)
    }

    fn acme_settings(
        &self,
        names: Result<Vec<String>, String>,
    ) -> Result<crate::tls::TlsSettings, String> {
        if self.tls_cert.is_some() || self.tls_key.is_some() {
            return Err(
                "--tls acme orders the certificate: leave out --tls-cert and --tls-key (tls = \"acme\" or tls = { cert, key }, not both)".into(),
            );
        }
        // Issue 36: TLS-ALPN-01 needs no port 80.
        let challenge = self
            .acme_challenge
            .as_deref()
            .map(crate::acme::Challenge::parse)
            .transpose()
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        if self.http_listen.is_none() && challenge == crate::acme::Challenge::Http01 {
            return Err(
                "--tls acme answers the CA's HTTP-01 challenges on port 80: give --http-listen (e.g. [::]:80), or --acme-challenge tls-alpn-01".into(),
            );
        }
        let names = names?;
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let acme = crate::acme::AcmeSettings::new(
            self.acme_directory.as_deref().unwrap_or("production"),
            self.acme_email.as_deref(),
            self.acme_ca_root.clone(),
            &names,
        )
        .map_err(|e| e.to_string())?
        .with_challenge(challenge);
        Ok(crate::tls::TlsSettings {
            source: crate::tls::CertSource::Acme(acme),
            hsts: self.hsts.and_then(|h| h.0),
            http_listen: self.http_listen.clone(),
            domains: Vec::new(),
        })
    }

    fn file_settings(&self) -> Result<Option<crate::tls::TlsSettings>, &'static str> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Ok(Some(crate::tls::TlsSettings {
                source: crate::tls::CertSource::Files {
                    cert: cert.clone(),
                    key: key.clone(),
                },
                hsts: self.hsts.and_then(|h| h.0),
                http_listen: self.http_listen.clone(),
                domains: Vec::new(),
            })),
            (Some(_), None) => Err("--tls-cert needs --tls-key (or tls = { cert = …, key = … })"),
            (None, Some(_)) => Err("--tls-key needs --tls-cert (or tls = { cert = …, key = … })"),
            (None, None) if self.http_listen.is_some() => {
                Err("--http-listen redirects to HTTPS: give --tls-cert and --tls-key too")
            }
            (None, None) if self.hsts.is_some_and(|h| h.0.is_some()) => {
                Err("--hsts is sent on HTTPS answers: give --tls-cert and --tls-key too")
            }
            (None, None) => Ok(None),
        }
    }
}

/// Issue 36: what the public listener does with a request's host. The
/// domains themselves are listed in the configuration file, `[[domains]]`.
#[derive(Debug, Clone, Args)]
pub struct DomainArgs {
    /// Where `/` on the public listener sends a browser (302), e.g. the
    /// brand's own site; without it `/` is answered as an unknown key.
    #[arg(
        help_heading = "Domains",
        long,
        env = "QRTAG_ROOT_URL",
        value_name = "URL",
        value_parser = |s: &str| Destination::parse_absolute(s).map_err(|e| e.to_string())
    )]
    pub root_url: Option<Destination>,
    /// What a request for a host of no `[[domains]]` entry gets: `404`
    /// (logged with status 421 in the default domain's access log, and
    /// counted on /metrics) or `default`, the default domain's answer.
    /// Without `[[domains]]` every host is the one domain's.
    #[arg(
        help_heading = "Domains",
        long,
        env = "QRTAG_UNKNOWN_HOST",
        value_name = "404|default",
        default_value = "404",
        value_parser = |s: &str| s.parse::<crate::settings::domains::UnknownHost>()
    )]
    pub unknown_host: crate::settings::domains::UnknownHost,
}

/// `--fallback URL` (issue 33): an absolute http(s) URL, or `''` for none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FallbackArg(pub Option<Destination>);

impl FallbackArg {
    fn parse(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Ok(Self(None));
        }
        Destination::parse_absolute(s)
            .map(|d| Self(Some(d)))
            .map_err(|e| e.to_string())
    }
}

/// What a person who scans a tag that leads nowhere is told (issue 33).
#[derive(Debug, Clone, Args)]
pub struct DeadTagArgs {
    /// Who runs these tags, named on the page a browser gets for an
    /// unknown, disabled, expired or deleted key (at most 100 characters).
    #[arg(
        help_heading = "Dead tags",
        long,
        env = "QRTAG_OPERATOR_NAME",
        value_name = "NAME",
        value_parser = |s: &str| crate::server::dead_tag::parse_name(s).map_err(|e| e.to_string())
    )]
    pub operator_name: Option<String>,
    /// How people reach the operator, linked on the dead-tag page: an
    /// email address or an http(s) URL.
    #[arg(
        help_heading = "Dead tags",
        long,
        env = "QRTAG_OPERATOR_CONTACT",
        value_name = "EMAIL|URL",
        value_parser = |s: &str| crate::server::dead_tag::Contact::parse(s).map_err(|e| e.to_string())
    )]
    pub operator_contact: Option<crate::server::dead_tag::Contact>,
    /// An HTML file to answer a browser with instead of the built-in
    /// dead-tag page: at most
    /// 4 KB, no script, nothing loaded from elsewhere; `{{name}}`,
    /// `{{contact}}`, `{{contact_href}}` and `{{key}}` are filled in.
    /// Read once, at start.
    #[arg(
        help_heading = "Dead tags",
        long,
        env = "QRTAG_DEAD_TAG_PAGE",
        value_name = "FILE.html",
        value_hint = clap::ValueHint::FilePath,
        value_parser = |s: &str| crate::server::dead_tag::Template::read(s).map_err(|e| e.to_string())
    )]
    pub dead_tag_page: Option<crate::server::dead_tag::Template>,
}

impl DeadTagArgs {
    /// The page these options make; refused only when a template would
    /// pass 4 KB once filled in.
    pub fn page(
        &self,
    ) -> Result<crate::server::dead_tag::DeadTagPage, crate::server::dead_tag::DeadTagError> {
        crate::server::dead_tag::DeadTagPage::new(
            self.operator_name.as_deref(),
            self.operator_contact.as_ref(),
            self.dead_tag_page.as_ref(),
        )
    }
}

/// An IANA time zone name, said as one line when unknown (chrono-tz's own
/// error is the whole parse failure).
fn parse_time_zone(s: &str) -> Result<chrono_tz::Tz, String> {
    s.parse().map_err(|_| {
        format!("`{s}` is not a time zone: give an IANA name, e.g. UTC or Europe/Dublin")
    })
}

/// A `--geoip-db` file, opened and checked (an MMDB) before anything
/// starts.
#[derive(Clone)]
pub struct GeoIpDb {
    pub path: PathBuf,
    pub db: crate::stats::dimensions::place::GeoDb,
}

impl std::fmt::Debug for GeoIpDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("GeoIpDb").field(&self.path).finish()
    }
}

fn parse_geoip_db(s: &str) -> Result<GeoIpDb, String> {
    let path = PathBuf::from(s);
    crate::stats::dimensions::place::GeoDb::open(&path)
        .map(|db| GeoIpDb { path, db })
        .map_err(|e| e.to_string())
}

/// A `--scan-log` pattern, checked before anything starts.
fn parse_scan_log(s: &str) -> Result<String, String> {
    crate::scan_index::LogSources::parse([s.to_owned()])
        .map(|_| s.to_owned())
        .map_err(|e| e.to_string())
}

/// A listen address as `bind` takes it: `IP:PORT`, `[IPv6]:PORT` or
/// `HOST:PORT` (a name is resolved when binding). Checked here so that a
/// typo is a usage error, said before anything starts.
fn parse_listen(s: &str) -> Result<String, String> {
    let bad = || {
        format!(
            "`{s}` is not an address to listen on: give IP:PORT or HOST:PORT, e.g. 127.0.0.1:8080"
        )
    };
    if s.parse::<std::net::SocketAddr>().is_ok() {
        return Ok(s.to_owned());
    }
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.'));
    if !host_ok || port.parse::<u16>().is_err() {
        return Err(bad());
    }
    Ok(s.to_owned())
}

impl Cli {
    /// The scan index: on with the console (its counts), or when a
    /// checkpoint file or logs to follow are named; it follows the access
    /// log unless `--scan-log` names others, so without them only when that
    /// is a file. The checkpoint is beside the access log, or beside the
    /// first `--scan-log` pattern's files when the log goes to standard output.
    fn scan_index_settings(
        &self,
        args: &ServeArgs,
    ) -> Option<crate::scan_index::ScanIndexSettings> {
        let logs = crate::scan_index::LogSources::parse(args.scan_logs.clone()).ok();
        let mut settings = match (&args.access_log, &logs) {
            (AccessLogTarget::Path(log), _) => crate::scan_index::ScanIndexSettings::beside(log),
            (AccessLogTarget::Stdout, Some(logs)) => crate::scan_index::ScanIndexSettings {
                checkpoint: logs.default_checkpoint(),
                ..crate::scan_index::ScanIndexSettings::beside(std::path::Path::new("-"))
            },
            (AccessLogTarget::Stdout, None) => return None,
        };
        match &args.scan_index_file {
            Some(path) => settings.checkpoint = path.clone(),
            None if args.console || logs.is_some() => {}
            None => return None,
        }
        settings.logs = logs;
        settings.breakdowns = Some(crate::scan_index::BreakdownSettings::new(
            self.time_zone,
            args.geoip_db
                .as_ref()
                .map(|g| (g.path.as_path(), g.db.clone())),
        ));
        Some(settings)
    }

    /// The store the options name, opened as the command needs it. A
    /// missing database names where `--db` came from.
    pub fn open_store(
        &self,
        access: crate::store::Access,
    ) -> anyhow::Result<std::sync::Arc<dyn crate::store::LinkStore>> {
        // Issue 36: `--domain` names another domain's store.
        if let Some((settings, _)) = self.other_domain(self.domain.as_ref())? {
            return self.open_domain_store(&settings, access);
        }
        let store = match crate::store::open(&self.store.settings(), access) {
            Err(crate::store::StoreError::NoDatabase(path)) => Err(anyhow::anyhow!(
                "no database at {path} (db from {}); create it with qrtag init, or start qrtag serve",
                self.origin.source("db")
            )),
            other => Ok(other?),
        }?;
        if let (Some(stats), Ok(mut held)) = (store.cluster(), self.clusters.lock()) {
            held.push(stats);
        }
        Ok(store)
    }

    /// The warning for the command's writes that CouchDB stored with fewer
    /// copies than the database's n (HTTP 202), if there were any.
    fn fewer_copies_warning(&self) -> Option<String> {
        let held = self.clusters.lock().ok()?;
        let writes: u64 = held.iter().map(|c| c.fewer_copy_writes()).sum();
        (writes > 0).then(|| crate::store::couch::cluster::fewer_copies_warning(writes))
    }

    /// The snapshot file `serve` keeps (`None`: `--no-snapshot-file`):
    /// the one chosen, else beside the embedded database or
    /// `qrtag-couchdb-DB.snapshot` in the working directory. `import
    /// --new-database` leaves one at the same place, so the first start
    /// after it serves from it.
    pub fn snapshot_file(&self, chosen: Option<&Path>, none: bool) -> Option<PathBuf> {
        if none {
            return None;
        }
        Some(match (chosen, &self.store.couchdb_url) {
            (Some(path), _) => path.to_owned(),
            (None, Some(_)) => PathBuf::from(format!(
                "qrtag-couchdb-{}.snapshot",
                self.store.couchdb_db.as_str().replace('/', "_")
            )),
            (None, None) => crate::settings::default_snapshot_file(&self.store.db),
        })
    }

    /// Issue 36: `--domain HOST` of a link command: `None` for the default
    /// domain (or none named), else that domain's store and public URL
    /// from the configuration file; a host it does not list is a usage
    /// error naming the ones it does.
    pub fn other_domain(
        &self,
        host: Option<&crate::values::host::Host>,
    ) -> Result<Option<(StoreSettings, PublicUrl)>, crate::values::usage::UsageError> {
        use crate::settings::domains::DomainStore;
        let listed = &self.origin.config.domains;
        let Some(host) = host.filter(|h| listed.default_host.as_ref() != Some(*h)) else {
            return Ok(None);
        };
        let usage = crate::values::usage::UsageError;
        let Some(entry) = listed.others.iter().find(|e| &e.host == host) else {
            let known: Vec<String> = listed
                .default_host
                .iter()
                .chain(listed.others.iter().map(|e| &e.host))
                .map(ToString::to_string)
                .collect();
            return Err(usage(match known.is_empty() {
                true => format!("no domain {host}: the configuration file lists no [[domains]]"),
                false => format!("no domain {host} (domains: {})", known.join(", ")),
            }));
        };
        let store = match (&entry.store, self.store.settings()) {
            (Some(DomainStore::Sqlite(path)), _) => StoreSettings::Sqlite { path: path.clone() },
            (Some(DomainStore::CouchDb(db)), StoreSettings::CouchDb(couch)) => {
                StoreSettings::CouchDb(CouchSettings {
                    db: db.clone(),
                    ..couch
                })
            }
            (Some(DomainStore::CouchDb(_)), StoreSettings::Sqlite { .. }) => {
                return Err(usage(
                    crate::settings::domains::DomainError::NoCouchServer { host: host.clone() }
                        .to_string(),
                ));
            }
            (None, _) => {
                return Err(usage(
                    crate::settings::domains::DomainError::NoStore { host: host.clone() }
                        .to_string(),
                ));
            }
        };
        let url = match &entry.public_url {
            Some(url) => url.clone(),
            None => {
                PublicUrl::parse(&format!("https://{host}")).map_err(|e| usage(e.to_string()))?
            }
        };
        Ok(Some((store, url)))
    }

    /// Issue 36: the store the command works on: `--domain`'s, else the
    /// default domain's.
    pub fn store_settings(&self) -> Result<StoreSettings, crate::values::usage::UsageError> {
        Ok(match self.other_domain(self.domain.as_ref())? {
            Some((settings, _)) => settings,
            None => self.store.settings(),
        })
    }

    /// Issue 36: `--domain`'s access log (its `access_log` in the
    /// configuration file) when it names a domain other than the default.
    pub fn domain_access_log(&self) -> Option<PathBuf> {
        let host = self.domain.as_ref()?;
        self.origin
            .config
            .domains
            .others
            .iter()
            .find(|e| &e.host == host)
            .and_then(|e| e.access_log.clone())
    }

    /// Issue 36: another domain's store, opened as the command needs it.
    pub fn open_domain_store(
        &self,
        settings: &StoreSettings,
        access: crate::store::Access,
    ) -> anyhow::Result<std::sync::Arc<dyn crate::store::LinkStore>> {
        let store = match crate::store::open(settings, access) {
            Err(crate::store::StoreError::NoDatabase(path)) => Err(anyhow::anyhow!(
                "no database at {path} (a domain's sqlite in the configuration file); start qrtag serve to create it"
            )),
            other => Ok(other?),
        }?;
        if let (Some(stats), Ok(mut held)) = (store.cluster(), self.clusters.lock()) {
            held.push(stats);
        }
        Ok(store)
    }

    /// Issue 36: the domains besides the default one, ready to start, and
    /// the checks that need the settings in force (flags and environment
    /// included): the default domain's public URL on its host, each other
    /// domain's store and log named, no file shared by two domains.
    pub fn served_domains(
        &self,
        args: &ServeArgs,
    ) -> Result<crate::settings::domains::ServedDomains, crate::settings::domains::DomainError>
    {
        use crate::settings::domains::{
            DomainError, DomainFiles, DomainSettings, DomainStore, ServedDomains, check_distinct,
            on_host,
        };
        let listed = &self.origin.config.domains;
        let Some(default_host) = listed.default_host.clone() else {
            return Ok(ServedDomains {
                unknown_host: args.domains.unknown_host,
                ..ServedDomains::default()
            });
        };
        if let Some(url) = &self.public_url
            && !on_host(url, &default_host)
        {
            return Err(DomainError::OtherHost {
                host: default_host,
                url: url.to_string(),
            });
        }
        let no_snapshot = args.no_snapshot_file;
        let mut rows = vec![DomainFiles::new(
            default_host.clone(),
            &self.store.settings(),
            match &args.access_log {
                AccessLogTarget::Path(p) => Some(p.as_path()),
                AccessLogTarget::Stdout => None,
            },
            self.snapshot_file(args.snapshot_file.as_deref(), no_snapshot)
                .as_deref(),
        )];
        let mut others = Vec::with_capacity(listed.others.len());
        for entry in &listed.others {
            let host = entry.host.clone();
            let bad = |field: &'static str, why: String| DomainError::BadValue {
                at: host.to_string(),
                field,
                why,
            };
            let store = match (&entry.store, self.store.settings()) {
                (None, _) => return Err(DomainError::NoStore { host }),
                (Some(DomainStore::Sqlite(path)), _) => {
                    StoreSettings::Sqlite { path: path.clone() }
                }
                (Some(DomainStore::CouchDb(db)), StoreSettings::CouchDb(couch)) => {
                    StoreSettings::CouchDb(CouchSettings {
                        db: db.clone(),
                        ..couch
                    })
                }
                (Some(DomainStore::CouchDb(_)), StoreSettings::Sqlite { .. }) => {
                    return Err(DomainError::NoCouchServer { host });
                }
            };
            let access_log = entry
                .access_log
                .clone()
                .ok_or_else(|| DomainError::NoAccessLog { host: host.clone() })?;
            let snapshot_file = match (&entry.snapshot_file, &store) {
                _ if no_snapshot => None,
                (Some(path), _) => Some(path.clone()),
                (None, StoreSettings::Sqlite { path }) => {
                    Some(crate::settings::default_snapshot_file(path))
                }
                (None, StoreSettings::CouchDb(couch)) => Some(PathBuf::from(format!(
                    "qrtag-couchdb-{}.snapshot",
                    couch.db.as_str().replace('/', "_")
                ))),
            };
            let contact = entry
                .operator_contact
                .as_deref()
                .map(crate::server::dead_tag::Contact::parse)
                .transpose()
                .map_err(|e| bad("operator_contact", e.to_string()))?;
            let template = entry
                .dead_tag_page
                .as_ref()
                .map(|p| crate::server::dead_tag::Template::read(&p.display().to_string()))
                .transpose()
                .map_err(|e| bad("dead_tag_page", e.to_string()))?;
            let dead_tag = crate::server::dead_tag::DeadTagPage::new(
                entry.operator_name.as_deref(),
                contact.as_ref(),
                template.as_ref(),
            )
            .map_err(|e| bad("dead_tag_page", e.to_string()))?;
            rows.push(DomainFiles::new(
                host.clone(),
                &store,
                Some(&access_log),
                snapshot_file.as_deref(),
            ));
            let public_url = match &entry.public_url {
                Some(url) => url.clone(),
                None => PublicUrl::parse(&format!("https://{host}"))
                    .map_err(|e| bad("public_url", e.to_string()))?,
            };
            others.push(DomainSettings {
                host,
                public_url,
                store,
                access_log,
                snapshot_file,
                dead_tag,
                root: entry.root.clone(),
            });
        }
        check_distinct(&rows)?;
        Ok(ServedDomains {
            default_host: Some(default_host),
            others,
            unknown_host: args.domains.unknown_host,
        })
    }

    /// Issue 36: the names of `serve`'s ACME certificate: the public URL's
    /// host, then every other domain's; `Err`: why they cannot be certified.
    pub fn acme_names(&self) -> Result<Vec<String>, String> {
        let Some(url) = &self.public_url else {
            return Err(
                "--tls acme certifies the host of --public-url: give --public-url https://NAME"
                    .into(),
            );
        };
        let parsed = url::Url::parse(url.origin()).map_err(|e| e.to_string())?;
        if parsed.scheme() != "https" {
            return Err(format!(
                "--tls acme serves HTTPS: --public-url {url} must be an https:// URL"
            ));
        }
        let host = match parsed.host() {
            Some(url::Host::Domain(name)) => name.to_owned(),
            _ => {
                return Err(format!(
                    "--tls acme certifies DNS names, not the IP address in --public-url {url}"
                ));
            }
        };
        // Issue 36: the default domain's alone; every other domain is
        // ordered on its own (`tls_settings`).
        Ok(vec![host])
    }

    /// Issue 36: `serve`'s TLS settings: the default domain's certificate
    /// from the options, each other domain's from its `[[domains]]` entry's
    /// `tls = { cert, key }`, else an ACME order of its own under
    /// `tls = "acme"`, else none (the default domain's is served for it).
    pub fn tls_settings(
        &self,
        args: &ServeArgs,
    ) -> Result<Option<crate::tls::TlsSettings>, String> {
        let Some(mut tls) = args.https.settings(self.acme_names())? else {
            if let Some(entry) = self
                .origin
                .config
                .domains
                .others
                .iter()
                .find(|e| e.tls.is_some())
            {
                return Err(format!(
                    "domain {}: its tls = {{ cert, key }} needs HTTPS on the default domain too: set tls at the top level (tls = {{ cert, key }} or tls = \"acme\")",
                    entry.host
                ));
            }
            return Ok(None);
        };
        for entry in &self.origin.config.domains.others {
            let host = entry.host.as_str().to_owned();
            let source = match (&entry.tls, &tls.source) {
                (Some(files), _) => crate::tls::CertSource::Files {
                    cert: files.cert.clone(),
                    key: files.key.clone(),
                },
                (None, crate::tls::CertSource::Acme(acme)) => crate::tls::CertSource::Acme(
                    acme.for_name(&host)
                        .map_err(|e| format!("domain {host}: {e}"))?,
                ),
                (None, crate::tls::CertSource::Files { .. }) => continue,
            };
            tls.domains.push(crate::tls::DomainCert { host, source });
        }
        Ok(Some(tls))
    }

    pub fn serve_settings(&self, args: &ServeArgs) -> Settings {
        Settings {
            // Issue 36: checked in `main` before the command runs.
            domains: self.served_domains(args).unwrap_or_default(),
            root_url: args.domains.root_url.clone(),
            // Checked in `main` before the command runs.
            dead_tag: args.dead_tags.page().unwrap_or_default(),
            // Checked in `main` before the command runs.
            tls: self.tls_settings(args).unwrap_or_default(),
            geoip: args
                .geoip_db
                .as_ref()
                .map(|g| crate::settings::GeoIp(g.db.clone())),
            request_timeout: std::time::Duration::from_secs(args.request_timeout),
            shutdown_grace: std::time::Duration::from_secs(args.shutdown_grace),
            max_connections_per_ip: args.max_connections_per_ip,
            max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
            max_connections_chosen: self.origin.serve_chose("max_connections"),
            listen: args.listen.clone(),
            qr_uppercase_prefix: args.qr_uppercase_prefix,
            print_logo: args.print_logo.as_ref().map(|l| l.0.clone()),
            admin_listen: args.admin_listen.clone(),
            node_name: args.node_name.clone(),
            public_url: self.public_url.clone(),
            follow_recorded_url: false,
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
            client_ip_mode: args.client_ip,
            // Issue 38.
            scans_from: args.scans_from.clone(),
            scans_to: args
                .scans_to
                .clone()
                .map(|url| crate::clickhouse::sink::SinkSettings {
                    url,
                    queue_rows: usize::try_from(args.scans_queue).unwrap_or(usize::MAX),
                }),
            snapshot_file: self.snapshot_file(args.snapshot_file.as_deref(), args.no_snapshot_file),
            scan_index: self.scan_index_settings(args),
            console: args.console.then_some(crate::console::ConsoleSettings {
                secure_cookie: args.console_secure_cookie,
                time_zone: self.time_zone,
                console_url: args.console_url.clone(),
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
                    allow_private_endpoints: rules.didcomm_allow_private_endpoints,
                    rate_per_second: rules.api_rate_limit,
                    strangers_per_second: crate::server::rest::strangers::STRANGERS_PER_SECOND,
                    couch_writer: rules.api_couchdb_user.as_ref().map(|user| {
                        crate::values::couch::Credentials {
                            user: user.clone(),
                            password: rules.api_couchdb_password.clone(),
                        }
                    }),
                }
            }),
        }
    }
}

impl Command {
    /// Issue 36: whether the command works on one domain's links, and so
    /// takes `--domain`.
    pub fn takes_domain(&self) -> bool {
        !matches!(
            self,
            Command::Init { .. }
                | Command::Config
                | Command::Serve(_)
                | Command::Setup(_)
                | Command::Resolve { .. }
                | Command::ConsolePassword
                | Command::ApiKey { .. }
                | Command::Audit(_)
                | Command::User { .. }
                | Command::Didcomm { .. }
        )
    }
}

/// Issue 36: the commands whose help shows `--domain` (the link commands,
/// as [`Command::takes_domain`] says), by name.
const TAKE_DOMAIN: &[&str] = &[
    "new", "set", "edit", "history", "revert", "disable", "enable", "delete", "show", "qr",
    "batch", "print", "list", "stats", "export", "import", "rule", "try",
];

/// Hides `--domain` in every command that does not take it, at any depth.
fn hide_domain(cmd: clap::Command, top: bool) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    let mut cmd = cmd;
    for name in names {
        let keep = !top || TAKE_DOMAIN.contains(&name.as_str());
        cmd = cmd.mut_subcommand(&name, |sub| match keep {
            true => sub,
            false => hide_all_below(hide_domain_arg(sub)),
        });
    }
    match top {
        true => hide_domain_arg(cmd),
        false => cmd,
    }
}

/// `--domain` hidden in `cmd`'s help, where the command has it.
fn hide_domain_arg(cmd: clap::Command) -> clap::Command {
    let has = cmd.get_arguments().any(|a| a.get_id() == "domain");
    match has {
        true => cmd.mut_arg("domain", |a| a.hide(true)),
        false => cmd,
    }
}

fn hide_all_below(cmd: clap::Command) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    names.into_iter().fold(cmd, |cmd, name| {
        cmd.mut_subcommand(&name, |sub| hide_all_below(hide_domain_arg(sub)))
    })
}

/// Runs the command line; `main` is just this.
/// The options no command reads, left out of that command's help (they
/// stay accepted: `--db` and the others are global, and may be set in the
/// environment for every command at once).
const UNUSED: &[(&[&str], &[&str])] = &[
    (&["stats"], &[SERVICE]),
    (&["resolve"], &[STORE_DB, STORE_COUCH, SERVICE, TIME_ZONE]),
    (&["setup"], &[STORE_DB, SERVICE, TIME_ZONE]),
    (
        &["setup-clickhouse"],
        &[STORE_DB, STORE_COUCH, SERVICE, TIME_ZONE],
    ),
    (&["didcomm", "did"], &[STORE_COUCH, SERVICE, TIME_ZONE]),
    (&["disable"], &[SERVICE, TIME_ZONE]),
    (&["show"], &[SERVICE]),
    (&["list"], &[SERVICE]),
    (&["export"], &[SERVICE, TIME_ZONE]),
    (&["import"], &[SERVICE, TIME_ZONE]),
    (&["console-password"], &[STORE_COUCH, SERVICE, TIME_ZONE]),
    (&["edit"], &[TIME_ZONE]),
    (&["enable"], &[TIME_ZONE]),
    (&["qr"], &[TIME_ZONE]),
    (&["batch"], &[TIME_ZONE]),
    (&["print"], &[TIME_ZONE]),
    (&["delete"], &[TIME_ZONE]),
    (&["rule", "list"], &[SERVICE, TIME_ZONE]),
    (&["rule", "remove"], &[TIME_ZONE]),
    (&["rule", "move"], &[TIME_ZONE]),
];
const STORE_DB: &str = "db";
const STORE_COUCH: &str = "couchdb";
const SERVICE: &str = "public_url";
const TIME_ZONE: &str = "time_zone";

/// The help of the command at `path` (e.g. `["didcomm", "did"]`), showing
/// only the options it reads. Rendered from a copy of the parser with the
/// others hidden: hiding them in the parser itself would break its parsing.
pub fn help(path: &[String], long: bool) -> Option<String> {
    let mut cmd = Cli::command();
    cmd.build();
    for (at, groups) in UNUSED {
        cmd = hide_in(cmd, at, groups);
    }
    cmd = hide_domain(cmd, true);
    let mut sub = &mut cmd;
    for name in path {
        sub = sub.find_subcommand_mut(name)?;
    }
    let help = if long {
        sub.render_long_help()
    } else {
        sub.render_help()
    };
    // Styled only for a person at a terminal, as clap itself does.
    Some(if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        help.ansi().to_string()
    } else {
        help.to_string()
    })
}

fn hide_in(cmd: clap::Command, path: &[&str], groups: &[&str]) -> clap::Command {
    match path {
        [] => {
            let ids: Vec<String> = cmd
                .get_arguments()
                .map(|a| a.get_id().to_string())
                .filter(|id| {
                    groups
                        .iter()
                        .any(|g| id == g || (*g == STORE_COUCH && id.starts_with("couchdb_")))
                })
                .collect();
            ids.iter()
                .fold(cmd, |cmd, id| cmd.mut_arg(id, |a| a.hide(true)))
        }
        [first, rest @ ..] => cmd.mut_subcommand(*first, |sub| hide_in(sub, rest, groups)),
    }
}

pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let (cmd, config) = match config_file::load(Cli::command(), &args) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("qrtag: {e}");
            return ExitCode::from(edge::USAGE);
        }
    };
    let parsed = cmd.try_get_matches_from(&args).and_then(|m| {
        let mut cli = <Cli as clap::FromArgMatches>::from_arg_matches(&m)?;
        cli.origin = config_file::Origin::new(config, &m);
        Ok(cli)
    });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
            let long = std::env::args().any(|a| a == "--help");
            match help(&subcommand_path(), long) {
                Some(text) => print!("{text}"),
                None => {
                    let _ = e.print();
                }
            }
            return ExitCode::SUCCESS;
        }
        Err(e) if !e.use_stderr() => {
            // --version, and the command list of a bare `qrtag didcomm`.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!(
                "qrtag: {}",
                edge::clap_line(&e, &subcommand_path().join(" "))
            );
            return ExitCode::from(edge::USAGE);
        }
    };
    if let Err(msg) = check_usage(&cli) {
        eprintln!("qrtag: {msg}");
        return ExitCode::from(edge::USAGE);
    }
    if let Command::Serve(args) = &cli.command
        && let Err(e) = args.dead_tags.page()
    {
        eprintln!("qrtag: {e}");
        return ExitCode::from(edge::USAGE);
    }
    // Issue 36: a certificate that cannot be served is the operator's to
    // fix: one line, exit 2, before anything starts.
    if let Command::Serve(args) = &cli.command
        && let Err(e) = cli.tls_settings(args)
    {
        eprintln!("qrtag: {e}");
        return ExitCode::from(edge::USAGE);
    }
    // Issue 36: every domain's certificate files.
    if let Command::Serve(args) = &cli.command
        && let Ok(Some(tls)) = cli.tls_settings(args)
        && let Some(e) = tls
            .domains
            .iter()
            .map(|d| &d.source)
            .chain([&tls.source])
            .find_map(|source| match source {
                crate::tls::CertSource::Files { cert, key } => {
                    crate::tls::certified::load(cert, key).err()
                }
                crate::tls::CertSource::Acme(_) => None,
            })
    {
        eprintln!("qrtag: {e}");
        return ExitCode::from(edge::USAGE);
    }
    // Issue 36: a domain's mistakes, said before anything starts.
    if let Command::Serve(args) = &cli.command
        && let Err(e) = cli.served_domains(args)
    {
        eprintln!("qrtag: {e}");
        return ExitCode::from(edge::USAGE);
    }
    init_tracing();
    let result = actix_web::rt::System::new().block_on(run(cli));
    match result {
        Ok(code) => code,
        Err(e) => {
            let (line, code) = edge::failure(&e);
            if let Some(line) = line {
                eprintln!("qrtag: {line}");
            }
            code
        }
    }
}

/// The subcommands named on the command line (`qrtag didcomm did` gives
/// both, `qrtag help stats` gives `stats`), for the help to show and the
/// hint of a usage error: clap's error does not say which one failed.
fn subcommand_path() -> Vec<String> {
    let mut cmd = Cli::command();
    let mut path = Vec::new();
    for arg in std::env::args().skip(1) {
        if path.is_empty() && arg == "help" {
            continue;
        }
        let Some(sub) = cmd.find_subcommand(&arg).cloned() else {
            continue;
        };
        path.push(arg);
        cmd = sub;
    }
    path
}

/// Usage errors clap cannot express (its `requires` misses global arguments
/// given before the subcommand), reported in one line with exit code 2.
fn check_usage(cli: &Cli) -> Result<(), &'static str> {
    if cli.store.couchdb_password.is_some() && cli.store.couchdb_user.is_none() {
        return Err("a CouchDB password needs a user: give --couchdb-user (or QRTAG_COUCHDB_USER)");
    }
    if let Command::Serve(args) = &cli.command {
        let rules = &args.didcomm_rules;
        if rules.api_couchdb_password.is_some() && rules.api_couchdb_user.is_none() {
            return Err(
                "an API CouchDB password needs a user: give --api-couchdb-user (or QRTAG_API_COUCHDB_USER)",
            );
        }
        if rules.api_couchdb_user.is_some() && cli.store.couchdb_url.is_none() {
            return Err(
                "--api-couchdb-user is the account the API writes to CouchDB with: give --couchdb-url too",
            );
        }
    }
    if matches!(cli.command, Command::Setup(_)) && cli.store.couchdb_url.is_none() {
        return Err("setup prepares a CouchDB database: give --couchdb-url (or QRTAG_COUCHDB_URL)");
    }
    Ok(())
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let result = run_command(&cli).await;
    // Said whether or not the command went on to succeed: the writes
    // before a failure are stored all the same.
    if let Some(warning) = cli.fewer_copies_warning() {
        eprintln!("qrtag: warning: {warning}");
    }
    result
}

async fn run_command(cli: &Cli) -> anyhow::Result<ExitCode> {
    // Issue 36: `--domain` is for the commands that work on links.
    if let Some(host) = &cli.domain
        && !cli.command.takes_domain()
    {
        return Err(crate::values::usage::UsageError(format!(
            "--domain {host}: this command works on the service, not on one domain's links"
        ))
        .into());
    }
    if let (Some(_), Command::Import(args)) = (&cli.domain, &cli.command)
        && args.new_database
    {
        return Err(crate::values::usage::UsageError(
            "--new-database makes the default domain's database; leave out --domain".into(),
        )
        .into());
    }
    match &cli.command {
        Command::Qr(args) => unknown_key::explain(cli, qr::qr(cli, args).await).await,
        Command::Batch(args) => qr::batch(cli, args).await,
        Command::Print(args) => unknown_key::explain(cli, print::run(cli, args).await).await,
        Command::Serve(args) => serve::run(cli, cli.serve_settings(args)).await,
        Command::Init { force } => init::run(cli, *force).await,
        Command::Config => config_file::run(cli).await,
        Command::Resolve { rules, urls, plain } => resolve::run(rules, urls, *plain),
        Command::Stats(args) => stats::run(cli, args).await,
        Command::Setup(args) => setup::run(&cli.store.settings(), args).await,
        Command::SetupClickhouse(args) => clickhouse::run(cli, args).await,
        Command::Export(args) => transfer::export(cli, args).await,
        Command::Import(args) => transfer::import(cli, args).await,
        Command::Didcomm { command } => didcomm::run(cli, command),
        Command::ConsolePassword => console::run(cli).await,
        Command::ApiKey { command } => api_key::run(cli, command).await,
        Command::Audit(args) => audit::run(cli, args).await,
        Command::User { command } => user::run(cli, command).await,
        Command::Try(args) => unknown_key::explain(cli, try_scan::run(cli, args).await).await,
        Command::Rule { command } => unknown_key::explain(cli, rule::run(cli, command).await).await,
        Command::History { .. } | Command::Revert { .. } => {
            unknown_key::explain(cli, history::run(cli).await).await
        }
        _ => unknown_key::explain(cli, links::run(cli).await).await,
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
    fn node_name_flag() {
        assert_eq!(serve(&[]).expect("defaults").node_name, None);
        let s = serve(&["--node-name", "edge-1.dub"]).expect("a name");
        assert_eq!(s.node_name.as_ref().map(|n| n.as_str()), Some("edge-1.dub"));
        let err = serve(&["--node-name", "edge 1"]).expect_err("a space");
        assert!(err.to_string().contains("node name"), "{err}");
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

    /// Issue 34: `serve --geoip-db` lets the REST API and the console take
    /// a country rule, with or without the console's scan index.
    #[test]
    fn the_api_knows_whether_serve_has_a_geoip_database() {
        let db = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/geoip/test.mmdb"
        );
        let with = serve(&["--api-listen", "127.0.0.1:0", "--geoip-db", db]).expect("flags");
        assert!(with.rule_capabilities().geoip);
        let without = serve(&["--api-listen", "127.0.0.1:0", "--console"]).expect("flags");
        assert!(!without.rule_capabilities().geoip);
    }
}
