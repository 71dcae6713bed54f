//! `qrtag setup-clickhouse`'s work: the schema of [`super::schema`] made
//! on a server, checked against what is there, and its version recorded.
//! Nothing is created until every table that exists has been checked, so
//! a table made by hand is reported, never altered or half joined.

use super::client::{ClickHouseError, Client};
use super::rollup;
use super::schema::{self, Layout, TABLES, VERSION};

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    ClickHouse(#[from] ClickHouseError),
    #[error("ClickHouse {found} is older than {}.{}, the oldest release qrtag's schema is written for", .oldest.0, .oldest.1)]
    TooOld { found: String, oldest: (u32, u32) },
    #[error(
        "database {db} holds qrtag's schema version {found}, newer than this qrtag's {VERSION}: upgrade qrtag"
    )]
    Newer { db: String, found: u32 },
    #[error(
        "database {db}: {what}: not a table qrtag made; drop or rename it, or name another database"
    )]
    Foreign { db: String, what: String },
    #[error(
        "database {db} holds qrtag's schema for {found}, not for {asked}: name another database"
    )]
    OtherLayout {
        db: String,
        found: String,
        asked: String,
    },
    #[error(
        "database {db} holds schema version {found}, whose rows name no domain: give the default domain's host (--domain HOST, or --public-url) to upgrade it to {VERSION}"
    )]
    NoDomain { db: String, found: u32 },
    #[error("ClickHouse answered {0:?} where a number or a column list was asked for")]
    Unexpected(String),
    #[error("database {db} has no qrtag schema (version {want}): run qrtag setup-clickhouse first")]
    NoSchema { db: String, want: u32 },
    #[error(
        "database {db} holds schema version {found}; this qrtag writes {want}: run this qrtag's setup-clickhouse"
    )]
    OtherVersion { db: String, found: u32, want: u32 },
}

