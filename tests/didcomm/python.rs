//! Agents on two independent Python DIDComm libraries, SICPA's `didcomm`
//! (peerdid's `#6LS…` key ids) and Indicio's `didcomm-messaging`
//! (`#key-N`), each knowing only the service's DID: they shorten, are
//! refused as strangers, invalidate, get problem reports, and (SICPA) get a
//! reply delivered to their endpoint after a 202. The venvs come from
//! `.ci/test` (tests/didcomm/python/requirements-*.txt).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::harness::*;
use crate::support::PUBLIC_URL;

fn python(venv: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/didcomm/python");
    let bin = dir.join(format!(".venv-{venv}/bin/python"));
    assert!(
        bin.exists(),
        "{} is missing: run `bash .ci/test` once, which installs tests/didcomm/python/requirements-{venv}.txt",
        bin.display()
    );
    bin
}

/// Runs an agent script to the end and returns the JSON lines it printed.
async fn run_agent(venv: &str, script: &str, service_did: &str) -> Vec<Value> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/didcomm/python");
    let child = tokio::process::Command::new(python(venv))
        .arg("-W")
        .arg("ignore")
        .arg(dir.join(script))
        .arg(service_did)
        .arg(PUBLIC_URL)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the agent");
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the agent finishes within a minute")
        .expect("agent output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{script} printed {l:?}: {e}")))
        .collect()
}

fn fragment(kid: &Value) -> &str {
    kid.as_str()
        .and_then(|k| k.split_once('#'))
        .map(|(_, f)| f)
        .unwrap_or_default()
}

/// What both agents do: shorten, stranger refused, owner invalidates.
async fn common_checks(app: &crate::support::TestApp, lines: &[Value], prefix: &str) -> String {
    let service = app.did.clone().expect("service DID");
    let agent = lines[0]["did"].as_str().expect("agent DID").to_owned();

    let shortened = &lines[1];
    assert_eq!(
        shortened["type"], "https://didcomm.org/shorten-url/1.0/shortened-url",
        "{shortened}"
    );
    assert_eq!(shortened["thid"], format!("{prefix}-req-1"));
    assert_eq!(shortened["from"].as_str(), Some(service.as_str()));
    assert_eq!(shortened["_authenticated"], true);
    assert!(shortened["body"]["expires_time"].is_i64());
    let short = shortened["body"]["shortened_url"]
        .as_str()
        .expect("short URL");
    let key = key_of(short);
    let doc: Value = serde_json::from_slice(&app.cli(&["show", &key]).stdout).expect("json");
    assert_eq!(
        doc["created_by"],
        agent.as_str(),
        "the authenticated sender is recorded"
    );
    assert_eq!(doc["thid"], format!("{prefix}-req-1"));

    let stranger = &lines[2];
    assert_eq!(
        problem_code(stranger),
        Some("rejected_invalidation"),
        "{stranger}"
    );
    assert_eq!(stranger["thid"], format!("{prefix}-inv-0"));

    let ack = &lines[3];
    assert_eq!(ack["type"], "https://didcomm.org/empty/1.0/empty", "{ack}");
    assert_eq!(ack["ack"], serde_json::json!([format!("{prefix}-inv-1")]));
    app.wait_for_status(&format!("/{key}"), 404).await;
    assert_eq!(
        doc["url"]
            .as_str()
            .map(|u| u.starts_with("https://example.com/")),
        Some(true)
    );
    let doc: Value = serde_json::from_slice(&app.cli(&["show", &key]).stdout).expect("json");
    assert_eq!(doc["invalidated_by"], agent.as_str());
    fragment(&shortened["_from_kid"]).to_owned()
}

#[tokio::test]
async fn an_agent_on_sicpa_didcomm_shortens_and_invalidates() {
    let app = spawn_didcomm(|p| p.allow_any = true).await;
    let lines = run_agent("sicpa", "sicpa_agent.py", app.did.as_deref().expect("did")).await;
    assert_eq!(lines.len(), 9, "{lines:?}");
    let our_kid = common_checks(&app, &lines, "sicpa").await;
    // peerdid names our key by 8 characters of its multibase value.
    assert_eq!(our_kid.len(), 8, "{our_kid}");
    assert!(our_kid.starts_with("6LS"), "{our_kid}");

    assert_eq!(
        problem_code(&lines[4]),
        Some("invalid_protocol_scheme"),
        "{}",
        lines[4]
    );
    assert_eq!(
        lines[5]["status"], 202,
        "without return_route: {}",
        lines[5]
    );
    let delivered = &lines[6];
    assert_eq!(
        delivered["_content_type"],
        "application/didcomm-encrypted+json"
    );
    assert_eq!(delivered["thid"], "sicpa-req-3", "{delivered}");
    assert!(
        delivered["body"]["shortened_url"]
            .as_str()
            .is_some_and(|u| u.starts_with(PUBLIC_URL))
    );
    refused_replays(&app, &lines[7..]);
}

/// Issue 19, item 9: one packed request posted three times makes one link;
/// an expired message (and, where the library lets one be sent, one
/// addressed to another DID) is refused with a line saying why.
fn refused_replays(app: &crate::support::TestApp, lines: &[Value]) {
    assert_eq!(
        lines[0]["replay"],
        serde_json::json!([200, 409, 409]),
        "{}",
        lines[0]
    );
    let list = String::from_utf8_lossy(&app.cli(&["list"]).stdout).into_owned();
    assert_eq!(
        list.matches("https://example.com/replayed").count(),
        1,
        "{list}"
    );
    for line in &lines[1..] {
        assert_eq!(line["status"], 400, "{line}");
        let text = line["text"].as_str().unwrap_or_default();
        let want = match line["label"].as_str() {
            Some("expired") => "the message has expired",
            _ => "does not name this service's DID",
        };
        assert!(text.contains(want), "{line}");
    }
    assert!(!list.contains("https://example.com/expired"), "{list}");
}

#[tokio::test]
async fn an_agent_on_indicio_didcomm_messaging_shortens_and_invalidates() {
    let app = spawn_didcomm(|p| p.allow_any = true).await;
    let lines = run_agent(
        "indicio",
        "indicio_agent.py",
        app.did.as_deref().expect("did"),
    )
    .await;
    assert_eq!(lines.len(), 9, "{lines:?}");
    let our_kid = common_checks(&app, &lines, "indicio").await;
    assert_eq!(our_kid, "key-1");
    // Its own agreement key is #key-2 (verification key first).
    let doc: Value = serde_json::from_slice(
        &app.cli(&[
            "show",
            &key_of(
                lines[1]["body"]["shortened_url"]
                    .as_str()
                    .unwrap_or_default(),
            ),
        ])
        .stdout,
    )
    .expect("json");
    assert!(
        doc["created_by"]
            .as_str()
            .is_some_and(|d| d.starts_with("did:peer:2.Vz6Mk"))
    );
    assert_eq!(problem_code(&lines[4]), Some("invalid_url"), "{}", lines[4]);
    assert_eq!(
        lines[5]["thid"], "indicio-req-3",
        "posted as octet-stream: {}",
        lines[5]
    );
    assert_eq!(lines[8]["label"], "misaddressed", "{}", lines[8]);
    refused_replays(&app, &lines[6..]);
}
