// SPDX-License-Identifier: MIT
// Building the page from data: elements whose text is set with textContent, never parsed as
// HTML, so nothing the API returns (a file name, a tool's arguments, output) becomes markup.

// <tag class=cls>text</tag>
export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A button (data-testid when given) that calls onClick.
export function button(text, testid, onClick, cls) {
  const b = el("button", cls, text);
  b.type = "button";
  if (testid) b.dataset.testid = testid;
  b.addEventListener("click", onClick);
  return b;
}
