//! Issue 19: parallel QR renders on the admin listener took the process
//! from 98 MB to 5.35 GB. Renders in flight are bounded by a gate sized from
//! the cores; past it a request is answered 503 at once. Alone in its test
//! binary, so the process's peak memory is this test's.

mod support;

use std::time::Duration;

use qrtag::print::tag_image::{MAX_PNG_SIDE, RenderGate};
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;
use support::{TestApp, eventually, header, spawn_app};

/// The process's peak resident memory (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in kB");
    kib * 1024
}

async fn get(app: &TestApp, path: &str) -> reqwest::Response {
    app.admin_get(path).await.expect("admin listener answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_renders_past_the_gate_are_503_and_memory_stays_bounded() {
    let app = spawn_app().await;
    let key = LinkKey::parse("H83if").expect("valid key");
    let url = Destination::parse("https://example.com/").expect("valid url");
    qrtag::links::create(
        &app.store(),
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &url,
        Some(&key),
        false,
    )
    .await
    .expect("create link");
    // Nearly the largest PNG served: about 3,900 pixels a side.
    let path = "/qr/H83if.png?scale=64&margin=16&ec=H";
    eventually(Duration::from_secs(2), || async {
        get(&app, "/qr/H83if.svg").await.status() == 200
    })
    .await;

    let before = peak_rss();
    assert_eq!(get(&app, path).await.status(), 200);
    // What one render costs at its peak, at least its pixels.
    let one = (peak_rss() - before).max((MAX_PNG_SIDE * MAX_PNG_SIDE / 2) as u64);

    const PARALLEL: usize = 48;
    let answers = futures_util::future::join_all((0..PARALLEL).map(|_| async {
        let r = get(&app, path).await;
        let retry = header(&r, "retry-after").map(str::to_owned);
        (r.status().as_u16(), retry)
    }))
    .await;
    // At most the gate's renders at once, and one more for the allocator's
    // slack; unbounded, 48 renders held 48 images.
    let grown = peak_rss().saturating_sub(before);
    let bound = (RenderGate::MAX_SLOTS as u64 + 1) * one;
    assert!(
        grown <= bound,
        "peak grew {} MiB over {PARALLEL} parallel renders, more than {} MiB ({} MiB one render)",
        grown >> 20,
        bound >> 20,
        one >> 20
    );

    let ok = answers.iter().filter(|(s, _)| *s == 200).count();
    let busy: Vec<_> = answers.iter().filter(|(s, _)| *s == 503).collect();
    assert_eq!(ok + busy.len(), PARALLEL, "only 200 or 503: {answers:?}");
    assert!(ok >= 1, "some are rendered: {answers:?}");
    assert!(!busy.is_empty(), "past the gate, 503: {answers:?}");
    assert!(
        busy.iter().all(|(_, retry)| retry.as_deref() == Some("1")),
        "{answers:?}"
    );

    // The gate lets go: the next request renders.
    assert_eq!(get(&app, path).await.status(), 200);
}
