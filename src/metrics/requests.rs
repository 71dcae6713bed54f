//! Counting the public listener's requests without costing the redirect path
//! a lock: a fixed array of atomics indexed by (method, status) and a fixed
//! histogram, each request one `fetch_add` per number. prometheus-client's
//! `Family` would take a read lock and hash the labels on every request;
//! here the labels are only built at scrape time, by [`RequestsCollector`].
//!
//! Each worker thread adds to its own [`Shard`] (one per core), so workers
//! on different cores never contend for a cache line (every scan of a
//! popular tag would otherwise bump the same counter from every core); a
//! scrape adds the shards up.
//!
//! Label cardinality stays bounded whatever clients send: methods outside a
//! fixed set count as `other`, and the status is one of the 500 codes
//! 100-599 (anything else, which the handler never answers, as `other`).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use actix_web::http::{Method, StatusCode};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::registry::Unit;

/// The methods counted by name; the last slot is everything else.
const METHODS: [&str; 8] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "other",
];
const FIRST_STATUS: u16 = 100;
/// Codes 100-599, then one slot for any other.
const STATUS_SLOTS: usize = 501;

/// Upper bounds of the latency buckets, in nanoseconds (10 µs to 1 s): a
/// redirect takes microseconds, a slow one is what the upper buckets catch.
const BUCKETS_NS: [u64; 15] = [
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    1_000_000_000,
];

/// The series exported at zero from the start, so that `rate()` and
/// `increase()` see the first scan of the commonest answers.
const ALWAYS_SHOWN: [(usize, u16); 4] = [(0, 302), (0, 404), (1, 302), (1, 404)];

pub struct RequestMetrics {
    shards: Box<[Shard]>,
    /// Issue 36: requests for a host of no configured domain (answered 404).
    unknown_host: AtomicU64,
}

/// One thread's counters. Aligned past a pair of cache lines (the unit
/// some CPUs prefetch), so neighbouring shards' histograms never share one.
#[repr(align(128))]
struct Shard {
    /// `METHODS.len() * STATUS_SLOTS` counters, in their own allocation.
    counts: Box<[AtomicU64]>,
    /// One per bucket in [`BUCKETS_NS`], then `+Inf`; not cumulative.
    buckets: [AtomicU64; BUCKETS_NS.len() + 1],
    sum_ns: AtomicU64,
}

impl Shard {
    fn new() -> Self {
        Self {
            counts: (0..METHODS.len() * STATUS_SLOTS)
                .map(|_| AtomicU64::new(0))
                .collect(),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
        }
    }
}

/// Hands each thread that records a request its own shard number.
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SHARD: usize = NEXT_SHARD.fetch_add(1, Relaxed);
}

impl Default for RequestMetrics {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Self::with_shards(cores.min(64))
    }
}

impl fmt::Debug for RequestMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestMetrics")
            .field("requests", &self.total())
            .finish_non_exhaustive()
    }
}

fn method_slot(m: &Method) -> usize {
    match m.as_str() {
        "GET" => 0,
        "HEAD" => 1,
        "POST" => 2,
        "PUT" => 3,
        "DELETE" => 4,
        "OPTIONS" => 5,
        "PATCH" => 6,
        _ => METHODS.len() - 1,
    }
}

fn status_slot(status: StatusCode) -> usize {
    usize::from(status.as_u16().wrapping_sub(FIRST_STATUS)).min(STATUS_SLOTS - 1)
}

impl RequestMetrics {
    /// `shards` sets of counters (at least one); threads beyond that share.
    pub fn with_shards(shards: usize) -> Self {
        Self {
            shards: (0..shards.max(1)).map(|_| Shard::new()).collect(),
            unknown_host: AtomicU64::new(0),
        }
    }

    /// Issue 36: one more request for a host of no configured domain; rare,
    /// so one counter for all threads.
    pub fn record_unknown_host(&self) {
        self.unknown_host.fetch_add(1, Relaxed);
    }

    /// Issue 36: requests for a host of no configured domain so far.
    pub fn unknown_hosts(&self) -> u64 {
        self.unknown_host.load(Relaxed)
    }

