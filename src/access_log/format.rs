//! The access log line format. The writer ([`write_record`]) and the parser
//! ([`parse_line`]) both live here so that the format has exactly one definition.
//!
//! # Access log format
//!
//! Every request to the public listener is logged as one line of nine fields,
//! separated by exactly one space and terminated by a single `\n`. A line holds
//! only printable ASCII (bytes 0x20–0x7E), no field is ever empty and no field
//! contains a space, so a line can be split on spaces without any quoting rules.
//!
//! ```text
//! 20261121143015.3 203.0.113.7 0Vh3kY2s4fLq9ZxA01b Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%29 /H83if 302 https://example.com/whelans/?p=14 GET -
//! ```
//!
//! | # | Field       | Written as                                                                |
//! |---|-------------|---------------------------------------------------------------------------|
//! | 1 | time        | UTC time the request arrived, `yyyymmddhhmmss.s` (tenths, truncated)      |
//! | 2 | client IP   | IPv4 or IPv6 in the usual text form, e.g. `203.0.113.7`, `::1`            |
//! | 3 | tracking ID | the tracking ID the response carries (the request's or a new one), or `-` |
//! | 4 | user agent  | `User-Agent` header, strict encoding, or `-`                              |
//! | 5 | target      | path and query as received (never a host or userinfo), target encoding     |
//! | 6 | status      | response status code, decimal, e.g. `302`                                 |
//! | 7 | location    | for a redirect, the `Location` sent, target encoding; otherwise `-`; `~` before it for a fallback answer |
//! | 8 | method      | request method, strict encoding, e.g. `GET`, `HEAD`                       |
//! | 9 | referer     | `Referer` header, strict encoding, or `-`                                 |
//!
//! *Strict encoding* writes every byte outside `A-Za-z0-9-._~` as `%XX` (upper-case
//! hex); decoding it gives back exactly the bytes received.
//!
//! *Target encoding* writes only spaces, control bytes (0x00–0x1F, 0x7F) and non-ASCII
//! bytes (0x80–0xFF) as `%XX` and keeps everything else, including `%XX` escapes the
//! client already sent, as received: the field reads like the URL, and percent-decoding
//! it gives the same as percent-decoding the original.
//!
//! *Fallback answers* (issue 33): a scan of a disabled or expired link answered
//! with its `fallback_url` has its location written after a `~`
//! ([`FALLBACK_MARK`]), so `qrtag stats` and the scan index count it apart from
//! live scans without asking what the link's destination was at the time (it
//! changes). Any other location that begins with `~` has that `~` written
//! `%7E`, so the mark cannot be mistaken for data; a line written before the
//! mark existed simply has no fallback answers.
//!
//! A value that is absent or empty is written `-`; a value that is exactly `-` is
//! written `%2D`, so the two cannot be confused. A field longer than 8 KiB
//! written is cut there and ends in `%~cut` ([`CUT_MARK`]). A tracking ID is 19 characters
//! `[0-9A-Za-z]` (see [`crate::tracking::id`]).
//!
//! A line is written when its request completes but carries the time it arrived,
//! so times within a file are nearly, not strictly, in order.
//!
//! A parser must reject a line that does not have exactly nine non-empty fields or
//! holds any byte outside 0x20–0x7E (apart from the final `\n`).

use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;

use chrono::{DateTime, Datelike, NaiveDate, Timelike, Utc};
use percent_encoding::percent_decode_str;

use crate::tracking::id::TrackingId;

/// Number of fields on a line.
pub const FIELD_COUNT: usize = 9;

/// What a field holds when there is no value.
pub const ABSENT: &str = "-";

/// Which bytes the strict encoding keeps as they are: RFC 3986 "unreserved".
const STRICT: [bool; 256] = keep_table(true);

/// Which bytes the target encoding keeps: printable ASCII but space.
const TARGET: [bool; 256] = keep_table(false);

const fn keep_table(strict: bool) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        table[i] = if strict {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
        } else {
            b > b' ' && b < 0x7f
        };
        i += 1;
    }
    table
}

/// The fields of a line, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    Time,
    ClientIp,
    Tracking,
    UserAgent,
    Target,
    Status,
    Location,
    Method,
    Referer,
}

