//! The table's behaviour against a plain map, and what makes it cheap.

use super::*;
use serde_json::json;

use crate::snapshot::test_upsert as upsert;

#[test]
fn inactive_expired_and_unknown_look_alike() {
    let mut t = LinkTable::default();
    let rejected = t.apply([
        upsert("live1", json!({"url": "https://a.example/"})),
        upsert(
            "dead1",
            json!({"url": "https://a.example/", "inactive": true}),
        ),
        upsert(
            "old01",
            json!({"url": "https://a.example/", "expires": "2020-01-01T00:00:00Z"}),
        ),
    ]);
    assert!(rejected.is_empty());
    let now = 1_800_000_000_000;
    assert_eq!(t.live_url("live1", now), Some("https://a.example/"));
    assert_eq!(t.live_url("dead1", now), None);
    assert_eq!(t.live_url("old01", now), None);
    assert_eq!(t.live_url("nope1", now), None);
    assert!(t.get("dead1").is_some(), "inactive links stay known");
}

#[test]
fn invalid_documents_are_skipped_and_come_back_when_fixed() {
    let mut t = LinkTable::default();
    t.apply([upsert("good1", json!({"url": "https://a.example/"}))]);
    let rejected = t.apply([
        upsert("bad01", json!({"url": "javascript:alert(1)"})),
        upsert("bad 2", json!({"url": "https://a.example/"})),
        upsert("good1", json!({"inactive": "yes"})),
    ]);
    assert_eq!(rejected.len(), 3);
    assert_eq!(t.invalid_count(), 3);
    assert_eq!(t.len(), 0, "a broken edit takes the link out");
    t.apply([upsert("good1", json!({"url": "https://b.example/"}))]);
    assert_eq!(t.live_url("good1", 0), Some("https://b.example/"));
    assert_eq!(t.invalid_count(), 2);
    t.apply([
        Change::Delete {
            key: "bad01".into(),
        },
        Change::Delete {
            key: "good1".into(),
        },
    ]);
    assert_eq!((t.len(), t.invalid_count()), (0, 1));
}

proptest::proptest! {
    /// The precomputed answer for `/KEY` is exactly what the policy
    /// would have answered, whatever else the table holds; a destination on
    /// the public origin (any spelling of it) gets none, and the policy
    /// follows it like an internal redirect.
    #[test]
    fn direct_location_agrees_with_the_policy(
        key in "[A-Za-z0-9_-]{1,8}(/[A-Za-z0-9]{1,3})?",
        origin in proptest::sample::select(vec![
            "https://a.example", "https://0x1f.ie", "https://0x1f.ie:443",
            "HTTPS://0x1f.ie", "http://0x1f.ie", "https://0x1f.ie:8443",
        ]),
        path in "(/[a-z0-9%~.-]{0,5}){0,3}",
        // '?' and '#' inside the query and fragment, as in issue #8.
        query in proptest::option::of("[a-z0-9=&~%+;?-]{0,10}"),
        fragment in proptest::option::of("[a-z?#]{0,4}"),
        others in proptest::collection::vec(
            ("[a-z]{1,3}", proptest::prop_oneof![
                "/[a-z/]{0,6}",
                "https://0x1f.ie/[a-z/]{0,6}",
                "https://b.example/[a-z/]{0,6}",
            ]),
            0..4,
        ),
    ) {
        let mut url = format!("{origin}{path}");
        if let Some(q) = query { url.push('?'); url.push_str(&q); }
        if let Some(f) = fragment { url.push('#'); url.push_str(&f); }
        proptest::prop_assume!(crate::values::destination::Destination::parse(&url).is_ok());
        let mut t = LinkTable::default();
        let mut changes: Vec<Change> = others
            .into_iter()
            .map(|(k, v)| upsert(&k, json!({"url": v})))
            .collect();
        changes.push(upsert(&key, json!({"url": url})));
        t.apply(changes);
        let request = format!("/{key}");
        const ORIGIN: &str = "https://0x1f.ie";
        let policy = match policy::decide(ORIGIN, &request, None, |k| t.live_url(k, 0)) {
            policy::Decision::Redirect { location, .. } => Some(location),
            _ => None,
        };
        let direct = t.direct_location(&key, 0, ORIGIN).map(str::to_owned);
        let own = url::Url::parse(&url).is_ok_and(|u| u.origin().ascii_serialization() == ORIGIN);
        if own {
            proptest::prop_assert_eq!(direct, None);
        } else {
            proptest::prop_assert_eq!(direct, policy);
        }
    }
}

