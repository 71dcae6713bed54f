//! `qrtag user add|list|role|remove|reset` (issue 35): the console's
//! accounts on the embedded store. `add` and `reset` print a one-time
//! invitation link on standard output, where the person chooses their
//! password; the rules that span users (a name taken, the last admin) are
//! the store's, checked in the write's transaction.

use std::io::Write;
use std::process::ExitCode;

use chrono::Utc;
use clap::{Args, Subcommand};

use super::Cli;
use crate::console::invitation::{self, NewInvitation};
use crate::store::Access;
use crate::store::sqlite::SqliteStore;
use crate::store::sqlite::users::UserError;
use crate::values::audit::Event;
use crate::values::role::Role;
use crate::values::usage::UsageError;
use crate::values::user_name::UserName;

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Invite a user: prints a one-time link (valid 7 days) where they
    /// choose their password.
    Add {
        /// 1 to 64 lower-case letters, digits, '.', '_' or '-'.
        name: String,
        /// viewer (read, print, scans), editor (and create, repoint, rules,
        /// enable, disable) or admin (and users, API keys, settings, delete).
        #[arg(long, value_name = "ROLE")]
        role: String,
        #[command(flatten)]
        domains: DomainsArgs,
        #[command(flatten)]
        link: LinkArgs,
    },
    /// Every user: name, role, state (invited or active), created, and
    /// the domains they see (`*`: every domain), separated by tabs.
    List,
    /// Change a user's role; their sessions and API keys take it from
    /// their next request (within a second on every node).
    Role {
        name: String,
        /// viewer, editor or admin.
        role: String,
        #[command(flatten)]
        domains: DomainsArgs,
        // Issue 36.
        /// Let the user see every domain again (after --domains).
        #[arg(long, conflicts_with = "domains")]
        all_domains: bool,
    },
    /// Remove a user: their sessions end and their API keys are refused.
    Remove { name: String },
    /// A new invitation for a user: their password stops working and
    /// their sessions end at once; prints the new link.
    Reset {
        name: String,
        #[command(flatten)]
        link: LinkArgs,
    },
}

/// Issue 36: the domains a user sees in the console. Its own flag rather
/// than the global `--domain`, which names the one domain whose links a
/// command works on: a user's domains are a list, and the same word for
/// both would make `qrtag user add … --domain B` read as either.
#[derive(Debug, Args)]
pub struct DomainsArgs {
    /// The domains ([[domains]] hosts of the configuration file) the user
    /// sees in the console, repeated or comma-separated; default: every
    /// domain. Their sessions end when it changes.
    #[arg(
        long = "domains",
        value_name = "HOST",
        value_delimiter = ',',
        value_parser = |s: &str| crate::values::host::Host::parse(s).map_err(|e| e.to_string())
    )]
    domains: Vec<crate::values::host::Host>,
}

impl DomainsArgs {
    /// The hosts given, each a domain of the configuration file; `None`
    /// when none is given.
    fn checked(&self, cli: &Cli) -> anyhow::Result<Option<Vec<String>>> {
        if self.domains.is_empty() {
            return Ok(None);
        }
        for host in &self.domains {
            cli.other_domain(Some(host))?;
        }
        Ok(Some(self.domains.iter().map(ToString::to_string).collect()))
    }
}

/// Where the invitation link points: the console, as `serve` listens for it.
#[derive(Debug, Args)]
pub struct LinkArgs {
    /// The console's address as people reach it (e.g. behind a TLS proxy,
    /// https://console.example); default: http:// and --admin-listen.
    /// The same setting as `serve --console-url`.
    #[arg(long, env = "QRTAG_CONSOLE_URL", value_name = "URL")]
    console_url: Option<url::Url>,
    /// The admin listener `qrtag serve` binds (a wildcard address becomes
    /// loopback, as in the first-run setup link).
    #[arg(
        long,
        env = "QRTAG_ADMIN_LISTEN",
        default_value = "127.0.0.1:8081",
        value_name = "ADDR"
    )]
    admin_listen: String,
}

impl LinkArgs {
    /// The invitation link for `token` (`invitation::link`'s rule).
    fn link(&self, token: &str) -> String {
        let listener = || match self.admin_listen.parse::<std::net::SocketAddr>() {
            Ok(addr) => invitation::origin_of(addr),
            Err(_) => format!("http://{}", self.admin_listen),
        };
        invitation::link(self.console_url.as_ref(), listener, token)
    }
}

fn name(text: &str) -> anyhow::Result<UserName> {
    UserName::parse(text).map_err(|e| UsageError(e.to_string()).into())
}

fn role(text: &str) -> anyhow::Result<Role> {
    Role::parse(text).map_err(|e| UsageError(e.to_string()).into())
}

