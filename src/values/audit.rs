//! The audit log's entry (issue 35), pure: what happened that is not a
//! link edit (a link's own history says those), who did it and through
//! which surface. Both stores keep entries as the JSON this module writes,
//! and `qrtag audit` prints it, one entry a line, so the field names below
//! are a stable format (documented in the guide's "Audit log" section):
//! an admin's scripts read them, and an old entry must read the same
//! after an upgrade.
//!
//! An entry never holds a secret: a setting changed is named, its value is
//! not; an API key is named by its ID, never its secret.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::actor::Actor;
use super::role::Role;
use super::timestamp::time_text;

/// How many keys a bulk action's entry names; the count says how many
/// there were. A bulk action may touch thousands of links, and one entry
/// must stay a line a person can read (and a document CouchDB takes).
pub const MAX_KEYS_LISTED: usize = 100;

/// How much of a text from outside (a user name tried at the login form)
/// an entry keeps, in characters: a guessed name is evidence, a megabyte
/// of one is a way to fill the log.
pub const MAX_TEXT: usize = 100;

/// Which surface the action came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    Cli,
    Console,
    Api,
    Didcomm,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Cli => "cli",
            Surface::Console => "console",
            Surface::Api => "api",
            Surface::Didcomm => "didcomm",
        }
    }
}

/// What happened. Tagged by `kind` (`{"kind": "failed_login", ...}`), the
/// same way [`Actor`] is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// A user was invited (`qrtag user add`, the console's users page).
    UserInvited { user: String, role: Role },
    /// A user's role was changed.
    RoleChanged { user: String, from: Role, to: Role },
    /// A user was removed.
    UserRemoved { user: String },
    /// A user's password was cleared and a new invitation made.
    InvitationReset { user: String },
    /// An invited person chose their password through the invitation
    /// link; the login it leads to is a [`Event::Login`] of its own.
    InvitationAccepted { user: String },
    /// An API key was made (`key` is its ID, never its secret).
    ApiKeyCreated {
        key: String,
        name: String,
        scope: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user: Option<String>,
    },
    /// An API key was revoked.
    ApiKeyRevoked { key: String },
    /// A person logged in to the console (the actor names them).
    Login {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        address: Option<String>,
    },
    /// A login was refused: the name tried (cut to [`MAX_TEXT`]; empty on
    /// the embedded store's one-password form) and the client's address.
    FailedLogin { name: String, address: String },
    /// A person logged out of one session.
    Logout,
    /// A person ended all their sessions.
    LogoutEverywhere { user: String, sessions: u64 },
    /// A setting changed: which one, never its value.
    SettingsChanged { setting: String },
    /// A bulk action on links: which action, how many links it changed,
    /// and the first [`MAX_KEYS_LISTED`] of their keys.
    Bulk {
        action: String,
        count: u64,
        keys: Vec<String>,
    },
}

impl Event {
    /// A failed login, the name tried cut to [`MAX_TEXT`] characters.
    pub fn failed_login(name: &str, address: impl Into<String>) -> Self {
        Event::FailedLogin {
            name: name.chars().take(MAX_TEXT).collect(),
            address: address.into(),
        }
    }

    /// A bulk action on `keys` (all of them counted, the first
    /// [`MAX_KEYS_LISTED`] named).
    pub fn bulk<S: AsRef<str>>(action: &str, keys: &[S]) -> Self {
        Event::Bulk {
            action: action.to_owned(),
            count: keys.len() as u64,
            keys: keys
                .iter()
                .take(MAX_KEYS_LISTED)
                .map(|k| k.as_ref().to_owned())
                .collect(),
        }
    }

