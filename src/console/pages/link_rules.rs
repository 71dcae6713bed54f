//! The link page's rules (issue 34), pure: the line near the top that says
//! what a scan gets now and what changes next; the section after the scans
//! with the rules in order (conditions in words, destination), remove and
//! move buttons, the form that adds one, and the "what would this scan
//! get" tester with its answer. Forms only, no JavaScript.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use maud::{Markup, html};

use super::{BASE, Refused, csrf_field, fault, field_problem};
use crate::console::rule_form::{self, Fault, RuleForm};
use crate::console::rule_tester::{self, Answer, Described, Pick, Schedule, Unclear};
use crate::link::rules::Rules;
use crate::link::rules::device::{Class, Os};

/// What the link page shows of the rules.
pub struct Section<'a> {
    pub key: &'a str,
    /// The stored rules, or why they are not valid (a hand-edited document):
    /// scans then get the `url`.
    pub rules: Result<&'a Rules, String>,
    pub can_edit: bool,
    pub csrf: super::FormToken<'a>,
    pub geoip: bool,
    /// The console's `--time-zone`: the tester's and the form's times.
    pub zone: Tz,
    /// The add form refused: what was typed, and why.
    pub refused: Option<(&'a RuleForm, &'a Fault)>,
    /// A remove or move refused (the rules changed meanwhile).
    pub list_problem: Option<&'a str>,
    /// The tester's form as asked, and its answer.
    pub tried: Option<(&'a Described, Result<&'a Answer, &'a Unclear>)>,
    /// [`rule_tester::schedule`]: now, and the next change.
    pub schedule: Option<Schedule>,
    /// The store did not answer and the page shows the snapshot's copy,
    /// which carries no rules: nothing is said about them but that.
    pub store_away: bool,
}

/// A time in the console's zone, named.
fn local(t: DateTime<Utc>, zone: Tz) -> String {
    format!(
        "{} ({zone})",
        t.with_timezone(&zone).format("%Y-%m-%d %H:%M")
    )
}

/// "rule 2" or "the link's destination".
fn which(p: &Pick) -> String {
    match p.rule {
        Some(i) => format!("rule {}", i + 1),
        None => "the link's destination".to_owned(),
    }
}

fn rule_data(p: &Pick) -> String {
    p.rule
        .map_or_else(|| "url".to_owned(), |i| (i + 1).to_string())
}

/// Near the top of the page, when the rules read the clock:
/// "Now: … (rule 2); from 2026-12-01 09:00: … (the link's destination)".
pub fn now_line(s: &Section<'_>) -> Markup {
    let Some((now, next)) = &s.schedule else {
        return html! {};
    };
    html! {
        p.schedule #rules-now data-rule=(rule_data(now)) data-next-at=[next.as_ref().map(|(t, _)| t.to_rfc3339())] {
            strong { "Now: " } (now.destination) " (" (which(now)) ")"
            @if let Some((t, p)) = next {
                "; " strong { "from " (local(*t, s.zone)) ": " } (p.destination) " (" (which(p)) ")"
            }
            " " span.muted { "— for a scan with no User-Agent, language or country, in split bucket 0; try another below." }
        }
    }
}

/// The section: the rules, their edits, the tester.
pub fn section(s: &Section<'_>) -> Markup {
    html! {
        section #rules aria-labelledby="rules-heading" {
            h2 #rules-heading { "Rules" }
            p.muted { "The first rule whose conditions all hold gives a scan its destination; when none holds, the link's destination does." }
            @if s.store_away {
                p.muted #rules-away { "The rules are read from the link store, which did not answer: they are shown, edited and tried once it does." }
            } @else {
            @if let Some(msg) = s.list_problem {
                p.problem #rules-problem role="alert" { (msg) }
            }
            @match &s.rules {
                Err(why) => p.warning #rules-invalid role="status" { "The stored rules are not valid, so scans get the link's destination: " (why) },
                Ok(rules) if rules.is_empty() => p #no-rules { "No rules: every scan gets the link's destination." },
                Ok(rules) => (list(s, rules)),
            }
            @if s.can_edit {
                (add_form(s))
            }
            (tester(s))
            }
        }
    }
}

