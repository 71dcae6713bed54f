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

pub mod destination;
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
    /// Where the scan was sent (issue 34): the logged `Location`.
    Destination,
}

impl Dimension {
    pub const ALL: [Dimension; 10] = [
        Dimension::Device,
        Dimension::Os,
        Dimension::Browser,
        Dimension::Country,
        Dimension::Region,
        Dimension::City,
        Dimension::Referrer,
        Dimension::Hour,
        Dimension::Weekday,
        Dimension::Destination,
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
            Dimension::Destination => "destination",
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

/// How many User-Agents and referrers each cache holds before it is
/// emptied: real logs have a few thousand, a hostile one unboundedly many.
const MAX_CACHED: usize = 200_000;

/// Slots of the IPv6 address cache (a power of two). Direct-mapped and
/// fixed: a log of mostly new addresses (the worst case) pays one slot
/// write per line instead of growing, rehashing and emptying a map of
/// 200,000 addresses; a few thousand recurring scanners still hit it nearly
/// every time, and skip a walk of the tree's deeper IPv6 levels. IPv4
/// addresses need no cache: their walk is a table entry and a few steps.
const ADDRESS_SLOTS: usize = 1 << 13;

/// Slots of the User-Agent cache in front of the map of parsed agents (a
/// power of two). A hit costs a few loads of the string and one compare
/// instead of hashing all of it (120 bytes and more) for the map, which was
/// most of `--by device`'s cost; a collision only sends a line on to the map.
const AGENT_SLOTS: usize = 1 << 12;

/// One dimension's values by id. Ids are dense, start at 0 and stay valid
/// for the life of the [`Deriver`] (the caches above them are emptied when
/// full, the names never are), so a counter can index a `Vec` by them
/// instead of hashing each line's value.
#[derive(Default)]
struct Names {
    ids: Map<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Names {
    /// Names whose ids are their positions in `names`.
    fn with(names: impl IntoIterator<Item = String>) -> Names {
        let mut n = Names::default();
        for name in names {
            n.id(&name);
        }
        n
    }

    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.into(), id);
        self.names.push(name.into());
        id
    }

    fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }
}

/// The classes in the order of their ids ([`DeviceClass`] as `u32`).
const CLASSES: [DeviceClass; 5] = [
    DeviceClass::Phone,
    DeviceClass::Tablet,
    DeviceClass::Desktop,
    DeviceClass::Bot,
    DeviceClass::Other,
];

/// A parsed User-Agent with its value ids: device class, OS, browser.
struct Parsed {
    agent: Box<str>,
    device: Device,
    ids: [u32; 3],
}

/// A place with its value ids: country, region, city.
struct Located {
    place: Place,
    ids: [u32; 3],
}

/// The dimensions of lines, with the caches that make them cheap.
pub struct Deriver {
    /// This `Deriver`'s own number ([`Deriver::uid`]).
    uid: u64,
    tz: Tz,
    parser: Option<device::Parser>,
    /// User-Agents parsed, and their index in `agents`.
    devices: Map<Box<str>, u32>,
    agents: Vec<Parsed>,
    /// Direct-mapped by [`agent_slot`]: an index in `agents` plus one, 0
    /// for an empty slot.
    agent_slots: Box<[u32]>,
    no_agent: Parsed,
    geo: Option<GeoDb>,
    /// Places by IPv6 address (direct-mapped: an address and its place
    /// index plus one, 0 for an empty slot), and by database record (a
    /// network's addresses share one).
    places_by_ip: Box<[(u128, u32)]>,
    places: Vec<Located>,
    place_of_record: Map<usize, usize>,
    referrers: Map<Box<str>, u32>,
    /// Each dimension's names, indexed by [`Dimension`] as it is listed in
    /// [`Dimension::ALL`].
    names: [Names; Dimension::ALL.len()],
    /// Bytes of the destinations named so far ([`destination::Bound`]).
    destination_bytes: usize,
    /// The last minute converted to local time, and its (hour, weekday):
    /// lines come nearly in time order.
    last_minute: (u64, u32, chrono::Weekday),
}

