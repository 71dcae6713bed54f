//! `qrtag didcomm did`: the service's DID from its key file.

use crate::support::qrtag_cmd_env;

#[test]
fn the_did_is_created_once_and_names_the_endpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let keys = dir.path().join("keys.json");
    let keys_arg = keys.to_str().expect("utf-8 path");
    let args = [
        "didcomm",
        "did",
        "--api-public-url",
        "https://api.example",
        "--didcomm-key-file",
        keys_arg,
    ];

    let first = qrtag_cmd_env(&db, &args, &[]);
    assert!(first.status.success(), "{first:?}");
    let did = String::from_utf8_lossy(&first.stdout).trim().to_owned();
    assert!(did.starts_with("did:peer:2.Ez6LS"), "{did}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&keys)
            .expect("key file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let key_text = std::fs::read_to_string(&keys).expect("key file");
    let secret: serde_json::Value = serde_json::from_str(&key_text).expect("json");
    let x = secret["x25519"].as_str().expect("key");
    assert!(
        !String::from_utf8_lossy(&first.stderr).contains(x),
        "key printed"
    );

    let again = qrtag_cmd_env(&db, &args, &[]);
    assert_eq!(
        String::from_utf8_lossy(&again.stdout).trim(),
        did,
        "same file, same DID"
    );

    let resolved =
        qrtag::didcomm::resolve::resolve(&qrtag::didcomm::did::Did::parse(&did).expect("did"))
            .expect("resolves");
    assert_eq!(
        resolved.endpoint.as_deref(),
        Some("https://api.example/didcomm")
    );

    // The default key file sits beside the database; without any endpoint
    // the command says what to give, in one line, and creates nothing.
    let out = qrtag_cmd_env(&db, &["didcomm", "did"], &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--api-public-url") && err.lines().count() == 1,
        "{err}"
    );
    let out = qrtag_cmd_env(
        &db,
        &["didcomm", "did"],
        &[("QRTAG_API_PUBLIC_URL", "https://b.example")],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(dir.path().join("links.db.didcomm-keys.json").exists());
}
