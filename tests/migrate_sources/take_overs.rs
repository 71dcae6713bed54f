//! More than the report's first 20 problems (issue 37): 25 codes whose
//! keys would take over URLs of a stored link and 25 that hold different
//! links, through `qrtag import --from chhoto`: every one reported and
//! left as it is, the others written; `--take-over` and `--update` then
//! write them. An import never stops on how many there are.

use crate::support;
use support::output::{stderr, stdout};

const N: usize = 25;

/// A chhoto-url database of `docs/p01`..`docs/p25` (under the stored link
/// `docs`), `c01`..`c25` (stored, elsewhere) and three new codes.
fn source(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("urls.sqlite");
    let conn = rusqlite::Connection::open(&file).expect("create");
    conn.execute_batch(
        "CREATE TABLE urls (id INTEGER PRIMARY KEY, short_url TEXT NOT NULL,
         long_url TEXT NOT NULL, hits INTEGER NOT NULL, expiry_time INTEGER, notes TEXT);
         PRAGMA user_version = 4;",
    )
    .expect("table");
    let add = |code: &str, url: &str| {
        conn.execute(
            "INSERT INTO urls (short_url, long_url, hits) VALUES (?1, ?2, 1)",
            [code, url],
        )
        .expect("row");
    };
    for i in 1..=N {
        add(
            &format!("docs/p{i:02}"),
            &format!("https://new.example/p{i:02}"),
        );
        add(&format!("c{i:02}"), &format!("https://new.example/c{i:02}"));
    }
    for code in ["fresh1", "fresh2", "fresh3"] {
        add(code, &format!("https://new.example/{code}"));
    }
    file
}

#[test]
fn more_than_twenty_take_overs_and_collisions_are_all_reported_never_a_stop() {
    let (dir, db) = support::fresh_db();
    let stored = dir.path().join("stored.jsonl");
    let mut lines = String::from("{\"_id\":\"docs\",\"url\":\"https://old.example/docs\"}\n");
    for i in 1..=N {
        lines.push_str(&format!(
            "{{\"_id\":\"c{i:02}\",\"url\":\"https://old.example/c{i:02}\"}}\n"
        ));
    }
    std::fs::write(&stored, lines).expect("stored");
    let out = support::qrtag_cmd(&db, &["import", stored.to_str().expect("path")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = source(dir.path());
    let run = |more: &[&str]| {
        let mut args = vec!["import", "--from", "chhoto"];
        args.extend_from_slice(more);
        args.push(file.to_str().expect("path"));
        support::qrtag_cmd(&db, &args)
    };

    let dry = run(&["--dry-run"]);
    let real = run(&[]);
    assert_eq!(
        real.status.code(),
        Some(1),
        "{}\n{}",
        stdout(&real),
        stderr(&real)
    );
    assert_eq!(
        stderr(&real),
        format!(
            "qrtag: {} links did not come over ({} colliding, 0 refused; see the report)\n",
            2 * N,
            2 * N
        )
    );
    let report = stdout(&real);
    assert!(
        report.starts_with(&stdout(&dry).replace("dry run: nothing written\n", "")),
        "{}\n{report}",
        stdout(&dry)
    );
    assert!(
        report.contains(&format!("  colliding: {}\n", 2 * N)),
        "{report}"
    );
    assert!(report.contains("  new: 3\n"), "{report}");
    for i in 1..=N {
        assert!(
            report.contains(&format!(
                "  docs/p{i:02}: it would take over URLs of the link docs (--take-over imports it anyway)\n"
            )),
            "docs/p{i:02}: {report}"
        );
        assert!(
            report.contains(&format!(
                "  c{i:02}: the key holds a different link (--update overwrites it)\n"
            )),
            "c{i:02}: {report}"
        );
    }
    // Each as its case says: the new ones written, the others left.
    let tried = |key: &str| {
        let o = support::qrtag_cmd(&db, &["try", key]);
        stdout(&o).lines().next().unwrap_or_default().to_owned()
    };
    assert_eq!(tried("fresh2"), "https://new.example/fresh2");
    assert_eq!(tried("docs/p25"), "https://old.example/docs/p25");
    assert_eq!(tried("c25"), "https://old.example/c25");

    // --take-over and --update: every one written.
    let all = run(&["--take-over", "--update"]);
    assert!(all.status.success(), "{}\n{}", stdout(&all), stderr(&all));
    let report = stdout(&all);
    assert!(report.contains(&format!("  new: {N}\n")), "{report}");
    assert!(
        report.contains(&format!("  different, overwritten (--update): {N}\n")),
        "{report}"
    );
    for i in [1, 20, 21, N] {
        assert_eq!(
            tried(&format!("docs/p{i:02}")),
            format!("https://new.example/p{i:02}")
        );
        assert_eq!(
            tried(&format!("c{i:02}")),
            format!("https://new.example/c{i:02}")
        );
    }
}
