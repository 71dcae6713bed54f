//! Issue 35 (i35-users): the person's own page: who they are, their
//! sessions on this server, "log out everywhere", and for admins the way to
//! the users page.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use maud::{Markup, html};

use super::{BASE, Viewer, csrf_field, layout, when};
use crate::console::session::SessionInfo;
use crate::values::role::Role;

fn ago(idle: Duration) -> String {
    match idle.as_secs() {
        s if s < 60 => "now".into(),
        s if s < 3600 => format!("{} min ago", s / 60),
        s => format!("{} h ago", s / 3600),
    }
}

fn started(t: Option<SystemTime>) -> String {
    t.map_or_else(|| "—".to_owned(), |t| when(DateTime::<Utc>::from(t)))
}

/// Where "log out everywhere" reaches: every node sharing the embedded
/// store's users, or (CouchDB, whose sessions each node holds alone) this
/// server only. The page says which, so no one trusts it further.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    EveryServer,
    ThisServer,
}

pub fn page(viewer: &Viewer<'_>, role: Role, sessions: &[SessionInfo], reach: Reach) -> Markup {
    layout(
        "Your account",
        Some(viewer),
        html! {
            h1 { "Your account" }
            p #account { "Logged in as " strong { (viewer.name) } ", " span #role { (role) } "." }
            @if role.may_administer() {
                p { a #users-link href={ (BASE) "/users" } { "Users" } }
            }
            h2 { "Your sessions" }
            p { "The browsers logged in as you on this server." }
            table #sessions {
                thead { tr { th { "Started" } th { "Last seen" } th { "Address" } th { "Browser" } } }
                tbody {
                    @for s in sessions {
                        tr.session data-this=(s.this_one) {
                            td { (started(s.started)) @if s.this_one { " (this one)" } }
                            td { (ago(s.idle)) }
                            td { (s.address.map(|a| a.to_string()).unwrap_or_else(|| "—".into())) }
                            td { (s.agent) }
                        }
                    }
                }
            }
            form.card #logout-everywhere method="post" action={ (BASE) "/account/logout-everywhere" } {
                (csrf_field(viewer.token()))
                @match reach {
                    Reach::EveryServer => p #everywhere-reach data-reach="every-server" {
                        "Ends every session of yours, on every server, this one included."
                    },
                    Reach::ThisServer => p #everywhere-reach data-reach="this-server" {
                        "Ends every session of yours on this server. Sessions on other "
                        "servers end when they are idle for 8 hours or that server "
                        "restarts; to stop them changing anything at once, change your "
                        "CouchDB password (their writes are made with it)."
                    },
                }
                button type="submit" { "Log out everywhere" }
            }
        },
    )
}
