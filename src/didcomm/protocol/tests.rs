use super::*;
use crate::didcomm::message::parse;
use serde_json::json;

const REQ: &str = "https://didcomm.org/shorten-url/1.0/request-shortened-url";
const INV: &str = "https://didcomm.org/shorten-url/1.0/invalidate-shortened-url";

fn public() -> PublicUrl {
    PublicUrl::parse("https://0x1f.ie").expect("url")
}

fn now() -> DateTime<Utc> {
    crate::link::parse_expires("2026-11-24T05:00:00Z").expect("time")
}

fn alice() -> Did {
    Did::parse("did:peer:2.Ez6LSalice").expect("did")
}

fn policy() -> Policy {
    Policy {
        slugs: true,
        allow: vec![alice()],
        ..Policy::default()
    }
}

fn v2(body: Value) -> Incoming {
    parse(&json!({"type": REQ, "id": "req-1", "body": body})).expect("v2 message")
}

fn v1(mut fields: Value) -> Incoming {
    fields["@type"] = json!(REQ);
    fields["@id"] = json!("req-1");
    parse(&fields).expect("v1 message")
}

fn service() -> Did {
    Did::parse("did:peer:2.Ez6LSservice").expect("did")
}

fn run(msg: &Incoming, caller: &Caller, policy: &Policy, existing: Option<&Document>) -> Step {
    run_as(msg, caller, policy, existing, false)
}

fn run_as(
    msg: &Incoming,
    caller: &Caller,
    policy: &Policy,
    existing: Option<&Document>,
    repeat: bool,
) -> Step {
    let public = public();
    let service = service();
    let ctx = Context {
        public_url: &public,
        now: now(),
        policy,
        reply_id: "reply-1",
        service_did: &service,
        repeat,
    };
    decide(msg, caller, &ctx, existing)
}

#[test]
fn expired_misaddressed_and_repeated_messages_are_refused() {
    let at = now().timestamp();
    let body = json!({"url": "https://a.example", "goal_code": "shorten"});
    let msg = |extra: Value| {
        let mut m = json!({"type": REQ, "id": "req-1", "body": body});
        for (k, v) in extra.as_object().expect("object") {
            m[k] = v.clone();
        }
        parse(&m).expect("v2 message")
    };
    let caller = Caller::Did(alice());
    let refused = |m: &Incoming, repeat| match run_as(m, &caller, &policy(), None, repeat) {
        Step::Refuse(r) => Some(r),
        _ => None,
    };
    let ok = [
        json!({}),
        json!({"to": [service().as_str()]}),
        json!({"to": [format!("{}#key-1", service())]}),
        json!({"expires_time": at + 1, "created_time": at - 3500}),
        json!({"created_time": at + 60}),
    ];
    for extra in ok {
        assert_eq!(refused(&msg(extra.clone()), false), None, "{extra}");
    }
    let cases = [
        (json!({"expires_time": 1}), Refusal::Expired),
        (json!({"expires_time": at}), Refusal::Expired),
        (json!({"created_time": at - 3601}), Refusal::Expired),
        (json!({"created_time": at + 301}), Refusal::Expired),
        (json!({"to": ["did:peer:2.Ez6LSother"]}), Refusal::NotForUs),
        (json!({"to": []}), Refusal::NotForUs),
    ];
    for (extra, want) in cases {
        assert_eq!(refused(&msg(extra.clone()), false), Some(want), "{extra}");
    }
    assert_eq!(refused(&msg(json!({})), true), Some(Refusal::Repeat));
}

/// The problem code a step reports, in either version's spelling.
fn code(step: &Step) -> Option<String> {
    match step {
        Step::Reply(m) => m["body"]["code"]
            .as_str()
            .map(|c| c.trim_start_matches("e.p.msg.").to_owned())
            .or_else(|| m["description"]["code"].as_str().map(str::to_owned)),
        _ => None,
    }
}

fn plan(step: Step) -> CreatePlan {
    match step {
        Step::Create(p) => p,
        other => panic!("expected a link to create, got {other:?}"),
    }
}

fn doc(v: Value) -> Document {
    v.as_object().cloned().expect("object")
}