impl Field {
    pub const ALL: [Field; FIELD_COUNT] = [
        Field::Time,
        Field::ClientIp,
        Field::Tracking,
        Field::UserAgent,
        Field::Target,
        Field::Status,
        Field::Location,
        Field::Method,
        Field::Referer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Time => "time",
            Field::ClientIp => "client IP",
            Field::Tracking => "tracking ID",
            Field::UserAgent => "user agent",
            Field::Target => "target",
            Field::Status => "status",
            Field::Location => "location",
            Field::Method => "method",
            Field::Referer => "referer",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One request, as handed to the log writer. Byte slices are the raw header and
/// target bytes, since clients may send anything there, including non-UTF-8.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    pub time: DateTime<Utc>,
    /// `None` when the server keeps no addresses (`--client-ip none`): `-`.
    pub client_ip: Option<IpAddr>,
    pub tracking: Option<&'a TrackingId>,
    pub user_agent: Option<&'a [u8]>,
    pub target: &'a [u8],
    pub status: u16,
    pub location: Option<&'a str>,
    /// The redirect was a dead link's fallback (issue 33): logged as
    /// [`FALLBACK_MARK`] before the location.
    pub fallback: bool,
    pub method: &'a str,
    pub referer: Option<&'a [u8]>,
}

/// Comes before the location of a fallback answer (issue 33).
pub const FALLBACK_MARK: char = '~';

/// Appends `rec` as one complete line, `\n` included, to `out`.
///
/// Runs for every request, so it allocates nothing except by growing `out`.
pub fn write_record(rec: &Record<'_>, out: &mut Vec<u8>) {
    LogTime::from_datetime(&rec.time).write_to(out);
    out.push(b' ');
    match rec.client_ip {
        Some(ip) => write_ip(ip, out),
        None => out.extend_from_slice(ABSENT.as_bytes()),
    }
    out.push(b' ');
    match rec.tracking {
        Some(id) => out.extend_from_slice(id.as_bytes()),
        None => out.extend_from_slice(ABSENT.as_bytes()),
    }
    out.push(b' ');
    write_value(rec.user_agent, &STRICT, out);
    out.push(b' ');
    write_value(Some(rec.target), &TARGET, out);
    out.push(b' ');
    write_u16(rec.status, out);
    out.push(b' ');
    write_location(rec.location, rec.fallback, out);
    out.push(b' ');
    write_value(Some(rec.method.as_bytes()), &STRICT, out);
    out.push(b' ');
    write_value(rec.referer, &STRICT, out);
    out.push(b'\n');
}

/// The most bytes a field takes on a line, marker included: a request head
/// may be 128 KiB, written as up to 384 KB of escapes, and a handful of those
/// must not fill the log's buffer.
pub const MAX_FIELD: usize = 8 * 1024;

/// Ends a field that was cut at [`MAX_FIELD`]. Strict encoding never writes
/// a `%` that is not followed by two hex digits, so in those fields it cannot
/// be mistaken for data; in a target field only a client's own target could
/// contain it.
pub const CUT_MARK: &str = "%~cut";

/// The location field: [`FALLBACK_MARK`] first for a fallback answer, and a
/// location's own leading `~` escaped, so the mark says only that.
fn write_location(location: Option<&str>, fallback: bool, out: &mut Vec<u8>) {
    let Some(location) = location.filter(|l| !l.is_empty()) else {
        out.extend_from_slice(ABSENT.as_bytes());
        return;
    };
    let rest = if fallback {
        out.push(FALLBACK_MARK as u8);
        location
    } else if let Some(rest) = location.strip_prefix(FALLBACK_MARK) {
        out.extend_from_slice(b"%7E");
        rest
    } else {
        location
    };
    if rest.is_empty() {
        return;
    }
    write_value(Some(rest.as_bytes()), &TARGET, out);
}

fn write_value(value: Option<&[u8]>, keep: &[bool; 256], out: &mut Vec<u8>) {
    match value {
        None | Some(b"") => out.extend_from_slice(ABSENT.as_bytes()),
        Some(b"-") => out.extend_from_slice(b"%2D"),
        Some(v) => {
            let start = out.len();
            // Every byte takes at least one: more than MAX_FIELD never fits.
            percent_encode_into(&v[..v.len().min(MAX_FIELD + 1)], keep, out);
            if out.len() - start > MAX_FIELD {
                let mut end = start + MAX_FIELD - CUT_MARK.len();
                // Never split an escape.
                if out[end - 1] == b'%' {
                    end -= 1;
                } else if out[end - 2] == b'%' {
                    end -= 2;
                }
                out.truncate(end);
                out.extend_from_slice(CUT_MARK.as_bytes());
            }
        }
    }
}

/// Writes into room made up front for the worst case (every byte escaped) and
/// trims after. On a typical user agent this measured clearly faster than copying
/// the runs between escapes (as the `percent-encoding` crate's iterator does) or a
/// branch-free variant; it is most of the cost of writing a line.
fn percent_encode_into(v: &[u8], keep: &[bool; 256], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    // The run before the first escape is copied whole: all of a target or a
    // location, as a rule, and a user agent's first word.
    let kept = v
        .iter()
        .position(|&b| !keep[usize::from(b)])
        .unwrap_or(v.len());
    out.extend_from_slice(&v[..kept]);
    let v = &v[kept..];
    let start = out.len();
    out.resize(start + 3 * v.len(), 0);
    let buf = &mut out[start..];
    let mut n = 0;
    for &b in v {
        if keep[usize::from(b)] {
            buf[n] = b;
            n += 1;
        } else {
            buf[n..n + 3].copy_from_slice(&[
                b'%',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ]);
            n += 3;
        }
    }
    out.truncate(start + n);
}

fn write_ip(ip: IpAddr, out: &mut Vec<u8>) {
    match ip {
        // The common case, by hand: `Display` goes through the formatting machinery.
        IpAddr::V4(v4) => {
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                write_u16(u16::from(octet), out);
            }
        }
        IpAddr::V6(v6) => {
            use std::io::Write;
            // Writing to a Vec cannot fail.
            let _ = write!(out, "{v6}");
        }
    }
}