fn list(s: &Section<'_>, rules: &Rules) -> Markup {
    let sources = rules.to_json();
    let sources = sources.as_array().map(Vec::as_slice).unwrap_or_default();
    html! {
        ol.rules #rules-list {
            @for i in 0..rules.len() {
                @let url = rules.url(i).map(|u| u.as_str()).unwrap_or_default();
                @let was = sources.get(i).map(|v| v.to_string()).unwrap_or_default();
                li.rule data-index=(i + 1) data-url=(url) {
                    span.conditions { (rules.conditions(i).unwrap_or_default()) }
                    " → " span.destination { (url) }
                    @if s.can_edit {
                        span.rule-actions {
                            @if i > 0 { (action(s, i, &was, "up", "Up", &format!("Move rule {} up", i + 1))) }
                            @if i + 1 < rules.len() { (action(s, i, &was, "down", "Down", &format!("Move rule {} down", i + 1))) }
                            (action(s, i, &was, "remove", "Remove", &format!("Remove rule {}", i + 1)))
                        }
                    }
                }
            }
        }
    }
}

/// One button's form: the rule by its place and its text as shown (`was`),
/// so that a list changed meanwhile is not edited blind.
fn action(s: &Section<'_>, index: usize, was: &str, what: &str, text: &str, label: &str) -> Markup {
    let (path, class) = match what {
        "remove" => ("remove", "danger"),
        _ => ("move", "secondary"),
    };
    html! {
        form.inline method="post" action={ (BASE) "/link/rules/" (path) } {
            (csrf_field(s.csrf))
            input type="hidden" name="key" value=(s.key);
            input type="hidden" name="index" value=(index + 1);
            input type="hidden" name="was" value=(was);
            @if path == "move" { input type="hidden" name="to" value=(what); }
            button class=(class) type="submit" aria-label=(label) { (text) }
        }
    }
}

fn add_form(s: &Section<'_>) -> Markup {
    let empty = RuleForm::default();
    let (typed, refusal) = match s.refused {
        Some((typed, fault)) => (
            typed,
            Some(Refused {
                field: Some(fault.field),
                message: &fault.message,
            }),
        ),
        None => (&empty, None),
    };
    let r = refusal.as_ref();
    let (url_invalid, url_class, url_described) = fault(r, "url", "rule-url");
    html! {
        form.card.rule-form #add-rule method="post" action={ (BASE) "/link/rules/add" } {
            h3 { "Add a rule" }
            (csrf_field(s.csrf))
            input type="hidden" name="key" value=(s.key);
            (field_problem(r, "rule", "add-rule"))
            p.muted { "Fill in the conditions the rule needs and leave the rest empty; a scan must meet every one given." }
            label for="rule-url" { "Destination (https://…)" }
            input #rule-url type="url" name="url" value=(typed.url) required aria-invalid=[url_invalid] class=[url_class] aria-describedby=[url_described];
            (field_problem(r, "url", "rule-url"))
            (ticks(r, "os", "Operating system", &rule_form::OS, &typed.os))
            (ticks(r, "class", "Device class", &rule_form::CLASS, &typed.class))
            (text_field(r, "country", "Countries (IE, GB: ISO codes)", &typed.country, "text"))
            @if !s.geoip {
                p.muted #rule-country-note { "This server has no GeoIP database (" code { "serve --geoip-db" } "), so a rule on countries is refused." }
            }
            (text_field(r, "lang", "Languages (en, fr-CA: the scanner's first choice)", &typed.lang, "text"))
            (text_field(r, "from", &format!("From (date and time in the time zone below, or {} when it is empty)", s.zone), &typed.from, "datetime-local"))
            (text_field(r, "until", "Until (the same zone)", &typed.until, "datetime-local"))
            (ticks(r, "days", "Days of the week", &rule_form::DAYS, &typed.days))
            (pair(r, "hours", "Hours (an end before the start crosses midnight)", [("hours_start", "Start", &typed.hours_start), ("hours_end", "End", &typed.hours_end)], "time"))
            (text_field(r, "tz", "Time zone (an IANA name such as Europe/Dublin; needed with days or hours)", &typed.tz, "text"))
            (pair(r, "split", "Split (percent of scanners, from–to: 0–50 for the first half of an A/B test)", [("split_from", "From %", &typed.split_from), ("split_to", "To %", &typed.split_to)], "number"))
            button type="submit" { "Add rule" }
        }
    }
}

