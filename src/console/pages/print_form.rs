//! The PDF forms: a label on stock (the link page, and every tag of a
//! print run) and a poster (the link page). They are GET forms whose field
//! names are the query names of `/qr/KEY.pdf` (`qrtag print`'s flags
//! without their dashes), so the handler reads them with
//! [`crate::print::PrintOptions::from_query`], the CLI's parsers.

use maud::{Markup, html};

use super::{Refused, fault, field_problem};
use crate::print::CaptionKind;
use crate::print::stock::STOCK;

/// Which PDF form: its `id`, and the hidden `form` value that says which
/// one was sent, so a refusal is shown in that one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One link's label on a sheet (`#label-pdf`).
    Label,
    /// One link's poster (`#poster-pdf`).
    Poster,
    /// A print run's tags on sheets (`#run-pdf`).
    Run,
}

impl Kind {
    pub fn id(self) -> &'static str {
        match self {
            Kind::Label => "label-pdf",
            Kind::Poster => "poster-pdf",
            Kind::Run => "run-pdf",
        }
    }

    /// The hidden `form` field's value.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Label => "label",
            Kind::Poster => "poster",
            Kind::Run => "run",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        [Kind::Label, Kind::Poster, Kind::Run]
            .into_iter()
            .find(|k| k.name() == s)
    }
}

/// A PDF form the server refused: which, why, and the query as sent
/// (what was typed, shown again).
pub struct Refusal<'a> {
    pub kind: Kind,
    pub refused: Refused<'a>,
    pub query: &'a str,
}

/// The template a form starts on: the sheet most asked for.
pub const DEFAULT_TEMPLATE: &str = "L7163";
/// The poster sizes offered; any other goes by `/qr/KEY.pdf?poster=WxHmm`.
pub const POSTERS: [&str; 8] = ["A5", "A4", "A3", "A2", "A1", "A0", "Letter", "Tabloid"];
const DEFAULT_POSTER: &str = "A3";

pub fn caption_text(kind: CaptionKind) -> &'static str {
    match kind {
        CaptionKind::Url => "The short URL",
        CaptionKind::Key => "The key",
        CaptionKind::Notes => "The first line of the notes",
        CaptionKind::Title => "The title",
        CaptionKind::None => "None",
    }
}

