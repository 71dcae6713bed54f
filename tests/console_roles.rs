//! Each role's console (issue 35), through the real binary on port 0: a
//! viewer sees scans and print forms but no edit, rules, create, bulk-edit
//! or delete form; an editor sees no delete form; and every console POST
//! route (from `rights::Post::ALL`, the table the router is built from, so
//! a new form cannot be missed) posted by a role below its need, with a
//! valid token, is a 403 with one plain line and leaves the store as it was.
//!
//! The viewer and the editor are real accounts, invited with `qrtag user
//! add` and logged in by accepting their invitation.

mod support;

use qrtag::console::rights::Post;
use qrtag::values::role::Role;
use reqwest::StatusCode;
use support::console::{browser, csrf, get_page, invited, log_in, post_form, set_password};
use support::process::ServerProcess;
use support::qrtag_cmd;

const PASSWORD: &str = "poster-printing-42";
const KEY: &str = "poster";
const URL: &str = "https://example.com/spring";

/// Every link document, tombstones too: what a refused POST must not change.
fn stored(db: &std::path::Path) -> String {
    let out = qrtag_cmd(db, &["export", "--deleted"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A form as its page would send it, so that only the role can be at fault.
fn fields(post: Post) -> Vec<(&'static str, &'static str)> {
    let mut f = vec![("key", KEY)];
    f.extend(match post {
        Post::Create => vec![("url", "https://example.com/new"), ("key", "made")],
        Post::Destination => vec![("url", "https://example.com/elsewhere")],
        Post::State => vec![("active", "false")],
        Post::Expiry => vec![("expires", "30d")],
        Post::Notes => vec![("notes", "forged")],
        Post::Fallback => vec![("fallback_url", "https://example.com/home")],
        Post::Title => vec![("title", "forged")],
        Post::Delete => vec![("confirm", "yes")],
        Post::RulesAdd => vec![
            ("kind", "device"),
            ("device", "ios"),
            ("url", "https://example.com/ios"),
        ],
        Post::RulesRemove | Post::RulesMove => vec![("index", "1"), ("was", "{}")],
        Post::Sheet => vec![("count", "3")],
        Post::Bulk => vec![("scope", "ticked"), ("action", "disable")],
        // Issue 35 (i35-users): the users page's forms, aimed at the admin.
        Post::UsersInvite => vec![("name", "mallory"), ("role", "admin")],
        Post::UsersRole => vec![("name", "admin"), ("role", "viewer")],
        Post::UsersRemove | Post::UsersReset => vec![("name", "admin")],
        // Issue 35 (i35-timeline): back to the link's first state.
        Post::Revert => vec![("to", "1"), ("rev", "1")],
        Post::Login | Post::Logout | Post::Setup | Post::Invite | Post::LogoutEverywhere => {
            vec![]
        }
    });
    f
}

struct Session {
    srv: ServerProcess,
    http: reqwest::Client,
}

impl Session {
    async fn start(db: &std::path::Path, role: Role) -> Self {
        let srv = ServerProcess::spawn(db, &["--console"], &[], false).await;
        let http = browser();
        let console = srv.admin_url("/console");
        if role == Role::Admin {
            log_in(&http, &console, PASSWORD).await;
        } else {
            // A person of that role, invited with `qrtag user add`; accepting
            // the invitation logs them in.
            invited(&http, db, &console, &format!("some-{role}"), role, PASSWORD).await;
        }
        Self { srv, http }
    }

    async fn page(&self, path: &str) -> String {
        get_page(&self.http, &self.srv.admin_url(&format!("/console{path}"))).await
    }

    /// `form` posted to `path` with the token of the link's page.
    async fn post(&self, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
        let token = csrf(&self.page(&format!("/link?key={KEY}")).await);
        let mut form = form.to_vec();
        form.push(("csrf", &token));
        let res = post_form(
            &self.http,
            &self.srv.admin_url(&format!("/console{path}")),
            &form,
        )
        .await;
        let status = res.status();
        (status, res.text().await.expect("body"))
    }

    /// Every form `role` may not post is refused, and nothing is written.
    async fn refused_above(&self, db: &std::path::Path, role: Role) -> usize {
        let before = stored(db);
        let mut refused = 0;
        for post in Post::ALL {
            let Some(need) = post.needs() else { continue };
            if role >= need {
                continue;
            }
            let (status, body) = self.post(post.path(), &fields(post)).await;
            assert_eq!(
                status,
                StatusCode::FORBIDDEN,
                "{role} POST {post:?}: {body}"
            );
            assert!(
                body.lines().count() == 1 && body.contains("may not"),
                "{role} POST {post:?}: a short plain line, got {body}"
            );
            assert_eq!(stored(db), before, "{role} POST {post:?} changed the store");
            refused += 1;
        }
        refused
    }

    /// Each bulk action above `role` is refused; the ones it may do are not.
    async fn bulk(&self, db: &std::path::Path, role: Role) {
        for (action, need) in [
            ("csv", Role::Viewer),
            ("enable", Role::Editor),
            ("disable", Role::Editor),
            ("never", Role::Editor),
            ("delete", Role::Admin),
        ] {
            let before = stored(db);
            let form = [("scope", "ticked"), ("key", KEY), ("action", action)];
            let (status, body) = self.post("/links/bulk", &form).await;
            if role >= need {
                assert_ne!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{role} bulk {action}: {body}"
                );
            } else {
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{role} bulk {action}: {body}"
                );
                assert!(body.contains("may not"), "{body}");
                assert_eq!(stored(db), before, "{role} bulk {action} changed the store");
            }
        }
    }
}

#[tokio::test]
async fn each_role_sees_only_its_forms_and_a_forged_post_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_cmd(&db, &["new", URL, "--key", KEY]);
    assert!(out.status.success(), "{out:?}");
    set_password(&db, PASSWORD);

    // A viewer: scans and print forms, nothing that writes.
    let viewer = Session::start(&db, Role::Viewer).await;
    let page = viewer.page(&format!("/link?key={KEY}")).await;
    for hidden in [
        r#"id="edit-destination""#,
        r#"id="edit-state""#,
        r#"id="delete-link""#,
        r#"action="/console/link/rules/add""#,
    ] {
        assert!(!page.contains(hidden), "a viewer sees {hidden}");
    }
    for shown in [
        r#"id="print""#,
        r#"id="scans-summary""#,
        r#"data-role="viewer""#,
    ] {
        assert!(page.contains(shown), "a viewer misses {shown}");
    }
    let list = viewer.page("/links").await;
    assert!(!list.contains(r#"id="bulk-state""#) && !list.contains(r#"id="bulk-delete""#));
    assert!(
        list.contains(r#"id="bulk-print""#),
        "a viewer may print from the list"
    );
    assert!(
        !list.contains(r#"method="post" action="/console/links""#),
        "a viewer sees the create form"
    );
    let editor_forms = Post::ALL
        .into_iter()
        .filter(|p| p.needs().is_some_and(|n| n > Role::Viewer))
        .count();
    assert_eq!(viewer.refused_above(&db, Role::Viewer).await, editor_forms);
    viewer.bulk(&db, Role::Viewer).await;
    viewer.srv.stop().await;

    // An editor: every edit form, no delete.
    let editor = Session::start(&db, Role::Editor).await;
    let page = editor.page(&format!("/link?key={KEY}")).await;
    assert!(page.contains(r#"id="edit-destination""#), "an editor edits");
    assert!(
        !page.contains(r#"id="delete-link""#),
        "an editor sees the delete form"
    );
    let list = editor.page("/links").await;
    assert!(list.contains(r#"id="bulk-state""#) && !list.contains(r#"id="bulk-delete""#));
    let admin_forms = Post::ALL
        .into_iter()
        .filter(|p| p.needs() == Some(Role::Admin))
        .count();
    assert_eq!(admin_forms, 5, "delete and the users page's four");
    assert_eq!(editor.refused_above(&db, Role::Editor).await, admin_forms);
    editor.bulk(&db, Role::Editor).await;
    // What an editor may do still goes through the gate.
    let (status, body) = editor
        .post(
            "/link/destination",
            &[("key", KEY), ("url", "https://example.com/summer")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert!(stored(&db).contains("https://example.com/summer"));
    editor.srv.stop().await;

    // An admin sees the delete form.
    let admin = Session::start(&db, Role::Admin).await;
    let page = admin.page(&format!("/link?key={KEY}")).await;
    assert!(page.contains(r#"id="delete-link""#), "an admin deletes");
    admin.srv.stop().await;
}
