//! The standard `process_*` metrics (the names every Prometheus client
//! library uses, so stock dashboards work), read from `/proc` through the
//! procfs crate at scrape time. Linux only, like the service's deployment;
//! where `/proc` cannot be read the metrics are left out rather than the
//! scrape failed.

use std::fmt;

use procfs::WithCurrentSystemInfo;
use procfs::process::{LimitValue, Process};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

/// One reading of this process.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
    /// The soft limit; `None` when unlimited.
    pub max_fds: Option<u64>,
    /// Seconds since the Unix epoch.
    pub start_time_seconds: f64,
    pub threads: u64,
}

pub fn read() -> procfs::ProcResult<ProcessStats> {
    let me = Process::myself()?;
    let stat = me.stat()?;
    let ticks = procfs::ticks_per_second() as f64;
    let boot = procfs::boot_time_secs()? as f64;
    let max_fds = match me.limits()?.max_open_files.soft_limit {
        LimitValue::Value(n) => Some(n),
        LimitValue::Unlimited => None,
    };
    Ok(ProcessStats {
        cpu_seconds: (stat.utime + stat.stime) as f64 / ticks,
        resident_bytes: stat.rss_bytes().get(),
        virtual_bytes: stat.vsize,
        open_fds: me.fd_count()? as u64,
        max_fds,
        start_time_seconds: boot + stat.starttime as f64 / ticks,
        threads: u64::try_from(stat.num_threads).unwrap_or(0),
    })
}

#[derive(Debug)]
pub(super) struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> fmt::Result {
        let p = match read() {
            Ok(p) => p,
            Err(err) => {
                tracing::debug!(error = %err, "no process metrics: /proc unreadable");
                return Ok(());
            }
        };
        let cpu = ConstCounter::new(p.cpu_seconds);
        cpu.encode(e.encode_descriptor(
            "process_cpu",
            "Total user and system CPU time spent in seconds.",
            Some(&Unit::Seconds),
            cpu.metric_type(),
        )?)?;
        let bytes = Some(Unit::Bytes);
        let counts: [(&str, &str, Option<Unit>, Option<u64>); 5] = [
            (
                "process_resident_memory",
                "Resident memory size in bytes.",
                bytes.clone(),
                Some(p.resident_bytes),
            ),
            (
                "process_virtual_memory",
                "Virtual memory size in bytes.",
                bytes,
                Some(p.virtual_bytes),
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                None,
                Some(p.open_fds),
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors (the soft limit; absent when unlimited).",
                None,
                p.max_fds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                None,
                Some(p.threads),
            ),
        ];
        for (name, help, unit, value) in counts {
            if let Some(value) = value {
                let g = ConstGauge::new(value);
                g.encode(e.encode_descriptor(name, help, unit.as_ref(), g.metric_type())?)?;
            }
        }
        let start = ConstGauge::new(p.start_time_seconds);
        start.encode(e.encode_descriptor(
            "process_start_time",
            "Start time of the process since unix epoch in seconds.",
            Some(&Unit::Seconds),
            start.metric_type(),
        )?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let p = read().expect("/proc is readable on Linux");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs_f64();
        // This test process started a moment ago, not before boot or later.
        assert!(
            p.start_time_seconds <= now + 1.0 && p.start_time_seconds > now - 3600.0,
            "started at {}, now {now}",
            p.start_time_seconds
        );
        assert!(
            p.resident_bytes > 1 << 20,
            "{} bytes resident",
            p.resident_bytes
        );
        assert!(p.virtual_bytes >= p.resident_bytes);
        // Standard input, output and error at least.
        assert!(p.open_fds >= 3, "{} fds", p.open_fds);
        assert!(p.max_fds.is_none_or(|max| max >= p.open_fds));
        assert!(p.threads >= 1);
        assert!(p.cpu_seconds >= 0.0);
    }
}
