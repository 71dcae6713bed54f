//! The login form.

use maud::{Markup, html};

use super::{BASE, FormToken, csrf_field, layout};

/// `first_run`: no console password is set yet, so say how to set one.
/// `couch`: the name is a CouchDB account's (required); on the embedded
/// store an empty one logs in as `admin`, as before accounts (issue 35).
pub fn page(
    csrf: &str,
    ask_user_name: bool,
    problem: Option<&str>,
    first_run: bool,
    couch: bool,
) -> Markup {
    layout(
        "Log in",
        None,
        html! {
            h1 { "Log in" }
            @if let Some(p) = problem {
                p.problem #problem role="alert" { (p) }
            }
            @if first_run {
                (super::setup::first_run_hint())
            }
            form.card #login method="post" action={ (BASE) "/login" } {
                (csrf_field(FormToken::bare(csrf)))
                @if ask_user_name && couch {
                    label for="user" { "CouchDB user" }
                    input #user type="text" name="user" autocomplete="username" required;
                } @else if ask_user_name {
                    label for="user" { "User name (empty: " (crate::console::auth::PASSWORD_USER) ")" }
                    input #user type="text" name="user" autocomplete="username"
                        autocapitalize="none" spellcheck="false";
                }
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password" required;
                button type="submit" { "Log in" }
            }
        },
    )
}
