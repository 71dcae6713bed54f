//! The page a person gets who scans a tag that leads nowhere (unknown,
//! disabled, expired or deleted): a phone's browser showing a bare
//! `not found` tells them nothing, so a browser gets a small HTML page
//! saying the tag is not active and whom to ask, while every other client
//! keeps the plain body (issue 33).
//!
//! The page is made once, at start: the operator's name and contact are
//! fixed then, so an answer only puts the key in. It has no script and
//! loads nothing (the answer's `Content-Security-Policy` holds a replaced
//! template to that too), and it stays under [`MAX_PAGE`] bytes whatever
//! key is shown, so a dead tag costs the server what a 404 did.

use std::fmt::Write as _;

/// Largest page, in bytes, with the longest key shown: a phone on a weak
/// connection gets it in one or two packets.
pub const MAX_PAGE: usize = 4096;
/// Longest operator name, in characters.
pub const MAX_NAME: usize = 100;
/// Longest contact (an email address or a URL), in bytes.
pub const MAX_CONTACT: usize = 200;
/// Bytes of the requested key shown; a longer one is cut and marked `…`.
pub const MAX_KEY_SHOWN: usize = 64;

/// The placeholders a replacement template may use, each at most once.
const PLACEHOLDERS: [&str; 4] = ["{{name}}", "{{contact}}", "{{contact_href}}", "{{key}}"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeadTagError {
    #[error("the operator's name may be at most {MAX_NAME} characters, without control characters")]
    BadName,
    #[error(
        "the operator's contact must be an email address or an http(s) URL of at most \
         {MAX_CONTACT} bytes, without spaces: {0:?}"
    )]
    BadContact(String),
    #[error("{path}: {why}")]
    Template { path: String, why: String },
}

/// How people reach the operator: the text shown and the link made of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contact {
    text: String,
    href: String,
}

impl Contact {
    /// An email address (`mailto:` link) or an absolute http(s) URL.
    pub fn parse(s: &str) -> Result<Self, DeadTagError> {
        let s = s.trim();
        let bad = || DeadTagError::BadContact(s.chars().take(MAX_CONTACT).collect());
        if s.is_empty()
            || s.len() > MAX_CONTACT
            || s.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(bad());
        }
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("https://") || lower.starts_with("http://") {
            let url = url::Url::parse(s).map_err(|_| bad())?;
            if url.host_str().is_none_or(str::is_empty) {
                return Err(bad());
            }
            return Ok(Self {
                text: s.to_owned(),
                href: url.to_string(),
            });
        }
        match s.split_once('@') {
            Some((user, host))
                if !user.is_empty()
                    && host.contains('.')
                    && !host.starts_with('.')
                    && !host.ends_with('.')
                    && !host.contains('@')
                    && !s.contains([':', '/', '<', '>', '"', '\'', '?', '#']) =>
            {
                Ok(Self {
                    text: s.to_owned(),
                    href: format!("mailto:{s}"),
                })
            }
            _ => Err(bad()),
        }
    }
}

/// `--operator-name`, checked.
pub fn parse_name(s: &str) -> Result<String, DeadTagError> {
    let s = s.trim();
    if s.chars().count() > MAX_NAME || s.chars().any(char::is_control) {
        return Err(DeadTagError::BadName);
    }
    Ok(s.to_owned())
}

/// A replacement page read from a file: at most [`MAX_PAGE`] bytes of
/// UTF-8, with no script and nothing loaded from elsewhere, and no
/// placeholder but the known ones, each at most once (so the page's size
/// is bounded by the template's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    path: String,
    text: String,
}

