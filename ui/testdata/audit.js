// The accessibility audit of TestPagesAccessible: run in a page, it returns
// what it found wrong (nothing on a good page) and leaves its helpers in
// window.solarAudit for the keyboard part of the test. WCAG 2's relative
// luminance and contrast ratio; a text needs 4.5:1, a large one 3:1.
(() => {
  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const bg = getComputedStyle(el).backgroundColor;
      const c = parse(bg);
      if (c && c.a > 0) return bg;
    }
    return "rgb(255, 255, 255)";
  };
  const contrast = (fg, bg) => {
    const a = lum(parse(fg)), b = lum(parse(bg));
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  };
  window.solarAudit = { background, contrast };

  const problems = [];
  const root = document.documentElement;
  if (!root.lang) problems.push("the page names no language");
  if (root.scrollWidth > root.clientWidth) {
    problems.push(`the page scrolls sideways: ${root.scrollWidth} px wide on a ${root.clientWidth} px screen`);
  }
  const seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.trim();
    const el = n.parentElement;
    if (!text || seen.has(el)) continue;
    seen.add(el);
    const cs = getComputedStyle(el);
    if (cs.display === "none" || cs.visibility === "hidden") continue;
    const size = parseFloat(cs.fontSize);
    const large = size >= 24 || (Number(cs.fontWeight) >= 700 && size >= 18.66);
    const need = large ? 3 : 4.5;
    const ratio = contrast(cs.color, background(el));
    if (ratio < need) problems.push(`${el.tagName} "${text.slice(0, 40)}": contrast ${ratio.toFixed(2)}:1, needs ${need}:1`);
  }
  for (const el of document.querySelectorAll(".state")) {
    if (!el.textContent.trim()) problems.push(`a coloured state without words (${el.className})`);
  }
  for (const el of document.querySelectorAll("a[href], button")) {
    if (!el.textContent.trim() && !el.getAttribute("aria-label")) problems.push(`a ${el.tagName} without a name`);
  }
  for (const th of document.querySelectorAll("thead th")) {
    if (th.getAttribute("scope") !== "col") problems.push(`a column header without scope: "${th.textContent.trim()}"`);
  }
  return problems;
})()