    /// The event's kind, as stored.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::UserInvited { .. } => "user_invited",
            Event::RoleChanged { .. } => "role_changed",
            Event::UserRemoved { .. } => "user_removed",
            Event::InvitationReset { .. } => "invitation_reset",
            Event::InvitationAccepted { .. } => "invitation_accepted",
            Event::ApiKeyCreated { .. } => "api_key_created",
            Event::ApiKeyRevoked { .. } => "api_key_revoked",
            Event::Login { .. } => "login",
            Event::FailedLogin { .. } => "failed_login",
            Event::Logout => "logout",
            Event::LogoutEverywhere { .. } => "logout_everywhere",
            Event::SettingsChanged { .. } => "settings_changed",
            Event::Bulk { .. } => "bulk",
        }
    }

    /// One line for a person (the console's audit page).
    pub fn describe(&self) -> String {
        match self {
            Event::UserInvited { user, role } => format!("invited {user} as {role}"),
            Event::RoleChanged { user, from, to } => {
                format!("changed {user}'s role from {from} to {to}")
            }
            Event::UserRemoved { user } => format!("removed {user}"),
            Event::InvitationReset { user } => format!("reset {user}'s invitation"),
            Event::InvitationAccepted { user } => format!("{user} accepted the invitation"),
            Event::ApiKeyCreated {
                key, name, scope, ..
            } => format!("created API key {key} ({name}, {scope})"),
            Event::ApiKeyRevoked { key } => format!("revoked API key {key}"),
            Event::Login { address: Some(a) } => format!("logged in from {a}"),
            Event::Login { address: None } => "logged in".to_owned(),
            Event::FailedLogin { name, address } if name.is_empty() => {
                format!("failed login from {address}")
            }
            Event::FailedLogin { name, address } => {
                format!("failed login as {name:?} from {address}")
            }
            Event::Logout => "logged out".to_owned(),
            Event::LogoutEverywhere { user, sessions } => {
                format!("logged {user} out everywhere ({sessions} sessions)")
            }
            Event::SettingsChanged { setting } => format!("changed the setting {setting}"),
            Event::Bulk {
                action,
                count,
                keys,
            } => {
                // The console's labels are capitalised ("Enable"); the
                // log reads as one sentence after the actor.
                let action = action.to_lowercase();
                let more = (*count as usize).saturating_sub(keys.len());
                let tail = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                match count {
                    0 => format!("{action}: no link changed"),
                    1 => format!("{action} on 1 link: {}{tail}", keys.join(", ")),
                    _ => format!("{action} on {count} links: {}{tail}", keys.join(", ")),
                }
            }
        }
    }
}

/// One entry of the audit log, as stored and as `qrtag audit` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Unique and in time order: the instant to the microsecond and a
    /// random suffix ([`entry_id`]), so entries sort by it on both stores
    /// and two nodes writing at once never collide.
    pub id: String,
    /// When, RFC 3339 UTC to the second, as links are stamped.
    pub at: String,
    pub actor: Actor,
    pub surface: Surface,
    pub event: Event,
}

impl AuditEntry {
    pub fn new(at: DateTime<Utc>, actor: Actor, surface: Surface, event: Event) -> Self {
        Self {
            id: entry_id(at, rand::random::<u32>()),
            at: time_text(at),
            actor,
            surface,
            event,
        }
    }

