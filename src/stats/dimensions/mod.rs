//! What a scan says beyond its key and time: the device, place, source and
//! local time a breakdown (`qrtag stats --by device`) counts it under.
//!
//! Each dimension is a pure function of one parsed log line
//! ([`crate::access_log::format::LogLine`]) and what the run was given (the
//! uap-core rules, a GeoIP database, a time zone): [`device`], [`place`],
//! [`referrer`], [`time`]. [`Deriver`] puts them together with caches, since
//! a log repeats a few thousand User-Agents and addresses millions of times:
//! each distinct User-Agent is parsed once. The console's scan index can call
//! the same [`Deriver`] per line.

pub mod device;
pub mod place;
pub mod referrer;
pub mod time;

use std::fmt;
use std::net::IpAddr;

use chrono_tz::Tz;

use crate::access_log::format::{LogLine, decode_lossy};
use device::{Device, DeviceClass};
use place::{GeoDb, Place};

type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A breakdown's dimension, as `--by` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dimension {
    Device,
    Os,
    Browser,
    Country,
    Region,
    City,
    Referrer,
    Hour,
    Weekday,
}

impl Dimension {
    pub const ALL: [Dimension; 9] = [
        Dimension::Device,
        Dimension::Os,
        Dimension::Browser,
        Dimension::Country,
        Dimension::Region,
        Dimension::City,
        Dimension::Referrer,
        Dimension::Hour,
        Dimension::Weekday,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Dimension::Device => "device",
            Dimension::Os => "os",
            Dimension::Browser => "browser",
            Dimension::Country => "country",
            Dimension::Region => "region",
            Dimension::City => "city",
            Dimension::Referrer => "referrer",
            Dimension::Hour => "hour",
            Dimension::Weekday => "weekday",
        }
    }

    /// Whether its values come from `--geoip-db`.
    pub fn is_place(self) -> bool {
        matches!(
            self,
            Dimension::Country | Dimension::Region | Dimension::City
        )
    }

    /// Whether its values come from the User-Agent.
    pub fn is_device(self) -> bool {
        matches!(self, Dimension::Device | Dimension::Os | Dimension::Browser)
    }

    /// Whether every value is shown in its own order (hours, weekdays),
    /// quiet ones as zeros, rather than the busiest first.
    pub fn is_cyclic(self) -> bool {
        matches!(self, Dimension::Hour | Dimension::Weekday)
    }

    /// Every value of a cyclic dimension, in order.
    pub fn cycle(self) -> Vec<String> {
        match self {
            Dimension::Hour => (0..24).map(time::hour_name).collect(),
            Dimension::Weekday => WEEK
                .iter()
                .map(|d| time::weekday_name(*d).to_owned())
                .collect(),
            _ => Vec::new(),
        }
    }
}

const WEEK: [chrono::Weekday; 7] = [
    chrono::Weekday::Mon,
    chrono::Weekday::Tue,
    chrono::Weekday::Wed,
    chrono::Weekday::Thu,
    chrono::Weekday::Fri,
    chrono::Weekday::Sat,
    chrono::Weekday::Sun,
];

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How many User-Agents, addresses and referrers each cache holds before it
/// is emptied: real logs have a few thousand, a hostile one unboundedly many.
const MAX_CACHED: usize = 200_000;

/// The dimensions of lines, with the caches that make them cheap.
pub struct Deriver {
    tz: Tz,
    parser: Option<device::Parser>,
    devices: Map<Box<str>, Device>,
    no_agent: Device,
    geo: Option<GeoDb>,
    /// Places by address, and by database record (a network's addresses
    /// share one).
    places_by_ip: Map<IpAddr, usize>,
    places: Vec<Place>,
    place_of_record: Map<usize, usize>,
    referrers: Map<Box<str>, Box<str>>,
    /// The last minute converted to local time, and its (hour, weekday):
    /// lines come nearly in time order.
    last_minute: (u64, u32, chrono::Weekday),
}

impl Deriver {
    /// `parser` is needed for the device dimensions, `geo` for the places.
    pub fn new(tz: Tz, parser: Option<device::Parser>, geo: Option<GeoDb>) -> Deriver {
        Deriver {
            tz,
            parser,
            devices: Map::default(),
            no_agent: Device {
                class: DeviceClass::Bot,
                os_family: "Other".to_owned(),
                os_major: None,
                browser: "Other".to_owned(),
            },
            geo,
            places_by_ip: Map::default(),
            places: vec![Place {
                country: place::UNKNOWN.to_owned(),
                region: place::UNKNOWN.to_owned(),
                city: place::UNKNOWN.to_owned(),
            }],
            place_of_record: Map::default(),
            referrers: Map::default(),
            last_minute: (u64::MAX, 0, chrono::Weekday::Mon),
        }
    }