#[test]
fn shortens_in_v2_with_thread_expiry_and_provenance() {
    let msg = v2(
        json!({"url": "https://example.com/a?b=1", "goal_code": "shorten", "requested_validity_seconds": 60}),
    );
    let p = plan(run(&msg, &Caller::Did(alice()), &policy(), None));
    assert_eq!(p.key, None);
    assert_eq!(p.doc["url"], "https://example.com/a?b=1");
    assert_eq!(p.doc["inactive"], false);
    assert_eq!(p.doc["expires"], "2026-11-24T05:01:00Z");
    assert_eq!(p.doc["created_by"], alice().as_str());
    assert_eq!(p.doc["goal_code"], "shorten");
    assert_eq!(p.doc["thid"], "req-1");
    let key = LinkKey::parse("aZ3k9").expect("key");
    let reply = p.reply(&key, &public());
    assert_eq!(
        reply,
        json!({
            "type": "https://didcomm.org/shorten-url/1.0/shortened-url",
            "id": "reply-1",
            "thid": "req-1",
            "body": {"shortened_url": "https://0x1f.ie/aZ3k9", "expires_time": now().timestamp() + 60}
        })
    );
    assert!(Link::from_document(&p.doc).is_ok(), "a valid link document");
}

#[test]
fn shortens_in_v1_for_the_token_holder_without_expiry() {
    let msg = v1(
        json!({"url": "https://example.com/", "goal_code": "shorten", "requested_validity_seconds": "0", "~thread": {"thid": "t-9"}}),
    );
    let p = plan(run(&msg, &Caller::Token, &Policy::default(), None));
    assert!(!p.doc.contains_key("expires"));
    assert_eq!(p.doc["created_by"], "token");
    assert_eq!(p.doc["thid"], "t-9", "the document records the thread");
    let reply = p.reply(&LinkKey::parse("k1").expect("key"), &public());
    assert_eq!(
        reply,
        json!({
            "@type": "https://didcomm.org/shorten-url/1.0/shortened-url",
            "@id": "reply-1",
            "~thread": {"thid": "req-1"},
            "shortened_url": "https://0x1f.ie/k1"
        })
    );
}

#[test]
fn default_and_maximum_validity() {
    let mut pol = policy();
    pol.default_validity = 30;
    let msg = v2(json!({"url": "https://e.example/", "goal_code": "shorten"}));
    let p = plan(run(&msg, &Caller::Token, &pol, None));
    assert_eq!(p.doc["expires"], "2026-11-24T05:00:30Z");

    pol.max_validity = Some(100);
    pol.default_validity = 0;
    let p = plan(run(&msg, &Caller::Token, &pol, None));
    assert_eq!(
        p.doc["expires"], "2026-11-24T05:01:40Z",
        "no default under a maximum: the maximum"
    );

    for asked in [json!(101), json!(0), json!("5000")] {
        let msg = v2(
            json!({"url": "https://e.example/", "goal_code": "shorten", "requested_validity_seconds": asked}),
        );
        let step = run(&msg, &Caller::Token, &pol, None);
        assert_eq!(code(&step).as_deref(), Some("validity_too_long"), "{asked}");
        let Step::Reply(m) = step else { unreachable!() };
        assert_eq!(
            m["body"]["problem_items"],
            json!([{"max_validity_seconds": 100}])
        );
        assert_eq!(m["thid"], "req-1");
    }
    let msg = v2(
        json!({"url": "https://e.example/", "goal_code": "shorten", "requested_validity_seconds": 100}),
    );
    assert!(matches!(
        run(&msg, &Caller::Token, &pol, None),
        Step::Create(_)
    ));
    let msg = v2(
        json!({"url": "https://e.example/", "goal_code": "shorten", "requested_validity_seconds": u64::MAX}),
    );
    assert_eq!(
        code(&run(&msg, &Caller::Token, &policy(), None)).as_deref(),
        Some("validity_too_long")
    );
}

#[test]
fn url_problems() {
    let cases = [
        (json!(null), "invalid_url"),
        (json!("example.com/x"), "invalid_url"),
        (json!("/relative"), "invalid_url"),
        (json!("http://"), "invalid_url"),
        (json!("wss://ws.example/"), "invalid_protocol_scheme"),
        (json!("didcomm://invite?oob=x"), "invalid_protocol_scheme"),
        (json!("javascript:alert(1)"), "invalid_protocol_scheme"),
        (json!("ftp://files.example/"), "invalid_protocol_scheme"),
    ];
    for (url, want) in cases {
        let msg = v2(json!({"url": url, "goal_code": "shorten"}));
        assert_eq!(
            code(&run(&msg, &Caller::Token, &policy(), None)).as_deref(),
            Some(want),
            "{url}"
        );
    }
}

