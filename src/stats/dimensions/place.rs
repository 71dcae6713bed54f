//! Country, region and city of a client address, from a MaxMind-format
//! database the user supplies (GeoLite2 Country or City, DB-IP Lite, any
//! MMDB with the GeoIP2 layout), read with the `maxminddb` crate.
//!
//! The log holds the client address qrtag resolved when it answered (behind
//! `--trusted-proxy`, the client's, not the proxy's), so the place is looked
//! up from the logged address as it is.

mod tree;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use maxminddb::{MaxMindDbError, Reader, geoip2};

/// What a breakdown shows for an address the database does not know (a
/// private address, a new block, a database without cities).
pub const UNKNOWN: &str = "unknown";

/// One address's place, each part [`UNKNOWN`] when the database lacks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// ISO 3166-1 alpha-2 code, `IE`.
    pub country: String,
    /// The first subdivision's English name with its country, `Leinster, IE`.
    pub region: String,
    /// The city's English name with its country, `Dublin, IE`.
    pub city: String,
}

impl Place {
    fn unknown() -> Place {
        Place {
            country: UNKNOWN.to_owned(),
            region: UNKNOWN.to_owned(),
            city: UNKNOWN.to_owned(),
        }
    }
}

/// Why `--geoip-db` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GeoDbError {
    #[error("cannot read --geoip-db {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--geoip-db {path} is not a MaxMind DB (MMDB) file: {source}")]
    NotMmdb {
        path: PathBuf,
        source: MaxMindDbError,
    },
}

/// An opened database, shared by the breakdowns and the export.
#[derive(Clone)]
pub struct GeoDb {
    reader: Arc<Reader<Arc<[u8]>>>,
    /// The same bytes' search tree, walked here ([`tree`]).
    tree: Arc<tree::Tree>,
}

impl GeoDb {
    /// Reads the whole file and checks it is an MMDB (its metadata section
    /// and search tree), so a wrong file is refused before any log is read.
    pub fn open(path: &Path) -> Result<GeoDb, GeoDbError> {
        let bytes: Arc<[u8]> = std::fs::read(path)
            .map_err(|source| GeoDbError::Read {
                path: path.to_owned(),
                source,
            })?
            .into();
        GeoDb::from_bytes(bytes).map_err(|source| GeoDbError::NotMmdb {
            path: path.to_owned(),
            source,
        })
    }

    fn from_bytes(bytes: Arc<[u8]>) -> Result<GeoDb, MaxMindDbError> {
        let reader = Reader::from_source(bytes.clone())?;
        let meta = reader.metadata();
        let tree = tree::Tree::new(bytes, meta.node_count, meta.record_size, meta.ip_version);
        Ok(GeoDb {
            reader: Arc::new(reader),
            tree: Arc::new(tree),
        })
    }

    /// The database record of `ip` (its data offset, as the crate's
    /// `LookupResult::offset` gives it; `None` for an address not in the
    /// database): addresses of one network share a record, so callers
    /// decode each record once, with [`GeoDb::place`].
    #[inline]
    pub fn record(&self, ip: IpAddr) -> Option<usize> {
        match ip {
            IpAddr::V4(v4) => self.tree.v4(v4),
            IpAddr::V6(v6) => self.tree.v6(v6),
        }
    }

