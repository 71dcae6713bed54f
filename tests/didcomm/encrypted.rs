//! Encrypted DIDComm v2 (authcrypt) from agents built on the crate qrtag
//! uses: authorisation, invalidation by owner, admin and stranger, return
//! route and the 202 + outbound delivery path.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;
use crate::receiver;

fn request(id: &str, url: &str) -> Value {
    json!({"type": REQUEST, "id": id, "body": {"url": url, "goal_code": "shorten"}})
}

fn invalidate(id: &str, short: &str) -> Value {
    json!({"type": INVALIDATE, "id": id, "body": {"shortened_url": short}})
}

#[tokio::test]
async fn owner_admin_and_stranger() {
    let alice = Agent::new("http://127.0.0.1:9/alice");
    let admin = Agent::new("http://127.0.0.1:9/admin");
    let mallory = Agent::new("http://127.0.0.1:9/mallory");
    let (a, b) = (alice.did(), admin.did());
    let app = spawn_didcomm(move |p| {
        p.allow = vec![a];
        p.admins = vec![b];
    })
    .await;

    // Not allowed to request: a problem report, encrypted to the stranger.
    let reply = mallory
        .ask(&app, request("m1", "https://e.example/m"))
        .await;
    assert_eq!(problem_code(&reply), Some("unauthorized"));
    assert_eq!(reply["thid"], "m1");
    // Without return_route a stranger still gets the answer in the response:
    // the server posts nothing to an endpoint a stranger chose.
    let r = post(
        &app,
        "application/didcomm-encrypted+json",
        mallory.seal(&app, request("m1b", "https://e.example/m")),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 200);
    let reply = mallory.open(&r.text().await.expect("body"));
    assert_eq!(problem_code(&reply), Some("unauthorized"));

    let reply = alice.ask(&app, request("a1", "https://e.example/a")).await;
    assert_eq!(
        reply["type"],
        "https://didcomm.org/shorten-url/1.0/shortened-url"
    );
    assert_eq!(reply["thid"], "a1");
    assert_eq!(reply["from"].as_str(), app.did.as_deref());
    let short = reply["body"]["shortened_url"]
        .as_str()
        .expect("url")
        .to_owned();
    let key = key_of(&short);
    app.wait_for_status(&format!("/{key}"), 302).await;
    let doc: Value = serde_json::from_slice(&app.cli(&["show", &key]).stdout).expect("json");
    assert_eq!(doc["created_by"], alice.did().as_str());

    let reply = mallory.ask(&app, invalidate("m2", &short)).await;
    assert_eq!(problem_code(&reply), Some("rejected_invalidation"));
    let r = post(
        &app,
        "application/json",
        json!({"@type": INVALIDATE, "@id": "t", "shortened_url": short}).to_string(),
        Some(TOKEN),
    )
    .await;
    let reply: Value = r.json().await.expect("json");
    assert_eq!(
        problem_code(&reply),
        Some("rejected_invalidation"),
        "the token holder did not create it"
    );
    app.wait_for_status(&format!("/{key}"), 302).await;

    let reply = alice.ask(&app, invalidate("a2", &short)).await;
    assert_eq!(reply["type"], "https://didcomm.org/empty/1.0/empty");
    assert_eq!(reply["ack"], json!(["a2"]));
    assert_eq!(reply["thid"], "a2");
    app.wait_for_status(&format!("/{key}"), 404).await;

    // The admin may invalidate anyone's link, here one of alice's.
    let reply = alice.ask(&app, request("a3", "https://e.example/a3")).await;
    let short = reply["body"]["shortened_url"]
        .as_str()
        .expect("url")
        .to_owned();
    let reply = admin.ask(&app, invalidate("ad1", &short)).await;
    assert_eq!(reply["ack"], json!(["ad1"]));
    let doc: Value =
        serde_json::from_slice(&app.cli(&["show", &key_of(&short)]).stdout).expect("json");
    assert_eq!(doc["invalidated_by"], admin.did().as_str());
    let reply = alice.ask(&app, invalidate("a4", &short)).await;
    assert_eq!(problem_code(&reply), Some("short_url_invalid"));
}

