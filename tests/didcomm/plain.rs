//! Plaintext DIDComm (v1 JSON and v2 plain) with the bearer token, and what
//! the listener does with bodies that are not messages.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;
use crate::support::header;

#[tokio::test]
async fn v1_with_the_token_makes_a_link_that_redirects_and_records_its_origin() {
    let app = spawn_didcomm(|_| {}).await;
    let msg = json!({
        "@type": REQUEST,
        "@id": "v1-req-1",
        "url": "https://example.com/invite?oob=eyJ9",
        "goal_code": "shorten.oobv1",
        "requested_validity_seconds": 0,
        "~transport": {"return_route": "all"}
    });
    let r = post(&app, "application/json", msg.to_string(), Some(TOKEN)).await;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(header(&r, "content-type"), Some("application/json"));
    let reply: Value = r.json().await.expect("json");
    assert_eq!(
        reply["@type"],
        "https://didcomm.org/shorten-url/1.0/shortened-url"
    );
    assert_eq!(reply["~thread"]["thid"], "v1-req-1");
    assert!(reply.get("expires_time").is_none(), "validity 0: no expiry");
    let short = reply["shortened_url"].as_str().expect("shortened_url");
    let key = key_of(short);

    app.wait_for_status(&format!("/{key}"), 302).await;
    let r = app.get(&format!("/{key}")).await;
    assert_eq!(
        header(&r, "location"),
        Some("https://example.com/invite?oob=eyJ9")
    );

    let out = app.cli(&["show", &key]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("show prints JSON");
    assert_eq!(doc["created_by"], "token");
    assert_eq!(doc["goal_code"], "shorten.oobv1");
    assert_eq!(doc["thid"], "v1-req-1");
    // Issue 33: the surface beside the times.
    assert_eq!(
        (&doc["created_via"], &doc["changed_via"]),
        (&json!("didcomm"), &json!("didcomm"))
    );

    // The token holder invalidates it: v1 ack, then 404, then short_url_invalid.
    let inv = json!({"@type": INVALIDATE, "@id": "v1-inv-1", "shortened_url": short});
    let r = post(&app, "application/json", inv.to_string(), Some(TOKEN)).await;
    let ack: Value = r.json().await.expect("json");
    assert_eq!(ack["@type"], "https://didcomm.org/notification/1.0/ack");
    assert_eq!(ack["status"], "OK");
    assert_eq!(ack["~thread"]["thid"], "v1-inv-1");
    app.wait_for_status(&format!("/{key}"), 404).await;
    let doc: Value = serde_json::from_slice(&app.cli(&["show", &key]).stdout).expect("json");
    assert_eq!(
        (doc["inactive"].as_bool(), doc["invalidated_by"].as_str()),
        (Some(true), Some("token"))
    );
    assert_eq!(doc["changed_via"], "didcomm", "{doc}");
    let r = post(&app, "application/json", inv.to_string(), Some(TOKEN)).await;
    let again: Value = r.json().await.expect("json");
    assert_eq!(problem_code(&again), Some("short_url_invalid"));
}

#[tokio::test]
async fn plaintext_needs_the_token() {
    let app = spawn_didcomm(|_| {}).await;
    let msg = request_v2(
        "r",
        json!({"url": "https://e.example/", "goal_code": "shorten"}),
    )
    .to_string();
    for token in [None, Some("wrong"), Some("test-token-7f3")] {
        let r = post(&app, "application/didcomm-plain+json", msg.clone(), token).await;
        assert_eq!(r.status().as_u16(), 401, "{token:?}");
        assert_eq!(header(&r, "www-authenticate"), Some("Bearer"));
        let body = r.text().await.expect("body");
        assert_eq!(body.lines().count(), 1, "{body}");
        assert!(!body.contains(TOKEN));
    }
    let reply = plain_v2(&app, serde_json::from_str(&msg).expect("json")).await;
    assert_eq!(
        reply["type"],
        "https://didcomm.org/shorten-url/1.0/shortened-url"
    );
    assert_eq!(reply["thid"], "r");
}

#[tokio::test]
async fn bad_bodies_get_one_line_4xx_answers() {
    let app = spawn_didcomm(|_| {}).await;
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(70 * 1024));
    let cases: Vec<(&str, String, Option<&str>, u16)> = vec![
        ("application/json", "{not json".into(), Some(TOKEN), 400),
        ("application/json", "".into(), Some(TOKEN), 400),
        ("application/json", "[1,2]".into(), Some(TOKEN), 400),
        ("application/json", "\u{0}\u{1}".into(), Some(TOKEN), 400),
        ("text/plain", "{}".into(), Some(TOKEN), 415),
        ("application/xml", "<x/>".into(), Some(TOKEN), 415),
        (
            "application/json",
            json!({"@type": "https://didcomm.org/trust_ping/1.0/ping", "@id": "p"}).to_string(),
            Some(TOKEN),
            400,
        ),
        (
            "application/didcomm-plain+json",
            json!({"type": REQUEST, "body": {}}).to_string(),
            Some(TOKEN),
            400,
        ),
        (
            "application/didcomm-plain+json",
            json!({"type": REQUEST, "id": "x", "body": {"requested_validity_seconds": "soon"}})
                .to_string(),
            Some(TOKEN),
            400,
        ),
        ("application/didcomm-encrypted+json", "{}".into(), None, 400),
        (
            "application/didcomm-encrypted+json",
            json!({"protected": "e30", "recipients": [], "iv": "", "ciphertext": "", "tag": ""})
                .to_string(),
            None,
            400,
        ),
        ("application/json", big, Some(TOKEN), 413),
    ];
    for (media, body, token, want) in cases {
        let shown: String = body.chars().take(60).collect();
        let r = post(&app, media, body, token).await;
        assert_eq!(r.status().as_u16(), want, "{media} {shown}");
        let text = r.text().await.expect("body");
        assert!(text.lines().count() <= 1, "{text}");
    }
    let r = app.client.get(api_url(&app)).send().await.expect("GET");
    assert_eq!(r.status().as_u16(), 404);
    let r = app
        .client
        .post(api_url(&app))
        .body("{}")
        .send()
        .await
        .expect("no content type");
    assert_eq!(r.status().as_u16(), 415);
    // Still serving.
    let reply = plain_v2(
        &app,
        request_v2(
            "after",
            json!({"url": "https://e.example/", "goal_code": "shorten"}),
        ),
    )
    .await;
    assert!(reply["body"]["shortened_url"].is_string());
}

