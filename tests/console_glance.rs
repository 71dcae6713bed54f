//! The console read at a glance, in headless Chromium (issue 33): the links
//! pages of 100 links show 100 QR codes while `qrtag stats` keeps every core
//! busy, and a link's page shows its scans on the first screen.
//!
//! Steered through `tests/support/browser.rs` like `console_browser.rs`;
//! screenshots go to `console-screenshots/` in the target directory.

mod support;

#[path = "support/browser.rs"]
mod browser;

use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use browser::{Browser, Screen, screenshots};
use reqwest::StatusCode;
use serde_json::json;
use support::{TestApp, qrtag_bin, spawn_console_with_scan_index};

const PASSWORD: &str = "poster-printing-42";

/// The desktop screen issue 33 was tried on.
const WIDE: Screen = Screen {
    name: "wide",
    width: 1440,
    height: 900,
    scale: 1.0,
    mobile: false,
};

/// Logs in from the login page already shown; the list opens.
fn log_in(b: &mut Browser) {
    b.fill("#password", PASSWORD);
    b.click("form#login button[type=submit]");
    b.wait("form#create");
}

/// Scans `key` as a phone would, `n` times, each a scanner of its own.
async fn scan(app: &TestApp, key: &str, n: usize, agent: &str, referer: &str) {
    for i in 0..n {
        let res = app
            .client
            .get(app.url(&format!("/{key}")))
            .header("user-agent", agent)
            .header("referer", referer)
            .header("cookie", format!("x={key}{i}"))
            .send()
            .await
            .expect("scan");
        assert_eq!(res.status(), StatusCode::FOUND, "/{key}");
    }
}

