//! `--scan-log` globs that reach too far (issue 30): a pattern that would
//! search the whole file system is refused before anything starts, a walk
//! over a huge tree stops at its bound and says so on `/readyz` and
//! `/metrics`, and SIGTERM stops the server while the index walks.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::process::ServerProcess;
use support::{init_db, poll, qrtag_bin};

const WITHIN: Duration = Duration::from_secs(20);

/// The pattern, and others that walk from `/`, are refused with
/// one line naming the pattern: as an option, a variable and in the file.
#[test]
fn a_pattern_that_walks_from_the_root_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    init_db(&db);
    let config = dir.path().join("qrtag.toml");
    std::fs::write(&config, "scan_logs = [\"/**/**/**/**/**/*\"]\n").expect("config");
    // A pattern that is not refused starts a server: given up on, and
    // killed, after a bound.
    let serve = |pattern: Option<&str>, env: &[(&str, &str)]| {
        let mut cmd = qrtag_bin();
        cmd.arg("--db")
            .arg(&db)
            .args(["serve", "--listen", "127.0.0.1:0"]);
        cmd.args(["--admin-listen", "127.0.0.1:0"]);
        if let Some(p) = pattern {
            cmd.args(["--scan-log", p]);
        }
        let mut child = cmd
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run qrtag");
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{pattern:?} {env:?}: still serving after 10 s, not refused");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
            .expect("stderr");
        (status, stderr)
    };
    let config_env = [("QRTAG_CONFIG", config.to_str().expect("UTF-8"))];
    for (pattern, (status, stderr)) in [
        ("/**/x.log", serve(Some("/**/x.log"), &[])),
        ("/*/*.log", serve(Some("/*/*.log"), &[])),
        ("/../**/*", serve(None, &[("QRTAG_SCAN_LOGS", "/../**/*")])),
        ("/**/**/**/**/**/*", serve(None, &config_env)),
    ] {
        assert!(!status.success(), "{pattern}: {status} {stderr}");
        assert!(
            stderr.contains(pattern) && stderr.contains("whole file system"),
            "{pattern}: {stderr}"
        );
    }
}

/// A directory of links back to itself: `**` in `glob` followed them
/// without end, and every `*` level multiplies the entries by ten.
fn looping_tree(root: &Path) {
    std::fs::create_dir_all(root.join("d")).expect("tree");
    for i in 0..10 {
        std::os::unix::fs::symlink(".", root.join(format!("l{i}"))).expect("symlink");
    }
    std::fs::write(root.join("d").join("node.log"), "").expect("log");
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A pattern over a tree of millions of paths is followed within its
/// bound: `/readyz` names it and `/metrics` counts the cut walks, memory
/// stays where it was, and SIGTERM stops the server at once although the
/// index walks again at every look for new logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_walk_is_bounded_reported_and_stopped_by_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    init_db(&db);
    let tree = dir.path().join("tree");
    looping_tree(&tree);
    let endless = format!("{}/**/*.log", tree.display());
    let wide = format!("{}/*/*/*/*/*/*/*.log", tree.display());
    let server = ServerProcess::spawn(
        &db,
        &[
            "--console",
            "--scan-log",
            endless.as_str(),
            "--scan-log",
            wide.as_str(),
        ],
        &[],
        false,
    )
    .await;
    let http = reqwest::Client::new();
    let readyz = server.admin_url("/readyz");
    let body = poll::until(WITHIN, "/readyz names the cut pattern", || async {
        let res = http.get(&readyz).send().await.ok()?;
        let status = res.status();
        let body = res.text().await.ok()?;
        (status == 200 && body.contains("stopped after 100000 directory entries")).then_some(body)
    })
    .await;
    assert!(
        body.contains(&format!("degraded: scan log pattern `{wide}`")),
        "{body}"
    );
    let metrics = http
        .get(server.admin_url("/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    let cut: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("qrtag_scan_log_walks_cut_total "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no walks counter in:\n{metrics}"));
    assert!(cut >= 1.0, "{metrics}");

    // Several more walks: memory does not grow with them.
    let pid = server.child.id();
    let first = rss_kib(pid).expect("rss");
    let before = cut;
    poll::until(WITHIN, "two more walks", || async {
        let text = http
            .get(server.admin_url("/metrics"))
            .send()
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        let n: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("qrtag_scan_log_walks_cut_total "))?
            .parse()
            .ok()?;
        (n >= before + 2.0).then_some(())
    })
    .await;
    let later = rss_kib(pid).expect("rss");
    assert!(
        later < first + 64 * 1024,
        "RSS grew from {first} KiB to {later} KiB over two walks"
    );

    let mut server = server;
    let sent = Instant::now();
    server.signal("TERM");
    let status = server.wait_exit().await;
    assert!(status.success(), "{status}");
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "SIGTERM took {:?}",
        sent.elapsed()
    );
}