fn write_u16(n: u16, out: &mut Vec<u8>) {
    let mut buf = [0u8; 5];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// A log timestamp: UTC, to a tenth of a second, years 0000–9999.
///
/// Stored as the 15 digits of `yyyymmddhhmmss` and the tenths read as one decimal
/// number, so comparing two values compares the times, and parsing is a digit loop
/// with no calendar arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogTime(u64);

impl LogTime {
    /// Length of the written form.
    pub const LEN: usize = 16;

    /// Truncates to tenths. A leap second (which chrono shows as second 59 with
    /// more than 10^9 ns) is logged as 59.9; times outside years 0–9999 are clamped
    /// to the nearest representable one so the field keeps its fixed width.
    pub fn from_datetime(t: &DateTime<Utc>) -> LogTime {
        // Once: each field accessor of `DateTime` converts to local time anew.
        let t = t.naive_utc();
        let year = t.year();
        if year < 0 {
            return LogTime::pack(0, 1, 1, 0, 0, 0, 0);
        }
        if year > 9999 {
            return LogTime::pack(9999, 12, 31, 23, 59, 59, 9);
        }
        let tenths = (t.nanosecond() / 100_000_000).min(9);
        LogTime::pack(
            year as u32,
            t.month(),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            tenths,
        )
    }

    fn pack(y: u32, mo: u32, d: u32, h: u32, mi: u32, s: u32, tenths: u32) -> LogTime {
        let date = u64::from(y * 10_000 + mo * 100 + d);
        let time = u64::from(h * 100_000 + mi * 1_000 + s * 10 + tenths);
        LogTime(date * 10_000_000 + time)
    }

    /// Parses the written form `yyyymmddhhmmss.s`; the date must exist in the calendar.
    pub fn parse(s: &str) -> Option<LogTime> {
        let b = s.as_bytes();
        if b.len() != Self::LEN || b[14] != b'.' {
            return None;
        }
        let mut v: u64 = 0;
        for &c in b[..14].iter().chain(&b[15..]) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + u64::from(d);
        }
        LogTime::from_bits(v)
    }

    /// The packed number, for binary files that keep times (the scan index's
    /// checkpoint): 8 bytes instead of the 16 of the written form.
    pub fn to_bits(self) -> u64 {
        self.0
    }

    /// Reverses [`to_bits`](Self::to_bits); `None` unless the number is a
    /// time that exists in the calendar, so a damaged file cannot make one.
    pub fn from_bits(v: u64) -> Option<LogTime> {
        let t = LogTime(v);
        let valid = t.year() <= 9999
            && (1..=12).contains(&t.month())
            && (1..=days_in_month(t.year(), t.month())).contains(&t.day())
            && t.hour() < 24
            && t.minute() < 60
            && t.second() < 60;
        valid.then_some(t)
    }

    /// Appends the 16-byte written form.
    pub fn write_to(self, out: &mut Vec<u8>) {
        let mut buf = [0u8; Self::LEN];
        let mut v = self.0;
        for i in (0..Self::LEN).rev() {
            if i == 14 {
                buf[i] = b'.';
                continue;
            }
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out.extend_from_slice(&buf);
    }

    pub fn year(self) -> u32 {
        (self.0 / 100_000_000_000) as u32
    }
    pub fn month(self) -> u32 {
        (self.0 / 1_000_000_000 % 100) as u32
    }
    pub fn day(self) -> u32 {
        (self.0 / 10_000_000 % 100) as u32
    }
    pub fn hour(self) -> u32 {
        (self.0 / 100_000 % 100) as u32
    }
    pub fn minute(self) -> u32 {
        (self.0 / 1_000 % 100) as u32
    }
    pub fn second(self) -> u32 {
        (self.0 / 10 % 100) as u32
    }
    pub fn tenths(self) -> u32 {
        (self.0 % 10) as u32
    }

    /// The date as the number `yyyymmdd`: cheap to bucket by and still ordered.
    pub fn yyyymmdd(self) -> u32 {
        (self.0 / 10_000_000) as u32
    }

    pub fn date(self) -> NaiveDate {
        // Every constructor checks that the date exists.
        NaiveDate::from_ymd_opt(self.year() as i32, self.month(), self.day())
            .expect("LogTime holds a valid date")
    }

    pub fn to_datetime(self) -> DateTime<Utc> {
        self.date()
            .and_hms_milli_opt(
                self.hour(),
                self.minute(),
                self.second(),
                self.tenths() * 100,
            )
            .expect("LogTime holds a valid time of day")
            .and_utc()
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        _ => 31,
    }
}

impl fmt::Display for LogTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:014}.{}", self.0 / 10, self.0 % 10)
    }
}