/// `qrtag stats LOG` run again and again on every core until dropped, so
/// the server answers the page with no core to spare, as it does beside a
/// report on a two-core box.
struct BusyCores {
    stop: Arc<AtomicBool>,
    runs: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl BusyCores {
    fn start(log: &Path, cores: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let runs = Arc::new(AtomicUsize::new(0));
        let threads = (0..cores)
            .map(|_| {
                let (stop, runs, log) = (Arc::clone(&stop), Arc::clone(&runs), log.to_owned());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let mut child: Child = qrtag_bin()
                            .arg("stats")
                            .arg(&log)
                            .current_dir(log.parent().expect("dir"))
                            .stdout(std::process::Stdio::null())
                            .stderr(std::process::Stdio::null())
                            .spawn()
                            .expect("qrtag stats");
                        runs.fetch_add(1, Ordering::Relaxed);
                        loop {
                            if stop.load(Ordering::Relaxed) {
                                let _ = child.kill();
                                let _ = child.wait();
                                return;
                            }
                            match child.try_wait().expect("wait") {
                                Some(status) => {
                                    assert!(status.success(), "qrtag stats failed: {status}");
                                    break;
                                }
                                None => std::thread::sleep(Duration::from_millis(20)),
                            }
                        }
                    }
                })
            })
            .collect();
        BusyCores {
            stop,
            runs,
            threads,
        }
    }

    /// Waits until each thread's first `qrtag stats` has started.
    fn wait_busy(&self, cores: usize) {
        let start = Instant::now();
        while self.runs.load(Ordering::Relaxed) < cores {
            assert!(start.elapsed() < Duration::from_secs(10), "stats never ran");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl BusyCores {
    /// Whether every thread still runs its `qrtag stats` (a thread ends
    /// only when dropped, or when a run fails).
    fn running(&self) -> bool {
        self.threads.iter().all(|t| !t.is_finished())
    }
}

impl Drop for BusyCores {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// CPU time the whole machine spent, from `/proc/stat`'s first line
/// (user + nice + system, in clock ticks of 1/100 s).
fn busy_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let cpu = stat.lines().next().expect("cpu line");
    cpu.split_whitespace()
        .skip(1)
        .take(3)
        .map(|n| n.parse::<u64>().expect("ticks"))
        .sum()
}

/// A person's look through a page: scrolled a screen at a time from the
/// top, each screen's images waited for (10 s at most) until they finished,
/// loaded or broken, as the browser asks for them (lazy ones too). Returns
/// how many of the `img`s matching `css` loaded (`naturalWidth > 0`), how
/// many broke (finished without a picture) and how many there are.
fn scroll_through(b: &mut Browser, css: &str) -> (u64, u64, u64) {
    let height = b
        .script("return document.documentElement.scrollHeight;", json!([]))
        .as_u64()
        .expect("height");
    let screen = b
        .script("return window.innerHeight;", json!([]))
        .as_u64()
        .expect("inner height");
    let mut y = 0;
    loop {
        b.script("window.scrollTo(0, arguments[0]);", json!([y]));
        let start = Instant::now();
        // The images on this screen, all finished.
        while b.script(
            "return [...document.querySelectorAll(arguments[0])].filter(i => {\
               const r = i.getBoundingClientRect();\
               return r.bottom > 0 && r.top < window.innerHeight && !i.complete; }).length;",
            json!([css]),
        ) != json!(0)
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "images at {y} px never finished"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        if y + screen >= height {
            break;
        }
        y += screen;
    }
    let got = b.script(
        "const imgs = [...document.querySelectorAll(arguments[0])];\
         return [imgs.filter(i => i.complete && i.naturalWidth > 0).length,\
                 imgs.filter(i => i.complete && i.naturalWidth == 0).length,\
                 imgs.length];",
        json!([css]),
    );
    let n = |i: usize| got[i].as_u64().expect("a count");
    (n(0), n(1), n(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_links_show_a_hundred_codes_while_stats_keeps_every_core_busy() {
    let (app, log) = spawn_console_with_scan_index(PASSWORD).await;
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    for i in 0..100 {
        app.link(
            &format!("poster-{i:03}"),
            &format!("https://example.com/poster/{i}"),
        )
        .await;
    }
    // A log for `qrtag stats` to chew on: the server's own lines, many times.
    scan(
        &app,
        "poster-000",
        4,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)",
        "https://www.google.com/",
    )
    .await;
    support::eventually(Duration::from_secs(5), || async {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() >= 4)
    })
    .await;
    let one = std::fs::read_to_string(&log).expect("the access log");
    let big = app.dir.path().join("busy.log");
    std::fs::write(&big, one.repeat(200_000 / one.lines().count().max(1))).expect("big log");

    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let busy = BusyCores::start(&big, cores);
    busy.wait_busy(cores);

    let mut b = Browser::start();
    b.screen(WIDE);
    b.get(&console("/login"));
    b.wait("form#login");
    log_in(&mut b);
    let ticks = busy_ticks();
    let clock = Instant::now();
    // The list's pages until every link was shown, each page's images
    // waited for: one page of 100 rows (issue 33).
    let (mut rows, mut loaded, mut broken, mut images, mut pages) = (0, 0, 0, 0, 0);
    b.get(&console("/links"));
    loop {
        b.wait("table#links");
        pages += 1;
        rows += b.count("table#links tbody tr");
        let (ok, bad, all) = scroll_through(&mut b, "td.thumb img");
        broken += bad;
        b.screenshot(&screenshots().join(format!("{}-links-thumbnails-{pages}.png", WIDE.name)));
        loaded += ok;
        images += all;
        if b.count("a#next") == 0 {
            break;
        }
        let next = b.attr("a#next", "href");
        b.get(&next);
    }
    let spent = clock.elapsed();
    let used = busy_ticks() - ticks;
    assert!(
        busy.running(),
        "qrtag stats stopped before the pages were seen"
    );
    let had = spent.as_secs_f64() * 100.0 * cores as f64;
    eprintln!(
        "{loaded} of {images} thumbnails loaded ({broken} broken) on {pages} page(s) of {rows} rows in {spent:?}, \
         the machine's CPU {:.0}% busy, {} stats runs",
        100.0 * used as f64 / had,
        busy.runs.load(Ordering::Relaxed)
    );
    assert_eq!(pages, 1, "the 100 links on one page");
    assert_eq!(rows, 100, "every link listed");
    assert_eq!(images, 100, "a thumbnail a row");
    assert_eq!(loaded, 100, "every thumbnail shows a code");
    drop(busy);
    drop(b);
}

/// Where `css` lies on the page as laid out now, in CSS pixels from the
/// page's top: `(top, bottom)`, or `None` when nothing matches.
fn span(b: &mut Browser, css: &str) -> Option<(f64, f64)> {
    let got = b.script(
        "const e = document.querySelector(arguments[0]); if (!e) return null;\
         const r = e.getBoundingClientRect();\
         return [r.top + window.scrollY, r.bottom + window.scrollY];",
        json!([css]),
    );
    let n = |i: usize| got[i].as_f64().expect("a position");
    (!got.is_null()).then(|| (n(0), n(1)))
}

/// The phone issue 33 was tried on (as `browser::PHONE`, named apart).
const PHONE: Screen = Screen {
    name: "phone",
    width: 390,
    height: 844,
    scale: 2.0,
    mobile: true,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_links_page_shows_its_scans_on_the_first_screen() {
    let (app, _log) = spawn_console_with_scan_index(PASSWORD).await;
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    let key = "spring-poster";
    app.link(key, "https://example.com/spring").await;
    app.wait_for_status(&format!("/{key}"), 302).await;
    let iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
    scan(&app, key, 3, iphone, "https://l.instagram.com/").await;
    scan(&app, key, 1, iphone, "https://www.google.com/").await;

    let mut b = Browser::start();
    b.screen(WIDE);
    b.get(&console("/login"));
    b.wait("form#login");
    log_in(&mut b);
    let page = console(&format!("/link?key={key}"));
    b.reload_until(&page, r#"#scans dd[data-scans="4"]"#);

    for (screen, screens) in [(WIDE, 1.0), (PHONE, 1.5)] {
        b.screen(screen);
        b.get(&page);
        b.wait("#scans");
        b.screenshot(&screenshots().join(format!("{}-link-glance.png", screen.name)));
        let (counts, chart) = (span(&mut b, "#scans"), span(&mut b, "svg#daily"));
        let summary = span(&mut b, "#scans-summary");
        eprintln!(
            "{} ({}×{}): scan counts at {counts:?}, chart at {chart:?}, summary at {summary:?} px",
            screen.name, screen.width, screen.height
        );
        let (top, bottom) = summary.expect("a scans summary");
        let within = f64::from(screen.height) * screens;
        assert!(
            top >= 0.0 && bottom <= within,
            "{}: the summary spans {top}..{bottom} px, past the first {within} px",
            screen.name
        );
        // What the summary holds: the counts, the chart, where scans come from.
        for part in [
            r#"#scans-summary dd[data-last="7"]"#,
            r#"#scans-summary dd[data-last="30"]"#,
            r#"#scans-summary dd[data-last="365"]"#,
            "#scans-summary svg#daily",
            r#"#scans-summary dd[data-top="device"][data-value="phone"]"#,
            r#"#scans-summary dd[data-top="country"]"#,
            r#"#scans-summary dd[data-top="referrer"][data-value="l.instagram.com"]"#,
        ] {
            assert_eq!(b.count(part), 1, "{}: {part}", screen.name);
        }
        assert_eq!(b.text(r#"#scans-summary dd[data-last="7"]"#), "4");
        // Above it or beside it: what the link is, its code and when made.
        for part in [
            "#short-url",
            "#destination",
            "#state",
            "#created",
            "#changed",
        ] {
            let (_, end) = span(&mut b, part).unwrap_or_else(|| panic!("no {part}"));
            assert!(end <= within, "{}: {part} ends at {end} px", screen.name);
        }
        assert_ne!(
            b.text("#created"),
            "not recorded",
            "the link's creation time"
        );
        let shown = b.script(
            "const i = document.querySelector('#glance-tag'); return i.complete && i.naturalWidth > 0;",
            json!([]),
        );
        assert_eq!(shown, json!(true), "{}: the link's QR code", screen.name);
        // The rest, each a section the page's links jump to.
        for section in ["edit", "qr", "print", "details"] {
            assert_eq!(
                b.count(&format!(r##"nav#sections a[href="#{section}"]"##)),
                1,
                "{section}"
            );
            assert_eq!(b.count(&format!("section#{section}")), 1, "{section}");
        }
    }
}

/// How a chart is drawn on the screen now, in CSS pixels: the drawing's
/// width and height, its smallest and largest text as drawn (font size
/// times the drawing's scale), and the width its container's content box
/// gives it.
fn chart_box(b: &mut Browser, css: &str) -> Option<(f64, f64, f64, f64, f64)> {
    let got = b.script(
        "const s = document.querySelector(arguments[0]); if (!s) return null;\
         const r = s.getBoundingClientRect();\
         const sizes = [...s.querySelectorAll('text')].map(t => {\
           const m = t.getScreenCTM();\
           return parseFloat(getComputedStyle(t).fontSize) * (m ? Math.hypot(m.a, m.b) : 1); });\
         const p = s.closest('figure').parentElement; const cs = getComputedStyle(p);\
         const room = p.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);\
         return [r.width, r.height, Math.min(...sizes), Math.max(...sizes), room];",
        json!([css]),
    );
    let n = |i: usize| got[i].as_f64().expect("a size");
    (!got.is_null()).then(|| (n(0), n(1), n(2), n(3), n(4)))
}

/// The breakdowns' bars as drawn: the narrowest bar track, the bars'
/// height and the smallest text in their tables, in CSS pixels.
fn bars_box(b: &mut Browser) -> (f64, f64, f64) {
    let got = b.script(
        "const tracks = [...document.querySelectorAll('#breakdowns table.bars td.bar')];\
         const svgs = [...document.querySelectorAll('#breakdowns table.bars td.bar svg')];\
         const cells = [...document.querySelectorAll('#breakdowns table.bars th, #breakdowns table.bars td.n')];\
         return [Math.min(...tracks.map(t => t.getBoundingClientRect().width)),\
                 Math.min(...svgs.map(s => s.getBoundingClientRect().height)),\
                 Math.min(...cells.map(c => parseFloat(getComputedStyle(c).fontSize)))];",
        json!([]),
    );
    let n = |i: usize| got[i].as_f64().expect("a size");
    (n(0), n(1), n(2))
}

/// Issue 33: the scan charts are large enough to read at a glance. On a
/// 1440 × 900 desktop the dashboard's daily chart is at least 640 px wide
/// and a link's (the whole column of its scans summary) at least 520 px,
/// both at least 240 px tall, their labels between 14 px (the console's
/// least text) and 20 px; on a
/// 390 × 844 phone a chart spans the width it is given and its labels stay
/// at least 14 px (the console's least text). The breakdowns' bars are at
/// least 100 px long and 12 px thick, their text 14 px or more, on both.
/// Measured on main before: 448 × 261 px (link) and 480 × 280 px
/// (dashboard) with 21–22 px labels on the desktop; 366 × 214 px, 17 px
/// labels on the phone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scan_charts_are_large_enough_to_read_on_a_desktop_and_a_phone() {
    let (app, _log) = spawn_console_with_scan_index(PASSWORD).await;
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    let key = "spring-poster";
    app.link(key, "https://example.com/spring").await;
    app.wait_for_status(&format!("/{key}"), 302).await;
    let iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
    scan(&app, key, 12, iphone, "https://l.instagram.com/").await;
    scan(&app, key, 3, iphone, "https://www.google.com/").await;

    let mut b = Browser::start();
    b.screen(WIDE);
    b.get(&console("/login"));
    b.wait("form#login");
    log_in(&mut b);
    let link = console(&format!("/link?key={key}"));
    b.reload_until(&link, r#"#scans dd[data-scans="15"]"#);
    let mut problems = Vec::new();
    for screen in [WIDE, PHONE] {
        b.screen(screen);
        for (page, url) in [("link", &link), ("dashboard", &console("/dashboard"))] {
            b.get(url);
            b.wait("svg#daily");
            b.screenshot(&screenshots().join(format!("{}-{page}-chart.png", screen.name)));
            let (w, h, small, large, room) = chart_box(&mut b, "svg#daily").expect("a chart");
            let (track, thick, cell) = bars_box(&mut b);
            eprintln!(
                "{} {page}: chart {w:.0} × {h:.0} px of {room:.0} px, labels {small:.1}..{large:.1} px; \
                 bars from {track:.0} px long, {thick:.1} px thick, text {cell:.1} px",
                screen.name
            );
            let mut want = |ok: bool, what: String| {
                if !ok {
                    problems.push(format!("{} {page}: {what}", screen.name));
                }
            };
            if screen.mobile {
                want(
                    w >= room - 1.0,
                    format!("the chart is {w:.0} of {room:.0} px wide"),
                );
                want(small >= 14.0 - 0.05, format!("a label of {small:.1} px"));
            } else {
                let least = if page == "link" { 520.0 } else { 640.0 };
                want(w >= least, format!("the chart is {w:.0} px wide"));
                want(h >= 240.0, format!("the chart is {h:.0} px tall"));
                want(small >= 14.0 - 0.05, format!("a label of {small:.1} px"));
                want(large <= 20.0, format!("a label of {large:.1} px"));
            }
            want(track >= 100.0, format!("a bar track of {track:.0} px"));
            want(thick >= 12.0, format!("bars {thick:.1} px thick"));
            want(cell >= 14.0 - 0.05, format!("bar text of {cell:.1} px"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
