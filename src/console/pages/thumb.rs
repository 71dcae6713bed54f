//! The links list's QR thumbnails, drawn into the page itself as `data:`
//! SVG images (pure).
//!
//! A thumbnail used to be one `/qr/` request per row, rendered through the
//! server's render gate, which admits one render per core and answers the
//! rest 503 at once: a page of 30 rows showed broken images whenever the
//! browser asked for them together (issue 33). A thumbnail needs no request
//! at all this way: its code is encoded with the page (a small symbol, the
//! fast [`encode_symbol`]), drawn as one path of dark runs, and can neither
//! queue nor fail; the gate keeps guarding the full-size renders.

use crate::qr::{EcLevel, Symbol, encode_symbol};

/// Light modules around the code: enough to see its edge beside the row's
/// text (the full-size tag keeps the standard's four).
const MARGIN: usize = 1;

/// The `src` of an `img` showing `text`'s QR code at the level `/qr/`
/// draws by default, or `None` for a text no QR code holds (a key far
/// longer than a poster's).
pub fn data_uri(text: &str) -> Option<String> {
    let symbol = encode_symbol(text, EcLevel::default()).ok()?;
    Some(uri_of(&svg(&symbol)))
}

/// The symbol as SVG: a white square, then each row's dark runs as
/// horizontal strokes one module wide (`M x,y.5h len`, later runs of the
/// row relative to the previous one's end), so a version-2 code is about a
/// kilobyte.
pub fn svg(symbol: &Symbol) -> String {
    let side = symbol.width() + 2 * MARGIN;
    let mut d = String::with_capacity(side * side / 2);
    for y in 0..symbol.width() {
        let mut at = None; // where the last run of this row ended
        let row = symbol.row(y);
        let mut x = 0;
        while x < row.len() {
            if !row[x] {
                x += 1;
                continue;
            }
            let start = x;
            while x < row.len() && row[x] {
                x += 1;
            }
            match at {
                None => d.push_str(&format!("M{},{}.5", start + MARGIN, y + MARGIN)),
                Some(end) => d.push_str(&format!("m{},0", start - end)),
            }
            d.push_str(&format!("h{}", x - start));
            at = Some(x);
        }
    }
    format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {side} {side}' shape-rendering='crispEdges'>\
         <path fill='white' d='M0,0h{side}v{side}h-{side}z'/>\
         <path stroke='black' d='{d}'/></svg>"
    )
}

/// `svg` as a `data:` URL: the few characters a URL may not carry
/// percent-encoded, the rest as it is (a third the size of base64).
fn uri_of(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len() + 64);
    out.push_str("data:image/svg+xml,");
    for c in svg.chars() {
        match c {
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            ' ' => out.push_str("%20"),
            '#' => out.push_str("%23"),
            '%' => out.push_str("%25"),
            '"' => out.push_str("%22"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The modules the path draws, read back from its commands.
    fn drawn(svg: &str, width: usize) -> Vec<bool> {
        let d = svg
            .split("d='")
            .nth(2)
            .and_then(|s| s.split('\'').next())
            .expect("the runs' path");
        let mut dark = vec![false; width * width];
        let (mut x, mut y) = (0usize, 0usize);
        let mut rest = d;
        while let Some(op) = rest.chars().next() {
            let end = rest[1..]
                .find(['M', 'm', 'h'])
                .map_or(rest.len(), |i| i + 1);
            let arg = &rest[1..end];
            match op {
                'M' => {
                    let (a, b) = arg.split_once(',').expect("x,y");
                    x = a.parse::<usize>().expect("x") - MARGIN;
                    y = b.trim_end_matches(".5").parse::<usize>().expect("y") - MARGIN;
                }
                'm' => {
                    let (a, b) = arg.split_once(',').expect("dx,0");
                    assert_eq!(b, "0", "a run moves along its row");
                    x += a.parse::<usize>().expect("dx");
                }
                'h' => {
                    let len: usize = arg.parse().expect("len");
                    for i in x..x + len {
                        assert!(!dark[y * width + i], "drawn twice");
                        dark[y * width + i] = true;
                    }
                    x += len;
                }
                _ => panic!("unexpected {op}"),
            }
            rest = &rest[end..];
        }
        dark
    }

    #[test]
    fn the_path_draws_exactly_the_symbols_dark_modules() {
        for text in [
            "https://0x1f.ie/H83if",
            "HTTPS://0X1F.IE/campaigns/spring-2025-city-centre",
            "https://example.com/a",
        ] {
            let symbol = encode_symbol(text, EcLevel::default()).expect("encodes");
            let svg = svg(&symbol);
            assert_eq!(drawn(&svg, symbol.width()), symbol.modules(), "{text}");
            let side = symbol.width() + 2 * MARGIN;
            assert!(
                svg.contains(&format!("viewBox='0 0 {side} {side}'")),
                "{svg}"
            );
        }
    }

    #[test]
    fn the_uri_carries_no_character_a_url_may_not() {
        let uri = data_uri("https://0x1f.ie/H83if").expect("encodes");
        assert!(uri.starts_with("data:image/svg+xml,%3Csvg%20"), "{uri}");
        assert!(
            !uri.contains(['<', '>', ' ', '#', '"']),
            "an unescaped character: {uri}"
        );
        // A short link's thumbnail is small enough for 100 in one page.
        assert!(uri.len() < 2_000, "{} bytes", uri.len());
    }

    #[test]
    fn a_text_no_code_holds_has_no_thumbnail() {
        assert_eq!(data_uri(&"x".repeat(8_000)), None);
    }
}