/// A parsed line, borrowing from the line's text. Encoded fields are returned as
/// written; see [`decode`] and the `*_decoded` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLine<'a> {
    pub time: LogTime,
    /// `None` for `-`: a server that keeps no addresses (`--client-ip none`).
    pub client_ip: Option<IpAddr>,
    pub tracking: Option<TrackingId>,
    pub user_agent: Option<&'a str>,
    /// `-` if the request target was empty (HTTP does not allow that).
    pub target: &'a str,
    pub status: u16,
    /// Without the [`FALLBACK_MARK`] of a fallback answer.
    pub location: Option<&'a str>,
    /// The answer was a dead link's fallback (issue 33); never for a line
    /// written before the mark existed.
    pub fallback: bool,
    /// `-` if the method was empty (HTTP does not allow that).
    pub method: &'a str,
    pub referer: Option<&'a str>,
}

impl<'a> LogLine<'a> {
    /// The target without its query.
    pub fn path(&self) -> &'a str {
        self.target
            .split_once('?')
            .map_or(self.target, |(path, _)| path)
    }

    /// The short-URL key: the path without its leading `/`, percent escapes left
    /// as logged (so `/H83if?x=1` gives `H83if`, `/docs/api` gives `docs/api`).
    pub fn key(&self) -> &'a str {
        let path = self.path();
        path.strip_prefix('/').unwrap_or(path)
    }

    pub fn user_agent_decoded(&self) -> Option<Cow<'a, str>> {
        self.user_agent.map(decode_lossy)
    }

    pub fn referer_decoded(&self) -> Option<Cow<'a, str>> {
        self.referer.map(decode_lossy)
    }

    /// True for a status the redirector uses to send a client on (301, 302, 303, 307, 308).
    pub fn is_redirect(&self) -> bool {
        matches!(self.status, 301 | 302 | 303 | 307 | 308)
    }
}

/// Percent-decodes a field to the bytes received (for target-encoded fields: to
/// what percent-decoding the received value gives).
pub fn decode(field: &str) -> Cow<'_, [u8]> {
    percent_decode_str(field).into()
}