#[tokio::test]
async fn every_request_problem_code_over_http() {
    let app = spawn_didcomm(|p| p.max_validity = Some(3600)).await;
    app.link("taken", "https://x.example/").await;
    let cases = [
        (
            json!({"url": "https://e.example/", "goal_code": "shorten", "requested_validity_seconds": 7200}),
            "validity_too_long",
        ),
        (
            json!({"url": "https://e.example/", "goal_code": "shorten", "requested_validity_seconds": 0}),
            "validity_too_long",
        ),
        (
            json!({"url": "e.example/x", "goal_code": "shorten"}),
            "invalid_url",
        ),
        (
            json!({"url": "https://e.example/?x=1", "goal_code": "shorten.oobv1"}),
            "invalid_url",
        ),
        (
            json!({"url": "https://e.example/?oob=1", "goal_code": "shorten.oobv2"}),
            "invalid_url",
        ),
        (
            json!({"url": "wss://e.example/", "goal_code": "shorten"}),
            "invalid_protocol_scheme",
        ),
        (
            json!({"url": "javascript:alert(1)", "goal_code": "shorten"}),
            "invalid_protocol_scheme",
        ),
        (
            json!({"url": "https://e.example/", "goal_code": "shorten.qr"}),
            "invalid_goal_code",
        ),
        (
            json!({"url": "https://e.example/", "goal_code": "shorten", "short_url_slug": "a b"}),
            "invalid_slug",
        ),
        (
            json!({"url": "https://e.example/", "goal_code": "shorten", "short_url_slug": "taken"}),
            "invalid_slug",
        ),
    ];
    for (body, want) in cases {
        let reply = plain_v2(&app, request_v2("p1", body.clone())).await;
        assert_eq!(
            reply["type"], "https://didcomm.org/report-problem/2.0/problem-report",
            "{body}"
        );
        assert_eq!(problem_code(&reply), Some(want), "{body}");
        assert_eq!(reply["thid"], "p1");
        assert!(
            reply["body"]["comment"]
                .as_str()
                .is_some_and(|c| !c.is_empty())
        );
        if want == "validity_too_long" {
            assert_eq!(
                reply["body"]["problem_items"],
                json!([{"max_validity_seconds": 3600}])
            );
        }
    }
    // A free slug becomes the key; the same slug again is taken.
    let body = json!({"url": "https://e.example/s", "goal_code": "shorten", "short_url_slug": "my-invite"});
    let reply = plain_v2(&app, request_v2("s1", body.clone())).await;
    assert_eq!(reply["body"]["shortened_url"], "https://0x1f.ie/my-invite");
    assert!(
        reply["body"]["expires_time"].is_i64(),
        "the maximum applies by default"
    );
    let reply = plain_v2(&app, request_v2("s2", body.clone())).await;
    assert_eq!(problem_code(&reply), Some("invalid_slug"));
    // A deleted link's slug stays taken: its tombstone keeps the key.
    let key = qrtag::values::link_key::LinkKey::parse("my-invite").expect("key");
    qrtag::links::delete(
        &app.store(),
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &key,
    )
    .await
    .expect("delete");
    let reply = plain_v2(&app, request_v2("s3", body)).await;
    assert_eq!(problem_code(&reply), Some("invalid_slug"));
    // Invalidation of what does not exist.
    let inv =
        json!({"type": INVALIDATE, "id": "i1", "body": {"shortened_url": "https://0x1f.ie/nope1"}});
    assert_eq!(
        problem_code(&plain_v2(&app, inv).await),
        Some("short_url_invalid")
    );
}

