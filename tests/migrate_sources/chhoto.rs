//! chhoto-url: its SQLite file in the schemas of its versions.

use qrtag::migrate::chhoto::ChhotoDb;
use qrtag::migrate::source::{Source, SourceLink};
use rusqlite::Connection;

use crate::{VecSink, time};

fn database(schema: &str, rows: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("urls.sqlite");
    let conn = Connection::open(&path).expect("create");
    conn.execute_batch(schema).expect("schema");
    conn.execute_batch(rows).expect("rows");
    (dir, path)
}

/// 7.x, `user_version` 4: expiry NULL for never.
const V4: &str = "CREATE TABLE urls (id INTEGER PRIMARY KEY, short_url TEXT NOT NULL,
    long_url TEXT NOT NULL, hits INTEGER NOT NULL, expiry_time INTEGER, notes TEXT);
    PRAGMA user_version = 4;";

#[tokio::test]
async fn chhoto_reads_links_hits_expiry_and_notes() {
    let (_dir, path) = database(
        V4,
        "INSERT INTO urls (short_url, long_url, hits, expiry_time, notes) VALUES
         ('UPPER12', 'https://example.com/menü?x=1#top', 42, NULL, 'Poster, hall B'),
         ('a-b_c-d_e-f1', 'https://example.com/a', 0, 1577836800, NULL),
         ('café.v2', 'https://example.org/', 7, 32503680000, '');",
    );
    let mut sink = VecSink::default();
    ChhotoDb::new(&path).read(&mut sink).await.expect("read");
    assert_eq!(sink.codes(), ["UPPER12", "a-b_c-d_e-f1", "café.v2"]);
    assert_eq!(
        sink.links[0],
        SourceLink {
            code: "UPPER12".into(),
            url: "https://example.com/menü?x=1#top".into(),
            notes: Some("Poster, hall B".into()),
            total_clicks: Some(42),
            ..SourceLink::default()
        }
    );
    assert_eq!(sink.links[1].expires, Some(time("2020-01-01T00:00:00Z")));
    assert!(sink.links[1].inactive, "expired");
    assert_eq!(sink.links[2].expires, Some(time("3000-01-01T00:00:00Z")));
    assert!(!sink.links[2].inactive);
    assert_eq!(sink.links[2].notes, None);
}

#[tokio::test]
async fn chhoto_reads_the_schemas_of_older_releases() {
    // Before 6.0.0: no expiry_time, no notes.
    let (_dir, path) = database(
        "CREATE TABLE urls (id INTEGER PRIMARY KEY AUTOINCREMENT, long_url TEXT NOT NULL,
         short_url TEXT NOT NULL, hits INTEGER NOT NULL);",
        "INSERT INTO urls (long_url, short_url, hits) VALUES ('https://example.com/', 'old-one', 3);",
    );
    let mut sink = VecSink::default();
    ChhotoDb::new(&path).read(&mut sink).await.expect("read");
    assert_eq!(sink.codes(), ["old-one"]);
    assert_eq!(sink.links[0].total_clicks, Some(3));
    assert_eq!(sink.links[0].expires, None);

    // 6.x: expiry_time 0 for never.
    let (_dir, path) = database(
        "CREATE TABLE urls (id INTEGER PRIMARY KEY AUTOINCREMENT, long_url TEXT NOT NULL,
         short_url TEXT NOT NULL, hits INTEGER NOT NULL, expiry_time INTEGER NOT NULL DEFAULT 0);",
        "INSERT INTO urls (long_url, short_url, hits, expiry_time) VALUES ('https://example.com/', 'six', 0, 0);",
    );
    let mut sink = VecSink::default();
    ChhotoDb::new(&path).read(&mut sink).await.expect("read");
    assert_eq!(sink.links[0].expires, None);
    assert!(!sink.links[0].inactive);
}

#[tokio::test]
async fn chhoto_refuses_another_database_in_one_line() {
    let (_dir, path) = database("CREATE TABLE links (key TEXT);", "");
    let e = ChhotoDb::new(&path)
        .read(&mut VecSink::default())
        .await
        .expect_err("not chhoto")
        .to_string();
    assert!(
        e.ends_with("urls.sqlite: no urls table: not a chhoto-url database"),
        "{e}"
    );

    let missing = path.with_file_name("absent.sqlite");
    let e = ChhotoDb::new(&missing)
        .read(&mut VecSink::default())
        .await
        .expect_err("no file")
        .to_string();
    assert!(e.ends_with("absent.sqlite: no such file"), "{e}");
}
