//! The two text formats a scraper may ask for. prometheus-client writes
//! OpenMetrics, which Prometheus asks for in its `Accept` header; everything
//! else (promtool, curl, older scrapers) gets the classic Prometheus text
//! format 0.0.4, as the Go client does. The classic text is derived from the
//! OpenMetrics text, so both always hold the same samples.

/// The media type a client names to get OpenMetrics.
pub const OPENMETRICS_TYPE: &str = "application/openmetrics-text";
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    /// The classic text format, for anything that does not ask for OpenMetrics.
    Prometheus,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Self::OpenMetrics => OPENMETRICS,
            Self::Prometheus => PROMETHEUS,
        }
    }
}

/// OpenMetrics text (as prometheus-client writes it) in the classic format:
/// a counter family is named like its samples (with `_total`), and the
/// `# UNIT` and `# EOF` lines, which the classic format lacks, are dropped.
/// Sample lines are the same in both.
pub fn to_prometheus(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // HELP comes before TYPE, which says whether the name needs `_total`.
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            flush_help(&mut out, help.take(), "");
            help = Some(rest.split_once(' ').unwrap_or((rest, "")));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            let (suffix, kind) = match kind {
                "counter" => ("_total", "counter"),
                "unknown" => ("", "untyped"),
                other => ("", other),
            };
            flush_help(&mut out, help.take(), suffix);
            out.push_str("# TYPE ");
            out.push_str(name);
            out.push_str(suffix);
            out.push(' ');
            out.push_str(kind);
            out.push('\n');
            continue;
        }
        flush_help(&mut out, help.take(), "");
        out.push_str(line);
        out.push('\n');
    }
    flush_help(&mut out, help, "");
    out
}

fn flush_help(out: &mut String, help: Option<(&str, &str)>, suffix: &str) {
    if let Some((name, text)) = help {
        out.push_str("# HELP ");
        out.push_str(name);
        out.push_str(suffix);
        out.push(' ');
        out.push_str(text);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_named_by_their_samples_and_openmetrics_lines_go() {
        let om = "\
# HELP qrtag_requests Requests answered.
# TYPE qrtag_requests counter
qrtag_requests_total{method=\"GET\",status=\"302\"} 3
# HELP process_cpu_seconds Total CPU time.
# TYPE process_cpu_seconds counter
# UNIT process_cpu_seconds seconds
process_cpu_seconds_total 0.5
# HELP qrtag_ready 1 once loaded.
# TYPE qrtag_ready gauge
qrtag_ready 1
# HELP d_seconds Latency.
# TYPE d_seconds histogram
# UNIT d_seconds seconds
d_seconds_sum 0.1
d_seconds_count 1
d_seconds_bucket{le=\"+Inf\"} 1
# EOF
";
        let expected = "\
# HELP qrtag_requests_total Requests answered.
# TYPE qrtag_requests_total counter
qrtag_requests_total{method=\"GET\",status=\"302\"} 3
# HELP process_cpu_seconds_total Total CPU time.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 0.5
# HELP qrtag_ready 1 once loaded.
# TYPE qrtag_ready gauge
qrtag_ready 1
# HELP d_seconds Latency.
# TYPE d_seconds histogram
d_seconds_sum 0.1
d_seconds_count 1
d_seconds_bucket{le=\"+Inf\"} 1
";
        assert_eq!(to_prometheus(om), expected);
    }
}