#[tokio::test]
async fn without_return_route_the_reply_is_delivered_to_the_senders_endpoint() {
    let (addr, received) = receiver::start(1).await;
    let agent = Agent::new(&format!("http://{addr}/inbox"));
    let app = spawn_didcomm(|p| p.allow_any = true).await;
    let r = post(
        &app,
        "application/didcomm-encrypted+json",
        agent.seal(&app, request("d1", "https://e.example/d")),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 202);
    assert!(r.text().await.expect("body").is_empty());
    let (content_type, body) =
        crate::support::poll::until(Duration::from_secs(10), "delivery", || {
            let got = received.all().into_iter().next();
            async move { got }
        })
        .await;
    assert_eq!(content_type, "application/didcomm-encrypted+json");
    let reply = agent.open(&body);
    assert_eq!(reply["thid"], "d1");
    assert!(
        reply["body"]["shortened_url"]
            .as_str()
            .is_some_and(|u| u.starts_with("https://0x1f.ie/"))
    );
    // Counted on /readyz (the failed first try was retried, not a failure).
    let ready = readyz(&app).await;
    assert!(
        ready.contains("didcomm replies delivered: 1, failed: 0"),
        "{ready}"
    );
}

#[tokio::test]
async fn an_unreachable_endpoint_is_counted_as_a_failed_delivery() {
    // A port that was free a moment ago: connection refused on every try.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let agent = Agent::new(&format!("http://127.0.0.1:{port}/gone"));
    let app = spawn_didcomm(|p| p.allow_any = true).await;
    let r = post(
        &app,
        "application/didcomm-encrypted+json",
        agent.seal(&app, request("g1", "https://e.example/g")),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 202);
    crate::support::poll::until(
        Duration::from_secs(15),
        "the failed delivery is counted",
        || async {
            let ready = app.admin_get("/readyz").await?.text().await.ok()?;
            ready
                .contains("didcomm replies delivered: 0, failed: 1")
                .then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn anoncrypt_and_forgeries_are_refused_with_a_400() {
    let agent = Agent::new("http://127.0.0.1:9/x");
    let other = Agent::new("http://127.0.0.1:9/y");
    let app = spawn_didcomm(|p| p.allow_any = true).await;
    let service = app.did.clone().expect("did");

    let resolved =
        qrtag::didcomm::resolve::resolve(&qrtag::didcomm::did::Did::parse(&service).expect("did"))
            .expect("resolves");
    let pk = affinidi_crypto::jose::key_agreement::PublicKeyAgreement::from_raw_bytes(
        affinidi_crypto::jose::key_agreement::Curve::X25519,
        &resolved.agreement[0].public,
    )
    .expect("key");
    let anon = affinidi_messaging_didcomm::jwe::encrypt::anoncrypt(
        request("x", "https://e.example/").to_string().as_bytes(),
        &[(format!("{service}#key-1").as_str(), &pk)],
    )
    .expect("anoncrypt");
    let r = post(&app, "application/didcomm-encrypted+json", anon, None).await;
    assert_eq!(r.status().as_u16(), 400);
    assert!(
        r.text()
            .await
            .expect("body")
            .contains("anonymous encryption")
    );

    // "from" naming someone else than the encrypting key.
    let mut msg = request("f", "https://e.example/");
    msg["return_route"] = json!("all");
    let mut sealed: Value = serde_json::from_str(&agent.seal(&app, msg.clone())).expect("json");
    let forged = {
        msg["from"] = json!(other.did().as_str());
        msg["to"] = json!([service.clone()]);
        qrtag::didcomm::envelope::seal(
            &msg,
            &agent.me,
            &agent.me.agreement_kid(),
            &format!("{service}#key-1"),
        )
        .expect("sealed")
    };
    let r = post(&app, "application/didcomm-encrypted+json", forged, None).await;
    assert_eq!(r.status().as_u16(), 400);
    // Tampered ciphertext.
    sealed["tag"] = json!("AAAA");
    let r = post(
        &app,
        "application/didcomm-encrypted+json",
        sealed.to_string(),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 400);
    // A sender named by did:web is never fetched.
    let mut web: Value =
        serde_json::from_str(&agent.seal(&app, request("w", "https://e.example/"))).expect("json");
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut header: Value = serde_json::from_slice(
        &b64.decode(web["protected"].as_str().expect("p"))
            .expect("b64"),
    )
    .expect("json");
    header["skid"] = json!("did:web:127.0.0.1%3A9#key-1");
    header["apu"] = json!(b64.encode("did:web:127.0.0.1%3A9#key-1"));
    web["protected"] = json!(b64.encode(header.to_string()));
    let r = post(
        &app,
        "application/didcomm-encrypted+json",
        web.to_string(),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.text().await.expect("body").contains("did:peer:2"));
}

#[tokio::test]
async fn a_did_key_sender_with_an_ed25519_key_is_answered() {
    use affinidi_crypto::jose::key_agreement::{Curve, PrivateKeyAgreement, PublicKeyAgreement};
    use affinidi_messaging_didcomm::jwe::decrypt::{SenderKey, decrypt_bound};
    use qrtag::didcomm::resolve::{ED25519_PUB, X25519_PUB, encode_multikey};

    let signing = ed25519_dalek::SigningKey::from_bytes(&[42; 32]);
    let did = format!(
        "did:key:{}",
        encode_multikey(ED25519_PUB, &signing.verifying_key().to_bytes())
    );
    let x_private = PrivateKeyAgreement::X25519(signing.to_scalar_bytes());
    let x_public = match x_private.public_key() {
        PublicKeyAgreement::X25519(p) => p,
        _ => panic!("X25519"),
    };
    let kid = format!("{did}#{}", encode_multikey(X25519_PUB, &x_public));
    let app = spawn_didcomm({
        let did = qrtag::didcomm::did::Did::parse(&did).expect("did");
        move |p| p.allow = vec![did]
    })
    .await;
    let service = app.did.clone().expect("did");
    let service_kid = format!("{service}#key-1");
    let resolved =
        qrtag::didcomm::resolve::resolve(&qrtag::didcomm::did::Did::parse(&service).expect("did"))
            .expect("resolves");
    let service_key =
        PublicKeyAgreement::from_raw_bytes(Curve::X25519, &resolved.agreement[0].public)
            .expect("key");

    let mut msg = request("k1", "https://e.example/did-key");
    msg["from"] = json!(did);
    msg["return_route"] = json!("all");
    let jwe = affinidi_messaging_didcomm::jwe::encrypt::authcrypt(
        msg.to_string().as_bytes(),
        &kid,
        &x_private,
        &[(service_kid.as_str(), &service_key)],
    )
    .expect("authcrypt");
    let r = post(&app, "application/didcomm-encrypted+json", jwe, None).await;
    assert_eq!(r.status().as_u16(), 200);
    let reply = decrypt_bound(
        &r.text().await.expect("body"),
        &kid,
        &x_private,
        Some(SenderKey::new(&service_kid, &service_key)),
    )
    .expect("the reply opens with the converted key");
    let reply: Value = serde_json::from_slice(&reply.plaintext).expect("json");
    assert_eq!(reply["thid"], "k1");
    let key = key_of(reply["body"]["shortened_url"].as_str().expect("url"));
    let doc: Value = serde_json::from_slice(&app.cli(&["show", &key]).stdout).expect("json");
    assert_eq!(doc["created_by"], did.as_str());
}

#[tokio::test]
async fn hostile_envelopes_are_400s_and_the_server_goes_on() {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let agent = Agent::new("http://127.0.0.1:9/x");
    let app = spawn_didcomm(|p| p.allow_any = true).await;
    let mut msg = request("h", "https://e.example/");
    msg["return_route"] = json!("all");
    let good: Value = serde_json::from_str(&agent.seal(&app, msg.clone())).expect("json");
    let header: Value = serde_json::from_slice(
        &b64.decode(good["protected"].as_str().expect("p"))
            .expect("b64"),
    )
    .expect("json");

    let with_header = |edit: &dyn Fn(&mut Value)| {
        let mut h = header.clone();
        edit(&mut h);
        let mut jwe = good.clone();
        jwe["protected"] = json!(b64.encode(h.to_string()));
        jwe
    };
    let with_field = |name: &str, value: Value| {
        let mut jwe = good.clone();
        jwe[name] = value;
        jwe
    };
    let cases: Vec<Value> = vec![
        with_header(&|h| h["epk"]["crv"] = json!("P-256")),
        with_header(&|h| h["epk"]["x"] = json!("AAAA")),
        with_header(&|h| h["epk"] = json!("nope")),
        with_header(&|h| h["enc"] = json!("XC20P")),
        with_header(&|h| h["alg"] = json!("RSA-OAEP")),
        with_header(&|h| {
            h.as_object_mut().map(|o| o.remove("alg"));
        }),
        with_header(&|h| h["skid"] = json!("no-fragment")),
        with_header(&|h| h["apu"] = json!(b64.encode("did:peer:2.Ez6LSx#key-1"))),
        with_header(&|h| h["apv"] = json!("AAAA")),
        with_field("recipients", json!([])),
        with_field(
            "recipients",
            json!([{"header": {"kid": 5}, "encrypted_key": "x"}]),
        ),
        with_field("recipients", json!("all")),
        with_field("iv", json!("")),
        with_field("iv", json!(12)),
        with_field("tag", json!("!!!")),
        with_field("ciphertext", json!("")),
        with_field("protected", json!(b64.encode("[]"))),
    ];
    for jwe in cases {
        let r = post(
            &app,
            "application/didcomm-encrypted+json",
            jwe.to_string(),
            None,
        )
        .await;
        assert_eq!(r.status().as_u16(), 400, "{jwe}");
        let text = r.text().await.expect("body");
        assert_eq!(text.lines().count(), 1, "{text}");
    }
    let reply = agent.ask(&app, msg).await;
    assert!(reply["body"]["shortened_url"].is_string(), "{reply}");
}

/// A valid envelope under a media type the endpoint does not take is a 415
/// naming the ones it does (issue 18: `text/plain` was accepted), and
/// nothing is created; the types agents send still work.
#[tokio::test]
async fn an_envelope_under_a_foreign_media_type_is_415() {
    let agent = Agent::new("http://127.0.0.1:9/x");
    let app = spawn_didcomm(|p| p.allow_any = true).await;
    let mut msg = request("t1", "https://e.example/t");
    msg["return_route"] = json!("all");
    for media in [
        "text/plain",
        "text/plain; charset=utf-8",
        "application/x-www-form-urlencoded",
    ] {
        let r = post(&app, media, agent.seal(&app, msg.clone()), None).await;
        assert_eq!(r.status().as_u16(), 415, "{media}");
        let text = r.text().await.expect("body");
        assert_eq!(text.lines().count(), 1, "{text}");
        for ours in [
            "application/didcomm-encrypted+json",
            "application/didcomm-plain+json",
            "application/json",
        ] {
            assert!(text.contains(ours), "{media}: {text}");
        }
    }
    let out = app.cli(&["list"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "nothing created");
    // Each its own message: the same id again would be a replay (409).
    for (n, media) in [
        "application/didcomm-encrypted+json",
        "application/json",
        "application/octet-stream",
    ]
    .into_iter()
    .enumerate()
    {
        msg["id"] = json!(format!("t1-{n}"));
        let r = post(&app, media, agent.seal(&app, msg.clone()), None).await;
        assert_eq!(r.status().as_u16(), 200, "{media}");
    }
}

/// Issue 19, item 9: without `--didcomm-allow-private-endpoints` an allowed
/// sender's loopback endpoint is posted nothing; the reply is the response
/// body instead.
#[tokio::test]
async fn a_private_endpoint_is_not_posted_to_without_the_flag() {
    let (addr, received) = receiver::start(0).await;
    let agent = Agent::new(&format!("http://{addr}/inbox"));
    let app = spawn_didcomm_api(|api| api.policy.allow_any = true).await;
    let r = post(
        &app,
        "application/didcomm-encrypted+json",
        agent.seal(&app, request("p1", "https://e.example/p")),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 200, "not 202: nothing is posted");
    let reply = agent.open(&r.text().await.expect("body"));
    assert_eq!(reply["thid"], "p1");
    assert!(reply["body"]["shortened_url"].is_string(), "{reply}");
    assert!(received.all().is_empty());
    let ready = readyz(&app).await;
    assert!(
        ready.contains("didcomm replies delivered: 0, failed: 0"),
        "{ready}"
    );
}

/// Issue 19, item 9: the same sealed request sent again is refused (409),
/// once per sender and id; another id from the same sender is new.
#[tokio::test]
async fn a_replayed_envelope_makes_one_link() {
    let agent = Agent::new("http://127.0.0.1:9/x");
    let app = spawn_didcomm(|p| p.allow_any = true).await;
    let mut msg = request("r1", "https://e.example/replayed");
    msg["return_route"] = json!("all");
    let sealed = agent.seal(&app, msg);
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let r = post(
            &app,
            "application/didcomm-encrypted+json",
            sealed.clone(),
            None,
        )
        .await;
        statuses.push(r.status().as_u16());
        if r.status().as_u16() == 409 {
            let text = r.text().await.expect("body");
            assert_eq!(
                text,
                "a message with this id was already accepted from this sender\n"
            );
        }
    }
    assert_eq!(statuses, [200, 409, 409]);
    let list = String::from_utf8_lossy(&app.cli(&["list"]).stdout).into_owned();
    assert_eq!(
        list.matches("https://e.example/replayed").count(),
        1,
        "{list}"
    );
    let reply = agent
        .ask(&app, request("r2", "https://e.example/replayed"))
        .await;
    assert!(reply["body"]["shortened_url"].is_string(), "{reply}");

    // A refused message was not acted on: corrected, its id is new.
    let mut late = request("r3", "https://e.example/late");
    late["return_route"] = json!("all");
    late["expires_time"] = json!(1);
    let r = post(
        &app,
        "application/didcomm-encrypted+json",
        agent.seal(&app, late),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 400);
    let reply = agent
        .ask(&app, request("r3", "https://e.example/late"))
        .await;
    assert!(reply["body"]["shortened_url"].is_string(), "{reply}");
}
