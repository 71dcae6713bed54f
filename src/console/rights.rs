//! What each role may post to the console (issue 35), pure: the one table
//! of the console's forms that the router is built from and the gate in
//! front of it reads, so a form cannot exist without a stated need, and a
//! forged POST is refused the same whichever page would have hidden it.

use super::bulk::Action;
use crate::values::role::Role;

/// Every form the console takes by POST. The router registers exactly
/// these paths (`console::configure`), and its gate refuses a POST to any
/// other path under the console before a handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Post {
    Login,
    Logout,
    Setup,
    Create,
    Bulk,
    Destination,
    State,
    Expiry,
    Notes,
    Fallback,
    Title,
    Delete,
    RulesAdd,
    RulesRemove,
    RulesMove,
    Sheet,
    /// Issue 35 (i35-users): accepting an invitation (no session yet),
    /// one's own "log out everywhere", and the admins' users page.
    Invite,
    LogoutEverywhere,
    UsersInvite,
    UsersRole,
    UsersRemove,
    UsersReset,
    /// Issue 35 (i35-timeline): the link page's Revert buttons.
    Revert,
}

impl Post {
    pub const ALL: [Post; 23] = [
        Post::Login,
        Post::Logout,
        Post::Setup,
        Post::Create,
        Post::Bulk,
        Post::Destination,
        Post::State,
        Post::Expiry,
        Post::Notes,
        Post::Fallback,
        Post::Title,
        Post::Delete,
        Post::RulesAdd,
        Post::RulesRemove,
        Post::RulesMove,
        Post::Sheet,
        Post::Invite,
        Post::LogoutEverywhere,
        Post::UsersInvite,
        Post::UsersRole,
        Post::UsersRemove,
        Post::UsersReset,
        Post::Revert,
    ];

    /// The path under the console's base.
    pub fn path(self) -> &'static str {
        match self {
            Post::Login => "/login",
            Post::Logout => "/logout",
            Post::Setup => "/setup",
            Post::Create => "/links",
            Post::Bulk => "/links/bulk",
            Post::Destination => "/link/destination",
            Post::State => "/link/state",
            Post::Expiry => "/link/expiry",
            Post::Notes => "/link/notes",
            Post::Fallback => "/link/fallback",
            Post::Title => "/link/title",
            Post::Delete => "/link/delete",
            Post::RulesAdd => "/link/rules/add",
            Post::RulesRemove => "/link/rules/remove",
            Post::RulesMove => "/link/rules/move",
            Post::Sheet => "/sheet",
            Post::Invite => super::invitation::PATH,
            Post::LogoutEverywhere => "/account/logout-everywhere",
            Post::UsersInvite => "/users/invite",
            Post::UsersRole => "/users/role",
            Post::UsersRemove => "/users/remove",
            Post::UsersReset => "/users/reset",
            Post::Revert => "/link/revert",
        }
    }

    /// The form posted to `path` (under the base), if the console has one.
    pub fn at(path: &str) -> Option<Post> {
        Post::ALL.into_iter().find(|p| p.path() == path)
    }

    /// The least role that may post it; `None` for the forms of someone
    /// not (or no longer) logged in. A print sheet makes links, so it is an
    /// editor's; the bulk form's need depends on its action ([`bulk`]),
    /// checked by its handler once the action is read.
    pub fn needs(self) -> Option<Role> {
        match self {
            Post::Login | Post::Logout | Post::Setup | Post::Invite => None,
            Post::LogoutEverywhere => Some(Role::Viewer),
            Post::UsersInvite | Post::UsersRole | Post::UsersRemove | Post::UsersReset => {
                Some(Role::Admin)
            }
            Post::Bulk => Some(Role::Viewer),
            Post::Delete => Some(Role::Admin),
            Post::Create
            | Post::Destination
            | Post::State
            | Post::Expiry
            | Post::Notes
            | Post::Fallback
            | Post::Title
            | Post::RulesAdd
            | Post::RulesRemove
            | Post::RulesMove
            | Post::Sheet => Some(Role::Editor),
            // A revert is a repoint (or any edit) back to an earlier state.
            Post::Revert => Some(Role::Editor),
        }
    }
}

/// The least role a bulk action needs: printing and the CSV are reading,
/// deleting is an admin's, every other action an edit.
pub fn bulk(action: &Action) -> Role {
    match action {
        Action::Print(_) | Action::Csv => Role::Viewer,
        Action::Delete { .. } => Role::Admin,
        Action::Enable
        | Action::Disable
        | Action::Repoint(_)
        | Action::Expire(_)
        | Action::NoExpiry => Role::Editor,
    }
}

/// Whether `role` may do what needs `need`, or the one line a 403 says.
pub fn check(role: Role, need: Role) -> Result<(), String> {
    if role >= need {
        return Ok(());
    }
    let what = match need {
        Role::Viewer => "read the console",
        Role::Editor => "change links",
        Role::Admin => "delete links or manage users",
    };
    Err(format!(
        "your role ({role}) may not {what}: that needs the {need} role; nothing was changed"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_names_one_form() {
        for p in Post::ALL {
            assert_eq!(Post::at(p.path()), Some(p));
        }
        assert_eq!(Post::at("/link"), None);
    }

    #[test]
    fn a_viewer_edits_nothing_and_an_editor_deletes_nothing() {
        assert!(check(Role::Viewer, Role::Viewer).is_ok());
        let e = check(Role::Viewer, Role::Editor).expect_err("viewer");
        assert_eq!(
            e,
            "your role (viewer) may not change links: that needs the editor role; nothing was changed"
        );
        assert!(
            check(
                Role::Editor,
                Post::Destination.needs().unwrap_or(Role::Admin)
            )
            .is_ok()
        );
        assert!(check(Role::Editor, Post::Delete.needs().unwrap_or(Role::Admin)).is_err());
        assert!(check(Role::Admin, Post::Delete.needs().unwrap_or(Role::Admin)).is_ok());
        assert_eq!(bulk(&Action::Csv), Role::Viewer);
        assert_eq!(bulk(&Action::Enable), Role::Editor);
        assert_eq!(bulk(&Action::Delete { confirmed: true }), Role::Admin);
    }
}