    /// Counts one answered request and how long the handler took.
    #[inline]
    pub fn record(&self, method: &Method, status: StatusCode, took: Duration) {
        let shard = &self.shards[SHARD.with(|n| *n) % self.shards.len()];
        let slot = method_slot(method) * STATUS_SLOTS + status_slot(status);
        shard.counts[slot].fetch_add(1, Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BUCKETS_NS
            .iter()
            .position(|&bound| ns <= bound)
            .unwrap_or(BUCKETS_NS.len());
        shard.buckets[bucket].fetch_add(1, Relaxed);
        shard.sum_ns.fetch_add(ns, Relaxed);
    }

    /// Requests counted with this method and status.
    pub fn count(&self, method: &Method, status: StatusCode) -> u64 {
        self.count_at(method_slot(method) * STATUS_SLOTS + status_slot(status))
    }

    fn count_at(&self, slot: usize) -> u64 {
        self.shards
            .iter()
            .map(|s| s.counts[slot].load(Relaxed))
            .sum()
    }

    fn bucket_counts(&self) -> [u64; BUCKETS_NS.len() + 1] {
        std::array::from_fn(|i| self.shards.iter().map(|s| s.buckets[i].load(Relaxed)).sum())
    }

    fn sum_ns(&self) -> u64 {
        self.shards.iter().map(|s| s.sum_ns.load(Relaxed)).sum()
    }

    fn total(&self) -> u64 {
        (0..METHODS.len() * STATUS_SLOTS)
            .map(|slot| self.count_at(slot))
            .sum()
    }
}

/// Exports [`RequestMetrics`] at scrape time.
#[derive(Debug)]
pub(super) struct RequestsCollector(pub Arc<RequestMetrics>);

impl Collector for RequestsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let m = &self.0;
        let mut family = encoder.encode_descriptor(
            "qrtag_requests",
            "Requests answered by the public listener, by method and status code.",
            None,
            MetricType::Counter,
        )?;
        for slot in 0..METHODS.len() * STATUS_SLOTS {
            let count = m.count_at(slot);
            let (method, status) = (slot / STATUS_SLOTS, slot % STATUS_SLOTS);
            let code = FIRST_STATUS + status as u16;
            if count == 0 && !ALWAYS_SHOWN.contains(&(method, code)) {
                continue;
            }
            let status = if status == STATUS_SLOTS - 1 {
                "other".to_owned()
            } else {
                code.to_string()
            };
            let labels = [("method", METHODS[method]), ("status", status.as_str())];
            ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
        }

        let buckets: Vec<(f64, u64)> = BUCKETS_NS
            .iter()
            .map(|&ns| ns as f64 / 1e9)
            .chain(std::iter::once(f64::INFINITY))
            .zip(m.bucket_counts())
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = m.sum_ns() as f64 / 1e9;
        // Issue 36: a host of no configured domain.
        ConstCounter::new(m.unknown_hosts()).encode(encoder.encode_descriptor(
            "qrtag_unknown_host_requests",
            "Requests for a host of no configured domain, answered 404 (logged as 421 in the default domain's access log).",
            None,
            MetricType::Counter,
        )?)?;
        encoder
            .encode_descriptor(
                "qrtag_request_duration",
                "Time the public handler took per request, from its start to the queued log line.",
                Some(&Unit::Seconds),
                MetricType::Histogram,
            )?
            .encode_histogram::<prometheus_client::encoding::NoLabelSet>(sum, count, &buckets, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_and_statuses_map_to_bounded_slots() {
        assert_eq!(method_slot(&Method::GET), 0);
        assert_eq!(method_slot(&Method::PATCH), 6);
        let odd = Method::from_bytes(b"PROPFIND").expect("a method");
        assert_eq!(method_slot(&odd), 7);
        assert_eq!(method_slot(&Method::TRACE), 7);
        assert_eq!(status_slot(StatusCode::CONTINUE), 0);
        assert_eq!(status_slot(StatusCode::FOUND), 202);
        let last = StatusCode::from_u16(599).expect("a code");
        assert_eq!(status_slot(last), 499);
        let high = StatusCode::from_u16(999).expect("a code");
        assert_eq!(status_slot(high), STATUS_SLOTS - 1);
    }

    #[test]
    fn records_land_in_their_slot_and_bucket() {
        let m = RequestMetrics::with_shards(1);
        m.record(&Method::GET, StatusCode::FOUND, Duration::from_micros(7));
        m.record(&Method::GET, StatusCode::FOUND, Duration::from_micros(30));
        m.record(&Method::HEAD, StatusCode::NOT_FOUND, Duration::from_secs(5));
        assert_eq!(m.count(&Method::GET, StatusCode::FOUND), 2);
        assert_eq!(m.count(&Method::HEAD, StatusCode::NOT_FOUND), 1);
        assert_eq!(m.count(&Method::GET, StatusCode::NOT_FOUND), 0);
        let b = m.bucket_counts();
        assert_eq!((b[0], b[2], b[BUCKETS_NS.len()]), (1, 1, 1));
        assert_eq!(b.iter().sum::<u64>(), 3);
        assert_eq!(m.sum_ns(), 5_000_037_000);
    }

    #[test]
    fn threads_count_in_their_own_shards_and_scrapes_add_them_up() {
        let m = std::sync::Arc::new(RequestMetrics::with_shards(3));
        let threads: Vec<_> = (0..5)
            .map(|_| {
                let m = std::sync::Arc::clone(&m);
                std::thread::spawn(move || {
                    for _ in 0..1_000 {
                        m.record(&Method::GET, StatusCode::FOUND, Duration::from_micros(1));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("a recording thread");
        }
        assert_eq!(m.count(&Method::GET, StatusCode::FOUND), 5_000);
        assert_eq!(m.bucket_counts()[0], 5_000);
        assert_eq!(m.sum_ns(), 5_000_000);
        let used = m
            .shards
            .iter()
            .filter(|s| s.buckets[0].load(Relaxed) > 0)
            .count();
        assert!(used >= 2, "5 threads over 3 shards used {used}");
    }
}