#[test]
fn a_url_over_the_cap_is_refused_naming_the_cap() {
    let long = format!(
        "https://e.example/{}",
        "x".repeat(crate::values::destination::MAX_DESTINATION)
    );
    let msg = v2(json!({"url": long, "goal_code": "shorten"}));
    let step = run(&msg, &Caller::Token, &policy(), None);
    assert_eq!(code(&step).as_deref(), Some("invalid_url"));
    let Step::Reply(m) = step else {
        unreachable!("a problem reply")
    };
    let said = m.to_string();
    assert!(said.contains("at most 8192 bytes"), "{said}");
    assert!(said.len() < 2000, "the URL is not echoed");
}

#[test]
fn goal_codes() {
    for goal in [json!(null), json!("shorten.oobv3"), json!("")] {
        let msg = v2(json!({"url": "https://e.example/", "goal_code": goal}));
        assert_eq!(
            code(&run(&msg, &Caller::Token, &policy(), None)).as_deref(),
            Some("invalid_goal_code")
        );
    }
    let msg = v2(json!({"url": "https://e.example/?x=1", "goal_code": "shorten.oobv1"}));
    assert_eq!(
        code(&run(&msg, &Caller::Token, &policy(), None)).as_deref(),
        Some("invalid_url")
    );
    let msg = v2(json!({"url": "https://e.example/?oob=eyJ9", "goal_code": "shorten.oobv2"}));
    assert_eq!(
        code(&run(&msg, &Caller::Token, &policy(), None)).as_deref(),
        Some("invalid_url")
    );
    let msg = v1(json!({"url": "https://e.example/?oob=eyJ9", "goal_code": "shorten.oobv1"}));
    assert!(matches!(
        run(&msg, &Caller::Token, &policy(), None),
        Step::Create(_)
    ));

    use base64::Engine;
    let inv = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        r#"{"type":"https://didcomm.org/out-of-band/2.0/invitation","id":"inv-7","body":{}}"#,
    );
    let msg =
        v2(json!({"url": format!("https://e.example/?_oob={inv}"), "goal_code": "shorten.oobv2"}));
    let p = plan(run(&msg, &Caller::Token, &policy(), None));
    let reply = p.reply(&LinkKey::parse("k2").expect("key"), &public());
    assert_eq!(
        reply["body"]["shortened_url"],
        "https://0x1f.ie/k2?_oobid=inv-7"
    );
    let msg = v2(json!({"url": "https://e.example/?_oob=notjson", "goal_code": "shorten.oobv2"}));
    let p = plan(run(&msg, &Caller::Token, &policy(), None));
    let reply = p.reply(&LinkKey::parse("k2").expect("key"), &public());
    assert_eq!(
        reply["body"]["shortened_url"],
        "https://0x1f.ie/k2?_oobid=req-1"
    );
}

#[test]
fn slugs() {
    let with = |slug: &str| {
        v2(json!({"url": "https://e.example/", "goal_code": "shorten", "short_url_slug": slug}))
    };
    let p = plan(run(&with("invite-28"), &Caller::Token, &policy(), None));
    assert_eq!(p.key.as_ref().map(LinkKey::as_str), Some("invite-28"));
    for bad in ["has space", "_under", "a//b", "ü"] {
        let step = run(&with(bad), &Caller::Token, &policy(), None);
        assert_eq!(code(&step).as_deref(), Some("invalid_slug"), "{bad}");
    }
    let taken = doc(json!({"url": "https://x.example/", "inactive": true}));
    let step = run(&with("invite-28"), &Caller::Token, &policy(), Some(&taken));
    assert_eq!(code(&step).as_deref(), Some("invalid_slug"));
    let Step::Reply(m) = step else { unreachable!() };
    assert!(
        m["body"]["comment"]
            .as_str()
            .is_some_and(|c| c.contains("taken"))
    );
    assert_eq!(
        code(&Step::Reply(p.slug_taken())).as_deref(),
        Some("invalid_slug")
    );
    let no_slugs = Policy {
        slugs: false,
        ..policy()
    };
    assert_eq!(
        code(&run(&with("invite-28"), &Caller::Token, &no_slugs, None)).as_deref(),
        Some("slugs_not_supported")
    );
    assert_eq!(
        key_of_interest(&with("invite-28"), &public()).map(|k| k.as_str().to_owned()),
        Some("invite-28".into())
    );
}

#[test]
fn who_may_request() {
    let msg = v1(json!({"url": "https://e.example/", "goal_code": "shorten"}));
    let stranger = Caller::Did(Did::parse("did:peer:2.Ez6LSmallory").expect("did"));
    let step = run(&msg, &stranger, &policy(), None);
    assert_eq!(code(&step).as_deref(), Some("unauthorized"));
    let Step::Reply(m) = step else { unreachable!() };
    assert_eq!(
        m["@type"],
        "https://didcomm.org/report-problem/1.0/problem-report"
    );
    assert_eq!(m["~thread"]["thid"], "req-1");
    let any = Policy {
        allow_any: true,
        ..policy()
    };
    assert!(matches!(run(&msg, &stranger, &any, None), Step::Create(_)));
    assert!(matches!(
        run(&msg, &Caller::Did(alice()), &policy(), None),
        Step::Create(_)
    ));
    assert!(matches!(
        run(&msg, &Caller::Token, &Policy::default(), None),
        Step::Create(_)
    ));
}