impl Deriver {
    /// `parser` is needed for the device dimensions, `geo` for the places.
    pub fn new(tz: Tz, parser: Option<device::Parser>, geo: Option<GeoDb>) -> Deriver {
        let mut names: [Names; Dimension::ALL.len()] = Default::default();
        names[Dimension::Device as usize] =
            Names::with(CLASSES.iter().map(|c| c.name().to_owned()));
        names[Dimension::Hour as usize] = Names::with(Dimension::Hour.cycle());
        names[Dimension::Weekday as usize] = Names::with(Dimension::Weekday.cycle());
        let no_agent = Device {
            class: DeviceClass::Bot,
            os_family: "Other".to_owned(),
            os_major: None,
            browser: "Other".to_owned(),
        };
        let no_agent = Parsed {
            agent: "".into(),
            ids: device_ids(&mut names, &no_agent),
            device: no_agent,
        };
        let unknown = Place {
            country: place::UNKNOWN.to_owned(),
            region: place::UNKNOWN.to_owned(),
            city: place::UNKNOWN.to_owned(),
        };
        let unknown = Located {
            ids: place_ids(&mut names, &unknown),
            place: unknown,
        };
        static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Deriver {
            uid: NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            tz,
            parser,
            devices: Map::default(),
            agents: Vec::new(),
            agent_slots: vec![0; AGENT_SLOTS].into_boxed_slice(),
            no_agent,
            geo,
            places_by_ip: vec![(0, 0); ADDRESS_SLOTS].into_boxed_slice(),
            places: vec![unknown],
            place_of_record: Map::default(),
            referrers: Map::default(),
            names,
            destination_bytes: 0,
            last_minute: (u64::MAX, 0, chrono::Weekday::Mon),
        }
    }

    /// A new `Deriver` with the same rules, database and time zone, and
    /// empty caches and names.
    pub fn renewed(&self) -> Deriver {
        Deriver::new(self.tz, self.parser.clone(), self.geo.clone())
    }

    /// A number no other `Deriver` of this process has: what a caller
    /// keying its own tables by [`Deriver::value_id`] tells derivers apart
    /// by, since ids are only stable within one.
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// How many values all dimensions have ids for: the names are kept for
    /// the `Deriver`'s life, so a long-lived caller replaces a `Deriver`
    /// whose count a hostile log has grown.
    pub fn names_len(&self) -> usize {
        self.names.iter().map(|n| n.names.len()).sum()
    }

    /// Writes `line`'s value of `dim` into `out` (emptied first); `bot` is
    /// the line's bot verdict. A device or place dimension without its
    /// parser or database writes nothing: the caller asks only for what it
    /// was given.
    pub fn value(&mut self, dim: Dimension, line: &LogLine<'_>, bot: bool, out: &mut String) {
        out.clear();
        let id = self.value_id(dim, line, bot);
        out.push_str(self.value_name(dim, id));
    }

    /// `line`'s value of `dim` as a small id, the same for the same value
    /// for the life of this `Deriver`, and dense from 0: what a counter
    /// keeps per line, with [`Deriver::value_name`] read once at the end.
    /// Hours are their number and weekdays count from Monday = 0. A device
    /// or place dimension without its parser or database has one value, the
    /// empty name.
    pub fn value_id(&mut self, dim: Dimension, line: &LogLine<'_>, bot: bool) -> u32 {
        match dim {
            Dimension::Device | Dimension::Os | Dimension::Browser => {
                let slot = match dim {
                    Dimension::Device => 0,
                    Dimension::Os => 1,
                    _ => 2,
                };
                match self.device_ids_of(line.user_agent, bot) {
                    Some(ids) => ids[slot],
                    None => self.names[dim as usize].id(""),
                }
            }
            Dimension::Country | Dimension::Region | Dimension::City => {
                let slot = match dim {
                    Dimension::Country => 0,
                    Dimension::Region => 1,
                    _ => 2,
                };
                match self.located(line.client_ip) {
                    Some(i) => self.places[i].ids[slot],
                    None => self.names[dim as usize].id(""),
                }
            }
            Dimension::Referrer => self.referrer_id(line.referer),
            Dimension::Hour => self.local_time(line.time).0,
            Dimension::Weekday => self.local_time(line.time).1.num_days_from_monday(),
            Dimension::Destination => self.destination_id(line),
        }
    }

