//! Issue 35 (i35-users): the admins' users page: every user with their
//! role and state, forms to invite, change a role, reset and remove; and
//! the page that shows a new invitation link, once.

use maud::{Markup, html};

use super::{BASE, Viewer, csrf_field, layout};
use crate::store::sqlite::users::UserRow;
use crate::values::role::Role;

fn role_select(id: &str, chosen: Role) -> Markup {
    html! {
        select id=(id) name="role" {
            @for r in Role::ALL {
                option value=(r) selected[r == chosen] { (r) }
            }
        }
    }
}

/// Issue 36: a user's domains as the page says them.
fn domains_text(u: &UserRow) -> String {
    match &u.domains {
        None => String::new(),
        Some(d) => d.join(" "),
    }
}

pub fn page(viewer: &Viewer<'_>, users: &[UserRow], problem: Option<&str>) -> Markup {
    // Issue 36: each user's domains, on a service of several.
    let several = viewer.switcher.is_some();
    layout(
        "Users",
        Some(viewer),
        html! {
            h1 { "Users" }
            @if let Some(p) = problem {
                p.problem #problem role="alert" { (p) }
            }
            table #users {
                thead { tr {
                    th { "Name" } th { "Role" } th { "State" } th { "Created" }
                    @if several { th { "Domains" } }
                    th { "Change" }
                } }
                tbody {
                    @for (i, u) in users.iter().enumerate() {
                        tr.user data-name=(u.name) data-role=(u.role) data-state=(u.state()) {
                            td { (u.name) }
                            td { (u.role) }
                            td { (u.state()) }
                            // The day is what matters here; the instant is in `datetime`.
                            td { time datetime=(u.created_at) { (u.created_at.split('T').next().unwrap_or_default()) } }
                            @if several {
                                td.domains data-domains=(domains_text(u)) {
                                    @match &u.domains {
                                        None => "every domain",
                                        Some(d) => (d.join(", ")),
                                    }
                                }
                            }
                            td {
                                form.inline method="post" action={ (BASE) "/users/role" } {
                                    (csrf_field(viewer.token()))
                                    input type="hidden" name="name" value=(u.name);
                                    label for={ "role-" (i) } { "Role of " (u.name) }
                                    (role_select(&format!("role-{i}"), u.role))
                                    @if several {
                                        label for={ "domains-" (i) } { "Domains of " (u.name) " (empty: every domain)" }
                                        input id={ "domains-" (i) } type="text" name="domains" value=(domains_text(u)) autocapitalize="none" spellcheck="false";
                                    }
                                    button type="submit" { "Change role" }
                                }
                                form.inline method="post" action={ (BASE) "/users/reset" } {
                                    (csrf_field(viewer.token()))
                                    input type="hidden" name="name" value=(u.name);
                                    button type="submit" { "Reset password of " (u.name) }
                                }
                                form.inline method="post" action={ (BASE) "/users/remove" } {
                                    (csrf_field(viewer.token()))
                                    input type="hidden" name="name" value=(u.name);
                                    button.danger type="submit" { "Remove " (u.name) }
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Invite someone" }
            form.card #invite-user method="post" action={ (BASE) "/users/invite" } {
                (csrf_field(viewer.token()))
                label for="invite-name" { "User name" }
                input #invite-name type="text" name="name" required autocapitalize="none" spellcheck="false";
                label for="invite-role" { "Role" }
                (role_select("invite-role", Role::Viewer))
                button type="submit" { "Invite" }
            }
        },
    )
}

/// A new invitation's link, shown once: only its hash is kept.
pub fn link_page(viewer: &Viewer<'_>, name: &str, link: &str, expires: &str) -> Markup {
    layout(
        "Invitation",
        Some(viewer),
        html! {
            h1 { "Invitation for " (name) }
            p { "Give " (name) " this link. It works once, until " (expires) " (UTC), "
                "and is shown only now." }
            p { code #invitation-link { (link) } }
            p { a href={ (BASE) "/users" } { "Back to the users" } }
        },
    )
}

/// The users page on CouchDB, where the people are CouchDB accounts: where
/// to manage them, and how their CouchDB roles map to qrtag's three.
pub fn on_couchdb(viewer: &Viewer<'_>) -> Markup {
    use crate::values::role::{COUCH_ADMIN_ROLES, COUCH_EDITOR_ROLES};
    layout(
        "Users",
        Some(viewer),
        html! {
            h1 { "Users" }
            p #users-elsewhere {
                "The people who log in here are CouchDB accounts: add, remove and change them "
                "in CouchDB (Fauxton's users, or the " code { "_users" } " database). "
                "Their CouchDB roles decide what they may do here:"
            }
            table #couch-roles {
                thead { tr { th { "CouchDB role" } th { "Role here" } } }
                tbody {
                    tr { td { (COUCH_ADMIN_ROLES.join(", ")) } td { (Role::Admin) } }
                    tr { td { (COUCH_EDITOR_ROLES.join(", ")) } td { (Role::Editor) } }
                    tr { td { "any other account" } td { (Role::Viewer) } }
                }
            }
        },
    )
}
