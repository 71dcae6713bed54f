//! A rule destination that would send the link's scans back to the link:
//! one on the public origin at the link's own key or below it (the
//! resolver matches the longest key that is a prefix, so `/gig/x` comes
//! back to `gig`), where the same scan meets the same rule again until the
//! hop limit answers with an error. Refused by every surface that saves
//! rules, as a looping fallback is ([`super::super::fallback_loop`]), since
//! unlike a broken chain elsewhere it can never work.

use super::Rules;
use crate::link::fallback_loop;

/// Rule `index`'s destination is the link's own short URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{path}: {url} is the link {key}'s own short URL: a scan this rule answers would come back to it for ever"
)]
pub struct RuleLoops {
    /// `rules[2].url`, as [`super::RuleError::path`] names a field.
    pub path: String,
    pub url: String,
    pub key: String,
}

impl RuleLoops {
    /// The field as a JSON Pointer (`/rules/2/url`), for the REST API.
    pub fn pointer(&self) -> String {
        format!("/{}", self.path.replace(['[', '.'], "/").replace(']', ""))
    }
}

impl Rules {
    /// Refuses the first rule whose destination is the link `key`'s own
    /// short URL on `public_origin` (an ASCII origin without a trailing
    /// slash, as `PublicUrl::origin` gives). Check against every public URL
    /// the links are known by, as the fallback's check is.
    pub fn check_loops(&self, key: &str, public_origin: &str) -> Result<(), RuleLoops> {
        for index in 0..self.len() {
            let Some(url) = self.url(index) else { continue };
            if let Err(e) = fallback_loop::check(url, key, public_origin) {
                return Err(RuleLoops {
                    path: format!("rules[{index}].url"),
                    url: e.fallback,
                    key: e.key,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::rules::Capabilities;

    fn rules(urls: &[&str]) -> Rules {
        let list: Vec<serde_json::Value> = urls
            .iter()
            .map(|u| serde_json::json!({"url": u, "os": ["ios"]}))
            .collect();
        Rules::from_json(&serde_json::Value::Array(list), &Capabilities::default())
            .expect("valid rules")
    }

    #[test]
    fn a_rule_at_its_own_key_or_below_is_refused_and_names_the_rule() {
        let origin = "https://0x1f.ie";
        assert_eq!(
            rules(&["https://example.com/gig"]).check_loops("gig", origin),
            Ok(())
        );
        assert_eq!(
            rules(&["https://0x1f.ie/other"]).check_loops("gig", origin),
            Ok(())
        );
        assert_eq!(
            rules(&["https://0x1f.ie/gigs"]).check_loops("gig", origin),
            Ok(())
        );
        for own in ["https://0x1f.ie/gig", "https://0x1f.ie/gig/x?y=1"] {
            let e = rules(&["https://example.com/a", own])
                .check_loops("gig", origin)
                .expect_err("loops");
            assert_eq!(e.path, "rules[1].url");
            assert_eq!(e.pointer(), "/rules/1/url");
            assert_eq!(e.key, "gig");
            assert!(
                e.to_string()
                    .starts_with("rules[1].url: https://0x1f.ie/gig"),
                "{e}"
            );
        }
        assert_eq!(Rules::default().check_loops("gig", origin), Ok(()));
    }
}
