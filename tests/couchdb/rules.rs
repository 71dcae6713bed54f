//! Issue 34: the validation function (`assets/couchdb/validate_doc_update.js`)
//! keeps a link's `rules` to the shape the core takes, on PouchDB Server
//! and on Apache CouchDB (QuickJS): a malformed rule written straight into
//! the database, as a person editing the document in Fauxton would, is
//! refused with a `forbidden` naming the field; a well-formed one is taken.
//! Every case is also put to the core (`Rules::from_json`), so the two
//! agree on each.

use qrtag::link::rules::{Capabilities, Rules};
use serde_json::{Value, json};

use crate::apache::{ADMIN, ApacheCouch};
use crate::harness::{Couch, editor_and_reader, qrtag, stderr, user_env};
use crate::pouchdb::PouchDb;

fn ios() -> Value {
    json!({"url": "https://apps.apple.com/app/id1", "os": ["ios"]})
}

/// Malformed `rules`, each with the field the refusal must name.
fn malformed() -> Vec<(Value, &'static str)> {
    let url = "https://example.com/x";
    let one = |extra: Value| {
        let mut rule = json!({"url": url});
        for (k, v) in extra.as_object().expect("fields") {
            rule[k] = v.clone();
        }
        json!([ios(), rule])
    };
    let too_many: Vec<Value> = (0..33).map(|_| ios()).collect();
    vec![
        (json!({"url": url, "os": ["ios"]}), "rules: "),
        (json!("https://example.com/"), "rules: "),
        (Value::Array(too_many), "rules: "),
        (json!([ios(), "https://example.com/"]), "rules[1]: "),
        (json!([{"os": ["ios"]}]), "rules[0].url: "),
        (one(json!({})), "rules[1]: "),
        (
            one(json!({"contry": ["IE"], "os": ["ios"]})),
            "rules[1].contry: ",
        ),
        (json!([{"url": "/path", "os": ["ios"]}]), "rules[0].url: "),
        (
            json!([{"url": "ftp://a.example/", "os": ["ios"]}]),
            "rules[0].url: ",
        ),
        (
            json!([{"url": "https://a@evil.example/", "os": ["ios"]}]),
            "rules[0].url: ",
        ),
        (json!([{"url": 5, "os": ["ios"]}]), "rules[0].url: "),
        (one(json!({"os": []})), "rules[1].os: "),
        (one(json!({"os": "ios"})), "rules[1].os: "),
        (one(json!({"os": ["windows"]})), "rules[1].os[0]: "),
        (one(json!({"class": ["watch"]})), "rules[1].class[0]: "),
        (one(json!({"country": ["ie"]})), "rules[1].country[0]: "),
        (one(json!({"country": ["IRL"]})), "rules[1].country[0]: "),
        (one(json!({"country": []})), "rules[1].country: "),
        (one(json!({"lang": ["en_GB"]})), "rules[1].lang[0]: "),
        (one(json!({"lang": [5]})), "rules[1].lang[0]: "),
        (
            one(json!({"days": ["monday"], "tz": "Europe/Dublin"})),
            "rules[1].days[0]: ",
        ),
        (
            one(json!({"days": [], "tz": "Europe/Dublin"})),
            "rules[1].days: ",
        ),
        (
            one(json!({"hours": ["11:00"], "tz": "Europe/Dublin"})),
            "rules[1].hours: ",
        ),
        (
            one(json!({"hours": ["11:00", "24:00"], "tz": "Europe/Dublin"})),
            "rules[1].hours: ",
        ),
        (
            one(json!({"hours": ["9:00", "15:00"], "tz": "Europe/Dublin"})),
            "rules[1].hours: ",
        ),
        (
            one(json!({"hours": ["11:00", "11:00"], "tz": "Europe/Dublin"})),
            "rules[1].hours: ",
        ),
        (one(json!({"hours": ["11:00", "15:00"]})), "rules[1].tz: "),
        (one(json!({"days": ["sat"]})), "rules[1].tz: "),
        (
            one(json!({"os": ["ios"], "tz": "Europe/Dublin"})),
            "rules[1].tz: ",
        ),
        (one(json!({"from": "tomorrow"})), "rules[1].from: "),
        (
            one(json!({"until": "2026-13-01T00:00:00Z"})),
            "rules[1].until: ",
        ),
        (
            one(json!({"from": "2026-12-01T00:00:00Z", "until": "2026-12-01T00:00:00Z"})),
            "rules[1].until: ",
        ),
        (
            // The same instant: 01:00 in Dublin's winter is 01:00Z.
            one(json!({"from": "2026-12-01T01:00:00+00:00", "until": "2026-12-01T02:00:00+01:00"})),
            "rules[1].until: ",
        ),
        (one(json!({"split": [50, 50]})), "rules[1].split: "),
        (one(json!({"split": [0, 101]})), "rules[1].split: "),
        (one(json!({"split": [-1, 50]})), "rules[1].split: "),
        (one(json!({"split": [0.5, 50]})), "rules[1].split: "),
        (one(json!({"split": [50]})), "rules[1].split: "),
        (one(json!({"split": "0-50"})), "rules[1].split: "),
    ]
}

