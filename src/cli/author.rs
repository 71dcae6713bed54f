//! Who runs a `qrtag` command (issue 35): the operating-system user and the
//! host, read once at the CLI's edge, so a history entry written from a
//! shell says "cli (ann@kiosk)" rather than only "the command line".

use crate::link::{Author, Via};
use crate::values::actor::Actor;

/// The author of a write made by this command through `via`.
pub fn author(via: Via) -> Author {
    Author::new(via, actor())
}

/// This command's actor, for a link's history and the audit log alike.
pub fn actor() -> Actor {
    Actor::Cli {
        os_user: os_user(),
        host: host(),
    }
}

/// `$USER` (or `$LOGNAME`), as the shell says; failing both, the numeric
/// user ID, which names the account all the same.
fn os_user() -> String {
    ["USER", "LOGNAME"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| {
            // SAFETY: getuid has no preconditions and cannot fail.
            format!("uid {}", unsafe { libc::getuid() })
        })
}

/// The host name from the kernel; `unknown` if it cannot be read.
fn host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at
    // most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match String::from_utf8_lossy(&buf[..end]).trim() {
        "" => "unknown".into(),
        name => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_names_a_user_and_a_host() {
        let a = author(Via::Cli);
        assert_eq!(a.via, Via::Cli);
        let Actor::Cli { os_user, host } = a.actor else {
            panic!("a CLI actor");
        };
        assert!(!os_user.is_empty() && !host.is_empty());
    }
}
