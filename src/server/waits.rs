//! How long a connection may wait for its client's next bytes.
//!
//! A request (head and body) must arrive within `--request-timeout` of its
//! first byte: actix's own timeout covers only a connection's first head,
//! so a client sending a byte now and then could otherwise hold a
//! keep-alive connection forever.
//!
//! A crowded listener (`limits::Slot::crowded`: from 75 % of its cap until
//! back under half)
//! makes room, so that connections that send nothing cannot keep scans
//! waiting in the kernel's queue (issue 30: 14 addresses held a listener of
//! 3,011 with connections answered 408 after 10 s and reopened): an idle
//! keep-alive connection (its answer written) closes first, at once, and a
//! connection waiting [`CROWDED_WAIT`] for its first head, or for the rest
//! of a request, closes then instead of at `--request-timeout`. The check is
//! one timer per connection, firing every [`CROWDED_WAIT`] while it waits,
//! and two atomic loads; [`judge`] is the decision, pure.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The deadline of a wait on a crowded listener (or `--request-timeout`
/// when that is shorter): a phone sends its request head with the
/// connection, so a real scan needs a fraction of it.
pub const CROWDED_WAIT: Duration = Duration::from_secs(1);

/// What the connection waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Its first request, since it was accepted (actix answers 408 at
    /// `--request-timeout`).
    First { since: Instant },
    /// The rest of request `of`, begun at `since`.
    Request { of: u64, since: Instant },
    /// The next request after the `after`th was read whole; `written`: the
    /// answer went out, so the connection is an idle keep-alive.
    Between { after: u64, written: bool },
}

/// What [`judge`] decides when a connection's timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The request took longer than `--request-timeout`.
    TooSlow,
    /// The listener is crowded and this connection gives its place up.
    MakeRoom,
    /// Look again then.
    CheckAt(Instant),
}

/// The decision for `wait` at `now`; `full` is `--request-timeout`,
/// `short` the crowded deadline (at most `full`).
pub fn judge(wait: Wait, now: Instant, crowded: bool, full: Duration, short: Duration) -> Verdict {
    match wait {
        Wait::Request { since, .. } if now >= since + full => Verdict::TooSlow,
        Wait::Request { since, .. } | Wait::First { since } if crowded && now >= since + short => {
            Verdict::MakeRoom
        }
        Wait::Between { written: true, .. } if crowded => Verdict::MakeRoom,
        Wait::Request { since, .. } => Verdict::CheckAt((now + short).min(since + full)),
        Wait::First { .. } | Wait::Between { .. } => Verdict::CheckAt(now + short),
    }
}

/// One connection's wait and its timer.
#[derive(Debug)]
pub struct Waits {
    full: Duration,
    short: Duration,
    wait: Wait,
    /// Allocated at the first wait, then reset, never replaced.
    timer: Option<Pin<Box<Sleep>>>,
}

impl Waits {
    /// For a connection accepted now, whose requests may take `full`.
    pub fn new(full: Duration) -> Self {
        Self {
            full,
            short: full.min(CROWDED_WAIT),
            wait: Wait::First {
                since: Instant::now(),
            },
            timer: None,
        }
    }

    /// Follows the connection after bytes were read: whether a request is
    /// begun and not read whole, and how many were begun.
    pub fn after_read(&mut self, in_request: bool, started: u64) {
        if in_request {
            if !matches!(self.wait, Wait::Request { of, .. } if of == started) {
                let since = Instant::now();
                self.wait = Wait::Request { of: started, since };
                self.arm(since + self.short);
            }
        } else if started > 0
            && !matches!(self.wait, Wait::Between { after, .. } if after == started)
        {
            self.wait = Wait::Between {
                after: started,
                written: false,
            };
        }
    }

    /// Notes that bytes were written: after a request, its answer.
    pub fn after_write(&mut self) {
        if let Wait::Between { written, .. } = &mut self.wait {
            *written = true;
        }
    }

