// SPDX-License-Identifier: MIT
// The code editor: a textarea (what is typed, data-testid code-input) over a <pre> that shows
// the same text highlighted (highlight.js). Tab indents by four spaces, Enter keeps the
// indentation (one level more after a ':'), Ctrl+Enter (Cmd+Enter) runs.
import { highlight } from "./highlight.js";

const INDENT = "    ";

export function setupEditor(textarea, view, onRun) {
  const render = () => {
    // A final newline needs a character after it to be shown in the <pre>.
    view.replaceChildren(highlight(textarea.value + "\n"));
    view.scrollTop = textarea.scrollTop;
    view.scrollLeft = textarea.scrollLeft;
  };
  const insert = (text) => {
    // execCommand keeps the browser's undo history; setRangeText is the fallback.
    if (!document.execCommand("insertText", false, text)) {
      textarea.setRangeText(text, textarea.selectionStart, textarea.selectionEnd, "end");
    }
    render();
  };
  textarea.addEventListener("input", render);
  textarea.addEventListener("scroll", () => {
    view.scrollTop = textarea.scrollTop;
    view.scrollLeft = textarea.scrollLeft;
  });
  textarea.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      onRun();
    } else if (ev.key === "Tab" && !ev.shiftKey && !ev.altKey && !ev.ctrlKey) {
      ev.preventDefault();
      insert(INDENT);
    } else if (ev.key === "Enter" && !ev.shiftKey) {
      const before = textarea.value.slice(0, textarea.selectionStart);
      const line = before.slice(before.lastIndexOf("\n") + 1);
      let indent = line.match(/^[ \t]*/)[0];
      if (/:\s*(#.*)?$/.test(line)) indent += INDENT;
      ev.preventDefault();
      insert("\n" + indent);
    }
  });
  render();
  return {
    get value() {
      return textarea.value;
    },
    set value(v) {
      textarea.value = v;
      render();
    },
  };
}
