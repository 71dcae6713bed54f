//! The one dispatch from `--from NAME` to a source's reader: each source is
//! an arm here and a module of its own, so a new one adds an arm and
//! nothing else.

use std::path::PathBuf;

use super::source::Source;
use crate::values::secret::Secret;

/// Every source `qrtag import --from` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceName {
    /// qrtag's own CSV (today's `qrtag import`).
    Csv,
    YourlsSql,
    YourlsCsv,
    YourlsApi,
    Shlink,
    ShlinkCsv,
    Kutt,
    Bitly,
    BitlyApi,
    Dub,
    Chhoto,
}

impl SourceName {
    pub const ALL: [SourceName; 11] = [
        SourceName::Csv,
        SourceName::YourlsSql,
        SourceName::YourlsCsv,
        SourceName::YourlsApi,
        SourceName::Shlink,
        SourceName::ShlinkCsv,
        SourceName::Kutt,
        SourceName::Bitly,
        SourceName::BitlyApi,
        SourceName::Dub,
        SourceName::Chhoto,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SourceName::Csv => "csv",
            SourceName::YourlsSql => "yourls-sql",
            SourceName::YourlsCsv => "yourls-csv",
            SourceName::YourlsApi => "yourls-api",
            SourceName::Shlink => "shlink",
            SourceName::ShlinkCsv => "shlink-csv",
            SourceName::Kutt => "kutt",
            SourceName::Bitly => "bitly",
            SourceName::BitlyApi => "bitly-api",
            SourceName::Dub => "dub",
            SourceName::Chhoto => "chhoto",
        }
    }

    /// The project a source reads: its visits' IDs are one namespace
    /// whichever way they are read, and its log files are named by it.
    pub fn family(self) -> &'static str {
        match self {
            SourceName::Csv => "csv",
            SourceName::YourlsSql | SourceName::YourlsCsv | SourceName::YourlsApi => "yourls",
            SourceName::Shlink | SourceName::ShlinkCsv => "shlink",
            SourceName::Kutt => "kutt",
            SourceName::Bitly | SourceName::BitlyApi => "bitly",
            SourceName::Dub => "dub",
            SourceName::Chhoto => "chhoto",
        }
    }

    /// Whether the source is read from a running service's API (and so
    /// takes `--source-url`) rather than from a file.
    pub fn is_api(self) -> bool {
        matches!(
            self,
            SourceName::YourlsApi | SourceName::Shlink | SourceName::Kutt | SourceName::BitlyApi
        )
    }
}

impl std::fmt::Display for SourceName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no source {0:?}; --from takes {list}", list = names())]
pub struct UnknownSource(pub String);

fn names() -> String {
    SourceName::ALL
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl std::str::FromStr for SourceName {
    type Err = UnknownSource;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SourceName::ALL
            .into_iter()
            .find(|n| n.as_str() == s)
            .ok_or_else(|| UnknownSource(s.to_owned()))
    }
}

/// What a source is read from, as the command line gives it.
#[derive(Debug, Clone, Default)]
pub struct SourceArgs {
    /// The export file (a dump, a CSV, a SQLite file).
    pub file: Option<PathBuf>,
    /// A second file where the source exports visits apart (YOURLS's
    /// `yourls_log` as CSV).
    pub visits_file: Option<PathBuf>,
    /// A running source's base URL, for API sources.
    pub url: Option<String>,
    /// Its API key or signature token.
    pub key: Option<Secret>,
    /// YOURLS: the tables' prefix (`yourls_`).
    pub table_prefix: String,
}

/// Why a source could not be opened: a usage mistake (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// `csv` is qrtag's own import, which is not read through a source.
    #[error("--from {0}: not built yet")]
    NotBuilt(SourceName),
    /// The source's reader refused what it was given (a base URL that is
    /// not one).
    #[error("--from {name}: {problem}")]
    Refused { name: SourceName, problem: String },
    #[error("--from {name} reads {what}")]
    Needs {
        name: SourceName,
        what: &'static str,
    },
}

/// An API source's base URL and key, both needed.
fn api(name: SourceName, args: &SourceArgs) -> Result<(&str, &str), OpenError> {
    let url = args.url.as_deref().ok_or(OpenError::Needs {
        name,
        what: match name {
            SourceName::BitlyApi => "Bitly's API: give --source-url https://api-ssl.bitly.com/v4",
            _ => "a running service's API: give --source-url",
        },
    })?;
    let key = args.key.as_ref().ok_or(OpenError::Needs {
        name,
        what: "an API key or token: give --source-key (or QRTAG_SOURCE_KEY)",
    })?;
    Ok((url, key.expose()))
}

/// The reader of `name` over `args`. `csv` is qrtag's own import and is not
/// read through here.
pub fn open(name: SourceName, args: &SourceArgs) -> Result<Box<dyn Source>, OpenError> {
    let file = || {
        args.file.clone().ok_or(OpenError::Needs {
            name,
            what: "a FILE",
        })
    };
    let refused = |e: super::source::SourceError| OpenError::Refused {
        name,
        problem: e.to_string(),
    };
    match name {
        SourceName::YourlsSql => Ok(Box::new(super::yourls::SqlDump::new(
            file()?,
            &args.table_prefix,
        ))),
        SourceName::YourlsCsv => Ok(Box::new(super::yourls::CsvExport::new(
            file()?,
            args.visits_file.clone(),
        ))),
        SourceName::YourlsApi => {
            let url = args.url.as_deref().ok_or(OpenError::Needs {
                name,
                what: "a running YOURLS's API: give --source-url",
            })?;
            Ok(Box::new(super::yourls_api::Api::new(
                url,
                args.key.as_ref(),
            )))
        }
        SourceName::Shlink => {
            let (url, key) = api(name, args)?;
            Ok(Box::new(
                super::shlink::ShlinkApi::new(url, key).map_err(refused)?,
            ))
        }
        SourceName::Kutt => {
            let (url, key) = api(name, args)?;
            Ok(Box::new(
                super::kutt::KuttApi::new(url, key).map_err(refused)?,
            ))
        }
        SourceName::BitlyApi => {
            let (url, key) = api(name, args)?;
            Ok(Box::new(
                super::bitly::BitlyApi::with_base(url, key, None, super::api::Retries::default())
                    .map_err(refused)?,
            ))
        }
        SourceName::ShlinkCsv => Ok(Box::new(super::shlink_csv::source(file()?))),
        SourceName::Bitly => Ok(Box::new(super::bitly_csv::source(file()?))),
        SourceName::Dub => Ok(Box::new(super::dub::source(file()?))),
        SourceName::Chhoto => Ok(Box::new(super::chhoto::ChhotoDb::new(file()?))),
        SourceName::Csv => Err(OpenError::NotBuilt(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back() {
        for n in SourceName::ALL {
            assert_eq!(n.as_str().parse::<SourceName>(), Ok(n));
        }
        let e = "nope".parse::<SourceName>().expect_err("unknown");
        assert!(e.to_string().contains("yourls-sql"), "{e}");
    }

    #[test]
    fn an_api_source_without_its_url_or_key_says_which_in_one_line() {
        let e = open(SourceName::Kutt, &SourceArgs::default())
            .err()
            .expect("no url");
        assert_eq!(
            e.to_string(),
            "--from kutt reads a running service's API: give --source-url"
        );
        let args = SourceArgs {
            url: Some("http://127.0.0.1:1".into()),
            ..SourceArgs::default()
        };
        let e = open(SourceName::Shlink, &args).err().expect("no key");
        assert!(e.to_string().contains("--source-key"), "{e}");
    }
}
