//! Console sessions, kept in memory on the server: the browser holds only a
//! random ID. What a session carries (a CouchDB account's store, with its
//! password) must never reach the browser, and a restart logging everyone
//! out is a fair price for that.
//!
//! A session is started only by a successful login: a visitor who is not
//! logged in holds a signed cookie ([`crate::console::csrf::Signer`]) and
//! no entry here, so anonymous requests can never fill the table.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::store::LinkStore;
use crate::values::link_key::LinkKey;
use crate::values::role::Role;

/// The console's cookie.
pub const COOKIE: &str = "qrtag_console";

/// How long a session lives without a request.
pub const IDLE: Duration = Duration::from_secs(8 * 3600);

/// Sessions held at once; past it, expired ones are dropped, and if none
/// are, the one idle longest, so memory stays bounded and a login always
/// gets in.
const CAP: usize = 10_000;

/// Print runs a session remembers for download.
pub const BATCHES: usize = 20;

/// Who is logged in, and the store their writes go to (the server's own,
/// or CouchDB as that account).
#[derive(Clone)]
pub struct User {
    pub name: String,
    /// What the console shows and accepts (issue 35): forms are hidden and
    /// the server refuses alike; on CouchDB, CouchDB still decides each write.
    pub role: Role,
    /// Where this request's writes go: the shown domain's store as this
    /// user (issue 36: set by `http::logged_in` for each request; at login,
    /// the user's first domain's).
    pub store: Arc<dyn LinkStore>,
    /// Issue 36: the domain this request shows (as `store`).
    pub domain: Arc<super::domains::Domain>,
    /// Issue 36: the user's store on each domain, and which they may see.
    pub access: Arc<super::shown::DomainAccess>,
    /// Issue 36: the switcher of the page this request shows (several
    /// domains), set with `domain`.
    pub switcher: Option<Arc<super::shown::Switcher>>,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("name", &self.name)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

// Issue 35 (history): the console user as the author of a write.
impl User {
    /// Who writes through the console as this user: their name.
    pub fn author(&self) -> crate::link::Author {
        crate::link::Author::new(
            crate::link::Via::Console,
            crate::values::actor::Actor::Console {
                user: self.name.clone(),
            },
        )
    }
}

/// A copy of what a request needs from its session: a logged-in one from
/// the table, or an anonymous one (`user` is `None`) read from its signed
/// cookie, whose `id` is that cookie and is in no table.
#[derive(Debug, Clone)]
pub struct Current {
    pub id: String,
    pub csrf: String,
    pub user: Option<User>,
}

struct Entry {
    csrf: String,
    user: User,
    last_seen: Instant,
    runs: PrintRuns,
    /// Issue 35 (i35-users): where and when it began, for the person's
    /// list of their own sessions, and the user's session counter at login
    /// (embedded store only), which ends it when it moves.
    origin: Origin,
}

/// Issue 35 (i35-users): what a session keeps about where it began.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub started: Option<std::time::SystemTime>,
    pub address: Option<std::net::IpAddr>,
    /// The browser's `User-Agent`, cut to [`AGENT_MAX`] bytes.
    pub agent: String,
    /// The user's `sessions` counter at login (`store::sqlite::users`).
    pub mark: Option<i64>,
}

/// The most of a `User-Agent` a session keeps.
pub const AGENT_MAX: usize = 160;

/// One of a person's sessions as their account page lists it.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// Whether it is the session asking.
    pub this_one: bool,
    pub started: Option<std::time::SystemTime>,
    /// How long ago it was last used.
    pub idle: Duration,
    pub address: Option<std::net::IpAddr>,
    pub agent: String,
}

/// A session's print runs: the last [`BATCHES`], each under the number it
/// was given, never reused, so a download link on an older page names its
/// run or none, never another one.
#[derive(Default)]
struct PrintRuns {
    /// `(number, keys, domain)`, oldest first (issue 36: the domain the
    /// run was made on, whose public URL its tags carry).
    kept: VecDeque<(u64, Vec<LinkKey>, String)>,
    /// Runs made so far, which is the number of the latest (the first is 1).
    made: u64,
}

/// What a print run number names in a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrintRun {
    Kept(Vec<LinkKey>),
    /// A run this session made but no longer keeps (it keeps the last
    /// [`BATCHES`]).
    Evicted,
    /// No run of this session (or no session) has this number.
    Unknown,
}

