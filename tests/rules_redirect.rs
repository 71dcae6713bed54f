//! Smart tags on the real server (issue 34): a link's rules, written
//! straight into the store as any writer would, choose each scan's
//! destination by device, language, time, country and an A/B split; the
//! chosen destination is resolved as `url` is (path appending, query,
//! internal redirects), answered with `Vary` and `Cache-Control: private,
//! no-store`, and logged as the scan's location.

mod support;

use std::time::{Duration, Instant, SystemTime};

use qrtag::access_log::parse_line;
use qrtag::link::Document;
use qrtag::link::rules::split;
use qrtag::store::LinkStore;
use qrtag::tracking::id::TrackingId;
use qrtag::values::link_key::LinkKey;
use serde_json::{Value, json};
use support::{TestApp, eventually, header, poll, spawn_with, test_settings};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 \
                      (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 \
                       (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 \
                       (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

const URL: &str = "https://example.com/poster";
const IOS: &str = "https://apps.apple.com/app/id1";
const PLAY: &str = "https://play.google.com/store/apps/details?id=x";

/// Writes `doc` under `key` as a writer that skips every check would (a
/// person editing the database): the store takes it, the follower serves it.
async fn write(app: &TestApp, key: &str, doc: Value) {
    let Value::Object(doc) = doc else {
        panic!("a document is an object")
    };
    let doc: Document = doc;
    let key = LinkKey::parse(key).expect("key");
    let store = app.store();
    match store.get(&key).await.expect("get") {
        None => store.create(&key, &doc).await.expect("create"),
        Some(old) => store.replace(&key, &doc, &old.rev).await.expect("replace"),
    }
}

struct Scan<'a> {
    path: &'a str,
    headers: Vec<(&'a str, String)>,
}

impl<'a> Scan<'a> {
    fn of(path: &'a str) -> Self {
        Self {
            path,
            headers: Vec::new(),
        }
    }

    fn with(mut self, name: &'a str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    async fn send(&self, app: &TestApp) -> reqwest::Response {
        let mut req = app.client.get(app.url(self.path));
        for (name, value) in &self.headers {
            req = req.header(*name, value);
        }
        req.send().await.expect("request")
    }
}

fn location(r: &reqwest::Response) -> Option<String> {
    header(r, "location").map(str::to_owned)
}

/// Waits until a scan of `path` is a redirect (the write reached the snapshot).
async fn served(app: &TestApp, path: &str) {
    app.wait_for_status(path, 302).await;
}

fn os_rules() -> Value {
    json!([{"url": IOS, "os": ["ios", "ipados"]}, {"url": PLAY, "os": ["android"]}])
}

#[tokio::test]
async fn the_device_chooses_the_destination_and_the_answer_varies_on_it() {
    let app = support::spawn_app().await;
    write(&app, "app", json!({"url": URL, "rules": os_rules()})).await;
    app.link("plain", URL).await;
    served(&app, "/app").await;
    served(&app, "/plain").await;
    for (ua, want) in [(IPHONE, IOS), (ANDROID, PLAY), (DESKTOP, URL)] {
        let r = Scan::of("/app").with("user-agent", ua).send(&app).await;
        assert_eq!(r.status(), 302);
        assert_eq!(location(&r).as_deref(), Some(want), "{ua}");
        assert_eq!(header(&r, "vary"), Some("User-Agent"));
        assert_eq!(header(&r, "cache-control"), Some("private, no-store"));
    }
    let r = Scan::of("/app").send(&app).await;
    assert_eq!(location(&r).as_deref(), Some(URL), "no User-Agent: url");
    // A link without rules: no Vary, as before.
    let r = Scan::of("/plain")
        .with("user-agent", IPHONE)
        .send(&app)
        .await;
    assert_eq!(location(&r).as_deref(), Some(URL));
    assert_eq!(header(&r, "vary"), None);
    assert_eq!(header(&r, "cache-control"), Some("private, no-store"));

    // The chosen destination is resolved as url is: the rest of the path
    // appended, the request's query merged.
    let r = Scan::of("/app/more?utm=1")
        .with("user-agent", ANDROID)
        .send(&app)
        .await;
    assert_eq!(
        location(&r).as_deref(),
        Some("https://play.google.com/store/apps/details/more?id=x&utm=1")
    );

    // The access log's location is the chosen destination.
    let log = app.db.with_file_name("access.log");
    eventually(Duration::from_secs(5), || async {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        // The scans with a User-Agent, in the order sent (the log writes
        // it percent-encoded).
        let chosen: Vec<_> = text
            .lines()
            .filter_map(|l| parse_line(l).ok())
            .filter(|l| l.target == "/app" && l.user_agent.is_some())
            .map(|l| l.location.unwrap_or_default().to_owned())
            .collect();
        chosen.len() >= 3 && chosen[..3] == [IOS, PLAY, URL]
    })
    .await;
}

#[tokio::test]
async fn the_most_preferred_language_chooses_with_quality_values() {
    let app = support::spawn_app().await;
    let de = "https://example.com/de";
    write(
        &app,
        "menu",
        json!({"url": URL, "rules": [{"url": de, "lang": ["de"]}]}),
    )
    .await;
    served(&app, "/menu").await;
    for (accept, want) in [
        ("de-AT, en;q=0.8", de),
        ("en;q=0.5, de;q=0.9", de),
        ("de;q=0.3, en", URL),
        ("fr, de;q=0", URL),
        ("*, de;q=0.5", de),
        ("", URL),
    ] {
        let r = Scan::of("/menu")
            .with("accept-language", accept)
            .send(&app)
            .await;
        assert_eq!(location(&r).as_deref(), Some(want), "{accept:?}");
        assert_eq!(header(&r, "vary"), Some("Accept-Language"));
    }
}

#[tokio::test]
async fn an_internal_redirect_chooses_at_every_hop_and_varies_on_both() {
    let app = support::spawn_app().await;
    let en = "https://example.com/en";
    // `hop` sends iPhones to `lang`, a link on this origin, which chooses
    // by language with the same scan.
    write(
        &app,
        "hop",
        json!({"url": URL, "rules": [{"url": format!("{}/lang", support::PUBLIC_URL), "os": ["ios"]}]}),
    )
    .await;
    write(
        &app,
        "lang",
        json!({"url": "https://example.com/other", "rules": [{"url": en, "lang": ["en"]}]}),
    )
    .await;
    served(&app, "/hop").await;
    served(&app, "/lang").await;
    let r = Scan::of("/hop")
        .with("user-agent", IPHONE)
        .with("accept-language", "en-GB")
        .send(&app)
        .await;
    assert_eq!(location(&r).as_deref(), Some(en));
    assert_eq!(header(&r, "vary"), Some("User-Agent, Accept-Language"));
    let r = Scan::of("/hop")
        .with("user-agent", DESKTOP)
        .send(&app)
        .await;
    assert_eq!(location(&r).as_deref(), Some(URL));
    assert_eq!(header(&r, "vary"), Some("User-Agent"));
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64
}

#[tokio::test]
async fn a_scheduled_repoint_switches_within_a_second_of_its_instant() {
    let app = support::spawn_app().await;
    let recap = "https://example.com/recap";
    // Whole seconds, as RFC 3339 in a document is commonly written.
    let at_ms = (now_ms() / 1000 + 4) * 1000;
    let from = chrono::DateTime::from_timestamp_millis(at_ms)
        .expect("time")
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    write(
        &app,
        "event",
        json!({"url": URL, "rules": [{"url": recap, "from": from}]}),
    )
    .await;
    served(&app, "/event").await;
    assert!(now_ms() < at_ms, "the test set the instant too close");
    let before = Scan::of("/event").send(&app).await;
    assert_eq!(location(&before).as_deref(), Some(URL));
    let started = Instant::now();
    let seen_at = poll::until(Duration::from_secs(10), "the switch to the recap", || {
        let (app, from) = (&app, &from);
        async move {
            let asked = now_ms();
            let r = Scan::of("/event").send(app).await;
            match location(&r).as_deref() {
                Some(l) if l == recap => Some(asked),
                Some(l) if l == URL => {
                    // Never the old page after the instant (the answer was
                    // decided after the request was sent).
                    assert!(
                        now_ms() < at_ms + 1000,
                        "still the url a second after {from}"
                    );
                    None
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    })
    .await;
    assert!(
        seen_at + 1000 >= at_ms && seen_at < at_ms + 1000,
        "switched at {seen_at}, instant {at_ms}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// The variant a split of 50/50 between `A` and `B` gives `who` on `key`.
fn variant(key: &str, who: &[u8]) -> &'static str {
    if split::bucket(key, who) < 50 { A } else { B }
}

const A: &str = "https://example.com/a";
const B: &str = "https://example.com/b";

fn split_rules() -> Value {
    json!([{"url": A, "split": [0, 50]}, {"url": B, "split": [50, 100]}])
}

/// The ID of the one tracking `Set-Cookie`, and the cookie to send back.
fn cookie_of(r: &reqwest::Response) -> (TrackingId, String) {
    let set: Vec<_> = r.headers().get_all("set-cookie").iter().collect();
    assert_eq!(set.len(), 1, "{set:?}");
    let pair = set[0]
        .to_str()
        .expect("ASCII")
        .split(';')
        .next()
        .expect("name=value")
        .to_owned();
    let value = pair.split_once('=').expect("=").1;
    let id = TrackingId::parse(&value[..TrackingId::LEN]).expect("an ID");
    (id, pair)
}

#[tokio::test]
async fn a_split_is_sticky_per_tracking_id_from_the_first_scan() {
    let app = support::spawn_app().await;
    write(&app, "ab", json!({"url": URL, "rules": split_rules()})).await;
    served(&app, "/ab").await;
    let mut seen = std::collections::HashSet::new();
    for visitor in 0..20 {
        // A first scan: the ID minted for it is the one the split used.
        let first = Scan::of("/ab").send(&app).await;
        let (id, cookie) = cookie_of(&first);
        let got = location(&first).expect("a redirect");
        assert_eq!(
            got,
            variant("ab", id.as_bytes()),
            "visitor {visitor}'s first scan"
        );
        assert_eq!(header(&first, "vary"), Some("User-Agent, Cookie"));
        seen.insert(got.clone());
        for _ in 0..5 {
            let again = Scan::of("/ab").with("cookie", &cookie).send(&app).await;
            assert_eq!(location(&again).as_deref(), Some(got.as_str()));
            assert_eq!(cookie_of(&again).0, id, "the same ID sent back");
        }
    }
    assert_eq!(seen.len(), 2, "twenty visitors see both variants");
}

#[tokio::test]
async fn without_a_cookie_the_split_is_sticky_per_address_and_user_agent() {
    let app = support::spawn_app().await;
    write(&app, "ab", json!({"url": URL, "rules": split_rules()})).await;
    served(&app, "/ab").await;
    let mut seen = std::collections::HashSet::new();
    for n in 0..20 {
        let ua = format!("{DESKTOP} visitor/{n}");
        let want = variant("ab", format!("127.0.0.1 {ua}").as_bytes());
        for _ in 0..5 {
            let r = Scan::of("/ab")
                .with("user-agent", &ua)
                .with("sec-gpc", "1")
                .send(&app)
                .await;
            assert_eq!(location(&r).as_deref(), Some(want), "{ua}");
            assert!(
                r.headers().get("set-cookie").is_none(),
                "no cookie under GPC"
            );
        }
        seen.insert(want);
    }
    assert_eq!(seen.len(), 2, "twenty user agents see both variants");
}

#[tokio::test]
async fn rules_that_do_not_parse_leave_the_link_serving_its_url() {
    let app = support::spawn_app().await;
    app.link("other", "https://example.com/other").await;
    // No condition: refused by every writer, here written straight in.
    write(&app, "broken", json!({"url": URL, "rules": [{"url": IOS}]})).await;
    served(&app, "/broken").await;
    let r = Scan::of("/broken")
        .with("user-agent", IPHONE)
        .send(&app)
        .await;
    assert_eq!(location(&r).as_deref(), Some(URL));
    assert_eq!(header(&r, "vary"), None);
    let ready = app.admin_get("/readyz").await.expect("readyz");
    assert_eq!(ready.status(), 200);
    let body = ready.text().await.expect("body");
    assert!(body.contains("2 links, 1 invalid documents"), "{body}");
    // Fixed, it chooses again; the server never stopped.
    write(&app, "broken", json!({"url": URL, "rules": os_rules()})).await;
    eventually(Duration::from_secs(2), || async {
        let r = Scan::of("/broken")
            .with("user-agent", IPHONE)
            .send(&app)
            .await;
        location(&r).as_deref() == Some(IOS)
    })
    .await;
    let r = app.get("/other").await;
    assert_eq!(location(&r).as_deref(), Some("https://example.com/other"));
}

#[tokio::test]
async fn a_country_rule_reads_the_geoip_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    let db =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb");
    settings.geoip = Some(qrtag::settings::GeoIp(
        qrtag::stats::dimensions::place::GeoDb::open(&db).expect("the test database"),
    ));
    settings.trusted_proxies =
        vec![qrtag::tracking::client_ip::parse_trusted_proxy("127.0.0.1").expect("cidr")];
    let app = spawn_with(settings, dir).await;
    let ie = "https://example.com/ie";
    write(
        &app,
        "geo",
        json!({"url": URL, "rules": [{"url": ie, "country": ["IE"]}]}),
    )
    .await;
    served(&app, "/geo").await;
    for (from, want) in [
        ("203.0.113.7", ie),
        ("198.51.100.9", URL),
        ("192.0.2.1", URL),
    ] {
        let r = Scan::of("/geo")
            .with("x-forwarded-for", from)
            .send(&app)
            .await;
        assert_eq!(location(&r).as_deref(), Some(want), "{from}");
        assert_eq!(header(&r, "vary"), None, "the address is no header");
        assert_eq!(header(&r, "cache-control"), Some("private, no-store"));
    }
}