impl SetupError {
    /// The operator's input is at fault (credentials, a table made by
    /// hand, a server or schema of another release), not the moment.
    pub fn is_usage(&self) -> bool {
        match self {
            SetupError::ClickHouse(e) => e.is_refusal(),
            SetupError::Unexpected(_) => false,
            _ => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupReport {
    pub release: String,
    /// The schema version found before, `None` for none.
    pub before: Option<u32>,
    pub after: u32,
    /// Retention was asked for on a server without table TTL.
    pub retention_unsupported: bool,
    /// Days rolled up before an upgrade to version 6 whose busy links'
    /// counts the upgrade kept (`rollup::keep_busy_of_rolled`).
    pub busy_days: usize,
}

/// Creates or upgrades the schema in the URL's database, on the server
/// the URL names or, `ON CLUSTER`, on every node of `layout`'s cluster.
/// `domain`: the host the rows of an older version (which had no domain)
/// are counted under, the default domain's.
pub async fn setup(
    client: &Client,
    retention_days: Option<u32>,
    layout: &Layout,
    domain: &str,
) -> Result<SetupReport, SetupError> {
    let release_text = client
        .query_server("SELECT version()")
        .await?
        .trim()
        .to_owned();
    let release = schema::parse_release(&release_text)
        .ok_or_else(|| SetupError::Unexpected(release_text.clone()))?;
    if release < schema::OLDEST_RELEASE {
        return Err(SetupError::TooOld {
            found: release_text,
            oldest: schema::OLDEST_RELEASE,
        });
    }
    let db = client.url().database.clone();
    let columns = check_existing_any(client, &db).await?;
    check_layout(client, &db, layout).await?;
    let before = read_version(client, &db).await?;
    if let Some(found) = before.filter(|v| *v > VERSION) {
        return Err(SetupError::Newer { db, found });
    }
    let upgrading = before.is_some_and(|v| v < VERSION);
    // Versions before 3 kept no domain: their rows become `domain`'s.
    let domainless = before.filter(|v| *v < 3);
    if let Some(found) = domainless.filter(|_| domain.is_empty()) {
        return Err(SetupError::NoDomain { db, found });
    }
    if domainless.is_some() {
        let found = schema::Found {
            scans_has_domain: scans_has_domain(&columns, layout),
        };
        for statement in schema::upgrade_to_3(&db, layout, found, domain) {
            client.query_server(&statement).await?;
        }
    }
    for statement in schema::create_statements(&db, retention_days, release, layout) {
        client.query_server(&statement).await?;
    }
    if let Some(before) = before.filter(|v| upgrading && schema::refills_after(*v)) {
        // After the views are made again, so a row sent in between is in
        // the refill, and one sent after is in the views (counted once).
        let months = client
            .query_server(&format!(
                "SELECT DISTINCT toYYYYMM(day) FROM {db}.scans ORDER BY 1 FORMAT TSV"
            ))
            .await?;
        for month in months.lines() {
            let month: u32 = month
                .trim()
                .parse()
                .map_err(|_| SetupError::Unexpected(month.to_owned()))?;
            for statement in schema::refill_month(&db, layout, month, before) {
                client.query_server(&statement).await?;
            }
        }
    }
    // Days rolled before version 6 kept no busy links' counts.
    let busy_days = match before {
        Some(v) if upgrading && v < 6 => rollup::keep_busy_of_rolled(client).await?,
        _ => 0,
    };
    check_existing(client, &db).await?;
    if before != Some(VERSION) {
        client
            .query_server(&format!(
                "INSERT INTO {db}.schema_version (version, applied) VALUES ({VERSION}, now())"
            ))
            .await?;
    }
    Ok(SetupReport {
        release: release_text,
        before,
        after: VERSION,
        retention_unsupported: retention_days.is_some() && release < schema::TTL_RELEASE,
        busy_days,
    })
}

/// The URL's database holds this qrtag's schema, and its tables are
/// qrtag's: what a writer of rows (a load, the sink) asks before sending.
pub async fn check_schema(client: &Client) -> Result<(), SetupError> {
    let db = client.url().database.clone();
    match read_version(client, &db).await? {
        None => return Err(SetupError::NoSchema { db, want: VERSION }),
        Some(found) if found != VERSION => {
            return Err(SetupError::OtherVersion {
                db,
                found,
                want: VERSION,
            });
        }
        Some(_) => {}
    }
    check_existing(client, &db).await
}

/// The schema version recorded in `db`, `None` where there is none yet.
pub async fn read_version(client: &Client, db: &str) -> Result<Option<u32>, SetupError> {
    let exists = client
        .query_server(&format!("EXISTS TABLE {db}.schema_version"))
        .await;
    match exists {
        Ok(t) if t.trim() == "1" => {}
        Ok(_) => return Ok(None),
        // `EXISTS` of a table in a database that does not exist is an error in 18.16.
        Err(ClickHouseError::Refused { said, .. }) if said.starts_with("Code: 81,") => {
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    }
    let text = client
        .query_server(&format!("SELECT max(version) FROM {db}.schema_version"))
        .await?;
    let v: u32 = text
        .trim()
        .parse()
        .map_err(|_| SetupError::Unexpected(text.clone()))?;
    Ok(Some(v).filter(|v| *v > 0))
}

/// A `scans` that exists was made for `layout`: a single server's table
/// is never joined to a cluster's (its rows would stay on the one node),
/// nor a cluster's `Distributed` one treated as a server's.
pub async fn check_layout(client: &Client, db: &str, layout: &Layout) -> Result<(), SetupError> {
    let engine = client
        .query_server(&format!(
            "SELECT engine FROM system.tables WHERE database = '{db}' AND name = 'scans' FORMAT TSV"
        ))
        .await?;
    let engine = engine.trim();
    if engine.is_empty() || engine == layout.scans_engine() {
        return Ok(());
    }
    let found = if engine == "Distributed" {
        "a cluster".to_owned()
    } else {
        "one server".to_owned()
    };
    Err(SetupError::OtherLayout {
        db: db.to_owned(),
        found,
        asked: layout.describe(),
    })
}

/// Every table of qrtag's that exists in `db` has exactly qrtag's columns.
pub async fn check_existing(client: &Client, db: &str) -> Result<(), SetupError> {
    check_tables(client, db, false).await.map(drop)
}

/// The same, where `scans` and `link_days` may also have an older
/// version's columns: what setup checks before it upgrades. The columns read, for the upgrade.
async fn check_existing_any(client: &Client, db: &str) -> Result<String, SetupError> {
    check_tables(client, db, true).await
}

async fn columns_of(client: &Client, db: &str) -> Result<String, SetupError> {
    Ok(client
        .query_server(&format!(
            "SELECT table, name, type FROM system.columns WHERE database = '{db}' FORMAT TSV"
        ))
        .await?)
}

fn found_in(text: &str, table: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (t, n, ty) = (f.next()?, f.next()?, f.next()?);
            (t == table).then(|| (n.to_owned(), ty.to_owned()))
        })
        .collect()
}

async fn check_tables(client: &Client, db: &str, older_too: bool) -> Result<String, SetupError> {
    let text = columns_of(client, db).await?;
    for (table, want) in TABLES {
        let found = found_in(&text, table);
        if found.is_empty() {
            continue;
        }
        let checked = schema::check_columns(table, &found, want);
        let older = older_too && schema::older_columns(table, &found);
        if !older {
            checked.map_err(|what| SetupError::Foreign {
                db: db.to_owned(),
                what,
            })?;
        }
    }
    Ok(text)
}

/// Whether the layout's `scans` has the `domain` column version 3 added
/// (an upgrade cut short and run again), from the `system.columns` answer
/// setup checked the tables with.
fn scans_has_domain(columns: &str, layout: &Layout) -> bool {
    let table = match layout {
        Layout::Single => "scans",
        Layout::Cluster(_) => "scans_local",
    };
    found_in(columns, table).iter().any(|(n, _)| n == "domain")
}