impl PrintRuns {
    fn add(&mut self, keys: Vec<LinkKey>, domain: String) -> u64 {
        self.made += 1;
        let number = self.made;
        if self.kept.len() >= BATCHES {
            self.kept.pop_front();
        }
        self.kept.push_back((number, keys, domain));
        number
    }

    fn get(&self, number: u64) -> PrintRun {
        match self.kept.iter().find(|(n, ..)| *n == number) {
            Some((_, keys, _)) => PrintRun::Kept(keys.clone()),
            None if (1..=self.made).contains(&number) => PrintRun::Evicted,
            None => PrintRun::Unknown,
        }
    }
}

#[derive(Default)]
pub struct Sessions {
    inner: Mutex<HashMap<String, Entry>>,
}

/// 256 random bits, URL-safe: a session ID or a CSRF token.
pub fn random_token() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

impl Sessions {
    /// Starts a session for a user who has just logged in.
    pub fn start(&self, user: User) -> Option<Current> {
        self.start_from(user, Origin::default())
    }

    /// [`start`](Self::start), keeping where and when (issue 35).
    pub fn start_from(&self, user: User, origin: Origin) -> Option<Current> {
        let mut map = self.inner.lock().ok()?;
        if map.len() >= CAP {
            let now = Instant::now();
            map.retain(|_, e| now.duration_since(e.last_seen) < IDLE);
        }
        if map.len() >= CAP {
            let idlest = map
                .iter()
                .min_by_key(|(_, e)| e.last_seen)
                .map(|(id, _)| id.clone());
            if let Some(id) = idlest {
                map.remove(&id);
            }
        }
        let current = Current {
            id: random_token(),
            csrf: random_token(),
            user: Some(user.clone()),
        };
        map.insert(
            current.id.clone(),
            Entry {
                csrf: current.csrf.clone(),
                user,
                last_seen: Instant::now(),
                runs: PrintRuns::default(),
                origin,
            },
        );
        Some(current)
    }

    /// The live session with this ID, its idle time restarted.
    pub fn get(&self, id: &str) -> Option<Current> {
        let mut map = self.inner.lock().ok()?;
        let entry = map.get_mut(id)?;
        let now = Instant::now();
        if now.duration_since(entry.last_seen) >= IDLE {
            map.remove(id);
            return None;
        }
        entry.last_seen = now;
        Some(Current {
            id: id.to_owned(),
            csrf: entry.csrf.clone(),
            user: Some(entry.user.clone()),
        })
    }

    pub fn end(&self, id: &str) {
        if let Ok(mut map) = self.inner.lock() {
            map.remove(id);
        }
    }

    /// Issue 35 (i35-users): holds the embedded store's sessions to its
    /// users as read now (`marks`: name → role and session counter): a
    /// session whose user is gone or whose counter moved ends, the others
    /// take the user's current role. Sessions without a mark (CouchDB's)
    /// are left alone.
    pub fn hold_to(&self, marks: &HashMap<String, (Role, i64)>) {
        let Ok(mut map) = self.inner.lock() else {
            return;
        };
        map.retain(|_, e| {
            let Some(mark) = e.origin.mark else {
                return true;
            };
            match marks.get(&e.user.name) {
                Some(&(role, now)) if now == mark => {
                    e.user.role = role;
                    true
                }
                _ => false,
            }
        });
    }

    /// The live sessions of `name` on this node, newest first.
    pub fn of_user(&self, name: &str, asking: &str) -> Vec<SessionInfo> {
        let Ok(map) = self.inner.lock() else {
            return Vec::new();
        };
        let now = Instant::now();
        let mut list: Vec<SessionInfo> = map
            .iter()
            .filter(|(_, e)| e.user.name == name && now.duration_since(e.last_seen) < IDLE)
            .map(|(id, e)| SessionInfo {
                this_one: id == asking,
                started: e.origin.started,
                idle: now.duration_since(e.last_seen),
                address: e.origin.address,
                agent: e.origin.agent.clone(),
            })
            .collect();
        list.sort_by_key(|s| std::cmp::Reverse(s.started));
        list
    }

    /// Ends every session of `name` on this node; how many there were.
    pub fn end_user(&self, name: &str) -> u64 {
        match self.inner.lock() {
            Ok(mut map) => {
                let before = map.len();
                map.retain(|_, e| e.user.name != name);
                (before - map.len()) as u64
            }
            Err(_) => 0,
        }
    }