fn link_doc(url: &str) -> Document {
    crate::link::test_document(json!({ "url": url }))
}

fn many(n: usize) -> Vec<Change> {
    (0..n)
        .map(|i| Change::Upsert {
            key: format!("k{i:05}"),
            doc: link_doc(&format!("https://a.example/{i}")),
        })
        .collect()
}

#[test]
fn an_edit_rebuilds_one_shard_and_leaves_the_old_table_alone() {
    let mut b = TableBuilder::default();
    b.apply(many(10_000));
    let old = b.build(Some(json!(1)));
    assert!(old.shard_count() >= 10_000 / TARGET_PER_SHARD);
    let mut new = old.clone();
    new.apply([upsert("k00042", json!({"url": "https://b.example/"}))]);
    let changed = old
        .shards
        .iter()
        .zip(new.shards.iter())
        .filter(|(a, b)| !Arc::ptr_eq(a, b))
        .count();
    assert_eq!(changed, 1, "only the edited key's shard is rebuilt");
    assert_eq!(old.live_url("k00042", 0), Some("https://a.example/42"));
    assert_eq!(new.live_url("k00042", 0), Some("https://b.example/"));
    assert_eq!((old.len(), new.len()), (10_000, 10_000));
}

#[test]
fn grows_and_shrinks_by_resharding() {
    let mut t = LinkTable::default();
    for chunk in many(5_000).chunks(250) {
        t.apply(chunk.to_vec());
    }
    assert_eq!(t.len(), 5_000);
    assert!(t.shard_count() * TARGET_PER_SHARD * 2 >= 5_000);
    assert!(t.shard_count() <= 2 * shard_count_for(5_000));
    for i in (0..5_000).step_by(97) {
        assert_eq!(
            t.live_url(&format!("k{i:05}"), 0),
            Some(format!("https://a.example/{i}").as_str())
        );
    }
    t.apply((10..5_000).map(|i| Change::Delete {
        key: format!("k{i:05}"),
    }));
    assert_eq!(t.len(), 10);
    assert!(
        t.shard_count() <= 2,
        "{} shards for 10 links",
        t.shard_count()
    );
    assert_eq!(t.iter().count(), 10);
}

#[test]
fn memory_per_link_is_about_the_strings() {
    let mut b = TableBuilder::default();
    // 5-character keys and 55-character URLs, the issue's shape.
    b.apply((0..20_000).map(|i| Change::Upsert {
        key: format!("{i:05}"),
        doc: link_doc(&format!(
            "https://www.example.com/posters/spring-{i:05}-campaign/x1"
        )),
    }));
    let t = b.build(None);
    let per_link = t.heap_bytes() / t.len();
    // 60 bytes of strings plus the index; the issue's goal is 100.
    assert!(per_link < 100, "{per_link} bytes a link");
}

#[test]
fn the_builder_keeps_the_last_word_on_each_key() {
    let mut b = TableBuilder::default();
    let rejected = b.apply([
        upsert("a", json!({"url": "/1"})),
        upsert("b", json!({"url": "/1"})),
        upsert("c", json!({"url": 5})),
        upsert("a", json!({"url": "/2"})),
        Change::Delete { key: "b".into() },
        upsert("d", json!({"url": 5})),
        upsert("d", json!({"url": "/4"})),
    ]);
    assert_eq!(rejected.len(), 2);
    let t = b.build(Some(json!("7-x")));
    assert_eq!(t.live_url("a", 0), Some("/2"));
    assert_eq!(t.live_url("b", 0), None);
    assert_eq!(t.live_url("d", 0), Some("/4"));
    assert_eq!((t.len(), t.invalid_count()), (2, 1));
    assert_eq!(t.seq(), Some(&json!("7-x")));
}

/// One step of a random history: key index, and a URL (`None`: delete;
/// `Some(None)`: an invalid document).
type Step = (u8, Option<Option<u8>>);

