//! Which public URL a command uses: the one recorded with the links, or the
//! one it was given. A tag printed for an origin the service does not answer
//! on decodes perfectly and never redirects, so the choice is one pure
//! function, the same for every command that prints or encodes a short URL.

use crate::values::public_url::PublicUrl;

/// A public URL a command was given, and where from.
#[derive(Debug, Clone)]
pub struct Given {
    pub url: PublicUrl,
    /// Where it came from, for messages: `--public-url`,
    /// `QRTAG_PUBLIC_URL`, `file /etc/qrtag/qrtag.toml`.
    pub from: String,
    /// Typed on this command line: a deliberate one-off.
    pub on_command_line: bool,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Print with `url`; `record` when none is recorded yet (the first one
    /// set becomes the store's); `one_off` when it differs from the recorded
    /// one and was typed on the command line.
    Use {
        url: PublicUrl,
        record: bool,
        one_off: bool,
    },
    /// None recorded, none given.
    Nothing,
}

/// A given public URL that is not the recorded one, from a setting that
/// would silently apply to every command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the public URL {given} (from {from}) is not {recorded}, the one recorded with the links: \
     tags printed with it would not reach this service. Remove it, pass --public-url {given} \
     for a one-off, or change the recorded one with qrtag init --public-url {given} --force"
)]
pub struct Conflict {
    pub given: PublicUrl,
    pub from: String,
    pub recorded: PublicUrl,
}

pub fn choose(recorded: Option<PublicUrl>, given: Option<Given>) -> Result<Choice, Conflict> {
    Ok(match (recorded, given) {
        (None, None) => Choice::Nothing,
        (Some(url), None) => Choice::Use {
            url,
            record: false,
            one_off: false,
        },
        (None, Some(g)) => Choice::Use {
            url: g.url,
            record: true,
            one_off: false,
        },
        (Some(r), Some(g)) if r == g.url => Choice::Use {
            url: r,
            record: false,
            one_off: false,
        },
        (Some(_), Some(g)) if g.on_command_line => Choice::Use {
            url: g.url,
            record: false,
            one_off: true,
        },
        (Some(recorded), Some(g)) => {
            return Err(Conflict {
                given: g.url,
                from: g.from,
                recorded,
            });
        }
    })
}

/// A local origin (see [`PublicUrl::is_local`]) printed without
/// `--allow-local-url`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the public URL {url} ({from}) is a local address: a tag printed with it works only on this \
     machine or its network. Set the service's real public URL, or pass --allow-local-url \
     (allow_local_url = true in the configuration file) to print it anyway"
)]
pub struct LocalRefused {
    pub url: PublicUrl,
    pub from: String,
}

/// Whether `url` may be printed on a tag.
pub fn printable(url: &PublicUrl, from: &str, allow_local: bool) -> Result<(), LocalRefused> {
    if url.is_local() && !allow_local {
        return Err(LocalRefused {
            url: url.clone(),
            from: from.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> PublicUrl {
        PublicUrl::parse(s).expect("url")
    }

    fn given(s: &str, from: &str) -> Option<Given> {
        Some(Given {
            url: url(s),
            from: from.into(),
            on_command_line: from.starts_with("--"),
        })
    }

    #[test]
    fn the_recorded_one_wins_unless_typed() {
        let a = "https://a.example";
        let use_ = |u: &str, record, one_off| Choice::Use {
            url: url(u),
            record,
            one_off,
        };
        assert_eq!(choose(None, None), Ok(Choice::Nothing));
        assert_eq!(choose(Some(url(a)), None), Ok(use_(a, false, false)));
        assert_eq!(
            choose(None, given(a, "QRTAG_PUBLIC_URL")),
            Ok(use_(a, true, false))
        );
        assert_eq!(
            choose(Some(url(a)), given(a, "QRTAG_PUBLIC_URL")),
            Ok(use_(a, false, false))
        );
        let b = "https://b.example";
        assert_eq!(
            choose(Some(url(a)), given(b, "--public-url")),
            Ok(use_(b, false, true))
        );
        let err = choose(Some(url(a)), given(b, "QRTAG_PUBLIC_URL")).expect_err("differs");
        let said = err.to_string();
        assert!(
            said.starts_with("the public URL https://b.example (from QRTAG_PUBLIC_URL) is not https://a.example, the one recorded"),
            "{said}"
        );
    }

    #[test]
    fn local_ones_need_leave() {
        let local = url("http://127.0.0.1:8080");
        assert!(printable(&local, "default", false).is_err());
        assert!(printable(&local, "default", true).is_ok());
        assert!(printable(&url("https://0x1f.ie"), "x", false).is_ok());
    }
}
