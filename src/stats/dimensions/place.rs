//! Country, region and city of a client address, from a MaxMind-format
//! database the user supplies (GeoLite2 Country or City, DB-IP Lite, any
//! MMDB with the GeoIP2 layout), read with the `maxminddb` crate.
//!
//! The log holds the client address qrtag resolved when it answered (behind
//! `--trusted-proxy`, the client's, not the proxy's), so the place is looked
//! up from the logged address as it is.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

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
    reader: std::sync::Arc<Reader<Vec<u8>>>,
}

impl GeoDb {
    /// Reads the whole file and checks it is an MMDB (its metadata section
    /// and search tree), so a wrong file is refused before any log is read.
    pub fn open(path: &Path) -> Result<GeoDb, GeoDbError> {
        let bytes = std::fs::read(path).map_err(|source| GeoDbError::Read {
            path: path.to_owned(),
            source,
        })?;
        let reader = Reader::from_source(bytes).map_err(|source| GeoDbError::NotMmdb {
            path: path.to_owned(),
            source,
        })?;
        Ok(GeoDb {
            reader: std::sync::Arc::new(reader),
        })
    }

    /// The place of `ip`, and the database record it came from (`None` for
    /// an address not in the database): addresses of one network share a
    /// record, so callers decode each record once.
    pub fn record(&self, ip: IpAddr) -> Option<usize> {
        let found = self.reader.lookup(ip).ok()?;
        if !found.has_data() {
            return None;
        }
        found.offset()
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
