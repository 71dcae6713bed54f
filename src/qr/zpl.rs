//! ZPL II for Zebra printers: one label, `^XA` … `^XZ`.
//!
//! [`graphic_label`] sends the code as a `^GFA` graphic field, the exact
//! dots [`super::dots`] rendered (what the PNG holds), so what prints is
//! what was checked. [`native_label`] asks the printer to draw its own QR
//! code with `^BQ` instead: smaller to send, but the printer chooses the
//! version and mask, a module is at most 10 dots (`^BQ`'s largest
//! magnification), and nothing here can check the symbol it makes.

use std::fmt::Write as _;

use qrcode::QrCode;

use super::EcLevel;
use super::dots::{Layout, symbol_bits};

/// `^BQ`'s largest magnification, in dots per module.
pub const MAX_NATIVE_MAGNIFICATION: u32 = 10;

/// The label setup every output starts with: print width and label length
/// in dots, the label home at the corner.
fn open_label(out: &mut String, layout: &Layout) {
    let _ = write!(
        out,
        "^XA\n^PW{}\n^LL{}\n^LH0,0\n",
        layout.width, layout.height
    );
}

/// The code as an ASCII-hex graphic field at its place on the label:
/// `^GFA,total,total,row bytes,data` with one bit a dot, 1 printed.
pub fn graphic_label(code: &QrCode, layout: &Layout) -> String {
    let bits = symbol_bits(code, layout.module);
    let total = bits.data.len();
    let mut out = String::with_capacity(2 * total + 128);
    open_label(&mut out, layout);
    let _ = write!(
        out,
        "^FO{},{}^GFA,{total},{total},{},",
        layout.x, layout.y, bits.row_bytes
    );
    for row in bits.data.chunks(bits.row_bytes) {
        for byte in row {
            let _ = write!(out, "{byte:02X}");
        }
    }
    out.push_str("^FS\n^PQ1\n^XZ\n");
    out
}

/// The printer's own QR code (`^BQN,2,magnification`, model 2) centred as
/// qrtag would place its own symbol, at the same module size up to
/// [`MAX_NATIVE_MAGNIFICATION`]. The text goes through `^FH` so a `^` or
/// `~` in it cannot end the field.
pub fn native_label(text: &str, ec: EcLevel, layout: &Layout) -> String {
    let magnification = layout.module.min(MAX_NATIVE_MAGNIFICATION);
    let side = layout.modules * magnification;
    let mut out = String::with_capacity(text.len() + 128);
    open_label(&mut out, layout);
    let _ = write!(
        out,
        "^FO{},{}^BQN,2,{magnification}^FH_^FD{ec}A,{}^FS\n^PQ1\n^XZ\n",
        layout.width.saturating_sub(side) / 2,
        layout.height.saturating_sub(side) / 2,
        field_hex(text)
    );
    out
}

/// Escapes for `^FH_`: the three characters ZPL would read as commands or
/// as the escape itself become `_XX`.
fn field_hex(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '^' | '~' | '_' => {
                let _ = write!(out, "_{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::print::stock::printer;
    use crate::qr::dots::layout;
    use crate::qr::encode;

    fn fixture() -> (QrCode, Layout) {
        let code = encode("HTTPS://0X1F.IE/H83if", EcLevel::L).expect("fits");
        let media = printer("zebra-2x1").expect("known");
        let l = layout(media, 203, code.width() as u32).expect("fits");
        (code, l)
    }

    #[test]
    fn the_graphic_field_counts_its_bytes() {
        let (code, l) = fixture();
        let zpl = graphic_label(&code, &l);
        assert!(zpl.starts_with("^XA\n^PW406\n^LL203\n"), "{zpl}");
        assert!(zpl.ends_with("^XZ\n"));
        let gf = zpl.split("^GFA,").nth(1).expect("a graphic field");
        let fields: Vec<&str> = gf.splitn(4, ',').collect();
        let side = l.symbol_dots() as usize;
        let row_bytes = side.div_ceil(8);
        assert_eq!(fields[0], (row_bytes * side).to_string());
        assert_eq!(fields[1], fields[0]);
        assert_eq!(fields[2], row_bytes.to_string());
        let data = fields[3].split('^').next().expect("data");
        assert_eq!(data.len(), 2 * row_bytes * side);
        assert!(data.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(zpl.contains(&format!("^FO{},{}^GFA", l.x, l.y)));
    }

    #[test]
    fn the_native_code_escapes_what_zpl_would_read() {
        let (_, l) = fixture();
        let zpl = native_label("https://x.example/a_b^c~d", EcLevel::Q, &l);
        let want = format!(
            "^BQN,2,{}^FH_^FDQA,https://x.example/a_5Fb_5Ec_7Ed^FS",
            l.module
        );
        assert!(zpl.contains(&want), "{zpl}");
        assert!(zpl.starts_with("^XA\n") && zpl.ends_with("^XZ\n"));
        let media = printer("zebra-4x6").expect("known");
        let big = layout(media, 600, 21).expect("fits");
        assert!(big.module > MAX_NATIVE_MAGNIFICATION);
        let zpl = native_label("x", EcLevel::L, &big);
        assert!(zpl.contains("^FO1095,1695^BQN,2,10^"), "{zpl}");
    }
}