impl Template {
    pub fn read(path: &str) -> Result<Self, DeadTagError> {
        let err = |why: String| DeadTagError::Template {
            path: path.to_owned(),
            why,
        };
        let len = std::fs::metadata(path)
            .map_err(|e| err(e.to_string()))?
            .len();
        if len > MAX_PAGE as u64 {
            return Err(err(format!(
                "{len} bytes: a dead-tag page may be at most {MAX_PAGE}"
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| err("not UTF-8 text".into()))?;
        Self::check(&text).map_err(err)?;
        Ok(Self {
            path: path.to_owned(),
            text,
        })
    }

    /// What a template may not hold, named in one line.
    fn check(text: &str) -> Result<(), String> {
        let lower = text.to_ascii_lowercase();
        for (needle, what) in [
            (
                "<script",
                "a <script> (the page must work without JavaScript)",
            ),
            ("javascript:", "a javascript: URL"),
            (
                "<link",
                "a <link> (the page must load nothing from elsewhere)",
            ),
            (
                "@import",
                "an @import (the page must load nothing from elsewhere)",
            ),
            (
                "src=",
                "a src= (the page must load nothing from elsewhere; inline it)",
            ),
            (
                "url(",
                "a CSS url() (the page must load nothing from elsewhere)",
            ),
        ] {
            if lower.contains(needle) {
                return Err(format!("the page holds {what}"));
            }
        }
        let mut rest = text;
        while let Some(at) = rest.find("{{") {
            let tail = &rest[at..];
            let end = tail.find("}}").map_or(tail.len(), |e| e + 2);
            let name = &tail[..end];
            if !PLACEHOLDERS.contains(&name) {
                let shown: String = name.chars().take(40).collect();
                return Err(format!(
                    "unknown placeholder {shown} (known: {})",
                    PLACEHOLDERS.join(", ")
                ));
            }
            rest = &tail[end..];
        }
        for p in PLACEHOLDERS {
            if text.matches(p).count() > 1 {
                return Err(format!("{p} may appear at most once"));
            }
        }
        Ok(())
    }
}

/// The page, ready to answer with: the text before and after the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadTagPage {
    before_key: String,
    after_key: String,
}

impl Default for DeadTagPage {
    fn default() -> Self {
        Self::built_in(None, None)
    }
}

impl DeadTagPage {
    /// The page from the configuration: the template given, or the built-in
    /// one, with the operator's name and contact in it. Fails only when a
    /// template with the longest key would pass [`MAX_PAGE`].
    pub fn new(
        name: Option<&str>,
        contact: Option<&Contact>,
        template: Option<&Template>,
    ) -> Result<Self, DeadTagError> {
        let Some(template) = template else {
            return Ok(Self::built_in(name, contact));
        };
        let filled = template
            .text
            .replace("{{name}}", &escape(name.unwrap_or_default()))
            .replace(
                "{{contact}}",
                &escape(contact.map_or("", |c| c.text.as_str())),
            )
            .replace(
                "{{contact_href}}",
                &escape(contact.map_or("", |c| c.href.as_str())),
            );
        let (before_key, after_key) = match filled.split_once("{{key}}") {
            Some((b, a)) => (b.to_owned(), a.to_owned()),
            None => (filled, String::new()),
        };
        let page = Self {
            before_key,
            after_key,
        };
        let longest = if template.text.contains("{{key}}") {
            longest_key_shown()
        } else {
            0
        };
        let size = page.before_key.len() + longest + page.after_key.len();
        if size > MAX_PAGE {
            return Err(DeadTagError::Template {
                path: template.path.clone(),
                why: format!(
                    "with the operator's name and contact and the longest key shown, the page \
                     is {size} bytes: it may be at most {MAX_PAGE}"
                ),
            });
        }
        Ok(page)
    }

    fn built_in(name: Option<&str>, contact: Option<&Contact>) -> Self {
        let mut before = String::from(concat!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">",
            "<title>This tag is not active</title><style>",
            "body{font:1.125rem/1.5 system-ui,sans-serif;max-width:32rem;margin:2rem auto;",
            "padding:0 1rem;color:#1a1a1a;background:#fff}h1{font-size:1.5rem}",
            "code{background:#eee;padding:0 .25em;word-break:break-all}a{color:#0645ad}",
            "</style></head><body><main><h1>This tag is not active</h1>",
            "<p>The code you scanned (<code>",
        ));
        let mut after = String::from(concat!(
            "</code>) does not lead anywhere at the moment: it may have been switched off, ",
            "have expired after an event, or never have been set up.</p>",
        ));
        let name = name.filter(|n| !n.is_empty());
        if name.is_some() || contact.is_some() {
            after.push_str("<p>");
            if let Some(name) = name {
                let _ = write!(after, "This tag belongs to {}.", escape(name));
            }
            if let Some(c) = contact {
                let _ = write!(
                    after,
                    "{}<a href=\"{}\">{}</a>",
                    if name.is_some() {
                        " To tell them, or to ask where to go: "
                    } else {
                        "To tell whoever put it up, or to ask where to go: "
                    },
                    escape(&c.href),
                    escape(&c.text)
                );
                after.push('.');
            }
            after.push_str("</p>");
        } else {
            after.push_str("<p>Please tell whoever put it up.</p>");
        }
        after.push_str("</main></body></html>\n");
        before.shrink_to_fit();
        Self {
            before_key: before,
            after_key: after,
        }
    }

    /// The page for a request of `path` (the key is the path without its
    /// leading `/`, cut at [`MAX_KEY_SHOWN`] bytes).
    pub fn render(&self, path: &str) -> String {
        let key = shown_key(path);
        let mut page =
            String::with_capacity(self.before_key.len() + key.len() + self.after_key.len());
        page.push_str(&self.before_key);
        page.push_str(&key);
        page.push_str(&self.after_key);
        page
    }
}

/// The key as the page shows it: escaped, cut on a character boundary.
fn shown_key(path: &str) -> String {
    let key = path.strip_prefix('/').unwrap_or(path);
    let mut end = key.len().min(MAX_KEY_SHOWN);
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    let mut shown = escape(&key[..end]);
    if end < key.len() {
        shown.push('…');
    }
    shown
}

/// The most bytes [`shown_key`] can give: every byte escaped to six, and
/// the mark of a cut key.
fn longest_key_shown() -> usize {
    MAX_KEY_SHOWN * "&quot;".len() + '…'.len_utf8()
}

/// Text for HTML content and quoted attributes.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(text: &str) -> Result<Template, String> {
        Template::check(text)?;
        Ok(Template {
            path: "page.html".into(),
            text: text.into(),
        })
    }

    #[test]
    fn the_built_in_page_is_small_and_names_the_operator() {
        let contact = Contact::parse("events@venue.example").expect("an email");
        let page = DeadTagPage::new(Some("The <Venue>"), Some(&contact), None).expect("page");
        let html = page.render(&format!("/{}", "\"".repeat(500)));
        assert!(html.len() < MAX_PAGE, "{}", html.len());
        assert!(html.contains("This tag belongs to The &lt;Venue&gt;."));
        assert!(html.contains("<a href=\"mailto:events@venue.example\">events@venue.example</a>"));
        assert!(html.contains(&format!("{}…", "&quot;".repeat(MAX_KEY_SHOWN))));
        let lower = html.to_ascii_lowercase();
        for never in ["<script", "src=", "url(", "<link", "http://", "https://"] {
            assert!(!lower.contains(never), "{never}");
        }
        let bare = DeadTagPage::default().render("/V6fJh");
        assert!(bare.contains("<code>V6fJh</code>") && bare.contains("whoever put it up"));
    }

    #[test]
    fn contacts_are_emails_or_web_addresses() {
        let url = Contact::parse("https://venue.example/contact").expect("a URL");
        assert_eq!(url.href, "https://venue.example/contact");
        for bad in [
            "",
            "call us",
            "javascript:alert(1)",
            "a@b",
            "https://",
            "x@y.example\"onclick",
            &format!("https://a.example/{}", "x".repeat(MAX_CONTACT)),
        ] {
            assert!(Contact::parse(bad).is_err(), "{bad}");
        }
        assert!(parse_name(&"n".repeat(MAX_NAME)).is_ok());
        assert_eq!(
            parse_name(&"n".repeat(MAX_NAME + 1)),
            Err(DeadTagError::BadName)
        );
    }

    #[test]
    fn a_template_gets_the_placeholders_and_is_held_to_the_limits() {
        let t = template("<p>{{name}} <a href=\"{{contact_href}}\">{{contact}}</a> {{key}}</p>")
            .expect("valid");
        let c = Contact::parse("https://v.example/").expect("URL");
        let page = DeadTagPage::new(Some("V & Co"), Some(&c), Some(&t)).expect("fits");
        assert_eq!(
            page.render("/ab<c"),
            "<p>V &amp; Co <a href=\"https://v.example/\">https://v.example/</a> ab&lt;c</p>"
        );
        for (bad, says) in [
            ("<script>x</script>", "JavaScript"),
            ("<img src=\"https://t.example/p.gif\">", "src="),
            ("<style>body{background:url(x.png)}</style>", "url()"),
            ("{{nmae}}", "unknown placeholder {{nmae}}"),
            ("{{key}} {{key}}", "at most once"),
        ] {
            let err = template(bad).expect_err(bad);
            assert!(err.contains(says), "{bad}: {err}");
        }
        let big = template(&format!("{}{{{{key}}}}", "x".repeat(MAX_PAGE - 100))).expect("valid");
        let err = DeadTagPage::new(None, None, Some(&big)).expect_err("too big with a key");
        assert!(err.to_string().contains("at most 4096"), "{err}");
    }
}
