//! The print sheet: how many new tags, then the sheets to download: the
//! A4 SVG sheets, and a PDF on any label stock ([`super::print_form`]).

use maud::{Markup, html};

use super::print_form::{self, Refusal};
use super::{BASE, Refused, Viewer, csrf_field, fault, field_problem, form_problem, layout};

/// A print run already made, to download.
pub struct Batch<'a> {
    pub number: u64,
    pub keys: &'a [String],
    pub sheets: usize,
}

/// The form, and the run asked for: its sheets, or `missing`, why it
/// cannot be shown. `refused`: a run the server did not make, why, and the
/// number typed. `pdf`: the run's PDF form the server refused.
pub fn page(
    viewer: &Viewer<'_>,
    max: u16,
    batch: Option<&Batch<'_>>,
    missing: Option<&str>,
    refused: Option<(Refused<'_>, &str)>,
    pdf: Option<&Refusal<'_>>,
) -> Markup {
    let r = refused.as_ref().map(|(r, _)| r);
    let count = refused.map_or("24", |(_, typed)| typed);
    let (invalid, class, described) = fault(r, "count", "count");
    layout(
        "Print sheet",
        Some(viewer),
        html! {
            h1 { "Print sheet" }
            (form_problem(r, viewer.can_edit))
            @if let Some(missing) = missing {
                p.problem #problem role="alert" { (missing) }
            }
            @if let Some(b) = batch {
                section #batch data-count=(b.keys.len()) data-sheets=(b.sheets) {
                    p { (b.keys.len()) " new inactive links. Print at 100 % (actual size); set each link's destination and enable it when its poster goes up." }
                    ul.sheets {
                        @for page in 0..b.sheets {
                            li { a.button.sheet-download href={ (BASE) "/sheet/download?batch=" (b.number) "&page=" (page) } download { "Download sheet " (page + 1) " (SVG)" } }
                        }
                    }
                    h2 { "On label stock (PDF)" }
                    p { "The same tags laid out on a sheet of labels, as " code { "qrtag print --template" } " does." }
                    (print_form::form(print_form::Kind::Run, &format!("{BASE}/sheet/pdf"), &[("batch", &b.number.to_string())], pdf))
                    details { summary { "Keys" }
                        ul.keys { @for k in b.keys { li { a href={ (BASE) "/link?key=" (super::q(k)) } { (k) } } } }
                    }
                }
            }
            @if viewer.can_edit {
                form.card #sheet method="post" action={ (BASE) "/sheet" } {
                    (csrf_field(viewer.token()))
                    p { "Creates that many inactive links with random keys (like qrtag batch) and an A4 sheet of their codes, 24 to a sheet." }
                    label for="count" { "How many (1–" (max) ")" }
                    input #count type="number" name="count" min="1" max=(max) value=(count) required aria-invalid=[invalid] class=[class] aria-describedby=[described];
                    (field_problem(r, "count", "count"))
                    button type="submit" { "Create and make sheets" }
                }
            } @else {
                p.muted { "Your account may not create links." }
            }
        },
    )
}
