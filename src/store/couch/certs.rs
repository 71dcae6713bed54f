//! Issue 36: `LINKS-certs` beside the links database, where the ACME
//! certificates, the account and the renewal lease of every node are kept
//! (`acme::store::couch` reads and writes it). Its `_security` admits server
//! admins only: the documents hold private keys, which no member of the
//! links database (the service's reader, the console's editors) may read.

use super::CouchHttp;
use crate::store::StoreError;
use crate::store::options::CouchSettings;
use crate::values::couch::CouchDbName;

/// What the certificates database's name adds to the links database's.
pub const SUFFIX: &str = "-certs";

/// The certificates database beside `links`.
pub fn database_name(links: &CouchDbName) -> Result<CouchDbName, StoreError> {
    CouchDbName::parse(&format!("{links}{SUFFIX}")).map_err(|_| {
        StoreError::Other(format!(
            "the database name {links} leaves no room for its certificates database \
             ({links}{SUFFIX} is over CouchDB's 238 characters); choose a shorter --couchdb-db"
        ))
    })
}

/// A client for the certificates database beside `settings.db`, with the
/// account `settings` names (a server admin's).
pub(crate) fn client(settings: &CouchSettings) -> Result<CouchHttp, StoreError> {
    let http = CouchHttp::new(settings)?;
    let db = database_name(http.db())?;
    Ok(http.for_db(db))
}