    /// The place of `ip`; a record the database cannot decode reads as
    /// unknown, as an address it lacks does.
    pub fn place(&self, ip: IpAddr) -> Place {
        let Ok(found) = self.reader.lookup(ip) else {
            return Place::unknown();
        };
        let Ok(Some(city)) = found.decode::<geoip2::City>() else {
            return Place::unknown();
        };
        let country = city.country.iso_code.unwrap_or(UNKNOWN);
        let with_country = |name: Option<&str>| {
            name.map_or_else(|| UNKNOWN.to_owned(), |n| format!("{n}, {country}"))
        };
        let region = city
            .subdivisions
            .first()
            .and_then(|s| s.names.english.or(s.iso_code));
        Place {
            country: country.to_owned(),
            region: with_country(region),
            city: with_country(city.city.names.english),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use rand::{Rng, SeedableRng};

    use super::*;

    fn test_db() -> GeoDb {
        GeoDb::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb"))
            .unwrap()
    }

    /// The crate's answer, which [`GeoDb::record`] must give.
    fn crate_record(db: &GeoDb, ip: IpAddr) -> Option<usize> {
        db.reader.lookup(ip).ok().and_then(|found| found.offset())
    }

    /// The test database (24-bit records) with its tree written again in
    /// records of `bits` (28 or 32) and its metadata saying so: the same
    /// networks and data, since data pointers do not depend on the record
    /// size.
    fn with_record_size(db: &GeoDb, bits: u16) -> GeoDb {
        let meta = db.reader.metadata();
        assert_eq!(meta.record_size, 24);
        let bytes = &*db.tree.bytes();
        let nodes = meta.node_count as usize;
        let record = |node: usize, i: usize| {
            let at = node * 6 + i * 3;
            u32::from_be_bytes([0, bytes[at], bytes[at + 1], bytes[at + 2]])
        };
        let mut out = Vec::new();
        for n in 0..nodes {
            let (l, r) = (record(n, 0), record(n, 1));
            if bits == 32 {
                out.extend(l.to_be_bytes());
                out.extend(r.to_be_bytes());
            } else {
                out.extend(&l.to_be_bytes()[1..]);
                out.push(((l >> 24) as u8) << 4 | (r >> 24) as u8);
                out.extend(&r.to_be_bytes()[1..]);
            }
        }
        let mut rest = bytes[nodes * 6..].to_vec();
        // The metadata's `record_size`: its key, then a 1-byte uint16.
        let key = b"record_size";
        let at = rest
            .windows(key.len())
            .rposition(|w| w == key)
            .expect("record_size in the metadata")
            + key.len();
        assert_eq!(rest[at..at + 2], [0xa1, 24]);
        rest[at + 1] = bits as u8;
        out.extend(rest);
        let db = GeoDb::from_bytes(out.into()).unwrap();
        assert_eq!(db.reader.metadata().record_size, bits);
        db
    }

    /// Addresses anywhere, and many inside and beside the database's
    /// networks (whose walks pass the tables' 16 bits), IPv4, IPv6 and
    /// IPv4-mapped: the tree walked here finds the crate's record for each,
    /// whatever the size of the tree's records.
    #[test]
    fn the_walk_finds_the_crates_record() {
        let db = test_db();
        for bits in [28, 32] {
            agrees_with_the_crate(&with_record_size(&db, bits));
        }
        agrees_with_the_crate(&db);
    }

    fn agrees_with_the_crate(db: &GeoDb) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        let mut found = 0;
        for _ in 0..20_000 {
            let near = [[203, 0, 113], [198, 51, 100], [192, 0, 2], [203, 0, 112]];
            let net = near[rng.random_range(0..near.len())];
            let v4s = [
                Ipv4Addr::from_bits(rng.random()),
                Ipv4Addr::new(net[0], net[1], net[2], rng.random()),
                Ipv4Addr::new(net[0], net[1], rng.random(), rng.random()),
            ];
            let block = [1u16, 2, 3, 0xffff][rng.random_range(0..4)];
            let v6s = [
                Ipv6Addr::from_bits(rng.random()),
                Ipv6Addr::new(0x2001, 0xdb8, block, 0, 0, 0, rng.random(), rng.random()),
                Ipv6Addr::new(0x2001, 0xdb8, rng.random(), 0, 0, 0, 0, 1),
                Ipv6Addr::from_bits(u128::from(rng.random::<u32>())),
            ];
            let ips = v4s
                .iter()
                .flat_map(|v4| [IpAddr::V4(*v4), IpAddr::V6(v4.to_ipv6_mapped())])
                .chain(v6s.map(IpAddr::V6));
            for ip in ips {
                let want = crate_record(db, ip);
                assert_eq!(db.record(ip), want, "{ip}");
                found += usize::from(want.is_some());
            }
        }
        assert!(found > 20_000, "the addresses reach records: {found}");
    }
}