/// The element ID of a form field.
fn id(name: &str) -> String {
    format!("rule-{}", name.replace('_', "-"))
}

fn text_field(r: Option<&Refused<'_>>, name: &str, label: &str, typed: &str, kind: &str) -> Markup {
    let id = id(name);
    let (invalid, class, described) = fault(r, name, &id);
    html! {
        label for=(id) { (label) }
        input id=(id) type=(kind) name=(name) value=(typed) aria-invalid=[invalid] class=[class] aria-describedby=[described];
        (field_problem(r, name, &id))
    }
}

/// Tick boxes in a fieldset; a refusal marks each box and stands after them.
fn ticks(
    r: Option<&Refused<'_>>,
    name: &str,
    legend: &str,
    options: &[(&str, &str)],
    typed: &[String],
) -> Markup {
    let group = id(name);
    let (invalid, _, described) = fault(r, name, &group);
    html! {
        fieldset.ticks id=(group) {
            legend { (legend) }
            @for (value, text) in options {
                @let box_id = format!("{group}-{value}");
                label.choice for=(box_id) {
                    input id=(box_id) type="checkbox" name=(name) value=(value) checked[typed.iter().any(|t| t == value)] aria-invalid=[invalid] aria-describedby=[described.as_deref()];
                    " " (text)
                }
            }
            (field_problem(r, name, &group))
        }
    }
}

/// Two inputs that make one value (hours, split).
fn pair(
    r: Option<&Refused<'_>>,
    name: &str,
    legend: &str,
    fields: [(&str, &str, &str); 2],
    kind: &str,
) -> Markup {
    let group = id(name);
    let (invalid, class, described) = fault(r, name, &group);
    let (min, max) = if kind == "number" {
        (Some("0"), Some("100"))
    } else {
        (None, None)
    };
    html! {
        fieldset.pair id=(group) {
            legend { (legend) }
            @for (field, text, typed) in fields {
                @let field_id = id(field);
                label for=(field_id) { (text) }
                input id=(field_id) type=(kind) name=(field) value=(typed) min=[min] max=[max] aria-invalid=[invalid] class=[class] aria-describedby=[described.as_deref()];
            }
            (field_problem(r, name, &group))
        }
    }
}

fn os_words(os: Os) -> &'static str {
    match os {
        Os::Ios => "iOS",
        Os::IpadOs => "iPadOS",
        Os::Android => "Android",
        Os::Other => "another OS",
    }
}

fn class_words(class: Option<Class>) -> &'static str {
    match class {
        Some(Class::Phone) => "phone",
        Some(Class::Tablet) => "tablet",
        Some(Class::Desktop) => "desktop",
        None => "device of no class (a bot, a TV)",
    }
}

fn tester(s: &Section<'_>) -> Markup {
    let empty = Described::default();
    let (asked, answer) = match &s.tried {
        Some((d, a)) => (*d, Some(a)),
        None => (&empty, None),
    };
    let unclear = match answer {
        Some(Err(u)) => Some(Refused {
            field: Some(u.field),
            message: &u.message,
        }),
        _ => None,
    };
    let r = unclear.as_ref();
    let field = |name: &'static str, label: String, value: &str, kind: &'static str| {
        let id = format!("try-{name}");
        let (invalid, class, described) = fault(r, name, &id);
        html! {
            label for=(id) { (label) }
            input id=(id) type=(kind) name=(name) value=(value) aria-invalid=[invalid] class=[class] aria-describedby=[described];
            (field_problem(r, name, &id))
        }
    };
    let device = if s.tried.is_some() {
        asked.device.as_str()
    } else {
        "iphone"
    };
    html! {
        form.card.tester #try-scan method="get" action={ (BASE) "/link/try" } {
            h3 #try-heading { "What would this scan get?" }
            input type="hidden" name="key" value=(s.key);
            (super::domain_field(s.csrf.domain))
            label for="try-device" { "Device" }
            select #try-device name="device" {
                @for (name, text, _) in rule_tester::PRESETS {
                    option value=(name) selected[device == name] { (text) }
                }
                option value="custom" selected[device == "custom"] { "Only the User-Agent below" }
            }
            (field("ua", "User-Agent (instead of the device; optional)".into(), &asked.ua, "text"))
            (field("lang", "Accept-Language (fr-CH, en;q=0.5; optional)".into(), &asked.lang, "text"))
            (field("country", "Country (IE; optional)".into(), &asked.country, "text"))
            (field("at", format!("Time in {} (empty: now)", s.zone), &asked.at, "datetime-local"))
            (field("bucket", "Split bucket (0–99; empty: from the User-Agent)".into(), &asked.bucket, "number"))
            button type="submit" { "Try" }
        }
        @if let Some(Ok(a)) = answer {
            (answer_of(s, a))
        }
    }
}

