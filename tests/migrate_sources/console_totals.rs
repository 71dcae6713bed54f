//! The old shortener's click total on the console's link page (issue 37),
//! through a real `qrtag serve --console`: said apart from qrtag's scans
//! for a link that came over with one, absent for a link without.

use crate::support;
use support::console::{get_page, logged_in, set_password};
use support::output::stderr;
use support::process::ServerProcess;

const PASSWORD: &str = "poster-printing-42";

#[tokio::test]
async fn the_link_page_says_the_imported_total_apart_and_only_where_there_is_one() {
    let (dir, db) = support::fresh_db();
    let file = dir.path().join("urls.sqlite");
    let conn = rusqlite::Connection::open(&file).expect("create");
    conn.execute_batch(
        "CREATE TABLE urls (id INTEGER PRIMARY KEY, short_url TEXT NOT NULL,
         long_url TEXT NOT NULL, hits INTEGER NOT NULL, expiry_time INTEGER, notes TEXT);
         PRAGMA user_version = 4;
         INSERT INTO urls (short_url, long_url, hits) VALUES
         ('Moved42', 'https://example.com/moved', 4242);",
    )
    .expect("rows");
    drop(conn);
    let out = support::qrtag_cmd(
        &db,
        &["import", "--from", "chhoto", file.to_str().expect("path")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = support::qrtag_cmd(
        &db,
        &["new", "https://example.com/here", "--key", "born-here"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    set_password(&db, PASSWORD);
    let srv = ServerProcess::spawn(&db, &["--console"], &[], false).await;
    let console = srv.admin_url("/console");
    let http = logged_in(&console, PASSWORD).await;

    let page = get_page(&http, &format!("{console}/link?key=Moved42")).await;
    assert!(
        page.contains(r#"<p id="imported-clicks" data-imported="4242">Before the move: 4242 clicks counted by the old shortener (not in the scans above).</p>"#),
        "{page}"
    );
    let page = get_page(&http, &format!("{console}/link?key=born-here")).await;
    assert!(
        page.contains("https://example.com/here"),
        "the link's page: {page}"
    );
    assert!(!page.contains("imported-clicks"), "{page}");
    assert!(!page.contains("Before the move"), "{page}");
    srv.stop().await;
}
