//! What a CouchDB cluster lets slip about its own health through the answers
//! qrtag gets: a write stored with fewer copies than the database's n (HTTP
//! 202: the write quorum was not met, so the document lives on fewer nodes
//! until the others are back), and `_membership`'s connected nodes
//! (`all_nodes`) against the configured ones (`cluster_nodes`).
//!
//! Kept as plain state, shared by every clone of the store's HTTP client:
//! `/readyz` and `/metrics` read it, and a writer compares
//! [`fewer_copy_writes`](ClusterStats::fewer_copy_writes) before and after
//! its write ([`WriteWatch`]), which keeps the [`LinkStore`] trait's writes
//! as they are. A 202 is a fact about the cluster, not about
//! one request: a concurrent write that also got one can only make a notice
//! show while the cluster is short of copies anyway.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::store::LinkStore;

/// How long a write with fewer copies keeps `/readyz` degraded: long enough
/// for a health check or a person to see it, short enough that a recovered
/// cluster reads as ready again soon.
pub const RECENT: Duration = Duration::from_secs(60);

/// The warning for writes CouchDB stored with fewer copies than asked for.
pub fn fewer_copies_warning(writes: u64) -> String {
    let what = if writes == 1 {
        "the write".to_owned()
    } else {
        format!("{writes} writes")
    };
    format!(
        "CouchDB stored {what} with fewer copies than the database's n (HTTP 202: nodes are down \
         and the write quorum was not met); saved, and copied to the other nodes once they are back"
    )
}

/// What `_membership` says, as far as qrtag may read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Membership {
    /// Not asked yet, or no answer.
    Unknown,
    /// The account may not read `_membership` (only server admins may on
    /// Apache CouchDB 3): said, not treated as a problem.
    Unreadable,
    /// No `_membership` at all (PouchDB Server): a single server.
    NotACluster,
    /// Connected nodes (`all_nodes`) and configured ones (`cluster_nodes`).
    Nodes { connected: usize, configured: usize },
}

impl Membership {
    /// Reads `{"all_nodes": [...], "cluster_nodes": [...]}`; `None` for
    /// anything else.
    pub fn from_json(v: &Value) -> Option<Self> {
        let count = |field: &str| v.get(field).and_then(Value::as_array).map(Vec::len);
        Some(Membership::Nodes {
            connected: count("all_nodes")?,
            configured: count("cluster_nodes")?,
        })
    }

    /// Whether fewer nodes are connected than configured.
    pub fn short(&self) -> bool {
        matches!(self, Membership::Nodes { connected, configured } if connected < configured)
    }

    /// A word for `/readyz` JSON: `nodes`, `unreadable`, `not a cluster`, `unknown`.
    pub fn state(&self) -> &'static str {
        match self {
            Membership::Unknown => "unknown",
            Membership::Unreadable => "unreadable",
            Membership::NotACluster => "not a cluster",
            Membership::Nodes { .. } => "read",
        }
    }
}

/// The cluster's state as seen by one process. Times are nanoseconds since
/// `base` plus one, zero meaning never (as in the follower's stats).
#[derive(Debug)]
pub struct ClusterStats {
    base: Instant,
    fewer_copy_writes: AtomicU64,
    last_fewer_copies: AtomicU64,
    membership: Mutex<Membership>,
}

impl Default for ClusterStats {
    fn default() -> Self {
        Self {
            base: Instant::now(),
            fewer_copy_writes: AtomicU64::new(0),
            last_fewer_copies: AtomicU64::new(0),
            membership: Mutex::new(Membership::Unknown),
        }
    }
}

impl ClusterStats {
    /// Records a write's answer: CouchDB says 202 for one stored with fewer
    /// copies than n, 201 for one with at least a quorum.
    pub fn wrote(&self, status: u16) {
        if status == 202 {
            self.fewer_copy_writes.fetch_add(1, Relaxed);
            let now = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
            self.last_fewer_copies.store(now.saturating_add(1), Relaxed);
        }
    }

    /// Writes CouchDB stored with fewer copies than n, since the start.
    pub fn fewer_copy_writes(&self) -> u64 {
        self.fewer_copy_writes.load(Relaxed)
    }

