//! Reading tag images back the way a scanner would, for the end-to-end QR
//! tests. Included with `#[path]` by the files that need it, so the shared
//! harness stays as it is.
#![allow(dead_code)]

/// The text of the single symbol in a PNG, and the image's size in pixels.
pub fn decode_png(png: &[u8]) -> (String, (u32, u32)) {
    let image = image::load_from_memory_with_format(png, image::ImageFormat::Png)
        .expect("a PNG")
        .to_luma8();
    let size = image.dimensions();
    (decode_luma(image), size)
}

/// The text of a standalone tag SVG: its one path rasterized on the module
/// grid its `viewBox` declares.
pub fn decode_svg(svg: &str) -> String {
    let view_box = attr(svg, "viewBox");
    let side: usize = view_box
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("square viewBox in module units: {view_box}"));
    let path = &svg[svg.find("<path").expect("one path")..];
    decode_grid(&modules_from_path(attr(path, "d"), side))
}

/// The text of one code on a sheet, from its path data alone. The path is
/// drawn with a 4-module quiet zone, so the grid ends 4 modules past the
/// last dark row (always the bottom-left finder pattern).
pub fn decode_sheet_path(d: &str) -> String {
    let last_row = d
        .split('z')
        .filter_map(|run| {
            run.strip_prefix('M')?
                .split(['h', ' '])
                .nth(1)?
                .parse::<usize>()
                .ok()
        })
        .max()
        .expect("some dark module");
    let side = last_row + 1 + 4;
    decode_grid(&modules_from_path(d, side))
}

pub fn decode_grid(grid: &[Vec<bool>]) -> String {
    let px = 2;
    let side = grid.len() * px;
    let image = image::GrayImage::from_fn(side as u32, side as u32, |x, y| {
        let dark = grid[y as usize / px][x as usize / px];
        image::Luma([if dark { 0 } else { 255 }])
    });
    decode_luma(image)
}

fn decode_luma(image: image::GrayImage) -> String {
    decode_symbol(image).1
}

/// The version and text of the single symbol in a grayscale image.
pub fn decode_symbol(image: image::GrayImage) -> (usize, String) {
    let mut prepared = rqrr::PreparedImage::prepare(image);
    let grids = prepared.detect_grids();
    assert_eq!(grids.len(), 1, "exactly one symbol in the image");
    let (meta, text) = grids[0].decode().expect("symbol decodes");
    (meta.version.0, text)
}

/// Rasterizes the path data the renderers write (`M x y h n v1 h-n z` runs).
pub fn modules_from_path(d: &str, side: usize) -> Vec<Vec<bool>> {
    let mut grid = vec![vec![false; side]; side];
    for rect in d.split('z').filter(|r| !r.is_empty()) {
        let rect = rect.strip_prefix('M').expect("each run starts with M");
        let (xy, rest) = rect.split_once('h').expect("run has a width");
        let (x, y) = xy.split_once(' ').expect("x and y");
        let (x, y): (usize, usize) = (x.parse().expect("x"), y.parse().expect("y"));
        let (run, rest) = rest.split_once("v1h-").expect("run is one module tall");
        let run: usize = run.parse().expect("width");
        assert_eq!(rest, run.to_string(), "run closes on itself");
        for cell in &mut grid[y][x..x + run] {
            assert!(!*cell, "runs do not overlap");
            *cell = true;
        }
    }
    grid
}

/// The value of attribute `name` in the first element that has it.
pub fn attr<'a>(element: &'a str, name: &str) -> &'a str {
    let start = element
        .find(&format!(" {name}=\""))
        .unwrap_or_else(|| panic!("{name} in {element}"))
        + name.len()
        + 3;
    let len = element[start..].find('"').expect("attribute closes");
    &element[start..start + len]
}