/// A refusal about the command's own request (exit 2); a store failure
/// stays one.
fn refused(e: UserError) -> anyhow::Error {
    match e {
        UserError::Store(e) => e.into(),
        e => UsageError(e.to_string()).into(),
    }
}

pub async fn run(cli: &Cli, command: &UserCommand) -> anyhow::Result<ExitCode> {
    if cli.store.couchdb_url.is_some() {
        return Err(UsageError(
            "with CouchDB the console logs in with CouchDB accounts: manage them in CouchDB \
             (roles qrtag_admin, qrtag_editor; see the guide's console chapter)"
                .into(),
        )
        .into());
    }
    // Checked before the database is opened: a typo changes nothing.
    let checked: Option<(UserName, Option<Role>)> = match command {
        UserCommand::Add {
            name: n, role: r, ..
        } => Some((name(n)?, Some(role(r)?))),
        UserCommand::Role {
            name: n, role: r, ..
        } => Some((name(n)?, Some(role(r)?))),
        UserCommand::Remove { name: n } | UserCommand::Reset { name: n, .. } => {
            Some((name(n)?, None))
        }
        UserCommand::List => None,
    };
    // Issue 36: the user's domains, each one the configuration lists.
    let domains = match command {
        UserCommand::Add { domains, .. } => domains.checked(cli)?,
        UserCommand::Role {
            domains,
            all_domains,
            ..
        } => match all_domains {
            true => Some(Vec::new()),
            false => domains.checked(cli)?,
        },
        _ => None,
    };
    let store = SqliteStore::open_with(&cli.store.db, Access::Write)?;
    let mut out = std::io::stdout().lock();
    match (command, checked) {
        (UserCommand::List, _) => {
            for u in store.users().await? {
                // Issue 36: the domains a user sees, `*` for every one.
                let domains = u.domains.as_deref().map_or("*".to_owned(), |d| d.join(","));
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{domains}",
                    u.name,
                    u.role,
                    u.state(),
                    u.created_at
                )?;
            }
        }
        (UserCommand::Add { link, .. }, Some((name, Some(role)))) => {
            let new = NewInvitation::generate(Utc::now());
            store
                .add_user(&name, role, &new.record)
                .await
                .map_err(refused)?;
            if let Some(domains) = &domains {
                store
                    .set_domains(name.as_str(), Some(domains))
                    .await
                    .map_err(refused)?;
                eprintln!("qrtag: {name} sees the domains {}", domains.join(", "));
            }
            writeln!(out, "{}", link.link(&new.token))?;
            eprintln!(
                "qrtag: {name} invited as {role}; the link works once, until {} (UTC)",
                crate::values::timestamp::time_text(new.record.expires_at)
            );
            let event = Event::UserInvited {
                user: name.to_string(),
                role,
            };
            super::audit::record(&store, event).await;
        }
        (UserCommand::Role { .. }, Some((name, Some(role)))) => {
            let old = store.set_role(name.as_str(), role).await.map_err(refused)?;
            eprintln!("qrtag: {name} is now {role} (was {old})");
            match domains.as_deref() {
                None => {}
                Some([]) => {
                    store
                        .set_domains(name.as_str(), None)
                        .await
                        .map_err(refused)?;
                    eprintln!("qrtag: {name} sees every domain");
                }
                Some(hosts) => {
                    store
                        .set_domains(name.as_str(), Some(hosts))
                        .await
                        .map_err(refused)?;
                    eprintln!("qrtag: {name} sees the domains {}", hosts.join(", "));
                }
            }
            let event = Event::RoleChanged {
                user: name.to_string(),
                from: old,
                to: role,
            };
            super::audit::record(&store, event).await;
        }
        (UserCommand::Remove { .. }, Some((name, None))) => {
            store.remove_user(name.as_str()).await.map_err(refused)?;
            eprintln!("qrtag: {name} removed; their sessions and API keys end now");
            let event = Event::UserRemoved {
                user: name.to_string(),
            };
            super::audit::record(&store, event).await;
        }
        (UserCommand::Reset { link, .. }, Some((name, None))) => {
            let new = NewInvitation::generate(Utc::now());
            store
                .reset_user(name.as_str(), &new.record)
                .await
                .map_err(refused)?;
            writeln!(out, "{}", link.link(&new.token))?;
            eprintln!(
                "qrtag: {name}'s password no longer works; the new link works once, until {} (UTC)",
                crate::values::timestamp::time_text(new.record.expires_at)
            );
            let event = Event::InvitationReset {
                user: name.to_string(),
            };
            super::audit::record(&store, event).await;
        }
        _ => anyhow::bail!("internal: the command's checks and its run disagree"),
    }
    Ok(ExitCode::SUCCESS)
}
