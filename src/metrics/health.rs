//! What the server says about its own state: one [`Report`], read from the
//! snapshot, the follower's counters and the access log, behind `/readyz`
//! (text for people and scripts, JSON for load balancers and dashboards)
//! and the service gauges of `/metrics`, so the three can never disagree.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use serde::Serialize;

use crate::access_log::{AccessLog, AccessLogStats};
use crate::didcomm::delivery::Counters;
use crate::scan_index::ScanIndex;
use crate::snapshot::Snapshot;
use crate::store::{ClusterStats, Membership};
use crate::values::node_name::NodeName;

/// The parts of the running server whose state is reported.
pub struct Health {
    pub snapshot: Arc<Snapshot>,
    pub access_log: AccessLog,
    /// DIDComm reply deliveries, when DIDComm is on (`ApiSettings::didcomm_on`).
    pub deliveries: Option<Arc<Counters>>,
    pub node: Option<NodeName>,
    /// What the store saw of its cluster (CouchDB only).
    pub cluster: Option<Arc<ClusterStats>>,
    /// The scan index, when it runs: a `--scan-log` pattern that names
    /// more than it looks at is a problem.
    pub scans: Option<Arc<ScanIndex>>,
    /// Set on SIGTERM: `/readyz` says 503 "draining" while the listeners
    /// still serve for `--shutdown-grace`, so a load balancer stops sending
    /// before the process stops answering.
    pub draining: std::sync::atomic::AtomicBool,
    /// Issue 38: `--scans-to`. Its drops and failures are warnings on
    /// `/readyz`, never a reason: a scan sink must not take redirects out
    /// of a load balancer.
    pub scan_sink: Option<Arc<crate::clickhouse::sink::ScanSink>>,
    /// Issue 36: the certificates the public listener serves, when HTTPS.
    pub tls: Option<Arc<crate::tls::Tls>>,
    /// Issue 36: the other domains' links and logs (none without
    /// `[[domains]]`).
    pub domains: super::domains::DomainsHealth,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

/// What a load balancer acts on: only `Starting` is refused traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Links are not loaded yet: every answer would be a guess (503).
    Starting,
    Ready,
    /// Serving, but from a table that may be behind the store, or without
    /// access log lines reaching the disk. Still the right node to ask.
    Degraded,
    /// Shutting down: still answering, but to be taken out of rotation (503).
    Draining,
}

