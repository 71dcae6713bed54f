//! Issue 35 (i35-users): the invitation page, where an invited person
//! chooses their password (the first-run setup page's form, for one user).

use maud::{Markup, html};

use super::{BASE, FormToken, csrf_field, layout};
use crate::console::invitation::{PATH, TOKEN_FIELD};
use crate::console::password::MIN_LEN;

pub fn page(csrf: &str, token: &str, name: &str, problem: Option<&str>) -> Markup {
    layout(
        "Choose your password",
        None,
        html! {
            h1 { "Choose your password" }
            p { "You were invited to this console as " strong #invited-name { (name) } ". "
                "Choose the password you will log in with. This link works once." }
            @if let Some(p) = problem {
                p.problem #problem role="alert" { (p) }
            }
            form.card #invite method="post" action={ (BASE) (PATH) } {
                (csrf_field(FormToken::bare(csrf)))
                input type="hidden" name=(TOKEN_FIELD) value=(token);
                input type="hidden" name="user" value=(name) autocomplete="username";
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
