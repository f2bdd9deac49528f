// Renders /openapi.json as a browsable reference: operations by tag, their parameters,
// bodies and answers, and every shared schema. No dependencies and no network beyond this
// daemon, so it works offline under `Content-Security-Policy: default-src 'self'`.
"use strict";

const METHODS = ["get", "post", "put", "patch", "delete"];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Inline code in descriptions (`like this`) becomes <code>; everything else stays text.
function prose(text) {
  const out = el("p", { class: "prose" });
  String(text || "").split(/(`[^`]*`)/).forEach((part) => {
    if (part.startsWith("`") && part.endsWith("`") && part.length > 1) {
      out.append(el("code", {}, part.slice(1, -1)));
    } else if (part) {
      out.append(part);
    }
  });
  return out;
}

function refName(ref) {
  return ref.split("/").pop();
}

function schemaLink(name) {
  return el("a", { href: "#schema-" + name, class: "ref" }, name);
}

// A one-line summary of a schema: a type, an enum, a link to a component, or a union.
function typeOf(schema) {
  if (!schema) return "any";
  if (schema.$ref) return schemaLink(refName(schema.$ref));
  const options = schema.anyOf || schema.oneOf;
  if (options) {
    const parts = [];
    options.forEach((option, i) => {
      if (i) parts.push(" | ");
      parts.push(typeOf(option));
    });
    return el("span", {}, parts);
  }
  if (schema.enum) return el("span", { class: "enum" }, schema.enum.map(String).join(" | "));
  if (schema.type === "array") return el("span", {}, "array of ", typeOf(schema.items));
  if (schema.type === "object" && schema.additionalProperties &&
      typeof schema.additionalProperties === "object") {
    return el("span", {}, "map of ", typeOf(schema.additionalProperties));
  }
  let text = schema.type || "any";
  if (schema.format) text += " (" + schema.format + ")";
  return text;
}

function constraints(schema) {
  const words = [];
  const add = (key, label) => {
    if (schema && schema[key] !== undefined) words.push(label + " " + JSON.stringify(schema[key]));
  };
  add("minLength", "min length");
  add("maxLength", "max length");
  add("minimum", "≥");
  add("maximum", "≤");
  add("minItems", "min items");
  add("maxItems", "max items");
  add("pattern", "pattern");
  add("default", "default");
  if (schema && schema.not && schema.not.pattern) words.push("not matching " + schema.not.pattern);
  return words.join(", ");
}

function propertiesTable(schema) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const rows = Object.entries(props).map(([name, prop]) =>
    el("tr", {},
      el("td", {}, el("code", {}, name), required.has(name) ? el("span", { class: "req" }, " *") : null),
      el("td", {}, typeOf(prop)),
      el("td", {}, constraints(prop)),
      el("td", {}, prop.description ? prose(prop.description) : "")));
  if (!rows.length) return el("p", { class: "muted" }, typeOf(schema));
  return el("table", {},
    el("thead", {}, el("tr", {}, el("th", {}, "field"), el("th", {}, "type"),
      el("th", {}, "constraints"), el("th", {}, "description"))),
    el("tbody", {}, rows));
}

function parametersTable(params) {
  if (!params || !params.length) return null;
  return el("div", {},
    el("h4", {}, "Parameters"),
    el("table", {},
      el("thead", {}, el("tr", {}, el("th", {}, "name"), el("th", {}, "in"),
        el("th", {}, "type"), el("th", {}, "constraints"), el("th", {}, "description"))),
      el("tbody", {}, params.map((p) =>
        el("tr", {},
          el("td", {}, el("code", {}, p.name), p.required ? el("span", { class: "req" }, " *") : null),
          el("td", {}, p.in),
          el("td", {}, typeOf(p.schema)),
          el("td", {}, constraints(p.schema)),
          el("td", {}, p.description ? prose(p.description) : ""))))));
}

function contentOf(block) {
  return Object.entries((block && block.content) || {}).map(([type, media]) =>
    el("span", {}, el("code", {}, type), " ", typeOf(media.schema)));
}

function operationCard(path, method, op) {
  const id = "op-" + (op.operationId || method + path);
  const secured = (op.security || []).length > 0;
  const summary = el("summary", {},
    el("span", { class: "method " + method }, op["x-websocket"] ? "ws" : method.toUpperCase()),
    el("code", { class: "path" }, path),
    el("span", { class: "summary" }, op.summary || ""),
    secured ? el("span", { class: "lock", title: "needs the bearer token" }, "token") : null);
  const body = op.requestBody
    ? el("div", {}, el("h4", {}, "Body"), el("p", {}, contentOf(op.requestBody)))
    : null;
  const responses = el("table", { class: "responses" },
    el("tbody", {}, Object.entries(op.responses || {}).map(([status, answer]) =>
      el("tr", {},
        el("td", { class: "status s" + status[0] }, status),
        el("td", {}, answer.description || ""),
        el("td", {}, contentOf(answer))))));
  return el("details", { class: "op", id: id, "data-search": (method + " " + path + " " + (op.summary || "")).toLowerCase() },
    summary,
    op.description ? prose(op.description) : null,
    parametersTable(op.parameters),
    body,
    el("h4", {}, "Responses"),
    responses);
}

function render(spec) {
  document.getElementById("title").textContent =
    spec.info.title + " API " + spec.info.version;
  const intro = document.getElementById("intro");
  intro.replaceChildren(prose(spec.info.description),
    el("p", {}, "Source: ", el("a", { href: "/openapi.json" }, "/openapi.json"),
      " (OpenAPI " + spec.openapi + ")"));

  const byTag = new Map();
  for (const [path, item] of Object.entries(spec.paths || {})) {
    for (const method of METHODS) {
      if (!item[method]) continue;
      const tag = (item[method].tags || ["other"])[0] || "other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push(operationCard(path, method, item[method]));
    }
  }
  const operations = document.getElementById("operations");
  const toc = document.getElementById("toc");
  operations.replaceChildren();
  toc.replaceChildren();
  for (const [tag, cards] of byTag) {
    toc.append(el("a", { href: "#tag-" + tag }, tag + " (" + cards.length + ")"));
    operations.append(el("h2", { id: "tag-" + tag }, tag), ...cards);
  }

  const schemas = document.getElementById("schemas");
  const components = (spec.components && spec.components.schemas) || {};
  schemas.replaceChildren(el("h2", { id: "tag-schemas" }, "Schemas"));
  toc.append(el("a", { href: "#tag-schemas" }, "schemas (" + Object.keys(components).length + ")"));
  for (const [name, schema] of Object.entries(components)) {
    schemas.append(el("div", { class: "schema", id: "schema-" + name },
      el("h3", {}, name),
      schema.description ? prose(schema.description) : null,
      propertiesTable(schema)));
  }
}

function applyFilter() {
  const needle = document.getElementById("filter").value.trim().toLowerCase();
  for (const card of document.querySelectorAll("details.op")) {
    card.hidden = needle !== "" && !card.dataset.search.includes(needle);
  }
}

function openFromHash() {
  const target = location.hash && document.getElementById(location.hash.slice(1));
  if (target && target.tagName === "DETAILS") target.open = true;
}

async function main() {
  document.getElementById("filter").addEventListener("input", applyFilter);
  window.addEventListener("hashchange", openFromHash);
  try {
    const response = await fetch("/openapi.json", { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error("HTTP " + response.status);
    render(await response.json());
    openFromHash();
  } catch (error) {
    document.getElementById("intro").textContent = "Could not load /openapi.json: " + error.message;
  }
}

main();
