//! QR images rendered by the admin listener, by format. The family's
//! counters are created once, here, and rendering increments its own clone
//! (one atomic), so no request looks a label set up.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::qr_image::ImageFormat;

type Labels = [(&'static str, &'static str); 1];

#[derive(Debug, Clone)]
pub struct QrRenders {
    family: Family<Labels, Counter>,
    png: Counter,
    svg: Counter,
    pdf: Counter,
}

impl Default for QrRenders {
    fn default() -> Self {
        let family = Family::<Labels, Counter>::default();
        let png = family.get_or_create_owned(&[("format", "png")]);
        let svg = family.get_or_create_owned(&[("format", "svg")]);
        let pdf = family.get_or_create_owned(&[("format", "pdf")]);
        Self {
            family,
            png,
            svg,
            pdf,
        }
    }
}

impl QrRenders {
    pub fn rendered(&self, format: ImageFormat) {
        match format {
            ImageFormat::Png => self.png.inc(),
            ImageFormat::Svg => self.svg.inc(),
        };
    }

    /// A print-ready PDF (`/qr/KEY.pdf`).
    pub fn rendered_pdf(&self) {
        self.pdf.inc();
    }

    pub(super) fn family(&self) -> Family<Labels, Counter> {
        self.family.clone()
    }
}