fn change_of((k, what): Step) -> Change {
    let key = format!("key{k}");
    match what {
        None => Change::Delete { key },
        Some(None) => upsert(&key, json!({"url": "javascript:alert(1)"})),
        Some(Some(u)) => upsert(
            &key,
            json!({ "url": format!("https://a.example/{u}"), "created_at": created_at(u) }),
        ),
    }
}

/// A creation time for odd URL numbers, none (a document from before the
/// times were kept) for even ones.
fn created_at(u: u8) -> Option<String> {
    (u % 2 == 1).then(|| format!("2026-01-{:02}T00:00:00Z", u + 1))
}

proptest::proptest! {
    /// Whatever the history and however it is batched, the table answers
    /// what a plain map of the last change per key would.
    #[test]
    fn agrees_with_a_plain_map(
        steps in proptest::collection::vec((0u8..40, proptest::option::of(proptest::option::of(0u8..5))), 0..300),
        batch in 1usize..50,
    ) {
        let mut model: std::collections::HashMap<String, Option<String>> = Default::default();
        for (k, what) in &steps {
            let key = format!("key{k}");
            match what {
                None => { model.remove(&key); }
                Some(None) => { model.insert(key, None); }
                Some(Some(u)) => { model.insert(key, Some(format!("https://a.example/{u}"))); }
            }
        }
        let mut applied = LinkTable::default();
        for chunk in steps.chunks(batch) {
            applied.apply(chunk.iter().copied().map(change_of));
        }
        let mut built = TableBuilder::default();
        built.apply(steps.iter().copied().map(change_of));
        let built = built.build(None);
        let live = model.values().filter(|v| v.is_some()).count();
        for t in [&applied, &built] {
            proptest::prop_assert_eq!(t.len(), live);
            proptest::prop_assert_eq!(t.invalid_count(), model.len() - live);
            proptest::prop_assert_eq!(t.iter().count(), live);
            for k in 0u8..40 {
                let key = format!("key{k}");
                let want = model.get(&key).cloned().flatten();
                proptest::prop_assert_eq!(t.live_url(&key, 0).map(str::to_owned), want.clone());
                let created = t.get(&key).and_then(|l| l.created);
                let want_created = want.and_then(|w| w.rsplit('/').next()?.parse::<u8>().ok()).and_then(created_at);
                proptest::prop_assert_eq!(
                    created.and_then(|s| chrono::DateTime::from_timestamp(s.into(), 0)),
                    want_created.and_then(|c| crate::link::parse_expires(&c).ok())
                );
            }
        }
    }
}

#[test]
fn a_table_holds_a_write_once_it_has_applied_it() {
    let mut t = LinkTable::default();
    let v1 = json!({"url": "https://a.example/", "changed_at": "2026-01-01T00:00:00Z"});
    let doc = |v: Value| crate::link::test_document(v);
    assert!(!t.holds("abcde", &doc(v1.clone())), "not yet applied");
    t.apply([upsert("abcde", v1.clone())]);
    assert!(t.holds("abcde", &doc(v1.clone())));
    let same_url_later = json!({"url": "https://a.example/", "changed_at": "2026-01-01T00:00:01Z"});
    assert!(
        !t.holds("abcde", &doc(same_url_later.clone())),
        "a rewrite to the same destination is told apart by its time"
    );
    let disabled = json!({"url": "https://a.example/", "inactive": true});
    assert!(!t.holds("abcde", &doc(disabled.clone())));
    t.apply([upsert("abcde", disabled.clone())]);
    assert!(t.holds("abcde", &doc(disabled)));
    let tombstone = json!({"url": "https://a.example/", "inactive": true,
        "deleted_at": "2026-01-02T00:00:00Z"});
    assert!(!t.holds("abcde", &doc(tombstone.clone())));
    t.apply([upsert("abcde", tombstone.clone())]);
    assert!(
        t.holds("abcde", &doc(tombstone)),
        "a tombstone is held by its absence"
    );
    let bad = json!({"url": "javascript:alert(1)"});
    assert!(!t.holds("bad01", &doc(bad.clone())));
    t.apply([upsert("bad01", bad.clone())]);
    assert!(t.holds("bad01", &doc(bad)));
}

