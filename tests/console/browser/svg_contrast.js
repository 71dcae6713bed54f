// The contrast of text drawn in inline SVG (the console's charts), which
// axe-core leaves undecided ("imgNode": it cannot tell what is behind SVG
// text): each shown `svg text`, its fill against what is drawn under its
// middle (an SVG shape's fill, else the first page background that is not
// transparent), held to WCAG 1.4.3's 4.5:1, 3:1 for large text (24px, or
// 18.66px bold, as drawn). Run by tests/support/a11y.rs through the driver's
// "script" command (as a function body) on every page it checks.
//
// Returns a list of {target, fill, background, ratio, needed}, empty when
// every text is readable.
const rgb = (css) => {
  const m = css && css.match(/rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/);
  return m && (m[4] === undefined || Number(m[4]) > 0) ? [m[1], m[2], m[3]].map(Number) : null;
};
const luminance = ([r, g, b]) => {
  const lin = (v) => {
    v /= 255;
    return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
};
const shapes = new Set(["rect", "path", "circle", "ellipse", "polygon"]);
const under = (text) => {
  const r = text.getBoundingClientRect();
  const stack = document.elementsFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  for (const el of stack.slice(stack.indexOf(text) + 1)) {
    if (el instanceof SVGElement && shapes.has(el.tagName)) {
      const fill = rgb(getComputedStyle(el).fill);
      if (fill) return fill;
    } else if (!(el instanceof SVGElement)) {
      const bg = rgb(getComputedStyle(el).backgroundColor);
      if (bg) return bg;
    }
  }
  return [255, 255, 255];
};
const found = [];
for (const text of document.querySelectorAll("svg text")) {
  if (!text.getClientRects().length || !text.textContent.trim()) continue;
  text.scrollIntoView({ block: "center", inline: "center" });
  const style = getComputedStyle(text);
  const fill = rgb(style.fill);
  if (!fill) continue;
  const background = under(text);
  const [a, b] = [luminance(fill), luminance(background)];
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  const m = text.getScreenCTM();
  const size = parseFloat(style.fontSize) * (m ? Math.hypot(m.a, m.b) : 1);
  const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
  const needed = large ? 3 : 4.5;
  if (ratio < needed) {
    const svg = text.closest("svg");
    found.push({
      target: `${svg.id ? "svg#" + svg.id : "svg"} text "${text.textContent.trim().slice(0, 20)}"`,
      fill: `rgb(${fill})`,
      background: `rgb(${background})`,
      ratio: Math.round(ratio * 100) / 100,
      needed,
    });
  }
}
window.scrollTo(0, 0);
return found;