fn answer_of(s: &Section<'_>, a: &Answer) -> Markup {
    html! {
        div.card.answer #try-answer role="status" data-rule=(rule_data(&a.pick)) data-destination=(a.pick.destination) data-location=[a.outcome.as_ref().ok()] {
            p {
                "At " (local(a.at, s.zone)) " this scan gets " strong { (which(&a.pick)) } ": " span #try-destination { (a.pick.destination) }
            }
            @match &a.outcome {
                Ok(location) => p #try-location { "Sent to " (location) " (after path appending and internal redirects, as the server answers)." },
                Err(why) => p.problem #try-location { "It answers " (why) "." },
            }
            p.muted #try-seen {
                "Read as " (os_words(a.seen_as.0)) ", " (class_words(a.seen_as.1)) "; split bucket " (a.bucket) "; "
                @match (&a.country, s.geoip) {
                    (Some(c), _) => { "country " (c) "." }
                    (None, false) => { "no country (this server has no GeoIP database)." }
                    (None, true) => { "no country." }
                }
            }
            @match &a.next {
                Some((t, p)) => p #try-next data-next-at=(t.to_rfc3339()) data-next-rule=(rule_data(p)) { "Next change: from " (local(*t, s.zone)) " it gets " (which(p)) ": " (p.destination) "." },
                None => p #try-next { "Nothing changes with time for this scan." },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn section<'a>(rules: &'a Rules, store_away: bool) -> Section<'a> {
        Section {
            key: "menu",
            rules: Ok(rules),
            can_edit: true,
            csrf: super::super::FormToken::bare("token"),
            geoip: false,
            zone: Tz::UTC,
            refused: None,
            list_problem: None,
            tried: None,
            schedule: None,
            store_away,
        }
    }

    #[test]
    fn each_rule_moves_only_where_it_can_and_the_store_away_hides_the_edits() {
        let rules = Rules::from_json(
            &json!([
                {"url": "https://e.com/a", "os": ["ios"]},
                {"url": "https://e.com/b", "lang": ["fr"]}
            ]),
            &crate::link::rules::Capabilities::default(),
        )
        .expect("rules");
        let html = super::section(&section(&rules, false)).into_string();
        assert_eq!(html.matches(r#"<li class="rule""#).count(), 2, "{html}");
        assert!(html.contains(r#"aria-label="Move rule 1 down""#), "{html}");
        assert!(!html.contains(r#"aria-label="Move rule 1 up""#), "{html}");
        assert!(html.contains(r#"aria-label="Move rule 2 up""#), "{html}");
        assert!(!html.contains(r#"aria-label="Move rule 2 down""#), "{html}");
        assert!(html.contains(r#"id="add-rule""#));
        assert!(html.contains(r#"id="rule-country-note""#), "no GeoIP: said");

        let away = super::section(&section(&rules, true)).into_string();
        assert!(away.contains(r#"id="rules-away""#), "{away}");
        for gone in [
            r#"<li class="rule""#,
            r#"id="add-rule""#,
            r#"id="try-scan""#,
        ] {
            assert!(!away.contains(gone), "{gone} shown with the store away");
        }
    }
}