#[tokio::test]
async fn slugs_can_be_turned_off() {
    let app = spawn_didcomm(|p| p.slugs = false).await;
    let body =
        json!({"url": "https://e.example/", "goal_code": "shorten", "short_url_slug": "mine"});
    assert_eq!(
        problem_code(&plain_v2(&app, request_v2("x", body)).await),
        Some("slugs_not_supported")
    );
}

#[tokio::test]
async fn a_link_with_two_seconds_of_validity_expires() {
    let app = spawn_didcomm(|_| {}).await;
    let body = json!({"url": "https://e.example/brief", "goal_code": "shorten", "requested_validity_seconds": "2"});
    let before = chrono::Utc::now().timestamp();
    let reply = plain_v2(&app, request_v2("e", body)).await;
    let expires = reply["body"]["expires_time"]
        .as_i64()
        .expect("integer expires_time");
    assert!(
        (before + 2..=before + 3).contains(&expires),
        "{expires} vs {before}"
    );
    let key = key_of(reply["body"]["shortened_url"].as_str().expect("url"));
    app.wait_for_status(&format!("/{key}"), 302).await;
    until_status(&app, &format!("/{key}"), 404, Duration::from_secs(5)).await;
    assert!(
        chrono::Utc::now().timestamp() >= expires,
        "404 only after expiry"
    );
    let inv = json!({"type": INVALIDATE, "id": "i", "body": {"shortened_url": format!("https://0x1f.ie/{key}")}});
    assert_eq!(
        problem_code(&plain_v2(&app, inv).await),
        Some("short_url_invalid")
    );
}