#[test]
fn the_builder_keeps_the_last_of_many_pushes_of_one_key() {
    let mut b = TableBuilder::default();
    b.apply((0..100).flat_map(|i| {
        [
            upsert("hot", json!({ "url": format!("https://a.example/{i}") })),
            upsert(&format!("k{i}"), json!({"url": "/x"})),
        ]
    }));
    b.apply([Change::Delete { key: "k7".into() }]);
    let t = b.build(None);
    assert_eq!(t.live_url("hot", 0), Some("https://a.example/99"));
    assert_eq!((t.len(), t.invalid_count()), (100, 0));
    assert_eq!(t.live_url("k7", 0), None);
    assert_eq!(t.live_url("k8", 0), Some("/x"));
}

/// A link as a snapshot file may hold it: any key and destination, near
/// the line of the plain shortcut, with any stored direct location.
fn read_link()
-> impl proptest::strategy::Strategy<Value = (String, String, Option<String>, bool, Option<i64>)> {
    use crate::redirect::policy::tests::{key_near_plain, url_near_plain};
    (
        key_near_plain(),
        url_near_plain(),
        proptest::option::of(proptest::prop_oneof![
            proptest::strategy::Just("//evil.example".to_owned()),
            url_near_plain()
        ]),
        proptest::bool::ANY,
        proptest::option::of(proptest::num::i64::ANY),
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// A link read back from a snapshot file is what the full recheck makes
    /// of it, whether or not the plain shortcut takes it: a rewritten file
    /// cannot slip a destination or a direct location past it.
    #[test]
    fn push_rechecked_is_the_full_recheck(
        links in proptest::collection::vec(read_link(), 1..8),
    ) {
        let mut fast = TableBuilder::default();
        let mut full = TableBuilder::default();
        for (key, url, direct, inactive, expires_ms) in &links {
            let read = LinkView {
                key,
                url,
                inactive: *inactive,
                expires_ms: *expires_ms,
                direct: direct.as_deref(),
                created: Some(7),
                changed: None,
                fallback: None,
                rules: None,
            };
            let texts = crate::snapshot::Texts::new(Some(url), None);
            fast.push_rechecked(&read, texts, None);
            match LiveLink::recheck(&read, texts, None) {
                Ok(link) => full.push_live_with(key, &link.view(key), link.texts()),
                Err(reason) => full.push_invalid(key, reason),
            }
        }
        let (fast, full) = (fast.build(None), full.build(None));
        proptest::prop_assert_eq!(fast.len(), full.len());
        for (key, ..) in &links {
            proptest::prop_assert_eq!(fast.get(key), full.get(key), "{}", key);
            proptest::prop_assert_eq!(fast.texts(key), full.texts(key), "{}", key);
        }
        let mut a: Vec<_> = fast.invalid().collect();
        let mut b: Vec<_> = full.invalid().collect();
        a.sort_unstable();
        b.sort_unstable();
        proptest::prop_assert_eq!(a, b);
    }

    /// A stored row judged from its JSON text (with the plain shortcut) is
    /// judged as its parsed document is: the same link, or the same reason.
    #[test]
    fn push_json_is_the_parsed_document(
        key in crate::redirect::policy::tests::key_near_plain(),
        url in proptest::option::of(crate::redirect::policy::tests::url_near_plain()),
        inactive in proptest::prop_oneof![
            proptest::strategy::Just(None),
            proptest::strategy::Just(Some(json!(true))),
            proptest::strategy::Just(Some(json!(false))),
            proptest::strategy::Just(Some(json!("yes"))),
        ],
        expires in proptest::prop_oneof![
            proptest::strategy::Just(None),
            proptest::strategy::Just(Some(json!("2030-01-01T00:00:00Z"))),
            proptest::strategy::Just(Some(json!("soon"))),
        ],
        created in proptest::option::of(proptest::prop_oneof![
            proptest::strategy::Just(json!("2026-01-01T00:00:00Z")),
            proptest::strategy::Just(json!("yesterday")),
        ]),
        deleted in proptest::bool::ANY,
        // Issue 34: none, null, good and refused rules.
        rules in proptest::prop_oneof![
            proptest::strategy::Just(None),
            proptest::strategy::Just(Some(json!(null))),
            proptest::strategy::Just(Some(json!([{"url": "https://b.example/", "os": ["ios"]}]))),
            proptest::strategy::Just(Some(json!([{"url": "https://b.example/"}]))),
        ],
    ) {
        let mut doc = serde_json::Map::new();
        if let Some(url) = url {
            doc.insert("url".into(), json!(url));
        }
        for (name, value) in [("inactive", inactive), ("expires", expires), ("created_at", created), ("rules", rules)] {
            if let Some(value) = value {
                doc.insert(name.into(), value);
            }
        }
        if deleted {
            doc.insert("deleted_at".into(), json!("2026-01-02T00:00:00Z"));
        }
        let text = Value::Object(doc.clone()).to_string();
        let mut from_text = TableBuilder::default();
        let reason = from_text.push_json(&key, &text);
        let mut from_doc = TableBuilder::default();
        let rejected = from_doc.apply([Change::Upsert { key: key.clone(), doc: crate::link::test_document(Value::Object(doc)) }]);
        proptest::prop_assert_eq!(reason, rejected.into_iter().next().map(|(_, r)| r));
        let (a, b) = (from_text.build(None), from_doc.build(None));
        proptest::prop_assert_eq!(a.get(&key), b.get(&key));
        proptest::prop_assert_eq!(a.invalid_count(), b.invalid_count());
    }
}

/// Issue 30: a stored document whose key is longer than any key may be
/// (written before the bound, or straight to the store) is an invalid
/// document on every way in (a full load's JSON rows, a batch of changes,
/// a snapshot file read back), never a served link nor a failed load.
#[test]
fn an_over_long_stored_key_is_an_invalid_document() {
    let long = vec!["k".repeat(64); 5].join("/");
    let long = &long[..crate::values::link_key::MAX_KEY_LEN + 1];
    let longest = &long[..crate::values::link_key::MAX_KEY_LEN];
    let mut b = TableBuilder::default();
    assert!(
        b.push_json("good1", r#"{"url":"https://a.example/"}"#)
            .is_none()
    );
    let reason = b
        .push_json(long, r#"{"url":"https://a.example/"}"#)
        .expect("refused");
    assert!(reason.contains("at most 256"), "{reason}");
    assert!(
        b.push_json(longest, r#"{"url":"https://a.example/"}"#)
            .is_none()
    );
    let t = b.build(None);
    assert_eq!((t.len(), t.invalid_count()), (2, 1));
    assert_eq!(t.live_url(long, 0), None);
    assert_eq!(t.live_url(longest, 0), Some("https://a.example/"));

    let mut t2 = LinkTable::default();
    let rejected = t2.apply([upsert(long, json!({"url": "https://a.example/"}))]);
    assert_eq!(rejected.len(), 1);
    assert_eq!(t2.len(), 0);

    // A snapshot file written by a build that had no bound.
    let view = LinkView {
        key: long,
        url: "https://a.example/",
        inactive: false,
        expires_ms: None,
        direct: Some("https://a.example/"),
        created: None,
        changed: None,
        fallback: None,
        rules: None,
    };
    let mut b = TableBuilder::default();
    b.push_rechecked(&view, crate::snapshot::Texts::default(), None);
    let t3 = b.build(None);
    assert_eq!((t3.len(), t3.invalid_count()), (0, 1));
}

/// A full load holds one item per link until the table is built: the
/// fallback's length sits in padding (it costs an item nothing), the
/// title's and the notes' lengths take 8 bytes (issue 33: 104 bytes on
/// 64-bit targets before them, 112 with them; the items are freed once the
/// table is built).
#[test]
#[cfg(target_pointer_width = "64")]
fn a_loading_item_is_112_bytes() {
    assert_eq!(size_of::<super::Item>(), 112);
}

// Issue 34: rules in the table. ---------------------------------------------

fn with_rules(url: &str, rules: Value) -> Change {
    upsert("smart", json!({"url": url, "rules": rules}))
}

fn ios_rule() -> Value {
    json!([{"url": "https://apps.apple.com/app/id1", "os": ["ios", "ipados"]},
           {"url": "https://example.com/de", "lang": ["de"]}])
}

#[test]
fn a_link_with_rules_has_them_compiled_and_no_direct_location() {
    for load in ["apply", "builder", "json"] {
        let change = with_rules("https://example.com/", ios_rule());
        let t = match load {
            "apply" => {
                let mut t = LinkTable::default();
                assert!(t.apply([change]).is_empty());
                t
            }
            "builder" => {
                let mut b = TableBuilder::default();
                assert!(b.apply([change]).is_empty());
                b.build(None)
            }
            _ => {
                let Change::Upsert { doc, .. } = change else {
                    unreachable!()
                };
                let mut b = TableBuilder::default();
                let text = serde_json::to_string(&doc).expect("json");
                assert_eq!(b.push_json("smart", &text), None);
                b.build(None)
            }
        };
        let link = t.get("smart").expect("served");
        let rules = link.rules.expect("compiled rules");
        assert_eq!(rules.len(), 2, "{load}");
        assert_eq!(
            rules.url(0).map(|d| d.as_str()),
            Some("https://apps.apple.com/app/id1")
        );
        assert_eq!(link.direct, None, "{load}: no precomputed answer");
        assert!(rules.url_is_direct(), "{load}: url judged once, kept");
        assert_eq!(t.direct_location("smart", 0, "https://0x1f.ie"), None);
        assert_eq!(t.live_url("smart", 0), Some("https://example.com/"));
        assert_eq!(t.invalid_count(), 0);
    }
}

/// The `url` of a link with rules is judged when loaded: its own answer
/// to `/KEY` only where a link without rules would have it as its direct
/// location.
#[test]
fn a_link_with_rules_knows_whether_its_url_is_its_own_answer() {
    for (url, direct) in [
        ("https://example.com/", true),
        ("https://example.com/a?q=1", true),
        // Internal: another link's answer.
        ("/elsewhere", false),
        // Not in normal form: the resolver's answer differs from the text.
        ("https://example.com", false),
    ] {
        let mut t = LinkTable::default();
        assert!(t.apply([with_rules(url, ios_rule())]).is_empty(), "{url}");
        let rules = t.get("smart").and_then(|l| l.rules).expect("rules");
        assert_eq!(rules.url_is_direct(), direct, "{url}");
    }
}

#[test]
fn rules_that_do_not_parse_serve_the_url_and_are_counted() {
    let bad = json!([{"url": "https://a.example/x", "hours": ["11:00", "25:00"], "tz": "UTC"}]);
    // An edit to a live link.
    let mut t = LinkTable::default();
    t.apply([with_rules("https://example.com/", ios_rule())]);
    let rejected = t.apply([with_rules("https://example.com/", bad.clone())]);
    assert_eq!(rejected.len(), 1);
    assert!(rejected[0].1.contains("rules[0].hours"), "{rejected:?}");
    assert_eq!(t.live_url("smart", 0), Some("https://example.com/"));
    let link = t.get("smart").expect("served");
    assert!(link.rules.is_none());
    assert_eq!(
        link.direct,
        Some("https://example.com/"),
        "served as a plain link"
    );
    assert_eq!(t.invalid_count(), 1);
    assert!(
        t.invalid()
            .any(|(k, r)| k == "smart" && r.contains("rules[0].hours"))
    );
    // Fixed: no longer counted.
    t.apply([with_rules("https://example.com/", ios_rule())]);
    assert_eq!(t.invalid_count(), 0);
    assert!(t.get("smart").and_then(|l| l.rules).is_some());

    // A full load, from documents and from JSON rows.
    let mut b = TableBuilder::default();
    assert_eq!(
        b.apply([with_rules("https://example.com/", bad.clone())])
            .len(),
        1
    );
    let mut rows = TableBuilder::default();
    let text = json!({"url": "https://example.com/", "rules": bad}).to_string();
    let reason = rows.push_json("smart", &text).expect("a reason");
    assert!(reason.contains("rules[0].hours"), "{reason}");
    for t in [b.build(None), rows.build(None)] {
        assert_eq!(t.live_url("smart", 0), Some("https://example.com/"));
        assert_eq!((t.len(), t.invalid_count()), (1, 1));
    }
}

#[test]
fn a_table_holds_a_write_with_rules() {
    let mut t = LinkTable::default();
    let doc =
        crate::link::test_document(json!({"url": "https://example.com/", "rules": ios_rule()}));
    assert!(!t.holds("smart", &doc));
    t.apply([with_rules("https://example.com/", ios_rule())]);
    assert!(t.holds("smart", &doc));
    let other = crate::link::test_document(
        json!({"url": "https://example.com/", "rules": [ios_rule()[0].clone()]}),
    );
    assert!(!t.holds("smart", &other), "other rules are another write");
}
