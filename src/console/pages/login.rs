//! The login form.

use maud::{Markup, html};

use super::{BASE, csrf_field, layout};

pub fn page(csrf: &str, ask_user_name: bool, problem: Option<&str>) -> Markup {
    layout(
        "Log in",
        None,
        html! {
            h1 { "Log in" }
            @if let Some(p) = problem {
                p.problem #problem role="alert" { (p) }
            }
            form.card #login method="post" action={ (BASE) "/login" } {
                (csrf_field(csrf))
                @if ask_user_name {
                    label for="user" { "CouchDB user" }
                    input #user type="text" name="user" autocomplete="username" required;
                }
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password" required;
                button type="submit" { "Log in" }
            }
        },
    )
}