    /// The value of `dim` that [`Deriver::value_id`] gave `id` (empty for
    /// an id it never gave).
    pub fn value_name(&self, dim: Dimension, id: u32) -> &str {
        self.names[dim as usize].name(id)
    }

    /// The device of a logged (strict-encoded) User-Agent, parsed once per
    /// distinct string.
    pub fn device(&mut self, user_agent: Option<&str>, bot: bool) -> Option<&Device> {
        self.device_ids_of(user_agent, bot)?;
        match user_agent {
            None => Some(&self.no_agent.device),
            Some(ua) => {
                let &i = self.devices.get(ua)?;
                self.agents.get(i as usize).map(|p| &p.device)
            }
        }
    }

    /// The value ids (class, OS, browser) of a User-Agent: on a hit in
    /// the slots one compare of the string; else one hash of it and one
    /// lookup in the map; a miss there parses it and interns its names.
    fn device_ids_of(&mut self, user_agent: Option<&str>, bot: bool) -> Option<[u32; 3]> {
        let parser = self.parser.as_ref()?;
        let Some(ua) = user_agent else {
            return Some(self.no_agent.ids);
        };
        let slot = agent_slot(ua.as_bytes());
        if let Some(i) = self.agent_slots[slot].checked_sub(1)
            && let Some(p) = self.agents.get(i as usize)
            && *p.agent == *ua
        {
            return Some(p.ids);
        }
        let i = match self.devices.get(ua) {
            Some(&i) => i,
            None => {
                if self.agents.len() >= MAX_CACHED {
                    self.devices.clear();
                    self.agents.clear();
                    self.agent_slots.fill(0);
                }
                let device = parser.parse(&decode_lossy(ua), bot);
                let ids = device_ids(&mut self.names, &device);
                let i = self.agents.len() as u32;
                self.agents.push(Parsed {
                    agent: ua.into(),
                    device,
                    ids,
                });
                self.devices.insert(ua.into(), i);
                i
            }
        };
        self.agent_slots[slot] = i + 1;
        self.agents.get(i as usize).map(|p| p.ids)
    }

    /// The place of `ip`, looked up once per address and decoded once per
    /// database record.
    /// A line logged without an address (`serve --client-ip none`) is in
    /// the unknown place, like an address the database lacks.
    pub fn place(&mut self, ip: Option<IpAddr>) -> Option<&Place> {
        let i = self.located(ip)?;
        self.places.get(i).map(|l| &l.place)
    }

    /// The index in `places` of `ip`'s place. An IPv4 address costs a
    /// table entry and a few steps of the tree ([`place`]'s tables hold
    /// every /16); an IPv6 one, whose networks lie deeper, is first looked
    /// for in the address cache.
    fn located(&mut self, ip: Option<IpAddr>) -> Option<usize> {
        let geo = self.geo.as_ref()?;
        let Some(ip) = ip else {
            return Some(0);
        };
        // An IPv4 client of a dual-stack socket is `::ffff:a.b.c.d`: the
        // database files it under its IPv4 address.
        let v6 = match ip {
            IpAddr::V4(v4) => return Some(self.place_of(geo.record(IpAddr::V4(v4)), ip)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => return Some(self.place_of(geo.record(IpAddr::V4(v4)), v4.into())),
                None => v6,
            },
        };
        let key = v6.to_bits();
        let slot = address_slot(key);
        let (cached, plus_one) = self.places_by_ip[slot];
        if plus_one != 0 && cached == key {
            return Some((plus_one - 1) as usize);
        }
        let i = self.place_of(geo.record(ip), ip);
        self.places_by_ip[slot] = (key, i as u32 + 1);
        Some(i)
    }