/// Like [`decode`], replacing bytes that are not UTF-8 with U+FFFD.
pub fn decode_lossy(field: &str) -> Cow<'_, str> {
    percent_decode_str(field).decode_utf8_lossy()
}

/// Why a line is not a valid log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("byte 0x{byte:02x} at column {column} is not printable ASCII")]
    Byte { column: usize, byte: u8 },
    #[error("expected {FIELD_COUNT} fields separated by single spaces, found {found}")]
    FieldCount { found: usize },
    #[error("{0} field is empty")]
    Empty(Field),
    #[error("{0} field is invalid")]
    Invalid(Field),
}

/// Parses one line, with or without its trailing `\n`.
///
/// Runs once per line over logs of hundreds of millions of lines, so it borrows
/// instead of copying and validates no more than it needs to return typed fields.
pub fn parse_line(line: &str) -> Result<LogLine<'_>, ParseError> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    check_bytes(line.as_bytes())?;

    // One vectorised scan for all the separators, rather than a search per field.
    let mut fields = [""; FIELD_COUNT];
    let mut spaces = memchr::memchr_iter(b' ', line.as_bytes());
    let mut start = 0;
    for (i, slot) in fields.iter_mut().enumerate() {
        let end = if i + 1 < FIELD_COUNT {
            match spaces.next() {
                Some(end) => end,
                None if line.is_empty() => return Err(ParseError::FieldCount { found: 0 }),
                None => return Err(ParseError::FieldCount { found: i + 1 }),
            }
        } else {
            line.len()
        };
        *slot = &line[start..end];
        start = end + 1;
    }
    let extra = spaces.count();
    if extra > 0 {
        return Err(ParseError::FieldCount {
            found: FIELD_COUNT + extra,
        });
    }
    if let Some(i) = fields.iter().position(|f| f.is_empty()) {
        return Err(ParseError::Empty(Field::ALL[i]));
    }
    let [
        time,
        ip,
        tracking,
        ua,
        target,
        status,
        location,
        method,
        referer,
    ] = fields;

    let invalid = ParseError::Invalid;
    let (location, fallback) = match location.strip_prefix(FALLBACK_MARK) {
        Some("") => return Err(invalid(Field::Location)),
        Some(rest) => (rest, true),
        None => (location, false),
    };
    Ok(LogLine {
        time: LogTime::parse(time).ok_or(invalid(Field::Time))?,
        client_ip: match ip {
            ABSENT => None,
            ip => Some(ip.parse().map_err(|_| invalid(Field::ClientIp))?),
        },
        tracking: match tracking {
            ABSENT => None,
            t => Some(TrackingId::parse(t).map_err(|_| invalid(Field::Tracking))?),
        },
        user_agent: optional(ua),
        target,
        status: parse_status(status).ok_or(invalid(Field::Status))?,
        location: optional(location),
        fallback,
        method,
        referer: optional(referer),
    })
}

/// [`parse_line`] for raw bytes as read from a file, which need not be UTF-8.
pub fn parse_line_bytes(line: &[u8]) -> Result<LogLine<'_>, ParseError> {
    match std::str::from_utf8(line) {
        Ok(s) => parse_line(s),
        Err(_) => {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            check_bytes(body)?;
            // Not reached: bytes that are not UTF-8 are not printable ASCII either.
            Err(ParseError::FieldCount { found: 0 })
        }
    }
}

fn is_unprintable(b: u8) -> bool {
    b.wrapping_sub(0x20) > 0x5e
}

/// Rejects any byte outside 0x20–0x7E.
fn check_bytes(bytes: &[u8]) -> Result<(), ParseError> {
    // Branch-free over the whole line so that it vectorises; the culprit is only
    // looked for on the (rare) failure path.
    if !bytes.iter().fold(false, |acc, &b| acc | is_unprintable(b)) {
        return Ok(());
    }
    let column = bytes.iter().position(|&b| is_unprintable(b)).unwrap_or(0);
    Err(ParseError::Byte {
        column: column + 1,
        byte: bytes[column],
    })
}

fn optional(field: &str) -> Option<&str> {
    (field != ABSENT).then_some(field)
}

/// Like the writer: plain decimal digits of a `u16`, no sign.
fn parse_status(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 {
        return None;
    }
    let mut v: u32 = 0;
    for c in s.bytes() {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u32::from(d);
    }
    u16::try_from(v).ok()
}

#[cfg(test)]
mod tests;
