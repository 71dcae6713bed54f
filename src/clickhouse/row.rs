//! One access-log line as a row of `scans` (pure): the line's fields as
//! logged (so `--client-ip truncated|none` has already had its way), where
//! the line comes from, and what qrtag derives from it once. JSON, one
//! object a line, for `INSERT … FORMAT JSONEachRow`; the time as Unix
//! seconds, which ClickHouse reads the same whatever its time zone.

use std::io::Write;

use serde::Serialize;

use crate::access_log::format::{LogLine, decode_lossy};

/// Where a line comes from: the identity that makes a row sent twice one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin<'a> {
    /// The host of the domain whose access log the line is in (schema
    /// version 3), so several domains' scans share the tables apart.
    pub domain: &'a str,
    pub node: &'a str,
    /// The log file's identity (see [`log_id`]).
    pub log_id: u64,
    /// The line's first byte in the (uncompressed) log.
    pub line_offset: u64,
}

/// The host a domain's rows carry (`Origin::domain`), the one rule every
/// writer and reader of rows takes it by, so `serve --scans-to`, `stats
/// --load-into` and `serve --scans-from` agree: the default domain's
/// configured host, else the host of the public URL given or recorded
/// with the links, else none (`""`): never the address a server happens
/// to listen on, which a back-fill run elsewhere cannot know.
pub fn rows_host(default_host: Option<&str>, public_origin: Option<&str>) -> String {
    default_host
        .map(str::to_owned)
        .or_else(|| {
            url::Url::parse(public_origin?)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
        })
        .unwrap_or_default()
}

/// What qrtag derives from a line, each through the code `qrtag stats` uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Derived<'a> {
    pub link: &'a str,
    pub scan: bool,
    pub fallback_scan: bool,
    pub bot: bool,
    pub device: &'a str,
    pub os: &'a str,
    pub browser: &'a str,
    pub country: &'a str,
    pub region: &'a str,
    pub city: &'a str,
    pub referrer_host: &'a str,
}

#[derive(Serialize)]
struct Row<'a> {
    node: &'a str,
    log_id: u64,
    line_offset: u64,
    time: i64,
    tenths: u32,
    day: String,
    client_ip: String,
    tracking: String,
    user_agent: &'a str,
    target: &'a str,
    status: u16,
    location: &'a str,
    fallback: u8,
    method: &'a str,
    referer: &'a str,
    link: &'a str,
    scan: u8,
    fallback_scan: u8,
    bot: u8,
    device: &'a str,
    os: &'a str,
    browser: &'a str,
    country: &'a str,
    region: &'a str,
    city: &'a str,
    referrer_host: &'a str,
    domain: &'a str,
}

/// The identity of a log file: the first 8 bytes of the SHA-256 of its
/// first line (`\n` included), as the scan index knows a file, so a log
/// keeps it through rotation and compression.
pub fn log_id(first_line: &[u8]) -> u64 {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(first_line);
    let mut b = [0u8; 8];
    b.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(b)
}

/// Appends `line` as one JSON object and a newline to `out`. Encoded
/// fields (User-Agent, Referer) are stored decoded, as people read them;
/// the target and location as logged.
pub fn write_row(out: &mut Vec<u8>, origin: Origin<'_>, line: &LogLine<'_>, d: &Derived<'_>) {
    let user_agent = line.user_agent.map(decode_lossy);
    let referer = line.referer.map(decode_lossy);
    let row = Row {
        node: origin.node,
        log_id: origin.log_id,
        line_offset: origin.line_offset,
        time: line.time.to_datetime().timestamp(),
        tenths: line.time.tenths(),
        day: line.time.date().format("%Y-%m-%d").to_string(),
        client_ip: line.client_ip.map(|ip| ip.to_string()).unwrap_or_default(),
        tracking: line.tracking.map(|t| t.to_string()).unwrap_or_default(),
        user_agent: user_agent.as_deref().unwrap_or(""),
        target: line.target,
        status: line.status,
        location: line.location.unwrap_or(""),
        fallback: u8::from(line.fallback),
        method: line.method,
        referer: referer.as_deref().unwrap_or(""),
        link: d.link,
        scan: u8::from(d.scan),
        fallback_scan: u8::from(d.fallback_scan),
        bot: u8::from(d.bot),
        device: d.device,
        os: d.os,
        browser: d.browser,
        country: d.country,
        region: d.region,
        city: d.city,
        referrer_host: d.referrer_host,
        domain: origin.domain,
    };
    // Writing to a Vec fails only on a serializer error, which these
    // field types cannot give.
    if serde_json::to_writer(&mut *out, &row).is_ok() {
        let _ = out.write_all(b"\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::format::parse_line;

    #[test]
    fn the_rows_host_is_the_configured_one_else_the_public_urls() {
        assert_eq!(
            rows_host(Some("go.brand.com"), Some("https://0x1f.ie")),
            "go.brand.com"
        );
        assert_eq!(rows_host(None, Some("https://0x1f.ie:8443")), "0x1f.ie");
        assert_eq!(rows_host(None, None), "");
        assert_eq!(rows_host(None, Some("not a url")), "");
    }

    #[test]
    fn a_line_becomes_the_row_the_schema_names() {
        let text = "20261128100000.3 203.0.113.0 - Mozilla%2F5.0 /H83if 302 https://example.com/a GET https://t.co/x\n";
        let line = parse_line(text).expect("a valid line");
        let mut out = Vec::new();
        let origin = Origin {
            domain: "0x1f.ie",
            node: "edge-1",
            log_id: 7,
            line_offset: 120,
        };
        let d = Derived {
            link: "H83if",
            scan: true,
            referrer_host: "t.co",
            ..Derived::default()
        };
        write_row(&mut out, origin, &line, &d);
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["time"], 1_795_860_000);
        assert_eq!(v["tenths"], 3);
        assert_eq!(v["day"], "2026-11-28");
        assert_eq!(v["client_ip"], "203.0.113.0");
        assert_eq!(v["user_agent"], "Mozilla/5.0");
        assert_eq!(v["scan"], 1);
        assert_eq!(v["line_offset"], 120);
        assert_eq!(v["domain"], "0x1f.ie");
        let names: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want: Vec<&str> = super::super::schema::SCANS_COLUMNS
            .iter()
            .map(|c| c.0)
            .collect();
        let mut got = names.clone();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "every column of scans, and no other");
    }
}