    /// The index in `places` of database record `record`, found for `ip`
    /// (decoded from it the first time the record is met); 0, the unknown
    /// place, for none.
    #[inline]
    fn place_of(&mut self, record: Option<usize>, ip: IpAddr) -> usize {
        match record {
            None => 0,
            Some(record) => match self.place_of_record.get(&record) {
                Some(&i) => i,
                None => self.decode_place(record, ip),
            },
        }
    }

    /// Decodes the place of a record met for the first time (found for
    /// `ip`), and gives it its index.
    #[cold]
    fn decode_place(&mut self, record: usize, ip: IpAddr) -> usize {
        let Some(geo) = self.geo.as_ref() else {
            return 0;
        };
        let place = geo.place(ip);
        let ids = place_ids(&mut self.names, &place);
        self.places.push(Located { place, ids });
        let i = self.places.len() - 1;
        self.place_of_record.insert(record, i);
        i
    }

    /// The referrer host of a logged `Referer` field.
    pub fn referrer(&mut self, referer: Option<&str>) -> &str {
        let id = self.referrer_id(referer);
        self.value_name(Dimension::Referrer, id)
    }

    fn referrer_id(&mut self, referer: Option<&str>) -> u32 {
        let names = &mut self.names[Dimension::Referrer as usize];
        let Some(field) = referer else {
            return names.id(referrer::NONE);
        };
        if let Some(&id) = self.referrers.get(field) {
            return id;
        }
        if self.referrers.len() >= MAX_CACHED {
            self.referrers.clear();
        }
        let id = names.id(&referrer::host(Some(field)));
        self.referrers.insert(field.into(), id);
        id
    }

    /// The id of a line's destination ([`destination::value`]); past
    /// [`destination::Bound`] a destination not named yet is
    /// [`destination::OTHER`], so a log of made-up paths under a link that
    /// appends them cannot grow the names without end.
    fn destination_id(&mut self, line: &LogLine<'_>) -> u32 {
        let value = destination::value(line);
        let names = &mut self.names[Dimension::Destination as usize];
        if let Some(&id) = names.ids.get(&*value) {
            return id;
        }
        if !destination::Bound::admits(names.names.len(), self.destination_bytes, value.len()) {
            return names.id(destination::OTHER);
        }
        self.destination_bytes += value.len();
        names.id(&value)
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

/// The slot of an address in the direct-mapped cache: the high bits of a
/// multiplicative hash of both halves.
fn address_slot(key: u128) -> usize {
    let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(32);
    (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - ADDRESS_SLOTS.trailing_zeros())) as usize
}

/// The slot of a User-Agent in the direct-mapped cache, from its length and
/// a few 8-byte words of it (the end, where versions and browsers differ,
/// and the middle), not all of it: a cheap hash is enough, since a slot's
/// string is compared in full before it is used.
fn agent_slot(ua: &[u8]) -> usize {
    let n = ua.len();
    let word = |at: usize| {
        ua.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map_or(0, u64::from_le_bytes)
    };
    let mixed = if n >= 16 {
        word(n - 8) ^ word(n - 16).rotate_left(17) ^ word(n / 2 - 4).rotate_left(41)
    } else {
        ua.iter()
            .fold(0, |h: u64, &b| h.rotate_left(8) ^ u64::from(b))
    } ^ n as u64;
    (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - AGENT_SLOTS.trailing_zeros())) as usize
}

fn device_ids(names: &mut [Names; Dimension::ALL.len()], d: &Device) -> [u32; 3] {
    [
        d.class as u32,
        names[Dimension::Os as usize].id(&d.os()),
        names[Dimension::Browser as usize].id(&d.browser),
    ]
}

fn place_ids(names: &mut [Names; Dimension::ALL.len()], p: &Place) -> [u32; 3] {
    [
        names[Dimension::Country as usize].id(&p.country),
        names[Dimension::Region as usize].id(&p.region),
        names[Dimension::City as usize].id(&p.city),
    ]
}

#[cfg(test)]
mod tests;