impl Status {
    /// Whether `/readyz` asks for traffic (200) in this state.
    pub fn takes_traffic(self) -> bool {
        matches!(self, Status::Ready | Status::Degraded)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub status: Status,
    /// Why the status is not `ready`, most important first.
    pub reasons: Vec<String>,
    pub node: Option<String>,
    pub version: &'static str,
    pub links: usize,
    pub invalid_documents: usize,
    pub store: StoreReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterReport>,
    pub access_log: LogReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub didcomm: Option<DeliveryReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_index: Option<ScanIndexReport>,
    /// Issue 38: the ClickHouse scan sink, with `--scans-to`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_sink: Option<crate::clickhouse::sink::SinkReport>,
    /// Issue 36: the certificates served, when the public listener is HTTPS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<Vec<CertificateReport>>,
    /// Issue 36: each domain's links, the default first; empty without
    /// `[[domains]]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domains: Vec<super::domains::DomainReport>,
}

/// One certificate the public listener serves (issue 36).
#[derive(Debug, Clone, Serialize)]
pub struct CertificateReport {
    pub domain: String,
    /// notAfter, Unix seconds.
    pub not_after: i64,
    pub serial: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScanIndexReport {
    /// Expansions of the `--scan-log` patterns stopped at their bound of
    /// directory entries.
    pub walks_cut: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StoreReport {
    /// The follower is in contact with the store and current.
    pub up: bool,
    /// How long the table may be behind the store (0 while up).
    pub follower_lag_seconds: f64,
    pub seconds_since_last_change: Option<f64>,
    pub changes_applied: u64,
    pub reconnects: u64,
}

/// A CouchDB cluster's state as the store's answers show it.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterReport {
    /// Writes CouchDB stored with fewer copies than the database's n (202).
    pub fewer_copy_writes: u64,
    pub seconds_since_fewer_copies: Option<f64>,
    /// `read`, `unreadable` (the account may not: only server admins may
    /// read `_membership`), `not a cluster`, or `unknown` (no answer yet).
    pub membership: &'static str,
    /// `_membership`'s `all_nodes`, when read.
    pub nodes_connected: Option<usize>,
    /// `_membership`'s `cluster_nodes`, when read.
    pub nodes_configured: Option<usize>,
}

impl ClusterReport {
    fn of(c: &ClusterStats) -> Self {
        let m = c.membership();
        let (connected, configured) = match m {
            Membership::Nodes {
                connected,
                configured,
            } => (Some(connected), Some(configured)),
            _ => (None, None),
        };
        Self {
            fewer_copy_writes: c.fewer_copy_writes(),
            seconds_since_fewer_copies: c.since_fewer_copies().map(|d| d.as_secs_f64()),
            membership: m.state(),
            nodes_connected: connected,
            nodes_configured: configured,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LogReport {
    pub target: String,
    pub healthy: bool,
    pub lines_written: u64,
    pub lines_dropped: u64,
    pub write_errors: u64,
    pub waits_for_room: u64,
    pub reopens: u64,
    pub bytes_queued: u64,
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeliveryReport {
    pub delivered: u64,
    pub failed: u64,
}

impl Health {
    pub fn report(&self) -> Report {
        let snapshot = &self.snapshot;
        let table = snapshot.load();
        let follower = snapshot.follower();
        let log = self.access_log.stats();
        let loaded = snapshot.is_loaded();
        let mut reasons = Vec::new();
        let draining = self.draining.load(Relaxed);
        if draining {
            reasons
                .push("draining: shutting down; the listeners stop after the grace period".into());
        }
        if let Some(problem) = snapshot.problem() {
            reasons.push(problem);
        } else if !loaded {
            reasons.push("links not loaded yet".into());
        }
        // Issue 36: every domain's links loaded, each one's problem named.
        let (others_loaded, others) = self.domains.check();
        reasons.extend(others);
        let loaded = loaded && others_loaded;
        if let Some(c) = &self.cluster {
            reasons.extend(c.problems());
        }
        if let Some(problem) = self.scans.as_ref().and_then(|s| s.problem()) {
            reasons.push(problem);
        }
        // Issue 36: a failed reload, a certificate close to its end.
        let now = chrono::Utc::now().timestamp();
        if let Some(tls) = &self.tls {
            reasons.extend(tls.problems(now));
        }
        if log.failing {
            let err = log.last_error.as_deref().unwrap_or("unknown error");
            reasons.push(format!("access log writes failing: {err}"));
        }
        let status = match (loaded, reasons.is_empty()) {
            _ if draining => Status::Draining,
            (false, _) => Status::Starting,
            (true, true) => Status::Ready,
            (true, false) => Status::Degraded,
        };
        Report {
            status,
            reasons,
            node: self.node.as_ref().map(|n| n.as_str().to_owned()),
            version: env!("CARGO_PKG_VERSION"),
            links: table.len(),
            invalid_documents: table.invalid_count(),
            store: StoreReport {
                up: follower.store_up(),
                follower_lag_seconds: follower.lag().as_secs_f64(),
                seconds_since_last_change: follower.since_last_change().map(|d| d.as_secs_f64()),
                changes_applied: follower.changes_applied(),
                reconnects: follower.reconnects(),
            },
            cluster: self.cluster.as_deref().map(ClusterReport::of),
            access_log: log_report(&self.access_log, log),
            didcomm: self.deliveries.as_ref().map(|d| DeliveryReport {
                delivered: d.delivered.load(Relaxed),
                failed: d.failed.load(Relaxed),
            }),
            scan_index: self.scans.as_ref().map(|s| ScanIndexReport {
                walks_cut: s.progress().walks_cut.load(Relaxed),
            }),
            scan_sink: self.scan_sink.as_ref().map(|s| s.report()),
            tls: self.tls.as_ref().map(|t| {
                t.certificates
                    .installed()
                    .iter()
                    .map(|i| CertificateReport {
                        domain: i.domain.clone(),
                        not_after: i.certified.not_after,
                        serial: i.certified.serial.clone(),
                    })
                    .collect()
            }),
            domains: self.domains.reports(snapshot, &self.access_log),
        }
    }
}

fn log_report(log: &AccessLog, s: AccessLogStats) -> LogReport {
    LogReport {
        target: log.target().to_string(),
        healthy: !s.failing,
        lines_written: s.lines_written,
        lines_dropped: s.lines_dropped,
        write_errors: s.write_errors,
        waits_for_room: s.backpressure_waits,
        reopens: s.reopens,
        bytes_queued: s.bytes_queued,
        last_error: s.last_error,
    }
}

impl Report {
    /// The plain-text `/readyz` body: the first line says ready or not, one
    /// `degraded:` line per problem, then the counters.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut body = String::new();
        let mut reasons = self.reasons.iter();
        if self.status == Status::Starting {
            // `report` always gives a starting server a first reason.
            let why = reasons.next().map_or("links not loaded yet", |r| r);
            let _ = writeln!(body, "not ready: {why}");
        } else {
            let _ = writeln!(
                body,
                "ready: {} links, {} invalid documents skipped",
                self.links, self.invalid_documents
            );
        }
        for r in reasons {
            let _ = writeln!(body, "degraded: {r}");
        }
        // Issue 36: each domain's links, with several.
        for d in &self.domains {
            let _ = writeln!(
                body,
                "domain {}: {} links, {} invalid documents skipped{}",
                d.domain,
                d.links,
                d.invalid_documents,
                if d.loaded { "" } else { " (loading)" }
            );
        }
        let l = &self.access_log;
        let _ = writeln!(
            body,
            "access log {}: {} lines written, {} write errors, {} lines dropped, {} waits for room, {} reopens",
            l.target, l.lines_written, l.write_errors, l.lines_dropped, l.waits_for_room, l.reopens
        );
        if let (true, Some(err)) = (l.healthy, &l.last_error) {
            let _ = writeln!(body, "access log last error: {err}");
        }
        if let Some(s) = &self.scan_sink {
            s.text(&mut body);
        }
        if let (Some(d), false) = (&self.didcomm, self.status == Status::Starting) {
            let _ = writeln!(
                body,
                "didcomm replies delivered: {}, failed: {}",
                d.delivered, d.failed
            );
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::{AccessLogTarget, WriterOptions};

    fn health() -> Health {
        Health {
            snapshot: Snapshot::new(),
            access_log: AccessLog::open(
                &AccessLogTarget::Path("/dev/null".into()),
                WriterOptions::default(),
            )
            .expect("open /dev/null"),
            deliveries: None,
            node: NodeName::parse("edge-1").ok(),
            cluster: None,
            scans: None,
            draining: std::sync::atomic::AtomicBool::new(false),
            scan_sink: None,
            tls: None,
            domains: Default::default(),
        }
    }

    #[test]
    fn draining_outranks_every_other_state_and_takes_no_traffic() {
        let h = health();
        h.snapshot.mark_loaded();
        assert!(h.report().status.takes_traffic());
        h.draining.store(true, Relaxed);
        let r = h.report();
        assert_eq!(r.status, Status::Draining);
        assert!(!r.status.takes_traffic());
        assert!(r.reasons[0].starts_with("draining"), "{:?}", r.reasons);
    }

    #[test]
    fn starting_then_ready_then_degraded_while_the_store_is_away() {
        let h = health();
        let r = h.report();
        assert_eq!(r.status, Status::Starting);
        assert_eq!(r.reasons, ["links not loaded yet"]);
        assert!(!r.store.up);
        assert!(r.text().starts_with("not ready: links not loaded yet\n"));

        h.snapshot.mark_loaded();
        let r = h.report();
        assert_eq!((r.status, r.reasons.len()), (Status::Ready, 0));
        assert!(r.store.up);
        assert_eq!(r.store.follower_lag_seconds, 0.0);
        assert_eq!(r.node.as_deref(), Some("edge-1"));
        assert!(r.text().starts_with(
            "ready: 0 links, 0 invalid documents skipped\naccess log /dev/null: 0 lines written"
        ));

        h.snapshot.set_problem(Some("CouchDB is away".into()));
        let r = h.report();
        assert_eq!(r.status, Status::Degraded);
        assert_eq!(r.reasons, ["CouchDB is away"]);
        assert!(!r.store.up);
        assert!(r.text().contains("\ndegraded: CouchDB is away\n"));
        let json = serde_json::to_value(&r).expect("serialises");
        assert_eq!(json["status"], "degraded");
        assert_eq!(json["store"]["up"], false);
        assert!(json.get("didcomm").is_none(), "only when DIDComm is on");
    }
}
