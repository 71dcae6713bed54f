//! The first-run setup page (choose the console password through the link
//! `qrtag serve --console` printed), and the hint the login page shows while
//! no password is set, so a newcomer is never left without a next step.

use maud::{Markup, html};

use super::{BASE, FormToken, csrf_field, layout};
use crate::console::password::MIN_LEN;
use crate::console::setup::TOKEN_FIELD;

/// The form: the password twice. The token rides along in a hidden field,
/// so the form posts to `/console/setup` without it in the URL.
pub fn page(csrf: &str, token: &str, problem: Option<&str>) -> Markup {
    layout(
        "Choose the console password",
        None,
        html! {
            h1 { "Choose the console password" }
            p { "This console has no password yet. Choose the one people will log in with (as "
                code { (crate::console::auth::PASSWORD_USER) } "). This link works once; later, "
                code { "qrtag console-password" } " on the server changes the password." }
            @if let Some(p) = problem {
                p.problem #problem role="alert" { (p) }
            }
            form.card #setup method="post" action={ (BASE) "/setup" } {
                (csrf_field(FormToken::bare(csrf)))
                input type="hidden" name=(TOKEN_FIELD) value=(token);
                label for="password" { "Password (at least " (MIN_LEN) " characters)" }
                input #password type="password" name="password" autocomplete="new-password"
                    minlength=(MIN_LEN) required;
                label for="again" { "The same password again" }
                input #again type="password" name="again" autocomplete="new-password"
                    minlength=(MIN_LEN) required;
                button type="submit" { "Set the password and log in" }
            }
        },
    )
}

/// What the login page says while no console password is set.
pub fn first_run_hint() -> Markup {
    html! {
        p.card #first-run {
            "First time here? Open the setup link qrtag serve printed in its terminal (it starts with …"
            (BASE) "/setup?" (TOKEN_FIELD) "=), or run "
            code { "qrtag console-password" } " on the server."
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_carries_csrf_and_token_and_escapes_them() {
        let html = page("c\"s", "t<k", Some("the two passwords differ")).into_string();
        assert!(html.contains(r#"name="csrf" value="c&quot;s""#), "{html}");
        assert!(html.contains(r#"name="token" value="t&lt;k""#), "{html}");
        assert!(html.contains(r#"action="/console/setup""#), "{html}");
        assert!(html.contains(r#"id="problem""#));
        assert!(
            !page("c", "t", None)
                .into_string()
                .contains("id=\"problem\"")
        );
    }

    #[test]
    fn the_hint_names_the_link_and_the_command() {
        let html = first_run_hint().into_string();
        assert!(html.contains("/console/setup?token="), "{html}");
        assert!(html.contains("qrtag console-password"), "{html}");
    }
}
