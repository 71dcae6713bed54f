//! How many connections each listener may hold, from the number of file
//! descriptors the process really has.
//!
//! Every connection is a descriptor, and so is every file and socket the
//! server needs to keep working: the store, the access log, the snapshot,
//! the scan index, outbound DIDComm deliveries, the runtime's own. When the
//! connections take the last descriptor, `accept` fails with "Too many open
//! files" on every listener and the store cannot open a file: the health
//! checks go dark with the public listener. So the listeners' caps are cut
//! from what is left after a reserve, and the admin (and DIDComm) listener
//! each get a share of their own that a full public listener cannot take.
//!
//! [`split`] is the decision (pure); [`open_file_limit`] is the only part
//! that asks the kernel.

/// What the server will open besides its connections, and what was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needs {
    /// `--max-connections`: wanted on each listener.
    pub max_connections: usize,
    /// `--max-connections-per-ip` (0: no cap).
    pub max_connections_per_ip: usize,
    /// Worker threads of all listeners together (each runs its own event
    /// loop: a few descriptors apiece).
    pub worker_threads: usize,
    /// Whether the API listener (the REST API and DIDComm) runs.
    pub api: bool,
    /// Whether the store is CouchDB (HTTP connections) rather than SQLite
    /// (a few files).
    pub couchdb: bool,
    /// Issue 36: the domains besides the default one, each holding as much
    /// as the default domain's store and files.
    pub other_domains: OtherDomains,
}

/// Issue 36: how many other domains keep their links in each kind of
/// store. Each is a second copy of what the default domain holds: its
/// access log (and its reopen on SIGHUP), its snapshot file's writes (the
/// file and its temporary), and its store's files or connections (the
/// changes feed and a full load's concurrent reads on CouchDB), so a
/// configuration of many domains cannot leave the connections the last
/// descriptors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OtherDomains {
    pub sqlite: usize,
    pub couchdb: usize,
}

impl OtherDomains {
    fn count(self) -> usize {
        self.sqlite + self.couchdb
    }

    /// Descriptors they keep.
    fn reserve(self) -> usize {
        self.sqlite * (SQLITE + DOMAIN_FILES) + self.couchdb * (COUCHDB + DOMAIN_FILES)
    }
}

/// The caps in force on one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerCaps {
    /// Open connections in all.
    pub total: usize,
    /// Open connections from one client address (0: no cap).
    pub per_ip: usize,
}

/// The split of the descriptor limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The soft `RLIMIT_NOFILE` it was computed from.
    pub limit: u64,
    /// Descriptors kept for everything that is not a connection.
    pub reserved: usize,
    pub public: ListenerCaps,
    pub admin: ListenerCaps,
    /// The API listener's share (all zero when it is off).
    pub api: ListenerCaps,
}

impl Caps {
    /// Whether the public listener got less than `--max-connections`.
    pub fn lowered(&self, needs: &Needs) -> bool {
        self.public.total < needs.max_connections
    }

    /// Whether the start says the limit lowered the public cap: when the
    /// operator set `--max-connections` (`chosen`), or when fewer than
    /// [`ENOUGH_PUBLIC`] are left. A default cap lowered to thousands is no
    /// news: it would be said on every start under a common limit.
    pub fn worth_warning(&self, needs: &Needs, chosen: bool) -> bool {
        self.lowered(needs) && (chosen || self.public.total < ENOUGH_PUBLIC)
    }
}

/// Public connections below which a lowered default cap is said.
pub const ENOUGH_PUBLIC: usize = 1024;

/// The limit is too low to run at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the open-file limit is {limit}, too low to serve{}: qrtag needs at least {needed} (raise it with `ulimit -n`, LimitNOFILE= in the systemd unit, or --ulimit nofile= in Docker)",
    domains_said(*domains)
)]
pub struct TooFewDescriptors {
    pub limit: u64,
    pub needed: u64,
    /// Issue 36: the domains served, the default one included.
    pub domains: usize,
}

/// " N domains", when there are more than one: a limit enough for one
/// domain may be too low for many, and the line says why it asks so much.
fn domains_said(domains: usize) -> String {
    if domains > 1 {
        format!(" {domains} domains")
    } else {
        String::new()
    }
}

