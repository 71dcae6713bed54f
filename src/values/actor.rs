//! Who made a change (issue 35): a link's history and the audit log name a
//! person or a program, not only the surface it came through ([`Via`] says
//! that), so that "who repointed the poster" has an answer.
//!
//! [`Via`]: crate::link::Via

use std::fmt;

use serde::{Deserialize, Serialize};

/// The one who made a change, as stored in history and audit entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Actor {
    /// A person logged in to the web console.
    Console { user: String },
    /// A REST API key (its ID, as `qrtag api-key list` shows it) and the
    /// user it belongs to, when it belongs to one.
    ApiKey {
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user: Option<String>,
    },
    /// A DIDComm agent, by its DID.
    Didcomm { did: String },
    /// A `qrtag` command, by the operating-system user and host it ran as.
    Cli { os_user: String, host: String },
    /// A change qrtag did not make (a direct edit of a CouchDB document in
    /// Fauxton or with curl), seen afterwards; `rev` is the revision.
    Outside {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rev: Option<String>,
    },
    // Issue 35 (audit log): the actor of a failed login, who is nobody yet.
    /// Someone not logged in, by the address they came from.
    Anonymous { address: String },
}

impl Actor {
    /// The name of the person behind the change, when there is one.
    pub fn user(&self) -> Option<&str> {
        match self {
            Actor::Console { user } => Some(user),
            Actor::ApiKey { user, .. } => user.as_deref(),
            Actor::Didcomm { .. }
            | Actor::Cli { .. }
            | Actor::Outside { .. }
            | Actor::Anonymous { .. } => None,
        }
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Console { user } => write!(f, "{user} (console)"),
            Actor::ApiKey {
                key,
                user: Some(user),
            } => write!(f, "{user} (API key {key})"),
            Actor::ApiKey { key, user: None } => write!(f, "API key {key}"),
            Actor::Didcomm { did } => write!(f, "DIDComm agent {did}"),
            Actor::Cli { os_user, host } => write!(f, "cli ({os_user}@{host})"),
            Actor::Outside { rev: Some(rev) } => write!(f, "outside qrtag (revision {rev})"),
            Actor::Outside { rev: None } => f.write_str("outside qrtag"),
            Actor::Anonymous { address } => write!(f, "someone not logged in ({address})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn actors_round_trip_as_tagged_json_and_read_as_text() {
        let cases = [
            (
                Actor::Console { user: "ann".into() },
                json!({"kind": "console", "user": "ann"}),
                "ann (console)",
            ),
            (
                Actor::ApiKey {
                    key: "ab12cd34".into(),
                    user: Some("bo".into()),
                },
                json!({"kind": "api_key", "key": "ab12cd34", "user": "bo"}),
                "bo (API key ab12cd34)",
            ),
            (
                Actor::Didcomm {
                    did: "did:peer:2.x".into(),
                },
                json!({"kind": "didcomm", "did": "did:peer:2.x"}),
                "DIDComm agent did:peer:2.x",
            ),
            (
                Actor::Cli {
                    os_user: "root".into(),
                    host: "box".into(),
                },
                json!({"kind": "cli", "os_user": "root", "host": "box"}),
                "cli (root@box)",
            ),
            (
                Actor::Outside {
                    rev: Some("3-abc".into()),
                },
                json!({"kind": "outside", "rev": "3-abc"}),
                "outside qrtag (revision 3-abc)",
            ),
            (
                Actor::Anonymous {
                    address: "192.0.2.7".into(),
                },
                json!({"kind": "anonymous", "address": "192.0.2.7"}),
                "someone not logged in (192.0.2.7)",
            ),
        ];
        for (actor, stored, shown) in cases {
            assert_eq!(serde_json::to_value(&actor).expect("json"), stored);
            let back: Actor = serde_json::from_value(stored).expect("parse");
            assert_eq!(back, actor);
            assert_eq!(actor.to_string(), shown);
        }
        assert_eq!(Actor::Console { user: "ann".into() }.user(), Some("ann"));
        assert_eq!(Actor::Outside { rev: None }.user(), None);
    }
}