#[tokio::test]
async fn wallets_asking_for_json_get_the_invitation_others_the_redirect() {
    use base64::Engine;
    let app = spawn_didcomm(|_| {}).await;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let v1 = json!({"@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": "inv-v1", "label": "Café"});
    let v2 = json!({"type": "https://didcomm.org/out-of-band/2.0/invitation", "id": "inv-v2", "body": {}});
    let cases = [
        (
            "shorten.oobv1",
            format!(
                "https://wallet.example/i?oob={}",
                b64.encode(v1.to_string())
            ),
            v1,
        ),
        (
            "shorten.oobv2",
            format!(
                "https://wallet.example/i?_oob={}",
                b64.encode(v2.to_string())
            ),
            v2,
        ),
    ];
    let mut paths = Vec::new();
    for (goal, url, invitation) in cases {
        let reply = plain_v2(
            &app,
            request_v2(goal, json!({"url": url, "goal_code": goal})),
        )
        .await;
        let short = reply["body"]["shortened_url"]
            .as_str()
            .expect("short URL")
            .to_owned();
        if goal == "shorten.oobv2" {
            assert!(short.ends_with("?_oobid=inv-v2"), "{short}");
        }
        let path = short
            .strip_prefix(crate::support::PUBLIC_URL)
            .expect("on the origin")
            .to_owned();
        app.wait_for_status(&path, 302).await;
        let r = app
            .client
            .get(app.url(&path))
            .header("accept", "application/json")
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status().as_u16(), 200, "{goal}");
        assert_eq!(header(&r, "content-type"), Some("application/json"));
        assert_eq!(header(&r, "cache-control"), Some("private, no-store"));
        assert_eq!(r.json::<Value>().await.expect("json"), invitation);
        for accept in ["text/html,application/xhtml+xml,*/*;q=0.8", "*/*"] {
            let r = app
                .client
                .get(app.url(&path))
                .header("accept", accept)
                .send()
                .await
                .expect("GET");
            assert_eq!(r.status().as_u16(), 302, "{accept}");
            assert!(
                header(&r, "location").is_some_and(|l| l.starts_with("https://wallet.example/i?"))
            );
        }
        paths.push(path);
    }
    // The invitation answers are logged like any other: 200, no location.
    let log = app.dir.path().join("access.log");
    for path in &paths {
        let needle = format!(" {path} 200 - GET ");
        crate::support::poll::until(Duration::from_secs(2), "the access log line", || {
            let found = std::fs::read_to_string(&log).is_ok_and(|t| t.contains(&needle));
            async move { found.then_some(()) }
        })
        .await;
    }
    // A plain link asked for JSON still redirects.
    app.link("plain", "https://example.com/").await;
    app.wait_for_status("/plain", 302).await;
    let r = app
        .client
        .get(app.url("/plain"))
        .header("accept", "application/json")
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status().as_u16(), 302);
}

/// Issue 19, item 7: the JSON answer is the invitation stored with the link,
/// never one the scanned URL's query carries.
#[tokio::test]
async fn an_invitation_in_the_query_is_never_served() {
    use base64::Engine;
    let app = spawn_didcomm(|_| {}).await;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let stored =
        json!({"@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": "inv-stored"});
    let evil = json!({"@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": "inv-evil", "services": ["https://evil.example"]});
    let evil_q = b64.encode(evil.to_string());
    let reply = plain_v2(
        &app,
        request_v2(
            "oob-stored",
            json!({
                "url": format!("https://wallet.example/i?oob={}", b64.encode(stored.to_string())),
                "goal_code": "shorten.oobv1",
            }),
        ),
    )
    .await;
    let key = key_of(reply["body"]["shortened_url"].as_str().expect("short URL"));
    app.link("plain", "https://example.com/").await;
    app.wait_for_status(&format!("/{key}"), 302).await;
    app.wait_for_status("/plain", 302).await;
    let get_json = |path: String| {
        app.client
            .get(app.url(&path))
            .header("accept", "application/json")
            .send()
    };

    for param in ["oob", "_oob"] {
        let r = get_json(format!("/plain?{param}={evil_q}"))
            .await
            .expect("GET");
        assert_eq!(
            r.status().as_u16(),
            302,
            "a plain link serves no JSON of the query's"
        );
        assert_ne!(header(&r, "content-type"), Some("application/json"));

        let r = get_json(format!("/{key}?{param}={evil_q}"))
            .await
            .expect("GET");
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(header(&r, "content-type"), Some("application/json"));
        assert_eq!(header(&r, "x-content-type-options"), Some("nosniff"));
        assert_eq!(r.json::<Value>().await.expect("json"), stored, "{param}");
    }
}

