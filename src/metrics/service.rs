//! The service's state as gauges and counters, read at scrape time from the
//! same [`Report`](crate::metrics::health::Report) `/readyz` shows: links, the store
//! follower, the access log, DIDComm deliveries, and who this node is.

use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

use crate::metrics::health::{Health, Status};

#[derive(Debug)]
pub(super) struct ServiceCollector(pub Arc<Health>);

fn gauge<N: prometheus_client::encoding::EncodeGaugeValue>(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    value: N,
) -> fmt::Result {
    let g = ConstGauge::new(value);
    g.encode(e.encode_descriptor(name, help, unit, g.metric_type())?)
}

fn counter(e: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> fmt::Result {
    let c = ConstCounter::new(value);
    c.encode(e.encode_descriptor(name, help, None, c.metric_type())?)
}

fn flag(b: bool) -> i64 {
    i64::from(b)
}

/// Issue 36: with `[[domains]]`, the series about links and scans once a
/// domain, labelled `domain`.
fn per_domain(
    e: &mut DescriptorEncoder,
    domains: &[crate::metrics::domains::DomainReport],
) -> fmt::Result {
    type Value = fn(&crate::metrics::domains::DomainReport) -> i64;
    let gauges: [(&str, &str, Value); 3] = [
        (
            "qrtag_snapshot_links",
            "Links in the snapshot that answers redirects, by domain.",
            |d| d.links as i64,
        ),
        (
            "qrtag_snapshot_invalid_documents",
            "Stored documents skipped because they are not valid links, by domain.",
            |d| d.invalid_documents as i64,
        ),
        (
            "qrtag_domain_loaded",
            "1 once the domain's links are loaded; /readyz is 503 until every domain's are.",
            |d| i64::from(d.loaded),
        ),
    ];
    for (name, help, value) in gauges {
        let mut family = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for d in domains {
            ConstGauge::new(value(d))
                .encode(family.encode_family(&[("domain", d.domain.as_str())])?)?;
        }
    }
    let mut family = e.encode_descriptor(
        "qrtag_domain_access_log_lines_written",
        "Lines handed to the operating system in the domain's own access log (its scans and other answers).",
        None,
        MetricType::Counter,
    )?;
    for d in domains {
        ConstCounter::new(d.lines_written)
            .encode(family.encode_family(&[("domain", d.domain.as_str())])?)?;
    }
    Ok(())
}

impl Collector for ServiceCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> fmt::Result {
        let r = self.0.report();
        let secs = Some(&Unit::Seconds);

        let mut info = e.encode_descriptor(
            "qrtag_build_info",
            "The running version; always 1.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(1).encode(info.encode_family(&[("version", r.version)])?)?;
        if let Some(node) = &r.node {
            let mut info = e.encode_descriptor(
                "qrtag_node_info",
                "This node's --node-name; always 1.",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(1).encode(info.encode_family(&[("node", node.as_str())])?)?;
        }

        gauge(
            &mut e,
            "qrtag_ready",
            "1 once links are loaded and redirects are answered (/readyz is 200); 0 again while draining at shutdown.",
            None,
            flag(r.status.takes_traffic()),
        )?;
        gauge(
            &mut e,
            "qrtag_degraded",
            "1 while serving with a problem: the store is away (answers come from the last snapshot) or access log writes fail; /readyz says which.",
            None,
            flag(r.status == Status::Degraded),
        )?;
        if r.domains.is_empty() {
            gauge(
                &mut e,
                "qrtag_snapshot_links",
                "Links in the snapshot that answers redirects.",
                None,
                r.links as i64,
            )?;
            gauge(
                &mut e,
                "qrtag_snapshot_invalid_documents",
                "Stored documents skipped because they are not valid links.",
                None,
                r.invalid_documents as i64,
            )?;
        } else {
            per_domain(&mut e, &r.domains)?;
        }

        let s = &r.store;
        gauge(
            &mut e,
            "qrtag_store_up",
            "1 while the follower is in contact with the store and current.",
            None,
            flag(s.up),
        )?;
        gauge(
            &mut e,
            "qrtag_store_follower_lag",
            "How long the snapshot may be behind the store: 0 while the follower is current, else the time since it stopped being.",
            secs,
            s.follower_lag_seconds,
        )?;
        if let Some(age) = s.seconds_since_last_change {
            gauge(
                &mut e,
                "qrtag_store_last_change_age",
                "Time since a change from the store (or the first load) last reached the snapshot.",
                secs,
                age,
            )?;
        }
        counter(
            &mut e,
            "qrtag_store_changes_applied",
            "Changes read from the store and applied to the snapshot (full loads not counted).",
            s.changes_applied,
        )?;
        counter(
            &mut e,
            "qrtag_store_reconnects",
            "Times the follower reconnected to the store's change feed (CouchDB; SQLite is polled).",
            s.reconnects,
        )?;
        if let Some(c) = &r.cluster {
            counter(
                &mut e,
                "qrtag_store_fewer_copy_writes",
                "Writes CouchDB stored with fewer copies than the database's n (HTTP 202: nodes down, write quorum not met).",
                c.fewer_copy_writes,
            )?;
            if let Some(age) = c.seconds_since_fewer_copies {
                gauge(
                    &mut e,
                    "qrtag_store_fewer_copies_age",
                    "Time since CouchDB last stored a write with fewer copies than n.",
                    secs,
                    age,
                )?;
            }
            // Shown only where the account may read _membership.
            if let (Some(connected), Some(configured)) = (c.nodes_connected, c.nodes_configured) {
                gauge(
                    &mut e,
                    "qrtag_store_cluster_nodes_connected",
                    "CouchDB cluster nodes connected (_membership all_nodes).",
                    None,
                    connected as i64,
                )?;
                gauge(
                    &mut e,
                    "qrtag_store_cluster_nodes_configured",
                    "CouchDB cluster nodes configured (_membership cluster_nodes).",
                    None,
                    configured as i64,
                )?;
            }
        }

        let l = &r.access_log;
        counter(
            &mut e,
            "qrtag_access_log_lines_written",
            "Access log lines handed to the operating system.",
            l.lines_written,
        )?;
        counter(
            &mut e,
            "qrtag_access_log_lines_dropped",
            "Access log lines lost: the buffer stayed full or writes were failing.",
            l.lines_dropped,
        )?;
        counter(
            &mut e,
            "qrtag_access_log_write_errors",
            "Failed access log write, reopen or fsync attempts.",
            l.write_errors,
        )?;
        counter(
            &mut e,
            "qrtag_access_log_backpressure_waits",
            "Requests that waited for room in the access log buffer.",
            l.waits_for_room,
        )?;
        counter(
            &mut e,
            "qrtag_access_log_reopens",
            "Access log files opened after the first (SIGHUP, or the file was deleted).",
            l.reopens,
        )?;
        gauge(
            &mut e,
            "qrtag_access_log_queued",
            "Access log bytes appended and not yet written.",
            Some(&Unit::Bytes),
            l.bytes_queued as i64,
        )?;
        gauge(
            &mut e,
            "qrtag_access_log_failing",
            "1 from a failed access log write until the next one succeeds.",
            None,
            flag(!l.healthy),
        )?;

        if let Some(s) = &r.scan_index {
            counter(
                &mut e,
                "qrtag_scan_log_walks_cut",
                "Expansions of the --scan-log patterns stopped at their bound of directory entries (logs beyond not counted; /readyz names the pattern).",
                s.walks_cut,
            )?;
        }
        // Issue 38: the ClickHouse scan sink.
        if let Some(s) = &r.scan_sink {
            counter(
                &mut e,
                "qrtag_scan_sink_rows_sent",
                "Access log lines ClickHouse accepted as scans rows (--scans-to).",
                s.rows_sent,
            )?;
            counter(
                &mut e,
                "qrtag_scan_sink_rows_dropped",
                "Access log lines not sent to ClickHouse because its queue (--scans-queue) was full; back-fill them with qrtag stats --load-into.",
                s.rows_dropped,
            )?;
            gauge(
                &mut e,
                "qrtag_scan_sink_rows_waiting",
                "Rows waiting for ClickHouse: queued, or in a batch being retried.",
                None,
                s.rows_waiting as i64,
            )?;
            gauge(
                &mut e,
                "qrtag_scan_sink_failing",
                "1 from a failed send to ClickHouse until the next one succeeds.",
                None,
                flag(s.failing),
            )?;
        }
        if let Some(certificates) = &r.tls {
            let mut family = e.encode_descriptor(
                "qrtag_tls_certificate_expiry",
                "When the TLS certificate served for a domain ends (its notAfter, Unix time); /readyz warns 14 days before.",
                secs,
                MetricType::Gauge,
            )?;
            for c in certificates {
                ConstGauge::new(c.not_after)
                    .encode(family.encode_family(&[("domain", c.domain.as_str())])?)?;
            }
        }
        if let Some(d) = &r.didcomm {
            let mut family = e.encode_descriptor(
                "qrtag_didcomm_replies",
                "DIDComm replies sent to the sender's endpoint (the 202 path), by outcome.",
                None,
                MetricType::Counter,
            )?;
            for (outcome, n) in [("delivered", d.delivered), ("failed", d.failed)] {
                ConstCounter::new(n).encode(family.encode_family(&[("outcome", outcome)])?)?;
            }
        }
        Ok(())
    }
}