/// Always kept: standard streams, the main runtime (epoll, wakers, signal
/// pipe), the three listening sockets, the access log and its reopen on
/// SIGHUP, the snapshot and its temporary file, the scan index's reads of
/// the log, the tracking secret, actix's accept thread, and slack for
/// actix counting its cap per worker (each may overshoot by one).
const BASE: usize = 48;
/// Each worker thread's event loop.
const PER_WORKER: usize = 4;
/// SQLite: the database, its WAL and shared-memory files, for the writer
/// and the read-only connections the console and CLI paths open.
const SQLITE: usize = 16;
/// CouchDB: the changes feed plus the HTTP connections of concurrent writes
/// and reads.
const COUCHDB: usize = 64;
/// Issue 36: another domain's files besides its store: its access log and
/// its reopen on SIGHUP, its snapshot file and that file's temporary.
const DOMAIN_FILES: usize = 4;
/// The smallest share a listener is given: enough for a health check and a
/// request.
const MIN_SHARE: usize = 4;
/// The admin and the API listener each get this fraction of what is
/// left for connections (at least [`MIN_SHARE`]), the public one the rest.
const SHARE_DIVISOR: usize = 8;
/// One client network (`server::limits`) may hold at most this fraction of a listener's connections
/// (but [`MIN_SHARE`], so a browser on the console is not cut short), so a
/// handful of addresses cannot fill it whatever the limit.
const PER_IP_DIVISOR: usize = 8;

/// Splits `limit` descriptors between the reserve and the listeners.
///
/// A DIDComm connection counts twice: the request it carries may open an
/// outbound delivery. Each listener's cap is at most `--max-connections`;
/// the per-network cap is at most `--max-connections-per-ip` and an eighth of
/// the listener's cap (or [`MIN_SHARE`]) (0, no cap, stays 0: behind a proxy every client has
/// the proxy's address).
pub fn split(limit: u64, needs: &Needs) -> Result<Caps, TooFewDescriptors> {
    let reserved = BASE
        + PER_WORKER * needs.worker_threads
        + if needs.couchdb { COUCHDB } else { SQLITE }
        + needs.other_domains.reserve();
    let shares = if needs.api { 3 } else { 2 };
    let needed = reserved + MIN_SHARE * (shares + 1);
    let limit_usize = usize::try_from(limit).unwrap_or(usize::MAX);
    if limit_usize < needed {
        return Err(TooFewDescriptors {
            limit,
            needed: needed as u64,
            domains: 1 + needs.other_domains.count(),
        });
    }
    let free = limit_usize - reserved;
    let wanted = needs.max_connections.max(1);
    let share = (free / SHARE_DIVISOR).max(MIN_SHARE).min(wanted);
    let admin = share;
    // Two descriptors per DIDComm connection: the API cap is half its share.
    let api = if needs.api { (share / 2).max(1) } else { 0 };
    let api_cost = 2 * api;
    let public = (free - admin - api_cost).min(wanted);
    let caps = |total: usize| ListenerCaps {
        total,
        per_ip: per_ip(needs.max_connections_per_ip, total),
    };
    Ok(Caps {
        limit,
        reserved,
        public: caps(public),
        admin: caps(admin),
        api: if needs.api {
            caps(api)
        } else {
            ListenerCaps {
                total: 0,
                per_ip: 0,
            }
        },
    })
}

fn per_ip(configured: usize, total: usize) -> usize {
    if configured == 0 {
        0
    } else {
        configured.min((total / PER_IP_DIVISOR).max(MIN_SHARE.min(total)))
    }
}

/// The line `qrtag serve` prints when the public listener gets less than
/// `--max-connections`: the limit, the cap in force, and how to raise it.
pub fn lowered_line(caps: &Caps, needs: &Needs) -> String {
    format!(
        "qrtag: warning: the open-file limit is {}: at most {} connections on the public listener instead of --max-connections {} ({} on the admin listener{}, {} descriptors kept for the store, the logs and the runtime); raise it with `ulimit -n`, LimitNOFILE= in the systemd unit, or --ulimit nofile= in Docker",
        caps.limit,
        caps.public.total,
        needs.max_connections,
        caps.admin.total,
        if caps.api.total > 0 {
            format!(
                ", {} on the API listener (REST API and DIDComm)",
                caps.api.total
            )
        } else {
            String::new()
        },
        caps.reserved,
    )
}

