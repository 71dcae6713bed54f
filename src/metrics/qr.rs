//! QR images rendered by the admin listener, by format. The family's
//! counters are created once, here, and rendering increments its own clone
//! (one atomic), so no request looks a label set up. The render gate's
//! slots, read at scrape time.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::print::tag_image::{ImageFormat, RenderGate};

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

/// The process's one [`RenderGate`]: its slots and how many are taken.
#[derive(Debug)]
pub(super) struct RenderSlots(pub RenderGate);

impl Collector for RenderSlots {
    fn encode(&self, mut e: DescriptorEncoder) -> fmt::Result {
        for (name, help, value) in [
            (
                "qrtag_render_slots",
                "Renders (QR images and PDFs, every listener) that may run at once",
                self.0.capacity(),
            ),
            (
                "qrtag_renders_in_flight",
                "Renders running now",
                self.0.in_flight(),
            ),
        ] {
            let g = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
            g.encode(e.encode_descriptor(name, help, None, g.metric_type())?)?;
        }
        Ok(())
    }
}
