// What a person needs of the page now shown, measured in the browser that
// laid it out: tests/console_browser.rs runs this through the driver's
// "script" command (as a function body) on every page, on a phone screen
// and on a desktop one, and fails with the problems it returns.
//
// arguments[0]: the screen's width in CSS pixels;
// arguments[1]: the least height in CSS pixels of a control or tap target;
// arguments[2]: the least text size in CSS pixels.
// Returns a list of problems, one string each; empty when the page fits.
const [screenWidth, minTap, minText] = arguments;
const problems = [];

const describe = (el) =>
  el.tagName.toLowerCase() +
  (el.id ? "#" + el.id : "") +
  [...el.classList].map((c) => "." + c).join("");
const shown = (el) =>
  el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
const px = (n) => Math.round(n * 10) / 10;

// Without it a phone lays the page out 980 pixels wide and shrinks it.
const meta = document.querySelector('meta[name="viewport"]');
if (!meta || !/width=device-width/.test(meta.content)) {
  problems.push("no <meta name=viewport content=width=device-width>");
}
if (window.innerWidth !== screenWidth) {
  problems.push(`laid out ${window.innerWidth}px wide on a ${screenWidth}px screen`);
}

// The page itself never scrolls sideways; a wide table may scroll in its own box.
const pageWidth = document.documentElement.scrollWidth;
if (pageWidth > screenWidth) {
  problems.push(`the page is ${pageWidth}px wide on a ${screenWidth}px screen`);
}

// Everything a thumb presses: inside the screen and tall enough to hit.
const targets =
  'input:not([type="hidden"]), select, textarea, button, a.button, summary, header.top a, nav.pager a, nav.periods a';
for (const el of document.querySelectorAll(targets)) {
  if (!shown(el)) continue;
  const r = el.getBoundingClientRect();
  if (r.left < 0 || r.right > screenWidth + 0.5) {
    problems.push(`${describe(el)} spans ${px(r.left)}..${px(r.right)}px`);
  }
  if (r.height < minTap) {
    problems.push(`${describe(el)} is ${px(r.height)}px tall`);
  }
}

// Every piece of text shown, at its rendered size (SVG text is scaled with its
// drawing, so its font size counts as drawn).
const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let node = texts.nextNode(); node; node = texts.nextNode()) {
  const el = node.parentElement;
  const text = node.textContent.trim();
  if (!text || !el || !shown(el)) continue;
  let size = parseFloat(getComputedStyle(el).fontSize);
  if (el instanceof SVGElement) {
    const m = el.getScreenCTM();
    size *= m ? Math.hypot(m.a, m.b) : 1;
  }
  if (size < minText - 0.05) {
    problems.push(`"${text.slice(0, 40)}" (${describe(el)}) is ${px(size)}px`);
  }
}

// Pictures, the QR code above all, fit the screen whole.
for (const img of document.querySelectorAll("img, svg")) {
  if (!shown(img)) continue;
  const r = img.getBoundingClientRect();
  if (r.left < 0 || r.right > screenWidth + 0.5) {
    problems.push(`${describe(img)} spans ${px(r.left)}..${px(r.right)}px`);
  }
}

// A breakdown's value breaks between lines only where the page lets it (a
// space, or a <wbr> after a slash or a host name's dot), never inside a
// word: "www.faceboo|k.com" reads as two names.
for (const cell of document.querySelectorAll("table.bars tbody th")) {
  if (!shown(cell)) continue;
  const inCell = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = inCell.nextNode(); node; node = inCell.nextNode()) {
    const s = node.textContent;
    let lastTop = null;
    for (let i = 0; i < s.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rects = range.getClientRects();
      if (!rects.length) continue;
      const top = rects[0].top;
      if (lastTop !== null && top > lastTop + 1 && /\w/.test(s[i - 1]) && /\w/.test(s[i])) {
        problems.push(`"${cell.textContent}" breaks mid-word: "${s.slice(0, i)}|${s.slice(i)}"`);
      }
      lastTop = top;
    }
  }
}

return problems;