    /// Remembers a print run; returns its number in this session, or
    /// `None` when the session has ended meanwhile.
    pub fn add_batch(&self, id: &str, keys: Vec<LinkKey>, domain: &str) -> Option<u64> {
        let mut map = self.inner.lock().ok()?;
        Some(map.get_mut(id)?.runs.add(keys, domain.to_owned()))
    }

    /// Issue 36: the domain print run `number` was made on, while kept.
    pub fn batch_domain(&self, id: &str, number: u64) -> Option<String> {
        let map = self.inner.lock().ok()?;
        map.get(id)?
            .runs
            .kept
            .iter()
            .find(|(n, ..)| *n == number)
            .map(|(.., domain)| domain.clone())
    }

    pub fn batch(&self, id: &str, number: u64) -> PrintRun {
        let Ok(map) = self.inner.lock() else {
            return PrintRun::Unknown;
        };
        map.get(id)
            .map_or(PrintRun::Unknown, |entry| entry.runs.get(number))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;

    fn someone() -> (tempfile::TempDir, User) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn LinkStore> =
            Arc::new(SqliteStore::open(&dir.path().join("q.db")).expect("store"));
        let domain = Arc::new(crate::console::domains::Domain {
            host: None,
            snapshot: crate::snapshot::Snapshot::new(),
            writes: Arc::clone(&store),
            public_url: crate::store::live_url::LiveUrl::new(
                crate::values::public_url::PublicUrl::parse("http://127.0.0.1:8080").expect("url"),
            ),
            order: Arc::default(),
            scans: Arc::new(crate::console::scans::NoScanCounts),
        });
        let user = User {
            name: "admin".into(),
            role: Role::Admin,
            store: Arc::clone(&store),
            access: Arc::new(crate::console::shown::DomainAccess::from_stores(vec![
                Some(store),
            ])),
            domain,
            switcher: None,
        };
        (dir, user)
    }

    #[test]
    fn sessions_start_find_and_end() {
        let (_dir, user) = someone();
        let s = Sessions::default();
        let a = s.start(user.clone()).expect("room");
        let b = s.start(user).expect("room");
        assert_ne!(a.id, b.id);
        assert_ne!(a.csrf, b.csrf);
        assert_eq!(s.get(&a.id).map(|c| c.csrf), Some(a.csrf.clone()));
        s.end(&a.id);
        assert!(s.get(&a.id).is_none());
        assert!(s.get("made-up").is_none());
        assert_eq!(random_token().len(), 43);
    }

    #[test]
    fn a_print_run_keeps_its_number_until_it_is_evicted() {
        let (_dir, user) = someone();
        let s = Sessions::default();
        let id = s.start(user).expect("room").id;
        let run = |i: usize| vec![LinkKey::parse(&format!("run{i}")).expect("key")];
        let numbers: Vec<u64> = (0..BATCHES + 5)
            .map(|i| s.add_batch(&id, run(i), "0x1f.ie").expect("session"))
            .collect();
        // Each number still names the run it was given for, or none.
        for (i, n) in numbers.iter().enumerate() {
            let want = if i < 5 {
                PrintRun::Evicted
            } else {
                PrintRun::Kept(run(i))
            };
            assert_eq!(s.batch(&id, *n), want, "run {i}, number {n}");
        }
        let next = numbers.last().expect("made") + 1;
        assert_eq!(s.batch(&id, next), PrintRun::Unknown);
        assert_eq!(s.batch("made-up", numbers[5]), PrintRun::Unknown);
    }

    #[test]
    fn a_full_table_makes_room_for_a_login_by_ending_the_idlest_session() {
        let (_dir, user) = someone();
        let s = Sessions::default();
        let first = s.start(user.clone()).expect("room").id;
        let ids: Vec<String> = (1..CAP)
            .map(|_| s.start(user.clone()).expect("room").id)
            .collect();
        assert!(s.get(&first).is_some(), "used again: no longer the idlest");
        let newest = s.start(user).expect("a login always gets in");
        assert!(s.get(&newest.id).is_some());
        assert!(s.get(&first).is_some());
        assert!(s.get(&ids[0]).is_none(), "the idlest went");
        assert_eq!(s.inner.lock().expect("lock").len(), CAP);
    }
}
