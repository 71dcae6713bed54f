//! Log lines made into `scans` rows with what qrtag derives from them,
//! one maker shared by `stats --load-into` and `serve --scans-to`, so the
//! sink and a back-fill of the same line write the same row.

use super::row::{self, Derived, Origin};
use crate::access_log::format::parse_line_bytes;
use crate::stats::aggregate::{BotFilter, classify};
use crate::stats::attribute::link_key;
use crate::stats::dimensions::place::GeoDb;
use crate::stats::dimensions::{Deriver, Dimension, device};

/// Whether a key is a link's: the store's keys for a load, the served
/// snapshot for the sink.
pub type IsLink = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// One domain's log: its host, written in each row, and its links, the
/// keys a line counts under (each domain has its own).
pub struct LogSource {
    pub domain: String,
    pub is_link: IsLink,
}

/// What turns a line into a row, with the caches that make it cheap
/// (the deriver's names and the bot verdicts).
pub struct RowMaker {
    deriver: Deriver,
    bots: BotFilter,
    node: String,
    has_geo: bool,
    values: [String; 7],
}

impl RowMaker {
    /// Compiles the User-Agent rules (a second or so): an error is their text.
    pub fn new(node: String, geo: Option<GeoDb>) -> Result<Self, String> {
        let parser = device::Parser::new().map_err(|e| e.to_string())?;
        Ok(RowMaker {
            has_geo: geo.is_some(),
            deriver: Deriver::new(chrono_tz::UTC, Some(parser), geo),
            bots: BotFilter::new(),
            node,
            values: Default::default(),
        })
    }

    /// Appends `line`'s row, a line of `source`'s log: the line's UTC day,
    /// `None` for a line that is not an access-log line.
    pub fn write(
        &mut self,
        out: &mut Vec<u8>,
        source: &LogSource,
        log_id: u64,
        line_offset: u64,
        line: &[u8],
    ) -> Option<chrono::NaiveDate> {
        let Ok(line) = parse_line_bytes(line) else {
            return None;
        };
        let counted = classify(&line, &mut self.bots);
        let dims = [
            Dimension::Device,
            Dimension::Os,
            Dimension::Browser,
            Dimension::Referrer,
            Dimension::Country,
            Dimension::Region,
            Dimension::City,
        ];
        for (dim, value) in dims.iter().zip(self.values.iter_mut()) {
            if dim.is_place() && !self.has_geo {
                value.clear();
                continue;
            }
            self.deriver.value(*dim, &line, counted.bot, value);
        }
        let link = link_key(line.key(), &source.is_link);
        let [device, os, browser, referrer_host, country, region, city] = &self.values;
        let derived = Derived {
            link,
            scan: counted.scan,
            fallback_scan: counted.fallback,
            bot: counted.bot,
            device,
            os,
            browser,
            country,
            region,
            city,
            referrer_host,
        };
        let origin = Origin {
            domain: &source.domain,
            node: &self.node,
            log_id,
            line_offset,
        };
        row::write_row(out, origin, &line, &derived);
        Some(line.time.date())
    }
}