    /// The entry as one line of JSON (no newline inside: JSON escapes it).
    pub fn json_line(&self) -> String {
        // Serializing these types cannot fail: no map with non-string keys.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// An entry read back from its JSON.
    pub fn parse(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// An entry's ID: `20261128T120001.123456Z-9f3a1c2b`. Digits first, so it
/// sorts before CouchDB's `_design/` IDs, and by time as text.
pub fn entry_id(at: DateTime<Utc>, salt: u32) -> String {
    format!("{}-{salt:08x}", id_time(at))
}

/// The lowest ID an entry at or after `t` can have: `--since` as a bound.
pub fn id_floor(t: DateTime<Utc>) -> String {
    id_time(t)
}

fn id_time(t: DateTime<Utc>) -> String {
    t.format("%Y%m%dT%H%M%S%.6fZ").to_string()
}

/// Which entries to read: newest first, at most `limit`, only those at or
/// after `since`, only those older than the entry `before` (a page's last).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub since: Option<DateTime<Utc>>,
    pub before: Option<String>,
    pub limit: usize,
}

impl AuditQuery {
    /// The bounds on the ID: at least `lower`, below `upper`.
    pub fn id_bounds(&self) -> (Option<String>, Option<&str>) {
        (self.since.map(id_floor), self.before.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 1).unwrap() + chrono::Duration::microseconds(5)
    }

    #[test]
    fn an_entry_is_one_json_line_with_stable_field_names() {
        let mut entry = AuditEntry::new(
            at(),
            Actor::Console { user: "ann".into() },
            Surface::Console,
            Event::failed_login("bo\nb", "192.0.2.7"),
        );
        entry.id = entry_id(at(), 0x9f3a1c2b);
        let line = entry.json_line();
        assert!(!line.contains('\n'), "{line}");
        let value: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(
            value,
            json!({
                "id": "20261128T120001.000005Z-9f3a1c2b",
                "at": "2026-11-28T12:00:01Z",
                "actor": {"kind": "console", "user": "ann"},
                "surface": "console",
                "event": {"kind": "failed_login", "name": "bo\nb", "address": "192.0.2.7"}
            })
        );
        assert_eq!(AuditEntry::parse(&line).expect("parse"), entry);
    }

    #[test]
    fn every_event_round_trips_and_names_its_kind() {
        let events = [
            Event::UserInvited {
                user: "bo".into(),
                role: Role::Editor,
            },
            Event::RoleChanged {
                user: "bo".into(),
                from: Role::Editor,
                to: Role::Viewer,
            },
            Event::UserRemoved { user: "bo".into() },
            Event::InvitationReset { user: "bo".into() },
            Event::ApiKeyCreated {
                key: "Ab3dE5gH".into(),
                name: "shop".into(),
                scope: "write".into(),
                user: None,
            },
            Event::ApiKeyRevoked {
                key: "Ab3dE5gH".into(),
            },
            Event::Login {
                address: Some("::1".into()),
            },
            Event::failed_login("", "::1"),
            Event::Logout,
            Event::LogoutEverywhere {
                user: "ann".into(),
                sessions: 3,
            },
            Event::SettingsChanged {
                setting: "console_password".into(),
            },
            Event::bulk("disable", &["a", "b"]),
        ];
        for event in events {
            let value = serde_json::to_value(&event).expect("json");
            assert_eq!(value["kind"], event.kind(), "{value}");
            let back: Event = serde_json::from_value(value).expect("parse");
            assert_eq!(back, event);
            assert!(!event.describe().is_empty());
        }
    }

    #[test]
    fn outside_texts_and_key_lists_are_bounded() {
        let Event::FailedLogin { name, .. } = Event::failed_login(&"é".repeat(5000), "x") else {
            panic!("a failed login");
        };
        assert_eq!(name.chars().count(), MAX_TEXT);
        let keys: Vec<String> = (0..250).map(|i| format!("k{i}")).collect();
        let event = Event::bulk("enable", &keys);
        let Event::Bulk { count, keys, .. } = &event else {
            panic!("a bulk action");
        };
        assert_eq!((*count, keys.len()), (250, MAX_KEYS_LISTED));
        assert!(
            event.describe().ends_with("and 150 more"),
            "{}",
            event.describe()
        );
        let none: [&str; 0] = [];
        assert_eq!(
            Event::bulk("Enable", &none).describe(),
            "enable: no link changed"
        );
        assert_eq!(
            Event::bulk("Disable", &["V6fJh"]).describe(),
            "disable on 1 link: V6fJh"
        );
    }

    #[test]
    fn ids_sort_by_time_and_since_is_a_lower_bound() {
        let early = entry_id(at(), u32::MAX);
        let later = entry_id(at() + chrono::Duration::microseconds(1), 0);
        assert!(early < later);
        assert!(
            id_floor(at()) <= early
                && id_floor(at()) > entry_id(at() - chrono::Duration::microseconds(1), u32::MAX)
        );
        assert!(early.as_str() < "_design/qrtag");
        let q = AuditQuery {
            since: Some(at()),
            before: Some(later.clone()),
            limit: 5,
        };
        assert_eq!(q.id_bounds(), (Some(id_floor(at())), Some(later.as_str())));
    }
}