/// Well-formed `rules`: every condition, and none at all.
fn well_formed() -> Vec<Value> {
    vec![
        json!([]),
        Value::Null,
        json!([ios(),
            {"url": "https://example.com/lunch", "days": ["mon", "tue", "wed", "thu", "fri"],
             "hours": ["11:00", "15:00"], "tz": "Europe/Dublin"},
            {"url": "https://example.com/late", "hours": ["22:00", "02:00"], "tz": "America/New_York"},
            {"url": "https://example.com/recap", "from": "2026-12-01T08:00:00Z"},
            {"url": "https://example.com/window", "from": "2026-12-01T08:00:00.5+01:00",
             "until": "2026-12-02t08:00:00z"},
            {"url": "https://example.com/b", "split": [50, 100]},
            {"url": "https://example.com/de", "lang": ["de", "pt-BR"], "class": ["phone", "tablet"]},
            {"url": "http://[::1]:8080/ie", "country": ["IE", "GB"], "os": ["android", "other", "ipados"]}
        ]),
        Value::Array((0..32).map(|_| ios()).collect()),
    ]
}

/// Writes each case as the document's `rules` and checks the answer, on
/// a database `qrtag setup` installed the validation in.
async fn check(couch: &Couch, server: &str) {
    let geoip = Capabilities { geoip: true };
    for (i, (rules, field)) in malformed().into_iter().enumerate() {
        let core = Rules::from_json(&rules, &geoip).expect_err("the core refuses it too");
        assert!(
            core.to_string().starts_with(field),
            "the core names {core}, not {field}"
        );
        let id = format!("bad{i:02}");
        let (status, body) = couch
            .try_put(&id, json!({"url": "https://example.com/", "rules": rules}))
            .await;
        assert_eq!(status, 403, "{server}: {id} {rules} accepted: {body}");
        assert_eq!(body["error"], "forbidden", "{server}: {id}: {body}");
        let reason = body["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with(&format!("not a qrtag link document: {field}")),
            "{server}: {rules}: {reason}"
        );
    }
    // A host in capitals: the core lowers it as it writes (as it does
    // `url`'s), so only a hand edit stores one, refused as in `url`.
    let rules = json!([{"url": "https://EVIL.example/", "os": ["ios"]}]);
    let (status, body) = couch
        .try_put(
            "capitals",
            json!({"url": "https://example.com/", "rules": rules}),
        )
        .await;
    assert_eq!(status, 403, "{server}: {body}");
    assert!(
        body["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("rules[0].url: "),
        "{server}: {body}"
    );
    for (i, rules) in well_formed().into_iter().enumerate() {
        if !rules.is_null() {
            Rules::from_json(&rules, &geoip).expect("the core takes it too");
        }
        let id = format!("good{i}");
        let (status, body) = couch
            .try_put(&id, json!({"url": "https://example.com/", "rules": rules}))
            .await;
        assert_eq!(status, 201, "{server}: {id} {rules} refused: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pouchdb_refuses_malformed_rules_naming_the_field() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [
        ("QRTAG_COUCHDB_URL", url.as_str()),
        ("QRTAG_PUBLIC_URL", crate::harness::PUBLIC_URL),
    ];
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    check(&Couch::new(&url, "links"), "PouchDB Server").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_refuses_malformed_rules_naming_the_field() {
    let Some(server) = ApacheCouch::start("apache_couchdb_refuses_malformed_rules").await else {
        return;
    };
    let url = server.url();
    editor_and_reader(&server.admin()).await;
    let env = user_env(&url, ADMIN.0, ADMIN.1);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("QRTAG_PUBLIC_URL", crate::harness::PUBLIC_URL));
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let editor = Couch::new(&url, "links").with_user("ed", "ed-pw-1");
    check(&editor, "Apache CouchDB").await;
}