    /// Time since the last write with fewer copies; `None` before any.
    pub fn since_fewer_copies(&self) -> Option<Duration> {
        let stamp = self.last_fewer_copies.load(Relaxed).checked_sub(1)?;
        Some(
            self.base
                .elapsed()
                .saturating_sub(Duration::from_nanos(stamp)),
        )
    }

    pub fn set_membership(&self, m: Membership) {
        if let Ok(mut held) = self.membership.lock() {
            *held = m;
        }
    }

    pub fn membership(&self) -> Membership {
        self.membership
            .lock()
            .map(|m| m.clone())
            .unwrap_or(Membership::Unknown)
    }

    /// What a page after a write says while a write with fewer copies is
    /// [recent](RECENT), whoever made it.
    pub fn recent_fewer_copies(&self) -> Option<String> {
        problems(self.since_fewer_copies(), &Membership::Unknown)
            .into_iter()
            .next()
    }

    /// Why `/readyz` should say degraded, if it should.
    pub fn problems(&self) -> Vec<String> {
        problems(self.since_fewer_copies(), &self.membership())
    }
}

/// The count of writes with fewer copies when a write started.
#[derive(Debug)]
pub struct WriteWatch {
    stats: Option<Arc<ClusterStats>>,
    before: u64,
}

impl WriteWatch {
    /// Starts watching `store`'s writes (see the module); a store without
    /// cluster stats never warns.
    pub fn new(store: &dyn LinkStore) -> Self {
        let stats = store.cluster();
        let before = stats.as_ref().map_or(0, |s| s.fewer_copy_writes());
        Self { stats, before }
    }

    /// The warning for writes with fewer copies since [`WriteWatch::new`].
    pub fn warning(&self) -> Option<String> {
        let now = self.stats.as_ref()?.fewer_copy_writes();
        let since = now.saturating_sub(self.before);
        (since > 0).then(|| fewer_copies_warning(since))
    }
}

/// The `/readyz` reasons for a write with fewer copies `since` ago and the
/// membership seen.
pub fn problems(since_fewer_copies: Option<Duration>, membership: &Membership) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(age) = since_fewer_copies.filter(|a| *a < RECENT) {
        out.push(format!(
            "CouchDB stored a write with fewer copies than the database's n {}s ago (HTTP 202: quorum lost)",
            age.as_secs()
        ));
    }
    if let Membership::Nodes {
        connected,
        configured,
    } = membership
        && membership.short()
    {
        out.push(format!(
            "CouchDB lists {connected} of {configured} cluster nodes connected (_membership)"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn membership_counts_connected_against_configured() {
        let m = Membership::from_json(&json!({
            "all_nodes": ["a@h"], "cluster_nodes": ["a@h", "b@h", "c@h"]
        }));
        assert_eq!(
            m,
            Some(Membership::Nodes {
                connected: 1,
                configured: 3
            })
        );
        assert!(m.as_ref().is_some_and(Membership::short));
        let whole = Membership::Nodes {
            connected: 3,
            configured: 3,
        };
        assert!(!whole.short());
        assert_eq!(
            Membership::from_json(&json!({"error": "unauthorized"})),
            None
        );
        assert!(!Membership::Unreadable.short());
    }

    fn watch(s: &Arc<ClusterStats>) -> WriteWatch {
        WriteWatch {
            stats: Some(Arc::clone(s)),
            before: s.fewer_copy_writes(),
        }
    }

    #[test]
    fn a_202_is_counted_watched_and_reported_while_recent() {
        let s = Arc::new(ClusterStats::default());
        let w = watch(&s);
        s.wrote(201);
        assert_eq!(w.warning(), None);
        assert!(s.problems().is_empty());
        s.wrote(202);
        s.wrote(202);
        assert_eq!(s.fewer_copy_writes(), 2);
        assert!(w.warning().is_some_and(|m| m.contains("2 writes")));
        assert_eq!(watch(&s).warning(), None, "a later watch starts afresh");
        assert!(
            s.problems()[0].contains("fewer copies"),
            "{:?}",
            s.problems()
        );
        assert!(problems(Some(RECENT * 2), &Membership::Unknown).is_empty());
        let short = Membership::Nodes {
            connected: 1,
            configured: 3,
        };
        assert_eq!(
            problems(None, &short),
            ["CouchDB lists 1 of 3 cluster nodes connected (_membership)"]
        );
    }
}
