//! When to try an upload again and how long to wait first. Pure: time and randomness come
//! in through [`Clock`] and a `FnMut() -> f64`, so the policy is tested without sleeping.
//!
//! Retried: connection errors, timeouts, 408, 429 and 5xx. The wait is exponential with
//! "equal jitter" (half fixed, half random, so clients that failed together spread out but
//! never retry at once), and never shorter than a `Retry-After` the server sent. A server
//! asking for more than [`RetryPolicy::max_retry_after`] ends the retries: the file is left
//! for a later run rather than holding this one for an unbounded time.

use std::time::{Duration, SystemTime};

/// When an upload is tried again and how long it waits first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first one.
    pub retries: u32,
    /// The first backoff; it doubles on each retry.
    pub base: Duration,
    /// No backoff is longer than this.
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured; a longer one gives up.
    pub max_retry_after: Duration,
    /// No retry starts, and no wait runs, past this moment (`--deadline`).
    pub deadline: Option<SystemTime>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 5,
            base: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            deadline: None,
        }
    }
}

/// True for the statuses worth trying again: 408 Request Timeout, 429 Too Many Requests
/// and every 5xx.
pub fn retryable_status(code: u16) -> bool {
    code == 408 || code == 429 || (500..600).contains(&code)
}

/// Reads a `Retry-After` value: delta-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`, or the obsolete forms HTTP allows), relative to `now`.
/// A date in the past means "now". `None` when the value is neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // Absurdly long numbers saturate; the cap turns them into "give up".
        return Some(Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Why the retries ended without success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// Every allowed attempt failed.
    Exhausted,
    /// The server asked to wait longer than the policy allows.
    RetryAfterTooLong(Duration),
    /// The next attempt would start after the deadline.
    Deadline,
}

/// What to do after a failed attempt ([`RetryPolicy::next_wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Wait this long, then try again.
    After(Duration),
    /// Stop trying.
    GiveUp(GiveUp),
}

impl RetryPolicy {
    /// The backoff before retry number `retry` (0 for the first), for `unit` in [0, 1):
    /// between half and all of `base × 2^retry`, capped at `max_backoff`.
    pub fn backoff(&self, retry: u32, unit: f64) -> Duration {
        let full = self
            .base
            .saturating_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX))
            .min(self.max_backoff);
        let unit = if unit.is_finite() {
            unit.clamp(0.0, 1.0)
        } else {
            0.0
        };
        full / 2 + (full / 2).mul_f64(unit)
    }

    /// What to do after a failed attempt when `retries_done` retries have already been
    /// made.
    pub fn next_wait(&self, retries_done: u32, retry_after: Option<Duration>, unit: f64) -> Wait {
        if retries_done >= self.retries {
            return Wait::GiveUp(GiveUp::Exhausted);
        }
        let backoff = self.backoff(retries_done, unit);
        match retry_after {
            Some(d) if d > self.max_retry_after => Wait::GiveUp(GiveUp::RetryAfterTooLong(d)),
            Some(d) => Wait::After(d.max(backoff)),
            None => Wait::After(backoff),
        }
    }
}

