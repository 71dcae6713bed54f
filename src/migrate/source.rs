//! What every source is read into, so the planner, the report, the visit
//! log and `--verify` are written once for all of them.
//!
//! Nothing here is checked yet: a source's short code is kept as the source
//! has it, since a code qrtag cannot serve is reported with its reason and a
//! suggested key, never changed in passing.

use std::net::IpAddr;

use chrono::{DateTime, Utc};

/// One short link as the source keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceLink {
    /// The short code (keyword, back-half, slug), exactly as the source has it.
    pub code: String,
    /// The source's domain of the code, for sources with several (Shlink,
    /// Bitly, Dub); `None` for its default one.
    pub domain: Option<String>,
    /// The destination as the source has it (checked by the planner).
    pub url: String,
    pub title: Option<String>,
    /// The source's description or notes.
    pub notes: Option<String>,
    pub tags: Vec<String>,
    pub created: Option<DateTime<Utc>>,
    pub expires: Option<DateTime<Utc>>,
    /// Disabled, archived or past its validity in the source.
    pub inactive: bool,
    /// Clicks the source kept only as a total (Bitly, Dub, Kutt); `None`
    /// for sources whose visits come one by one.
    pub total_clicks: Option<u64>,
    /// What the source has for this link that qrtag does not carry over
    /// (a password, a visit limit...), for the report.
    pub left_out: Vec<LeftOut>,
}

/// A property of a source's link that does not come over, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The source's name of it (`password`, `maxVisits`).
    pub what: String,
    pub why: String,
}

/// One visit the source recorded on its own (Shlink, YOURLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceVisit {
    /// The visited link's code, as in [`SourceLink::code`].
    pub code: String,
    pub domain: Option<String>,
    pub time: DateTime<Utc>,
    pub referrer: Option<String>,
    pub user_agent: Option<String>,
    pub address: Option<IpAddr>,
    /// ISO 3166-1 alpha-2, when the source located the visit.
    pub country: Option<String>,
    /// What identifies the visit in the source (a row id, or the row's
    /// fields when it has none), so a second run adds no visit twice.
    pub source_id: String,
}

/// What a source hands its links and visits to, one at a time, so a dump of
/// millions of visits is read in bounded memory.
pub trait Sink: Send {
    fn link(&mut self, link: SourceLink) -> Result<(), SourceError>;
    fn visit(&mut self, visit: SourceVisit) -> Result<(), SourceError>;
}

/// Why a source could not be read: one line for the user, naming the place.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file is not what the source writes (a truncated dump, a CSV with
    /// no destination column): where, and what was expected.
    #[error("{place}: {problem}")]
    Format { place: String, problem: String },
    /// The source's API refused or failed (a refused key, a page that kept
    /// failing): what was asked and what it answered.
    #[error("{0}")]
    Api(String),
    #[error("{path}: {error}")]
    Io {
        path: String,
        #[source]
        error: std::io::Error,
    },
    /// The sink gave up (e.g. the visit log could not be written).
    #[error("{0}")]
    Sink(String),
}

/// A source's file opened for reading, buffered, or the one line that says
/// which file could not be opened and why.
pub fn open_file(path: &std::path::Path) -> Result<std::io::BufReader<std::fs::File>, SourceError> {
    std::fs::File::open(path)
        .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
        .map_err(|error| SourceError::Io {
            path: path.display().to_string(),
            error,
        })
}

/// A pure reader of one export format's links.
pub type ReadLinks = fn(
    std::io::BufReader<std::fs::File>,
    &str,
    &mut dyn FnMut(SourceLink) -> Result<(), SourceError>,
) -> Result<(), SourceError>;

/// A source that is one file of links, read by its format's pure reader
/// (the CSV exports of Shlink, Bitly and Dub differ in nothing else).
pub struct LinksFile {
    name: &'static str,
    path: std::path::PathBuf,
    read_links: ReadLinks,
}

impl LinksFile {
    pub fn new(
        name: &'static str,
        path: impl Into<std::path::PathBuf>,
        read_links: ReadLinks,
    ) -> Self {
        Self {
            name,
            path: path.into(),
            read_links,
        }
    }
}

#[async_trait::async_trait]
impl Source for LinksFile {
    fn name(&self) -> &'static str {
        self.name
    }

    async fn read(&mut self, sink: &mut dyn Sink) -> Result<(), SourceError> {
        let place = self.path.display().to_string();
        let file = open_file(&self.path)?;
        (self.read_links)(file, &place, &mut |link| sink.link(link))
    }
}

/// A source: a file or an API read once, in order, into a [`Sink`].
#[async_trait::async_trait]
pub trait Source: Send {
    /// The name `--from` takes and the report shows (`yourls-sql`).
    fn name(&self) -> &'static str;
    /// Reads everything, links before the visits that name them where the
    /// source allows it.
    async fn read(&mut self, sink: &mut dyn Sink) -> Result<(), SourceError>;
}