    /// Called when a read is pending: `Ready` with the error to close the
    /// connection with, or `Pending` with the timer registered.
    pub fn poll(&mut self, cx: &mut Context<'_>, crowded: impl Fn() -> bool) -> Poll<io::Error> {
        // An idle keep-alive connection on a crowded listener goes at once.
        if matches!(self.wait, Wait::Between { written: true, .. }) && crowded() {
            return Poll::Ready(make_room());
        }
        let short = self.short;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(short)));
        loop {
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            match judge(self.wait, Instant::now(), crowded(), self.full, short) {
                Verdict::TooSlow => {
                    return Poll::Ready(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "a request was not received whole in time",
                    ));
                }
                Verdict::MakeRoom => return Poll::Ready(make_room()),
                Verdict::CheckAt(at) => timer.as_mut().reset(at),
            }
        }
    }

    fn arm(&mut self, at: Instant) {
        match &mut self.timer {
            Some(timer) => timer.as_mut().reset(at),
            None => self.timer = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }
}

fn make_room() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "closed to make room on a crowded listener",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: Duration = Duration::from_secs(10);
    const SHORT: Duration = Duration::from_secs(1);

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn a_request_has_its_full_deadline_while_the_listener_is_not_crowded() {
        let t0 = Instant::now();
        let wait = Wait::Request { of: 1, since: t0 };
        assert_eq!(
            judge(wait, at(t0, 1_000), false, FULL, SHORT),
            Verdict::CheckAt(at(t0, 2_000))
        );
        assert_eq!(
            judge(wait, at(t0, 9_500), false, FULL, SHORT),
            Verdict::CheckAt(at(t0, 10_000)),
            "never past the deadline"
        );
        assert_eq!(
            judge(wait, at(t0, 10_000), false, FULL, SHORT),
            Verdict::TooSlow
        );
        assert_eq!(
            judge(wait, at(t0, 10_000), true, FULL, SHORT),
            Verdict::TooSlow
        );
    }

    #[test]
    fn a_crowded_listener_cuts_waits_to_the_short_deadline() {
        let t0 = Instant::now();
        for wait in [
            Wait::First { since: t0 },
            Wait::Request { of: 1, since: t0 },
        ] {
            assert_eq!(
                judge(wait, at(t0, 999), true, FULL, SHORT),
                Verdict::CheckAt(at(t0, 1_999)),
                "{wait:?}: not before the short deadline"
            );
            assert_eq!(
                judge(wait, at(t0, 1_000), true, FULL, SHORT),
                Verdict::MakeRoom,
                "{wait:?}"
            );
        }
        // actix answers a silent first connection itself when not crowded.
        assert_eq!(
            judge(
                Wait::First { since: t0 },
                at(t0, 30_000),
                false,
                FULL,
                SHORT
            ),
            Verdict::CheckAt(at(t0, 31_000))
        );
    }

    #[test]
    fn idle_keep_alives_go_first_but_not_before_their_answer() {
        let t0 = Instant::now();
        let idle = Wait::Between {
            after: 1,
            written: true,
        };
        let answering = Wait::Between {
            after: 1,
            written: false,
        };
        assert_eq!(judge(idle, t0, true, FULL, SHORT), Verdict::MakeRoom);
        assert_eq!(
            judge(idle, t0, false, FULL, SHORT),
            Verdict::CheckAt(at(t0, 1_000))
        );
        assert_eq!(
            judge(answering, t0, true, FULL, SHORT),
            Verdict::CheckAt(at(t0, 1_000))
        );
    }

    #[tokio::test]
    async fn reads_and_writes_move_the_wait() {
        let mut waits = Waits::new(FULL);
        assert!(matches!(waits.wait, Wait::First { .. }));
        waits.after_write();
        assert!(
            matches!(waits.wait, Wait::First { .. }),
            "nothing to answer"
        );
        waits.after_read(true, 1);
        assert!(matches!(waits.wait, Wait::Request { of: 1, .. }));
        waits.after_read(false, 1);
        assert_eq!(
            waits.wait,
            Wait::Between {
                after: 1,
                written: false
            }
        );
        waits.after_write();
        waits.after_read(false, 1);
        assert_eq!(
            waits.wait,
            Wait::Between {
                after: 1,
                written: true
            },
            "the same request again"
        );
        // A second request read whole in one go waits for its answer.
        waits.after_read(false, 2);
        assert_eq!(
            waits.wait,
            Wait::Between {
                after: 2,
                written: false
            }
        );
    }
}
