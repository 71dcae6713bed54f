//! What a person may do (issue 35): one role each, the same three on both
//! stores, so the console and the API behave alike whether accounts live in
//! the embedded database or in CouchDB.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A person's role. Ordered by what it allows: every right of a lower role
/// is also a right of a higher one, so "at most the user's role" is `min`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads links and scans, prints labels.
    Viewer,
    /// A viewer's rights, plus create, repoint, rules, enable and disable.
    Editor,
    /// An editor's rights, plus users, API keys, settings and delete.
    Admin,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?}: a role is one of viewer, editor, admin")]
pub struct UnknownRole(pub String);

/// The CouchDB roles (in `_users` and `_security`) that map to each role;
/// a CouchDB server admin (`_admin`) is an admin. Any other authenticated
/// CouchDB user is a viewer: CouchDB's `_security` decides whether they may
/// read the database at all.
pub const COUCH_ADMIN_ROLES: [&str; 2] = ["qrtag_admin", "_admin"];
pub const COUCH_EDITOR_ROLES: [&str; 1] = ["qrtag_editor"];

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Editor, Role::Admin];

    pub fn parse(s: &str) -> Result<Self, UnknownRole> {
        match s.trim() {
            "viewer" => Ok(Role::Viewer),
            "editor" => Ok(Role::Editor),
            "admin" => Ok(Role::Admin),
            other => Err(UnknownRole(other.to_owned())),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }

    /// Create, repoint, rules, enable and disable links.
    pub fn may_edit(self) -> bool {
        self >= Role::Editor
    }

    /// Users, API keys, settings, and deleting links.
    pub fn may_administer(self) -> bool {
        self == Role::Admin
    }

    /// The role a CouchDB session's roles give (see [`COUCH_ADMIN_ROLES`]).
    pub fn from_couch_roles<S: AsRef<str>>(roles: &[S]) -> Self {
        let has = |set: &[&str]| roles.iter().any(|r| set.contains(&r.as_ref()));
        if has(&COUCH_ADMIN_ROLES) {
            Role::Admin
        } else if has(&COUCH_EDITOR_ROLES) {
            Role::Editor
        } else {
            Role::Viewer
        }
    }
}

impl std::str::FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Ok(r));
            assert_eq!(serde_json::to_value(r).expect("json"), r.as_str());
        }
        let e = Role::parse("owner").expect_err("unknown");
        assert_eq!(
            e.to_string(),
            "unknown role \"owner\": a role is one of viewer, editor, admin"
        );
    }

    #[test]
    fn rights_grow_with_the_role() {
        assert!(!Role::Viewer.may_edit() && !Role::Viewer.may_administer());
        assert!(Role::Editor.may_edit() && !Role::Editor.may_administer());
        assert!(Role::Admin.may_edit() && Role::Admin.may_administer());
        assert_eq!(Role::Admin.min(Role::Viewer), Role::Viewer);
    }

    #[test]
    fn couch_roles_map_to_the_highest_they_name() {
        assert_eq!(Role::from_couch_roles::<&str>(&[]), Role::Viewer);
        assert_eq!(Role::from_couch_roles(&["reader"]), Role::Viewer);
        assert_eq!(Role::from_couch_roles(&["qrtag_editor"]), Role::Editor);
        assert_eq!(
            Role::from_couch_roles(&["qrtag_editor", "_admin"]),
            Role::Admin
        );
        assert_eq!(Role::from_couch_roles(&["qrtag_admin"]), Role::Admin);
    }
}
