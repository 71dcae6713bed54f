//! Paints planned pages with krilla: codes as filled rectangles in module
//! units (one `cm` per code, integer coordinates, so the compressed stream
//! stays small), captions as text in the one embedded font, which krilla
//! subsets once for the whole document.

use krilla::Document;
use krilla::SerializeSettings;
use krilla::geom::{PathBuilder, Point, Rect as KRect, Transform};
use krilla::page::PageSettings;
use krilla::paint::{Fill, Stroke};
use krilla::surface::Surface;
use krilla::text::{Font, TextDirection};

use super::font::MONO;
use super::layout::{CodeBox, QUIET_MODULES, Rect};
use super::plan::PagePlan;
use super::{Brand, PrintError};
use crate::qr::Symbol;
use crate::qr::brand::{Colour, Palette, logo_box};

/// Points in a millimetre.
const PT_PER_MM: f64 = 72.0 / 25.4;

fn pt(mm: f64) -> f32 {
    (mm * PT_PER_MM) as f32
}

pub fn write(pages: &[PagePlan<'_>], brand: &Brand) -> Result<Vec<u8>, PrintError> {
    let settings = SerializeSettings {
        // No XMP packet: nothing in it a printer needs, and it would carry
        // a hash-based ID only.
        xmp_metadata: false,
        enable_tagging: false,
        ..SerializeSettings::default()
    };
    let mut document = Document::new_with(settings);
    let font = Font::new(krilla::Data::from(MONO), 0).ok_or(PrintError::Font)?;
    // One image object for every code's logo: the PDF holds it once.
    let logo = brand.logo.as_ref().map(|logo| {
        let image = krilla::image::Image::from_rgba8(
            logo.image.as_raw().clone(),
            logo.image.width(),
            logo.image.height(),
        );
        (image, logo)
    });
    let paint = Paint::of(brand.palette);
    for plan in pages {
        let media = rect(&Rect {
            x: 0.0,
            y: 0.0,
            w: plan.media_w,
            h: plan.media_h,
        })?;
        let mut settings = PageSettings::from_wh(pt(plan.media_w), pt(plan.media_h))
            .ok_or(PrintError::PageSize)?;
        if let Some(trim) = plan.trim {
            let bleed = Rect {
                x: trim.x - plan.bleed,
                y: trim.y - plan.bleed,
                w: trim.w + 2.0 * plan.bleed,
                h: trim.h + 2.0 * plan.bleed,
            };
            settings = settings
                .with_media_box(Some(media))
                .with_bleed_box(Some(rect(&bleed)?))
                .with_trim_box(Some(rect(&trim)?));
        }
        let mut page = document.start_page_with(settings);
        let mut surface = page.surface();
        for (code_box, code) in &plan.codes {
            let cleared = logo
                .as_ref()
                .map(|(_, l)| cleared_box(code.width(), l.percent));
            draw_code(&mut surface, code_box, code, &paint, cleared);
            if let (Some((image, l)), Some(cleared)) = (&logo, cleared) {
                draw_logo(&mut surface, code_box, cleared, image, &l.image);
            }
        }
        surface.set_fill(Some(Fill::default()));
        for caption in &plan.captions {
            surface.draw_text(
                Point::from_xy(pt(caption.x), pt(caption.baseline)),
                font.clone(),
                caption.size_pt as f32,
                caption.text,
                false,
                TextDirection::LeftToRight,
            );
        }
        if !plan.outlines.is_empty() || !plan.lines.is_empty() {
            surface.set_fill(None);
            surface.set_stroke(Some(Stroke {
                width: 0.5,
                ..Stroke::default()
            }));
            for (outline, radius) in &plan.outlines {
                if let Some(path) = rounded_rect(outline, *radius) {
                    surface.draw_path(&path);
                }
            }
            for &(x1, y1, x2, y2) in &plan.lines {
                let mut pb = PathBuilder::new();
                pb.move_to(pt(x1), pt(y1));
                pb.line_to(pt(x2), pt(y2));
                if let Some(path) = pb.finish() {
                    surface.draw_path(&path);
                }
            }
            surface.set_stroke(None);
        }
        surface.finish();
        page.finish();
    }
    document
        .finish()
        .map_err(|e| PrintError::Pdf(format!("{e:?}")))
}

fn rect(r: &Rect) -> Result<KRect, PrintError> {
    KRect::from_xywh(pt(r.x), pt(r.y), pt(r.w), pt(r.h)).ok_or(PrintError::PageSize)
}

/// The fills of a branded code; `None` for black on white, drawn with the
/// default fill so a plain job's bytes stay as they were.
struct Paint {
    dark: Option<Fill>,
    light: Option<Fill>,
}

impl Paint {
    fn of(palette: Palette) -> Self {
        if palette == Palette::default() {
            return Paint {
                dark: None,
                light: None,
            };
        }
        let fill = |c: Colour| {
            let [r, g, b] = c.0;
            Fill {
                paint: krilla::color::rgb::Color::new(r, g, b).into(),
                ..Fill::default()
            }
        };
        Paint {
            dark: Some(fill(palette.dark())),
            light: (palette.light() != Colour::WHITE).then(|| fill(palette.light())),
        }
    }
}

/// The logo's cleared square on a `width`-module symbol: its first module
/// and side, as `brand::Branded` clears it.
fn cleared_box(width: usize, percent: u32) -> (usize, usize) {
    let side = logo_box(width as u32, percent) as usize;
    ((width - side) / 2, side)
}

/// The logo in its cleared square, less half a module each side, its
/// aspect kept, centred (as `brand::Branded` draws it in a PNG).
fn draw_logo(
    surface: &mut Surface<'_>,
    code_box: &CodeBox,
    (start, side): (usize, usize),
    image: &krilla::image::Image,
    logo: &image::RgbaImage,
) {
    let room = (side as f64 - 1.0).max(0.1) * code_box.module;
    let (lw, lh) = (
        f64::from(logo.width().max(1)),
        f64::from(logo.height().max(1)),
    );
    let (w, h) = if lw >= lh {
        (room, room * lh / lw)
    } else {
        (room * lw / lh, room)
    };
    let quiet = QUIET_MODULES as f64 * code_box.module;
    let square = side as f64 * code_box.module;
    let x = code_box.rect.x + quiet + start as f64 * code_box.module + (square - w) / 2.0;
    let y = code_box.rect.y + quiet + start as f64 * code_box.module + (square - h) / 2.0;
    let Some(size) = krilla::geom::Size::from_wh(pt(w), pt(h)) else {
        return;
    };
    surface.push_transform(&Transform::from_translate(pt(x), pt(y)));
    surface.draw_image(image.clone(), size);
    surface.pop();
}

/// One code: its dark modules (those outside a logo's cleared square) as
/// rectangles, runs along a row merged and a run repeated on the rows below
/// grown down, in module units under one transform to the page; on a
/// light colour other than white, the code's box (quiet zone included) in
/// it first.
fn draw_code(
    surface: &mut Surface<'_>,
    code_box: &CodeBox,
    code: &Symbol,
    paint: &Paint,
    cleared: Option<(usize, usize)>,
) {
    if let (Some(light), Ok(ground)) = (&paint.light, rect(&code_box.rect)) {
        let mut pb = PathBuilder::new();
        pb.push_rect(ground);
        if let Some(path) = pb.finish() {
            surface.set_fill(Some(light.clone()));
            surface.draw_path(&path);
        }
    }
    let rects = match cleared {
        None => dark_rects(code),
        Some((start, side)) => {
            let inside = |x: usize, y: usize| {
                (start..start + side).contains(&x) && (start..start + side).contains(&y)
            };
            let mut kept = code.clone();
            kept.clear_where(inside);
            dark_rects(&kept)
        }
    };
    let mut pb = PathBuilder::new();
    for (x, y, w, h) in rects {
        if let Some(r) = KRect::from_xywh(x as f32, y as f32, w as f32, h as f32) {
            pb.push_rect(r);
        }
    }
    let Some(path) = pb.finish() else { return };
    let module = pt(code_box.module);
    let quiet = QUIET_MODULES as f64 * code_box.module;
    surface.push_transform(&Transform::from_row(
        module,
        0.0,
        0.0,
        module,
        pt(code_box.rect.x + quiet),
        pt(code_box.rect.y + quiet),
    ));
    surface.set_fill(Some(paint.dark.clone().unwrap_or_default()));
    surface.draw_path(&path);
    surface.pop();
}

/// The dark modules as `(x, y, w, h)` rectangles in modules: each row's
/// runs, a run extended downwards while the next row has the same run.
pub fn dark_rects(code: &Symbol) -> Vec<(usize, usize, usize, usize)> {
    let width = code.width();
    let runs_of = |y: usize| {
        let row = code.row(y);
        let mut runs = Vec::new();
        let mut x = 0;
        while x < width {
            if row[x] {
                let start = x;
                while x < width && row[x] {
                    x += 1;
                }
                runs.push((start, x - start));
            } else {
                x += 1;
            }
        }
        runs
    };
    let mut done: Vec<(usize, usize, usize, usize)> = Vec::new();
    // Rectangles still growing: (x, y, w, h).
    let mut open: Vec<(usize, usize, usize, usize)> = Vec::new();
    for y in 0..width {
        let runs = runs_of(y);
        let mut next = Vec::with_capacity(runs.len());
        for (x, w) in runs {
            match open.iter().position(|&(ox, _, ow, _)| ox == x && ow == w) {
                Some(i) => {
                    let (ox, oy, ow, oh) = open.swap_remove(i);
                    next.push((ox, oy, ow, oh + 1));
                }
                None => next.push((x, y, w, 1)),
            }
        }
        done.append(&mut open);
        open = next;
    }
    done.append(&mut open);
    done.sort_unstable_by_key(|&(x, y, _, _)| (y, x));
    done
}

/// A label's border with rounded corners (quarter circles as cubics).
fn rounded_rect(r: &Rect, radius: f64) -> Option<krilla::geom::Path> {
    let (x, y, w, h) = (pt(r.x), pt(r.y), pt(r.w), pt(r.h));
    let rad = pt(radius).min(w / 2.0).min(h / 2.0).max(0.0);
    let mut pb = PathBuilder::new();
    if rad == 0.0 {
        pb.push_rect(KRect::from_xywh(x, y, w, h)?);
        return pb.finish();
    }
    // The control-point distance that makes a cubic follow a quarter circle.
    let k = rad * 0.552_284_8;
    pb.move_to(x + rad, y);
    pb.line_to(x + w - rad, y);
    pb.cubic_to(x + w - rad + k, y, x + w, y + rad - k, x + w, y + rad);
    pb.line_to(x + w, y + h - rad);
    pb.cubic_to(
        x + w,
        y + h - rad + k,
        x + w - rad + k,
        y + h,
        x + w - rad,
        y + h,
    );
    pb.line_to(x + rad, y + h);
    pb.cubic_to(x + rad - k, y + h, x, y + h - rad + k, x, y + h - rad);
    pb.line_to(x, y + rad);
    pb.cubic_to(x, y + rad - k, x + rad - k, y, x + rad, y);
    pb.close();
    pb.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rectangles_cover_exactly_the_dark_modules() {
        let code =
            crate::qr::encode_symbol("https://0x1f.ie/H83if", crate::qr::EcLevel::L).expect("fits");
        let width = code.width();
        let mut covered = vec![0u8; width * width];
        let rects = dark_rects(&code);
        for &(x, y, w, h) in &rects {
            for yy in y..y + h {
                for xx in x..x + w {
                    covered[yy * width + xx] += 1;
                }
            }
        }
        let modules = code.modules();
        for (i, (dark, n)) in modules.iter().zip(&covered).enumerate() {
            let expected = u8::from(*dark);
            assert_eq!(*n, expected, "module {i}");
        }
        let dark = modules.iter().filter(|d| **d).count();
        assert!(
            rects.len() * 2 < dark,
            "{} rects for {dark} modules",
            rects.len()
        );
    }
}
