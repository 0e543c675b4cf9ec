// SPDX-License-Identifier: MIT
// Python syntax highlighting for the console's editor: a single-pass tokenizer that turns
// source text into spans with classes (kw, bi, str, num, com, dec, def). Made of DOM nodes
// and textContent only: the code is never parsed as HTML.

const KEYWORDS = new Set(("False None True and as assert async await break class continue def " +
  "del elif else except finally for from global if import in is lambda nonlocal not or pass " +
  "raise return try while with yield match case").split(" "));
const BUILTINS = new Set(("abs all any bin bool bytes callable chr dict dir divmod enumerate " +
  "filter float format frozenset getattr hasattr hash help hex id input int isinstance " +
  "issubclass iter len list map max min next object oct open ord pow print range repr " +
  "reversed round set setattr slice sorted str sum super tuple type vars zip self " +
  "Exception ValueError TypeError KeyError RuntimeError").split(" "));

// One alternative per token kind, tried at each position (sticky).
const TOKEN = new RegExp([
  "(#[^\\n]*)",                                                  // 1 comment
  "((?:[rRbBuUfF]{1,2})?(?:'''[\\s\\S]*?(?:'''|$)|\"\"\"[\\s\\S]*?(?:\"\"\"|$)" +
    "|'(?:\\\\.|[^'\\\\\\n])*'?|\"(?:\\\\.|[^\"\\\\\\n])*\"?))", // 2 string (may be unfinished)
  "(@[A-Za-z_][\\w.]*)",                                         // 3 decorator
  "(\\b(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\\d[\\d_]*\\.?[\\d_]*|\\.\\d[\\d_]*)" +
    "(?:[eE][+-]?\\d+)?[jJ]?)\\b)",                              // 4 number
  "([A-Za-z_]\\w*)",                                             // 5 name
].join("|"), "y");

// [[kind or null, text], ...] covering src exactly.
export function tokenize(src) {
  const out = [];
  let plain = "";
  let afterDef = false;
  for (let i = 0; i < src.length;) {
    TOKEN.lastIndex = i;
    const m = TOKEN.exec(src);
    if (!m) {
      plain += src[i++];
      continue;
    }
    let kind = null;
    if (m[1]) kind = "com";
    else if (m[2]) kind = "str";
    else if (m[3]) kind = "dec";
    else if (m[4]) kind = "num";
    else if (afterDef) kind = "def";
    else if (KEYWORDS.has(m[5])) kind = "kw";
    else if (BUILTINS.has(m[5])) kind = "bi";
    if (m[5] !== undefined) afterDef = m[5] === "def" || m[5] === "class";
    if (kind) {
      if (plain) out.push([null, plain]);
      plain = "";
      out.push([kind, m[0]]);
    } else {
      plain += m[0];
    }
    i += m[0].length;
  }
  if (plain) out.push([null, plain]);
  return out;
}

// The highlighted source as a DocumentFragment.
export function highlight(src) {
  const frag = document.createDocumentFragment();
  for (const [kind, text] of tokenize(src)) {
    if (!kind) {
      frag.append(text);
      continue;
    }
    const span = document.createElement("span");
    span.className = "t-" + kind;
    span.textContent = text;
    frag.append(span);
  }
  return frag;
}