/// Issue 19, item 8: a slug below an existing link would make that link's
/// printed sub-paths lead to the requester's URL.
#[tokio::test]
async fn a_slug_that_takes_over_a_links_urls_is_unavailable() {
    let app = spawn_didcomm(|_| {}).await;
    app.link("docs/api", "https://docs.example/api").await;
    app.link("a", "https://a.example/").await;
    for slug in ["docs/api/v1", "a/login"] {
        let reply = plain_v2(
            &app,
            request_v2(
                slug,
                json!({"url": "https://evil.example/phish", "goal_code": "shorten", "short_url_slug": slug}),
            ),
        )
        .await;
        assert_eq!(problem_code(&reply), Some("slug_unavailable"), "{reply}");
        let key = qrtag::values::link_key::LinkKey::parse(slug).expect("key");
        let stored = qrtag::store::LinkStore::get(&app.store(), &key)
            .await
            .expect("read");
        assert!(stored.is_none(), "{slug} was not created");
    }
    app.wait_for_status("/docs/api/v1", 302).await;
    let r = app.get("/docs/api/v1").await;
    assert_eq!(header(&r, "location"), Some("https://docs.example/api/v1"));
    // A slug beside the link is free.
    let reply = plain_v2(
        &app,
        request_v2(
            "beside",
            json!({"url": "https://b.example/", "goal_code": "shorten", "short_url_slug": "docs/apis"}),
        ),
    )
    .await;
    assert!(reply["body"]["shortened_url"].is_string(), "{reply}");
}

/// Issue 19, item 9: an expired message and one addressed to another DID
/// are refused with a line saying why, and write nothing. A plaintext
/// message may be sent again (it carries the token itself).
#[tokio::test]
async fn expired_and_misaddressed_messages_are_refused() {
    let app = spawn_didcomm(|_| {}).await;
    let service = app.did.clone().expect("service DID");
    let body = json!({"url": "https://e.example/late", "goal_code": "shorten"});
    let mut cases = Vec::new();
    for (extra, want) in [
        (json!({"expires_time": 1}), "the message has expired"),
        (
            json!({"expires_time": "1970-01-01T00:00:01Z"}),
            "the message has expired",
        ),
        (
            json!({"created_time": chrono::Utc::now().timestamp() - 7200}),
            "the message has expired",
        ),
        (
            json!({"to": ["did:peer:2.Ez6LSbysY2xFMRpGMhb7tFTLMpeuPRaqaWM1yECx2AtzE3KCc"]}),
            "does not name this service's DID",
        ),
    ] {
        let mut msg = request_v2("late", body.clone());
        for (k, v) in extra.as_object().expect("object") {
            msg[k] = v.clone();
        }
        cases.push((msg, want));
    }
    for (msg, want) in cases {
        let r = post(
            &app,
            "application/didcomm-plain+json",
            msg.to_string(),
            Some(TOKEN),
        )
        .await;
        assert_eq!(r.status().as_u16(), 400, "{msg}");
        let text = r.text().await.expect("body");
        assert!(
            text.contains(want) && text.lines().count() == 1,
            "{msg}: {text}"
        );
    }
    let list = String::from_utf8_lossy(&app.cli(&["list"]).stdout).into_owned();
    assert!(!list.contains("e.example/late"), "{list}");
    for to in [json!([service]), json!([format!("{service}#key-1")])] {
        let mut msg = request_v2("late", body.clone());
        msg["to"] = to;
        msg["expires_time"] = json!(chrono::Utc::now().timestamp() + 60);
        let reply = plain_v2(&app, msg).await;
        assert!(reply["body"]["shortened_url"].is_string(), "{reply}");
    }
}
