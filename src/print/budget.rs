//! What one print job may cost a server (issue 30): a run of 1,000 copies
//! of a 1,039-character key as A4 posters at level H was 24 CPU-seconds
//! and a 60 MB PDF for one API request. The cost of a job is the modules
//! its codes draw (each code's width squared, the quiet zone not counted):
//! encoding (the mask scoring), the page streams and the file all grow
//! with it. A served job past [`SERVED_MODULES`] is refused before any
//! code is built; `qrtag print` has no budget (see [`SERVED_MODULES`]).

use super::{Job, PrintError};
use crate::qr;

/// The most modules one request to the server may draw: 2,000,000, 1,000
/// codes of version 6 (41×41, the short URL of a 20-character slug at
/// level H), so the REST API's largest run (1,000 keys) of ordinary keys
/// fits and a job costs the server about two CPU-seconds at most. The CLI
/// is not bounded: whoever runs it owns the machine and the wait, and a
/// `qrtag batch --template` run of thousands of codes is its purpose.
pub const SERVED_MODULES: u64 = 2_000_000;

/// The modules `job`'s codes draw, from each code's planned version (the
/// segment choice, linear in the text; no symbol is built). A logo raises
/// the level as far as H (`brand::plan_logo`), so such a job is counted at
/// H.
pub fn modules(job: &Job) -> Result<u64, qr::QrError> {
    let ec = if job.options.brand.logo.is_some() {
        qr::EcLevel::H
    } else {
        job.options.ec
    };
    let mut total = 0u64;
    for tag in &job.tags {
        let plan = qr::plan(tag.text.as_bytes(), ec)?;
        let width = 17 + 4 * u64::from(plan.version);
        total += width * width;
    }
    Ok(total)
}

/// Refuses `job` when its codes draw more than `limit` modules, saying
/// what to reduce.
pub fn check(job: &Job, limit: u64) -> Result<(), PrintError> {
    let modules = modules(job)?;
    if modules > limit {
        return Err(PrintError::OverBudget {
            modules,
            limit,
            codes: job.tags.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::print::{Options, Tag, Target};
    use crate::qr::EcLevel;

    fn job(text: &str, n: usize, ec: EcLevel) -> Job {
        Job {
            target: Target::Poster {
                paper: "A4".parse().expect("paper"),
                bleed: 0.0,
                crop_marks: false,
            },
            tags: vec![
                Tag {
                    text: text.to_owned(),
                    caption: String::new(),
                };
                n
            ],
            options: Options {
                ec,
                ..Options::default()
            },
        }
    }

    #[test]
    fn a_run_of_ordinary_keys_fits_and_the_issues_run_does_not() {
        let slug = "https://tags.example.org/spring-fair-2026-door";
        check(&job(slug, 1000, EcLevel::H), SERVED_MODULES).expect("fits");
        // The issue's run: a 1,039-character key, 1,000 times, level H.
        let long = format!("https://0x1f.ie/{}", "k".repeat(1039));
        let err = check(&job(&long, 1000, EcLevel::H), SERVED_MODULES).expect_err("over");
        assert!(err.is_usage());
        let said = err.to_string();
        assert!(said.contains("at most 2000000"), "{said}");
        assert!(said.contains("fewer keys"), "{said}");
        // The longest key the store takes, one code: always within.
        let longest = format!("https://0x1f.ie/{}", "k".repeat(256));
        check(&job(&longest, 1, EcLevel::H), SERVED_MODULES).expect("one code fits");
    }

    #[test]
    fn modules_are_each_codes_width_squared() {
        // Version 1 (21×21) and version 2 (25×25) at level L.
        let v1 = modules(&job("https://a.ie/k", 3, EcLevel::L)).expect("plans");
        assert_eq!(v1, 3 * 21 * 21);
        let v2 = modules(&job("https://0x1f.ie/H83if", 1, EcLevel::L)).expect("plans");
        assert_eq!(v2, 25 * 25);
    }
}