/// The form of `kind`, sending to `action` with `hidden` fields (the key
/// or the run), and `refusal` when it was this form the server refused.
pub fn form(
    kind: Kind,
    action: &str,
    hidden: &[(&str, &str)],
    refusal: Option<&Refusal<'_>>,
) -> Markup {
    let refusal = refusal.filter(|r| r.kind == kind);
    let r = refusal.map(|r| &r.refused);
    let typed = |name: &str| -> Option<String> {
        let query = refusal?.query;
        form_urlencoded::parse(query.as_bytes())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.into_owned())
    };
    // A checkbox is ticked again when it was.
    let ticked = |name: &str| refusal.is_some() && typed(name).is_some();
    let id = kind.id();
    let fid = |name: &str| format!("{id}-{name}");
    let fields: &[&str] = match kind {
        Kind::Poster => &[
            "poster",
            "code-size",
            "bleed",
            "crop-marks",
            "caption",
            "dark",
            "light",
            "logo",
        ],
        Kind::Label | Kind::Run => &[
            "template",
            "skip",
            "caption",
            "code-size",
            "outline",
            "dark",
            "light",
            "logo",
        ],
    };
    // A refusal of no field this form has (an unknown parameter) is said
    // above its fields.
    let general = r.filter(|r| !r.field.is_some_and(|f| fields.contains(&f)));
    let attrs = |name: &str| fault(r, name, &fid(name));
    let (tpl_inv, tpl_class, tpl_desc) = attrs("template");
    let (skip_inv, skip_class, skip_desc) = attrs("skip");
    let (cap_inv, cap_class, cap_desc) = attrs("caption");
    let (size_inv, size_class, size_desc) = attrs("code-size");
    let (poster_inv, poster_class, poster_desc) = attrs("poster");
    let (bleed_inv, bleed_class, bleed_desc) = attrs("bleed");
    let (dark_inv, dark_class, dark_desc) = attrs("dark");
    let (light_inv, light_class, light_desc) = attrs("light");
    let template = typed("template").unwrap_or_else(|| DEFAULT_TEMPLATE.to_owned());
    let poster = typed("poster").unwrap_or_else(|| DEFAULT_POSTER.to_owned());
    let caption = typed("caption").unwrap_or_else(|| CaptionKind::Url.name().to_owned());
    html! {
        form.card.pdf id=(id) method="get" action=(action) {
            @for (name, value) in hidden {
                input type="hidden" name=(name) value=(value);
            }
            input type="hidden" name="form" value=(kind.name());
            @if let Some(g) = general {
                p.problem.field-problem id={ (id) "-problem" } role="alert" { (g.message) }
            }
            @match kind {
                Kind::Poster => {
                    label for=(fid("poster")) { "Poster size" }
                    select id=(fid("poster")) name="poster" aria-invalid=[poster_inv] class=[poster_class] aria-describedby=[poster_desc] {
                        @for p in POSTERS {
                            option value=(p) selected[p.eq_ignore_ascii_case(&poster)] { (p) }
                        }
                    }
                    (field_problem(r, "poster", &fid("poster")))
                }
                Kind::Label | Kind::Run => {
                    label for=(fid("template")) { "Label stock" }
                    select id=(fid("template")) name="template" aria-invalid=[tpl_inv] class=[tpl_class] aria-describedby=[tpl_desc] {
                        @for s in STOCK {
                            option value=(s.name) selected[s.name.eq_ignore_ascii_case(&template)] { (s.name) " — " (s.description) }
                        }
                    }
                    (field_problem(r, "template", &fid("template")))
                    label for=(fid("skip")) {
                        @if kind == Kind::Label { "Position: labels already used on the sheet" }
                        @else { "Labels already used on the first sheet" }
                    }
                    input id=(fid("skip")) type="number" name="skip" min="0" value=(typed("skip").unwrap_or_else(|| "0".into())) aria-invalid=[skip_inv] class=[skip_class] aria-describedby=[skip_desc];
                    (field_problem(r, "skip", &fid("skip")))
                }
            }
            label for=(fid("code-size")) { "Code size (25mm, 1in; empty: the largest that fits)" }
            input id=(fid("code-size")) type="text" name="code-size" value=[typed("code-size")] placeholder="largest that fits" aria-invalid=[size_inv] class=[size_class] aria-describedby=[size_desc];
            (field_problem(r, "code-size", &fid("code-size")))
            @if kind == Kind::Poster {
                label for=(fid("bleed")) { "Bleed (3mm; empty: none)" }
                input id=(fid("bleed")) type="text" name="bleed" value=[typed("bleed")] placeholder="none" aria-invalid=[bleed_inv] class=[bleed_class] aria-describedby=[bleed_desc];
                (field_problem(r, "bleed", &fid("bleed")))
                label.choice for=(fid("crop-marks")) {
                    input id=(fid("crop-marks")) type="checkbox" name="crop-marks" value="true" checked[ticked("crop-marks")];
                    " Crop marks"
                }
            }
            label for=(fid("caption")) { "Caption" }
            select id=(fid("caption")) name="caption" aria-invalid=[cap_inv] class=[cap_class] aria-describedby=[cap_desc] {
                @for k in CaptionKind::ALL {
                    option value=(k.name()) selected[k.name() == caption] { (caption_text(k)) }
                }
            }
            (field_problem(r, "caption", &fid("caption")))
            label for=(fid("dark")) { "Code colour (#1e3a8a; empty: black)" }
            input id=(fid("dark")) type="text" name="dark" value=[typed("dark")] placeholder="#000" aria-invalid=[dark_inv] class=[dark_class] aria-describedby=[dark_desc];
            (field_problem(r, "dark", &fid("dark")))
            label for=(fid("light")) { "Background colour (empty: white)" }
            input id=(fid("light")) type="text" name="light" value=[typed("light")] placeholder="#fff" aria-invalid=[light_inv] class=[light_class] aria-describedby=[light_desc];
            (field_problem(r, "light", &fid("light")))
            label.choice for=(fid("logo")) {
                input id=(fid("logo")) type="checkbox" name="logo" value="true" checked[ticked("logo")];
                " The server's logo in each code's centre"
            }
            (field_problem(r, "logo", &fid("logo")))
            @if kind != Kind::Poster {
                label.choice for=(fid("outline")) {
                    input id=(fid("outline")) type="checkbox" name="outline" value="true" checked[ticked("outline")];
                    " Draw label borders (an alignment test on plain paper)"
                }
            }
            button type="submit" { "Download PDF" }
        }
    }
}
