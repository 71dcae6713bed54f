//! `/readyz` and `/metrics` per domain (issue 36): a service of several
//! domains is ready only once every domain's links are loaded, and a
//! domain still loading (or whose store is away) is named, so an operator
//! sees which brand's tags would not be answered.

use std::sync::Arc;

use serde::Serialize;

use crate::access_log::AccessLog;
use crate::snapshot::Snapshot;

/// One domain besides the default, as health reads it.
pub struct DomainHealth {
    pub name: String,
    pub snapshot: Arc<Snapshot>,
    pub access_log: AccessLog,
}

/// The domains of a service with `[[domains]]`; empty (the default) for a
/// service of one domain, whose `/readyz` and `/metrics` stay as they were.
#[derive(Default)]
pub struct DomainsHealth {
    /// The default domain's host, when there are `[[domains]]`.
    pub default_name: Option<String>,
    pub others: Vec<DomainHealth>,
}

/// One domain's line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct DomainReport {
    pub domain: String,
    pub loaded: bool,
    pub links: usize,
    pub invalid_documents: usize,
    /// Its access log's lines written (its scans and other answers).
    pub lines_written: u64,
}

impl DomainsHealth {
    /// Whether every other domain's links are loaded, and the problems of
    /// those that are not or that serve with one, each naming its domain.
    pub fn check(&self) -> (bool, Vec<String>) {
        let mut all_loaded = true;
        let mut reasons = Vec::new();
        for d in &self.others {
            let loaded = d.snapshot.is_loaded();
            all_loaded &= loaded;
            match (d.snapshot.problem(), loaded) {
                (Some(problem), _) => reasons.push(format!("domain {}: {problem}", d.name)),
                (None, false) => {
                    reasons.push(format!("domain {}: links not loaded yet", d.name));
                }
                (None, true) => {}
            }
            let log = d.access_log.stats();
            if log.failing {
                let err = log.last_error.as_deref().unwrap_or("unknown error");
                reasons.push(format!(
                    "domain {}: access log writes failing: {err}",
                    d.name
                ));
            }
        }
        (all_loaded, reasons)
    }

    /// Every domain's report, the default first (from `default`'s
    /// snapshot and log); none without `[[domains]]`.
    pub fn reports(&self, snapshot: &Snapshot, access_log: &AccessLog) -> Vec<DomainReport> {
        let Some(default_name) = &self.default_name else {
            return Vec::new();
        };
        let report = |name: &str, snapshot: &Snapshot, log: &AccessLog| {
            let table = snapshot.load();
            DomainReport {
                domain: name.to_owned(),
                loaded: snapshot.is_loaded(),
                links: table.len(),
                invalid_documents: table.invalid_count(),
                lines_written: log.stats().lines_written,
            }
        };
        std::iter::once(report(default_name, snapshot, access_log))
            .chain(
                self.others
                    .iter()
                    .map(|d| report(&d.name, &d.snapshot, &d.access_log)),
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::{AccessLogTarget, WriterOptions};

    fn log() -> AccessLog {
        AccessLog::open(
            &AccessLogTarget::Path("/dev/null".into()),
            WriterOptions::default(),
        )
        .expect("open /dev/null")
    }

    #[test]
    fn a_domain_still_loading_is_named_and_keeps_the_service_not_ready() {
        let b = Snapshot::new();
        let domains = DomainsHealth {
            default_name: Some("0x1f.ie".into()),
            others: vec![DomainHealth {
                name: "qr.brand-b.ie".into(),
                snapshot: Arc::clone(&b),
                access_log: log(),
            }],
        };
        assert_eq!(
            domains.check(),
            (
                false,
                vec!["domain qr.brand-b.ie: links not loaded yet".to_owned()]
            )
        );
        b.mark_loaded();
        assert_eq!(domains.check(), (true, vec![]));
        let a = Snapshot::new();
        let reports = domains.reports(&a, &log());
        let names: Vec<(&str, bool)> = reports
            .iter()
            .map(|r| (r.domain.as_str(), r.loaded))
            .collect();
        assert_eq!(names, [("0x1f.ie", false), ("qr.brand-b.ie", true)]);
        assert!(DomainsHealth::default().reports(&a, &log()).is_empty());
    }
}