fn invalidate_v2(url: &str) -> Incoming {
    parse(&json!({"type": INV, "id": "inv-1", "body": {"shortened_url": url}})).expect("msg")
}

#[test]
fn invalidation_by_owner_admin_and_stranger() {
    let link = doc(
        json!({"url": "https://e.example/", "inactive": false, "created_by": alice().as_str()}),
    );
    let msg = invalidate_v2("https://0x1f.ie/aZ3k9");
    assert_eq!(
        key_of_interest(&msg, &public()).map(|k| k.as_str().to_owned()),
        Some("aZ3k9".into())
    );

    let Step::Invalidate(p) = run(&msg, &Caller::Did(alice()), &policy(), Some(&link)) else {
        panic!("owner may invalidate")
    };
    assert_eq!(p.key.as_str(), "aZ3k9");
    assert_eq!(
        p.ack,
        json!({"type": "https://didcomm.org/empty/1.0/empty", "id": "reply-1", "thid": "inv-1", "ack": ["inv-1"], "body": {}})
    );
    let mut edited = link.clone();
    p.apply(&mut edited);
    assert_eq!(edited["inactive"], true);
    assert_eq!(edited["invalidated_by"], alice().as_str());
    assert_eq!(edited["invalidated_at"], "2026-11-24T05:00:00Z");
    assert_eq!(edited["url"], "https://e.example/");

    let admin = Did::parse("did:peer:2.Ez6LSadmin").expect("did");
    let pol = Policy {
        admins: vec![admin.clone()],
        ..policy()
    };
    assert!(matches!(
        run(&msg, &Caller::Did(admin), &pol, Some(&link)),
        Step::Invalidate(_)
    ));

    let stranger = Caller::Did(Did::parse("did:peer:2.Ez6LSmallory").expect("did"));
    assert_eq!(
        code(&run(&msg, &stranger, &pol, Some(&link))).as_deref(),
        Some("rejected_invalidation")
    );
    assert_eq!(
        code(&run(&msg, &Caller::Token, &pol, Some(&link))).as_deref(),
        Some("rejected_invalidation")
    );

    let by_token = doc(json!({"url": "https://e.example/", "created_by": "token"}));
    let v1msg =
        parse(&json!({"@type": INV, "@id": "inv-2", "shortened_url": "https://0x1f.ie/aZ3k9"}))
            .expect("v1");
    let Step::Invalidate(p) = run(&v1msg, &Caller::Token, &policy(), Some(&by_token)) else {
        panic!("token holder invalidates its own")
    };
    assert_eq!(
        p.ack,
        json!({"@type": "https://didcomm.org/notification/1.0/ack", "@id": "reply-1", "status": "OK", "~thread": {"thid": "inv-2"}})
    );
}

#[test]
fn short_url_invalid() {
    let owner = Caller::Did(alice());
    let live = doc(json!({"url": "https://e.example/", "created_by": alice().as_str()}));
    let gone =
        doc(json!({"url": "https://e.example/", "inactive": true, "created_by": alice().as_str()}));
    let expired = doc(
        json!({"url": "https://e.example/", "expires": "2026-11-24T04:59:59Z", "created_by": alice().as_str()}),
    );
    let cases: [(&str, Option<&Document>); 7] = [
        ("https://0x1f.ie/aZ3k9", None),
        ("https://0x1f.ie/aZ3k9", Some(&gone)),
        ("https://0x1f.ie/aZ3k9", Some(&expired)),
        ("https://other.example/aZ3k9", Some(&live)),
        ("not a url", Some(&live)),
        ("https://0x1f.ie/", Some(&live)),
        ("https://0x1f.ie/a b", Some(&live)),
    ];
    for (url, existing) in cases {
        let step = run(&invalidate_v2(url), &owner, &policy(), existing);
        assert_eq!(code(&step).as_deref(), Some("short_url_invalid"), "{url}");
    }
    let missing = parse(&json!({"type": INV, "id": "x", "body": {}})).expect("msg");
    assert_eq!(
        code(&run(&missing, &owner, &policy(), Some(&live))).as_deref(),
        Some("short_url_invalid")
    );
}
