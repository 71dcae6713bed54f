//! Reading a PDF's codes back as a printer's customer would: `pdftoppm`
//! renders every page, `zbarimg` reads the codes (poppler-utils and
//! zbar-tools, installed by `.ci/test`). Included with `#[path]` by the
//! files that need it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// The texts `zbarimg` reads from every page of `pdf` at 300 dpi, sorted;
/// `dir` is scratch space.
pub fn decode_pdf(dir: &Path, pdf: &[u8]) -> Vec<String> {
    decode_pdf_at(dir, pdf, 300)
}

/// [`decode_pdf`] with the pages rendered at `dpi`: a small module has to
/// scan at the resolution a printer has, not only at 300 dpi.
pub fn decode_pdf_at(dir: &Path, pdf: &[u8], dpi: u32) -> Vec<String> {
    let file = dir.join("decode.pdf");
    std::fs::write(&file, pdf).expect("write");
    let prefix = dir.join("decode-page");
    let out = Command::new("pdftoppm")
        .args(["-r", &dpi.to_string(), "-gray", "-png"])
        .arg(&file)
        .arg(&prefix)
        .output()
        .expect("pdftoppm (poppler-utils, see .ci/test)");
    assert!(out.status.success(), "pdftoppm: {out:?}");
    let mut pages: Vec<_> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("decode-page"))
        })
        .collect();
    pages.sort();
    let zbar = Command::new("zbarimg")
        .args(["-q", "--raw", "-Sdisable", "-Sqrcode.enable"])
        .args(&pages)
        .output()
        .expect("zbarimg (zbar-tools, see .ci/test)");
    for page in pages {
        let _ = std::fs::remove_file(page);
    }
    let mut texts: Vec<String> = String::from_utf8_lossy(&zbar.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    texts.sort();
    texts
}
