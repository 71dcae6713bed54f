//! Which store holds the links, and how to reach it: the store's own options,
//! which `serve`, `import` and the other commands fill in.

use std::path::PathBuf;

use crate::values::couch::{CouchDbName, CouchUrl, Credentials};
use crate::values::secret::Secret;

/// Which store holds the links.
#[derive(Debug, Clone)]
pub enum StoreSettings {
    /// The embedded SQLite file.
    Sqlite { path: PathBuf },
    /// A CouchDB database (or another server speaking its HTTP API).
    CouchDb(CouchSettings),
}

/// Where the CouchDB store is and whom to be there. `Debug` is safe to log:
/// the password is a [`Secret`] and the URL cannot carry credentials.
#[derive(Debug, Clone)]
pub struct CouchSettings {
    pub url: CouchUrl,
    pub db: CouchDbName,
    pub credentials: Option<Credentials>,
}

impl CouchSettings {
    pub fn new(url: CouchUrl, db: CouchDbName) -> Self {
        Self {
            url,
            db,
            credentials: None,
        }
    }

    pub fn with_credentials(mut self, user: impl Into<String>, password: Option<Secret>) -> Self {
        self.credentials = Some(Credentials {
            user: user.into(),
            password,
        });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let s = CouchSettings::new(
            CouchUrl::parse("http://couch.example").expect("url"),
            CouchDbName::parse("links").expect("db"),
        )
        .with_credentials("qrtag", Some(Secret::new("hunter2")));
        let shown = format!("{:?}", StoreSettings::CouchDb(s));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("qrtag") && shown.contains("couch.example"));
    }
}
