//! Access-log lines for the benchmarks, written with the project's own
//! formatter (`access_log::format::write_record`), so what the index and
//! `qrtag stats` read is what the server writes. Included with `#[path]`.
#![allow(dead_code)]

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};

use chrono::{DateTime, Utc};
use qrtag::access_log::format::{Record, write_record};
use qrtag::tracking::id::TrackingId;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// Lines over `days` days from `start`, in time order: keys skewed (a few
/// posters scanned a lot, most a little; key 0 the most), 80% of phones with
/// a tracking ID from a pool of twice the keys, 6% bots, 2% HEAD, 3% 404
/// probes of a thousand paths, and `junk` percent 404s of random paths
/// (scanners probing a long-running server): half no key could be
/// (`/5f3a….php`), half random 6-character IDs, valid keys of no link.
pub struct Generator {
    rng: StdRng,
    keys: Vec<String>,
    ids: Vec<TrackingId>,
    start: DateTime<Utc>,
    step_ms: i64,
    n: u64,
    junk: u32,
    target: Vec<u8>,
}

impl Generator {
    /// `keys` are paths (`/KEY`); `lines` sets the spacing over `days`.
    pub fn new(keys: Vec<String>, lines: u64, start: DateTime<Utc>, days: i64) -> Generator {
        let mut rng = StdRng::seed_from_u64(13);
        let ids = (0..keys.len() as u64 * 2)
            .map(|i| TrackingId::generate_at(1_790_000_000_000 + i, &mut rng))
            .collect();
        Generator {
            rng,
            keys,
            ids,
            start,
            step_ms: days * 86_400_000 / lines.max(1) as i64,
            n: 0,
            junk: 0,
            target: Vec::new(),
        }
    }

    /// Makes `percent` of the lines 404s of random, distinct paths.
    pub fn with_junk(mut self, percent: u32) -> Generator {
        self.junk = percent.min(100);
        self
    }

    /// Writes the next `lines` lines; returns their bytes.
    pub fn write(&mut self, lines: u64, out: &mut impl Write) -> std::io::Result<u64> {
        let mut buf = Vec::with_capacity(1 << 20);
        let mut bytes = 0;
        for _ in 0..lines {
            let time = self.start + chrono::Duration::milliseconds(self.step_ms * self.n as i64);
            self.n += 1;
            let rng = &mut self.rng;
            let junk = self.junk > 0 && rng.random_range(0..100) < self.junk;
            let roll = rng.random_range(0..100);
            let ua = match roll {
                0..6 => BOT,
                _ if rng.random_bool(0.5) => PHONE,
                _ => ANDROID,
            };
            let (status, location, method) = match roll {
                _ if junk => (404, None, "GET"),
                6..9 => (404, None, "GET"),
                9..11 => (302, Some("https://example.com/poster"), "HEAD"),
                _ => (302, Some("https://example.com/poster"), "GET"),
            };
            self.target.clear();
            if junk && rng.random_bool(0.5) {
                write!(self.target, "/{:016x}.php", rng.random::<u64>())?;
            } else if junk {
                let id: String = (0..6)
                    .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
                    .collect();
                write!(self.target, "/{id}")?;
            } else if status == 404 {
                write!(self.target, "/wp-login{}.php", rng.random_range(0..1000))?;
            } else {
                let k = (rng.random_range(0.0f64..1.0).powi(3) * self.keys.len() as f64) as usize;
                self.target.extend_from_slice(self.keys[k].as_bytes());
            }
            let tracking = (roll >= 6 && rng.random_bool(0.8))
                .then(|| &self.ids[rng.random_range(0..self.ids.len())]);
            write_record(
                &Record {
                    time,
                    client_ip: Some(IpAddr::V4(Ipv4Addr::from(rng.random::<u32>()))),
                    tracking,
                    user_agent: Some(ua.as_bytes()),
                    target: &self.target,
                    status,
                    location,
                    fallback: false,
                    method,
                    referer: None,
                },
                &mut buf,
            );
            if buf.len() > (1 << 20) - 4096 {
                out.write_all(&buf)?;
                bytes += buf.len() as u64;
                buf.clear();
            }
        }
        out.write_all(&buf)?;
        bytes += buf.len() as u64;
        Ok(bytes)
    }
}