    /// Writes `line`'s value of `dim` into `out` (emptied first); `bot` is
    /// the line's bot verdict. A device or place dimension without its
    /// parser or database writes nothing: the caller asks only for what it
    /// was given.
    pub fn value(&mut self, dim: Dimension, line: &LogLine<'_>, bot: bool, out: &mut String) {
        out.clear();
        match dim {
            Dimension::Device | Dimension::Os | Dimension::Browser => {
                if let Some(d) = self.device(line.user_agent, bot) {
                    match dim {
                        Dimension::Device => out.push_str(d.class.name()),
                        Dimension::Os => {
                            out.push_str(&d.os_family);
                            if let Some(major) = &d.os_major {
                                out.push(' ');
                                out.push_str(major);
                            }
                        }
                        _ => out.push_str(&d.browser),
                    }
                }
            }
            Dimension::Country | Dimension::Region | Dimension::City => {
                if let Some(p) = self.place(line.client_ip) {
                    out.push_str(match dim {
                        Dimension::Country => &p.country,
                        Dimension::Region => &p.region,
                        _ => &p.city,
                    });
                }
            }
            Dimension::Referrer => out.push_str(self.referrer(line.referer)),
            Dimension::Hour | Dimension::Weekday => {
                let (hour, day) = self.local_time(line.time);
                match dim {
                    Dimension::Hour => out.push_str(&time::hour_name(hour)),
                    _ => out.push_str(time::weekday_name(day)),
                }
            }
        }
    }

    /// The device of a logged (strict-encoded) User-Agent, parsed once per
    /// distinct string.
    pub fn device(&mut self, user_agent: Option<&str>, bot: bool) -> Option<&Device> {
        let parser = self.parser.as_ref()?;
        let Some(ua) = user_agent else {
            return Some(&self.no_agent);
        };
        if !self.devices.contains_key(ua) {
            if self.devices.len() >= MAX_CACHED {
                self.devices.clear();
            }
            let device = parser.parse(&decode_lossy(ua), bot);
            self.devices.insert(ua.into(), device);
        }
        self.devices.get(ua)
    }

    /// The place of `ip`, looked up once per address and decoded once per
    /// database record.
    /// A line logged without an address (`serve --client-ip none`) is in
    /// the unknown place, like an address the database lacks.
    pub fn place(&mut self, ip: Option<IpAddr>) -> Option<&Place> {
        let geo = self.geo.as_ref()?;
        let Some(ip) = ip else {
            return self.places.first();
        };
        // An IPv4 client of a dual-stack socket is `::ffff:a.b.c.d`: the
        // database files it under its IPv4 address.
        let ip = ip.to_canonical();
        let index = match self.places_by_ip.get(&ip) {
            Some(&i) => i,
            None => {
                let i = match geo.record(ip) {
                    None => 0,
                    Some(record) => match self.place_of_record.get(&record) {
                        Some(&i) => i,
                        None => {
                            self.places.push(geo.place(ip));
                            let i = self.places.len() - 1;
                            self.place_of_record.insert(record, i);
                            i
                        }
                    },
                };
                if self.places_by_ip.len() >= MAX_CACHED {
                    self.places_by_ip.clear();
                }
                self.places_by_ip.insert(ip, i);
                i
            }
        };
        self.places.get(index)
    }

    /// The referrer host of a logged `Referer` field.
    pub fn referrer(&mut self, referer: Option<&str>) -> &str {
        let Some(field) = referer else {
            return referrer::NONE;
        };
        if !self.referrers.contains_key(field) {
            if self.referrers.len() >= MAX_CACHED {
                self.referrers.clear();
            }
            let host = referrer::host(Some(field));
            self.referrers.insert(field.into(), host.into());
        }
        self.referrers
            .get(field)
            .map_or(referrer::UNREADABLE, |h| &**h)
    }

    /// Local hour and weekday of a line's time.
    pub fn local_time(&mut self, t: crate::access_log::format::LogTime) -> (u32, chrono::Weekday) {
        // Tenths of a second in the low digits: yyyymmddhhmm is bits / 1000.
        let minute = t.to_bits() / 1000;
        if self.last_minute.0 != minute {
            let (hour, day) = time::hour_and_weekday(t, self.tz);
            self.last_minute = (minute, hour, day);
        }
        (self.last_minute.1, self.last_minute.2)
    }
}
