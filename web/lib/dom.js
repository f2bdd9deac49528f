// The one way views build the page: elements from data, text always through textContent.
// Memory text, project names and concepts are hostile input (an earlier system had XSS
// through memory content), so nothing here ever assigns innerHTML or builds HTML strings.

/**
 * h("a", {href: "#/memory?id=x", class: "link", onclick: fn}, "text", child, [more])
 * Attributes starting with "on" become listeners; `class`, `dataset`, `style` (object) are
 * handled; every other attribute goes through setAttribute. Children: strings/numbers
 * become text nodes, null/false are skipped, arrays are flattened.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") {
      el.className = String(value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "style" && typeof value === "object") {
      for (const [prop, v] of Object.entries(value)) el.style.setProperty(prop, String(v));
    } else if (key === "href" && /^\s*javascript:/i.test(String(value))) {
      continue; // never a script URL, whatever the data says
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Remove every child of `el`. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}