/// Wall-clock time and sleeping, replaceable in tests.
pub trait Clock {
    /// The current time.
    fn now(&self) -> SystemTime;
    /// Waits `d`.
    fn sleep(&mut self, d: Duration);
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// What one attempt came to.
#[derive(Debug)]
pub enum Step<T, E> {
    /// It succeeded.
    Done(T),
    /// Worth another try.
    Transient {
        /// Why it failed.
        error: E,
        /// The raw `Retry-After` header, if the server sent one.
        retry_after: Option<String>,
    },
    /// Trying again would give the same answer.
    Fatal(E),
}

/// The last error, how many attempts were made, and why they stopped (`None`: the error
/// was fatal).
#[derive(Debug)]
pub struct Failure<E> {
    /// The last attempt's error.
    pub error: E,
    /// Attempts made, the first included.
    pub attempts: u32,
    /// Why the retries stopped; `None` when the error was fatal.
    pub gave_up: Option<GiveUp>,
}

/// Runs `attempt` (given the attempt number, from 1) until it is done, fails fatally, or
/// the policy gives up; `on_retry` hears about each wait before it starts. Returns the
/// result and the number of attempts made.
pub fn run<T, E>(
    policy: &RetryPolicy,
    clock: &mut dyn Clock,
    unit: &mut dyn FnMut() -> f64,
    on_retry: &mut dyn FnMut(&E, u32, Duration),
    attempt: &mut dyn FnMut(u32) -> Step<T, E>,
) -> Result<(T, u32), Failure<E>> {
    let mut n = 1;
    loop {
        match attempt(n) {
            Step::Done(v) => return Ok((v, n)),
            Step::Fatal(error) => {
                return Err(Failure {
                    error,
                    attempts: n,
                    gave_up: None,
                })
            }
            Step::Transient { error, retry_after } => {
                let after = retry_after
                    .as_deref()
                    .and_then(|v| parse_retry_after(v, clock.now()));
                let wait = match policy.next_wait(n - 1, after, unit()) {
                    Wait::After(d) if policy.deadline.is_some_and(|dl| clock.now() + d >= dl) => {
                        Wait::GiveUp(GiveUp::Deadline)
                    }
                    w => w,
                };
                match wait {
                    Wait::After(d) => {
                        on_retry(&error, n, d);
                        clock.sleep(d);
                        n += 1;
                    }
                    Wait::GiveUp(why) => {
                        return Err(Failure {
                            error,
                            attempts: n,
                            gave_up: Some(why),
                        })
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that only moves when slept, recording each sleep.
    struct FakeClock {
        now: SystemTime,
        slept: Vec<Duration>,
    }

    impl FakeClock {
        fn new() -> Self {
            FakeClock {
                now: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
                slept: Vec::new(),
            }
        }
    }

    impl Clock for FakeClock {
        fn now(&self) -> SystemTime {
            self.now
        }
        fn sleep(&mut self, d: Duration) {
            self.slept.push(d);
            self.now += d;
        }
    }

    fn policy() -> RetryPolicy {
        RetryPolicy {
            retries: 5,
            base: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            max_retry_after: Duration::from_secs(60),
            deadline: None,
        }
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn backoff_doubles_within_half_to_full_and_is_capped() {
        let p = policy();
        for (retry, full) in [
            (0, 100),
            (1, 200),
            (2, 400),
            (3, 800),
            (4, 1000),
            (40, 1000),
        ] {
            assert_eq!(p.backoff(retry, 0.0), ms(full / 2), "retry {retry}, unit 0");
            assert_eq!(p.backoff(retry, 1.0), ms(full), "retry {retry}, unit 1");
            let mid = p.backoff(retry, 0.5);
            assert!(
                mid > ms(full / 2) && mid < ms(full),
                "retry {retry}: {mid:?}"
            );
        }
        // Out-of-range randomness cannot make the wait negative or longer than the cap.
        assert_eq!(p.backoff(0, f64::NAN), ms(50));
        assert_eq!(p.backoff(0, 7.0), ms(100));
        assert_eq!(p.backoff(0, -1.0), ms(50));
    }

    #[test]
    fn retry_after_is_a_floor_and_a_long_one_gives_up() {
        let p = policy();
        assert_eq!(
            p.next_wait(0, Some(Duration::from_secs(3)), 0.0),
            Wait::After(Duration::from_secs(3))
        );
        // A Retry-After shorter than the backoff does not shorten it.
        assert_eq!(p.next_wait(3, Some(ms(10)), 1.0), Wait::After(ms(800)));
        assert_eq!(
            p.next_wait(0, Some(Duration::from_secs(61)), 0.0),
            Wait::GiveUp(GiveUp::RetryAfterTooLong(Duration::from_secs(61)))
        );
        assert_eq!(p.next_wait(5, None, 0.0), Wait::GiveUp(GiveUp::Exhausted));
    }

    #[test]
    fn parses_both_retry_after_forms() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        // The obsolete RFC 850 and asctime forms are HTTP-dates too.
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:49:39 1994", now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
        for bad in ["", "-5", "1.5", "soon", "Sun, 32 Nov 1994 08:49:37 GMT"] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad:?}");
        }
    }

    type Driven = (
        Result<(&'static str, u32), Failure<String>>,
        Vec<Duration>,
        Vec<u32>,
    );

    /// Drives `run` with scripted attempt results; returns the outcome, the sleeps and the
    /// attempt numbers seen.
    fn drive(p: &RetryPolicy, script: Vec<Step<&'static str, String>>) -> Driven {
        let mut clock = FakeClock::new();
        let mut script = script.into_iter();
        let mut seen = Vec::new();
        let mut notified = Vec::new();
        let r = run(
            p,
            &mut clock,
            &mut || 0.5,
            &mut |_e: &String, n, d| notified.push((n, d)),
            &mut |n| {
                seen.push(n);
                script.next().expect("the script covers every attempt")
            },
        );
        assert_eq!(
            notified.iter().map(|&(_, d)| d).collect::<Vec<_>>(),
            clock.slept,
            "every wait is announced before it starts"
        );
        (r, clock.slept, seen)
    }

    fn transient(e: &str, retry_after: Option<&str>) -> Step<&'static str, String> {
        Step::Transient {
            error: e.to_string(),
            retry_after: retry_after.map(str::to_string),
        }
    }

    #[test]
    fn two_failures_then_success_waits_twice_with_growing_backoff() {
        let (r, slept, seen) = drive(
            &policy(),
            vec![
                transient("503", None),
                transient("503", None),
                Step::Done("ok"),
            ],
        );
        assert_eq!(r.unwrap(), ("ok", 3));
        assert_eq!(slept, [ms(75), ms(150)]);
        assert_eq!(seen, [1, 2, 3]);
    }

    #[test]
    fn retry_after_in_either_form_sets_the_wait() {
        let clock = FakeClock::new();
        // The fake clock starts at a fixed time; the date is 7 s after it.
        let date = httpdate::fmt_http_date(clock.now + Duration::from_secs(7));
        let (r, slept, _) = drive(
            &policy(),
            vec![
                transient("429", Some("2")),
                transient("503", Some(&date)),
                transient("503", Some("garbage")),
                Step::Done("ok"),
            ],
        );
        assert_eq!(r.unwrap().1, 4);
        // The date is measured from the clock's time when the answer came, 2 s later.
        assert_eq!(
            slept,
            [Duration::from_secs(2), Duration::from_secs(5), ms(300)]
        );
    }

    #[test]
    fn a_fatal_error_stops_at_once() {
        let (r, slept, seen) = drive(
            &policy(),
            vec![transient("503", None), Step::Fatal("400".to_string())],
        );
        let f = r.unwrap_err();
        assert_eq!((f.error.as_str(), f.attempts, f.gave_up), ("400", 2, None));
        assert_eq!(slept.len(), 1);
        assert_eq!(seen, [1, 2]);
    }

    fn three_transients() -> Vec<Step<&'static str, String>> {
        vec![
            transient("a", None),
            transient("b", None),
            transient("c", None),
        ]
    }

    #[test]
    fn gives_up_after_the_last_retry() {
        let p = RetryPolicy {
            retries: 2,
            ..policy()
        };
        let (r, slept, seen) = drive(&p, three_transients());
        let f = r.unwrap_err();
        assert_eq!(f.error, "c");
        assert_eq!(f.attempts, 3);
        assert_eq!(f.gave_up, Some(GiveUp::Exhausted));
        assert_eq!(slept.len(), 2);
        assert_eq!(seen, [1, 2, 3]);
    }

    #[test]
    fn no_wait_runs_past_the_deadline() {
        // Backoffs at unit 0.5: 75, 150, 300 ms; the deadline 300 ms after the start.
        let start = FakeClock::new().now;
        let p = RetryPolicy {
            deadline: Some(start + ms(300)),
            ..policy()
        };
        let (r, slept, seen) = drive(&p, three_transients());
        let f = r.unwrap_err();
        assert_eq!(f.gave_up, Some(GiveUp::Deadline));
        assert_eq!(f.error, "c");
        assert_eq!(slept, [ms(75), ms(150)]);
        assert_eq!(seen, [1, 2, 3]);
    }

    #[test]
    fn zero_retries_means_one_attempt() {
        let p = RetryPolicy {
            retries: 0,
            ..policy()
        };
        let (r, slept, _) = drive(&p, vec![transient("503", None)]);
        assert_eq!(r.unwrap_err().attempts, 1);
        assert!(slept.is_empty());
    }

    #[test]
    fn a_long_retry_after_gives_up_without_waiting() {
        let (r, slept, _) = drive(&policy(), vec![transient("429", Some("3600"))]);
        let f = r.unwrap_err();
        assert_eq!(
            f.gave_up,
            Some(GiveUp::RetryAfterTooLong(Duration::from_secs(3600)))
        );
        assert!(slept.is_empty());
    }

    #[test]
    fn retryable_statuses() {
        // 503 and 507 are what `serve` answers for a failure of its own (busy, full disk).
        for code in [408, 429, 500, 502, 503, 504, 507, 599] {
            assert!(retryable_status(code), "{code}");
        }
        // 421 is a `Host` that `serve` does not answer to, 422 a package that does not
        // verify: the same request gets the same answer.
        for code in [200, 301, 400, 401, 403, 404, 409, 413, 421, 422, 600] {
            assert!(!retryable_status(code), "{code}");
        }
    }
}