/// The process's soft `RLIMIT_NOFILE`, first raised to the hard limit where
/// the kernel allows (a unit or shell often leaves the soft one at 1,024
/// below a far higher hard one). A limit that cannot be read or is
/// unlimited reads as `u64::MAX` clamped to what a process can open.
pub fn open_file_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return u64::from(u32::MAX);
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads only the struct it is given. Refused (as
        // above fs.nr_open), the soft limit stays what it was.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    if lim.rlim_cur == libc::RLIM_INFINITY {
        u64::from(u32::MAX)
    } else {
        lim.rlim_cur
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn needs(max: usize, api: bool) -> Needs {
        Needs {
            max_connections: max,
            max_connections_per_ip: 256,
            worker_threads: 4,
            api,
            couchdb: false,
            other_domains: OtherDomains::default(),
        }
    }

    fn used(c: &Caps) -> usize {
        c.reserved + c.public.total + c.admin.total + 2 * c.api.total
    }

    #[test]
    fn a_high_limit_leaves_the_settings_as_they_are() {
        let n = needs(25_000, true);
        let c = split(1 << 20, &n).expect("fits");
        assert_eq!(c.public.total, 25_000);
        assert_eq!(c.public.per_ip, 256);
        assert!(!c.lowered(&n));
    }

    #[test]
    fn systemds_default_lowers_the_public_cap_and_keeps_the_admin_share() {
        let n = needs(25_000, false);
        let c = split(1024, &n).expect("fits");
        assert!(c.lowered(&n));
        assert!(c.admin.total >= MIN_SHARE);
        assert!(used(&c) <= 1024, "{c:?}");
        assert!(c.public.total > 700, "{c:?}");
        // Eight addresses cannot take the public listener whole.
        assert!(c.public.per_ip * 8 <= c.public.total, "{c:?}");
        let line = lowered_line(&c, &n);
        assert!(line.contains("open-file limit is 1024"), "{line}");
        assert!(line.contains(&format!("at most {} connections", c.public.total)));
        assert!(line.contains("LimitNOFILE="), "{line}");
    }

    /// The line the guide's production chapter shows (two public workers, the
    /// admin one, SQLite).
    #[test]
    fn the_readme_shows_the_line_as_printed() {
        let n = Needs {
            worker_threads: 3,
            ..needs(25_000, false)
        };
        let c = split(1024, &n).expect("fits");
        let line = lowered_line(&c, &n);
        let readme = include_str!("../../docs/src/production.md");
        assert!(readme.contains(&format!("  {line}\n")), "{line}");
    }

    #[test]
    fn a_lowered_default_is_said_only_when_few_are_left() {
        let n = needs(25_000, true);
        let roomy = split(20_000, &n).expect("fits");
        assert!(roomy.lowered(&n));
        assert!(!roomy.worth_warning(&n, false));
        assert!(roomy.worth_warning(&n, true));
        let tight = split(1024, &n).expect("fits");
        assert!(tight.worth_warning(&n, false));
        let line = lowered_line(&roomy, &n);
        assert!(
            line.contains(" on the API listener (REST API and DIDComm)"),
            "{line}"
        );
        let high = split(1 << 20, &n).expect("fits");
        assert!(!high.worth_warning(&n, true));
    }

    #[test]
    fn no_per_address_cap_stays_none() {
        let mut n = needs(25_000, true);
        n.max_connections_per_ip = 0;
        let c = split(256, &n).expect("fits");
        assert_eq!((c.public.per_ip, c.admin.per_ip, c.api.per_ip), (0, 0, 0));
    }

    #[test]
    fn a_limit_below_the_reserve_is_refused_naming_both() {
        let e = split(40, &needs(25_000, false)).expect_err("too low");
        assert_eq!(e.limit, 40);
        assert!(e.to_string().contains("limit is 40"), "{e}");
    }

    /// Issue 36: every other domain keeps a store and files of its own, so
    /// the same limit leaves fewer connections, and one too low for the
    /// domains is refused saying how many there are.
    #[test]
    fn other_domains_are_kept_out_of_the_connections() {
        let one = needs(25_000, false);
        let many = Needs {
            other_domains: OtherDomains {
                sqlite: 10,
                couchdb: 2,
            },
            ..one.clone()
        };
        let (a, b) = (
            split(2048, &one).expect("fits"),
            split(2048, &many).expect("fits"),
        );
        assert_eq!(
            b.reserved - a.reserved,
            10 * (SQLITE + DOMAIN_FILES) + 2 * (COUCHDB + DOMAIN_FILES)
        );
        assert_eq!(used(&b), 2048, "{b:?}");
        let e = split(400, &many).expect_err("too low for 13 domains");
        assert!(
            e.to_string().starts_with(
                "the open-file limit is 400, too low to serve 13 domains: qrtag needs at least "
            ),
            "{e}"
        );
        assert!(
            !split(40, &one)
                .expect_err("too low")
                .to_string()
                .contains("domains")
        );
    }

    proptest! {
        #[test]
        fn the_caps_never_exceed_the_limit_nor_the_settings(
            limit in 0u64..200_000,
            max in 1usize..100_000,
            per_ip in 0usize..1_000,
            workers in 1usize..64,
            api: bool,
            couchdb: bool,
            other_sqlite in 0usize..40,
            other_couchdb in 0usize..10,
        ) {
            let other_domains = OtherDomains { sqlite: other_sqlite, couchdb: other_couchdb };
            let n = Needs { max_connections: max, max_connections_per_ip: per_ip, worker_threads: workers, api, couchdb, other_domains };
            if let Ok(c) = split(limit, &n) {
                prop_assert!(used(&c) as u64 <= limit, "{:?}", c);
                for l in [c.public, c.admin] {
                    prop_assert!(l.total >= 1 && l.total <= max);
                    prop_assert!(l.per_ip <= per_ip);
                    prop_assert!(per_ip == 0 || l.per_ip >= 1);
                }
                prop_assert_eq!(api, c.api.total > 0);
                prop_assert!(c.admin.total.min(c.public.total) >= MIN_SHARE.min(max));
            }
        }
    }
}
