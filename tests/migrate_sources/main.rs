//! The readers of other shorteners' exports and APIs (issue 37): file
//! sources from fixtures written from each project's export code, API
//! sources against a loopback server answering recorded pages (paging, a
//! 429 with Retry-After, a page that fails once, a refused key), each read
//! into a Vec and checked link by link and visit by visit.

mod bitly;
mod chhoto;
mod console_totals;
mod domains;
mod dub;
mod fake_api;
mod kutt;
mod shlink;
#[path = "../support/mod.rs"]
mod support;
mod take_overs;
mod through_the_cli;

use std::time::Duration;

use qrtag::migrate::api::Retries;
use qrtag::migrate::source::{Sink, SourceError, SourceLink, SourceVisit};

/// Collects what a source reads.
#[derive(Default)]
pub struct VecSink {
    pub links: Vec<SourceLink>,
    pub visits: Vec<SourceVisit>,
}

impl Sink for VecSink {
    fn link(&mut self, link: SourceLink) -> Result<(), SourceError> {
        self.links.push(link);
        Ok(())
    }

    fn visit(&mut self, visit: SourceVisit) -> Result<(), SourceError> {
        self.visits.push(visit);
        Ok(())
    }
}

impl VecSink {
    pub fn link(&self, code: &str) -> &SourceLink {
        self.links
            .iter()
            .find(|l| l.code == code)
            .unwrap_or_else(|| panic!("no link {code:?} among {:?}", self.codes()))
    }

    pub fn codes(&self) -> Vec<&str> {
        self.links.iter().map(|l| l.code.as_str()).collect()
    }
}

/// Retries quick enough for a test: the waits are what Retry-After asks.
pub fn quick() -> Retries {
    Retries {
        failures: 2,
        rate_limits: 3,
        longest_wait: Duration::from_secs(5),
        backoff: Duration::from_millis(10),
        timeout: Duration::from_secs(10),
    }
}

pub fn time(text: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text)
        .expect("test time")
        .with_timezone(&chrono::Utc)
}

/// Writes `text` to a file in a new temporary directory.
pub fn fixture(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write fixture");
    (dir, path)
}
