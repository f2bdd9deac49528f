// Memory page (#/memory?id=…): everything known about one memory and the ways to correct
// it. Reads /memories/{id}/context (memory, links, amendments), /provenance (raw
// observation, watcher event, episode, merges) and /supersessions; acts through PATCH
// (amend), DELETE (forget), /unarchive, /unmerge and /supersedes, each behind a
// confirmation, reloading the page's data afterwards so what is shown is what is stored.
import { h, clear } from "../lib/dom.js";
import {
  badge,
  confirmButton,
  episodeLink,
  errorBox,
  isAbort,
  memoryHref,
  memoryLink,
  replace,
  statusLine,
  when,
} from "../lib/memory-kit.js";

export const title = "Memory";

export function mount(root, params, ctx) {
  const id = params.get("id") || "";
  let abort = null;
  root.classList.add("view-memory");

  const status = statusLine();
  const body = h("div", { class: "mem-body" });
  root.append(status, body);

  if (!id) {
    replace(body, idForm(ctx));
    return () => {};
  }

  async function load() {
    if (abort) abort.abort();
    abort = new AbortController();
    const signal = abort.signal;
    const enc = encodeURIComponent(id);
    try {
      const [context, provenance, chain] = await Promise.all([
        ctx.api.get(`/api/v1/memories/${enc}/context`, { limit: 50 }, { signal }),
        ctx.api.get(`/api/v1/memories/${enc}/provenance`, {}, { signal }),
        ctx.api.get(`/api/v1/memories/${enc}/supersessions`, {}, { signal }),
      ]);
      render(context, provenance, chain);
    } catch (err) {
      if (isAbort(err)) return;
      replace(body, errorBox(err), idForm(ctx));
    }
  }

  function render(context, provenance, chain) {
    const m = context.memory;
    replace(
      body,
      header(m),
      actions(m, provenance),
      section("Content", h("pre", { class: "mem-text" }, m.content)),
      section("Concepts", concepts(m.concepts)),
      section("Links", links(context.associations, m.id)),
      section("Amendment history", amendments(context.amendments)),
      section("Supersession", supersession(chain, m.id)),
      section("Episode", provenance.episode ? episode(provenance.episode) : muted("Not part of an episode yet.")),
      section("Provenance", origin(m, provenance)),
      section("Merges", merges(m, provenance)),
    );
  }

  // ---- actions ---------------------------------------------------------------------------

  async function act(fn, done) {
    status.set("Working…");
    await fn();
    status.set(done, "ok");
    await load();
  }

  function actions(m, provenance) {
    const enc = encodeURIComponent(m.id);
    const bar = h("div", { class: "mem-actions", role: "toolbar", "aria-label": "Actions" });
    const editor = h("div", { class: "mem-editor", hidden: true });
    const amendBtn = h("button", { type: "button", class: "mem-amend" }, "Amend");
    amendBtn.addEventListener("click", () => {
      replace(editor, amendForm(m, editor));
      editor.hidden = false;
      editor.querySelector("textarea").focus();
    });
    bar.append(amendBtn);

    if (m.state === "archived") {
      bar.append(
        confirmButton("Restore", "Bring this memory back?", () =>
          act(() => ctx.api.post(`/api/v1/memories/${enc}/unarchive`), "Restored."), status),
      );
    } else {
      bar.append(
        confirmButton(
          "Forget",
          "Archive this memory (hidden from recall, not deleted)?",
          () => act(() => ctx.api.del(`/api/v1/memories/${enc}`), "Forgotten (archived)."),
          status,
          { danger: true },
        ),
      );
    }
    const openMerge = provenance.merged_from.some((s) => !s.unmerged_at);
    if (openMerge && m.state !== "archived") {
      bar.append(
        confirmButton(
          "Unmerge",
          `Undo the merge of ${provenance.merged_from.length} memories into this gist?`,
          () => act(() => ctx.api.post(`/api/v1/memories/${enc}/unmerge`), "Unmerged: sources restored, gist archived."),
          status,
          { danger: true },
        ),
      );
    }
    bar.append(supersedeForm(m));
    bar.append(h("a", { href: `#/graph?${new URLSearchParams({ id: m.id })}`, class: "mem-graph-link" }, "Show in graph"));
    return h("div", {}, bar, editor);
  }

  function amendForm(m, editor) {
    const text = h("textarea", { name: "content", rows: "8", "aria-label": "New content", required: true });
    text.value = m.content;
    const reason = h("input", { name: "reason", type: "text", maxlength: "1000", placeholder: "Reason (optional)", "aria-label": "Reason" });
    const save = confirmButton(
      "Save amendment",
      "Save? The old text stays in the history.",
      () =>
        act(
          () =>
            ctx.api.patch(`/api/v1/memories/${encodeURIComponent(m.id)}`, {
              content: text.value,
              reason: reason.value || null,
            }),
          "Amended.",
        ),
      status,
    );
    save.classList.add("mem-amend-save");
    const cancel = h("button", { type: "button" }, "Cancel");
    cancel.addEventListener("click", () => {
      editor.hidden = true;
      clear(editor);
    });
    const form = h("form", { class: "mem-amend-form" }, text, reason, h("div", {}, save, cancel));
    form.addEventListener("submit", (event) => event.preventDefault());
    return form;
  }

  function supersedeForm(m) {
    const older = h("input", {
      name: "older_id",
      type: "text",
      placeholder: "id of the memory this replaces",
      "aria-label": "Older memory id",
      maxlength: "64",
    });
    const mark = confirmButton(
      "Mark as superseding",
      "This memory replaces that one?",
      () => {
        const olderId = older.value.trim();
        if (!olderId) throw new Error("Give the id of the older memory this one replaces.");
        return act(
          () => ctx.api.post(`/api/v1/memories/${encodeURIComponent(m.id)}/supersedes`, { older_id: olderId }),
          "Marked as superseding.",
        );
      },
      status,
    );
    const form = h("form", { class: "mem-supersede-form" }, older, mark);
    form.addEventListener("submit", (event) => event.preventDefault());
    return form;
  }

  // ---- sections --------------------------------------------------------------------------

  function supersession(chain, selfId) {
    const rows = [];
    for (const e of chain.superseded_by) {
      rows.push(h("li", {}, "Replaced by ", idLink(e.newer_id), " ", h("span", { class: "muted" }, when(e.created_at))));
    }
    for (const e of chain.supersedes) {
      const undo = confirmButton(
        "Undo",
        "Take this supersession back?",
        () =>
          act(
            () =>
              ctx.api.del(
                `/api/v1/memories/${encodeURIComponent(selfId)}/supersedes/${encodeURIComponent(e.older_id)}`,
              ),
            "Supersession removed.",
          ),
        status,
      );
      rows.push(h("li", {}, "Replaces ", idLink(e.older_id), " ", h("span", { class: "muted" }, when(e.created_at)), " ", undo));
    }
    return rows.length ? h("ul", { class: "mem-chain" }, rows) : muted("Neither replaces nor is replaced by another memory.");
  }

  load();
  return () => {
    if (abort) abort.abort();
  };
}

function idForm(ctx) {
  const input = h("input", { name: "id", type: "text", placeholder: "memory id", "aria-label": "Memory id" });
  const form = h("form", { class: "mem-id-form" }, input, h("button", { type: "submit" }, "Open"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.value.trim()) ctx.navigate("memory", { id: input.value.trim() });
  });
  return form;
}

function header(m) {
  return h(
    "header",
    { class: "mem-header" },
    h("h2", { class: "mem-summary" }, m.summary || m.id),
    h(
      "div",
      { class: "mem-meta" },
      badge(m.type, "type"),
      badge(m.state, m.state === "active" ? "ok" : "warn"),
      m.project ? badge(m.project, "project") : badge("no project", "muted"),
      badge(m.source, "source"),
      h("span", {}, "salience ", m.salience.toFixed(2)),
      h("span", {}, "accessed ", String(m.access_count), "×"),
      when(m.timestamp),
      h("code", { class: "mem-id" }, m.id),
    ),
  );
}

function section(label, content) {
  const slug = label.toLowerCase().replace(/[^a-z]+/g, "-");
  return h("section", { class: `mem-section mem-${slug}`, "aria-label": label }, h("h3", {}, label), content);
}

function muted(text) {
  return h("p", { class: "muted" }, text);
}

function idLink(id) {
  return h("a", { href: memoryHref(id), class: "mk-memory-link" }, h("code", {}, id));
}

function concepts(list) {
  if (!list.length) return muted("No concepts.");
  return h(
    "ul",
    { class: "mem-concepts" },
    list.map((c) => h("li", {}, h("a", { href: `#/search?${new URLSearchParams({ q: c })}` }, c))),
  );
}

function links(associations, selfId) {
  if (!associations.length) return muted("No links yet.");
  return h(
    "table",
    { class: "mem-links" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Relation"), h("th", { scope: "col" }, "Strength"), h("th", { scope: "col" }, "Memory"), h("th", { scope: "col" }, "Project"))),
    h(
      "tbody",
      {},
      associations.map((a) =>
        h(
          "tr",
          { dataset: { relation: a.relation } },
          h("td", {}, badge(a.relation, `rel-${a.relation}`)),
          h("td", {}, strengthBar(a.strength)),
          h("td", {}, memoryLink(a.memory)),
          h("td", {}, a.memory.project || ""),
        ),
      ),
    ),
  );
}

function strengthBar(value) {
  const bar = h("span", { class: "mem-strength-fill" });
  bar.style.width = `${Math.round(Math.max(0, Math.min(1, value)) * 100)}%`;
  return h(
    "span",
    { class: "mem-strength", title: value.toFixed(3), role: "meter", "aria-valuenow": value.toFixed(3), "aria-valuemin": "0", "aria-valuemax": "1" },
    h("span", { class: "mem-strength-track" }, bar),
    h("span", { class: "mem-strength-num" }, value.toFixed(2)),
  );
}

function amendments(list) {
  if (!list.length) return muted("Never amended.");
  return h(
    "ol",
    { class: "mem-amendments" },
    list.map((a) =>
      h(
        "li",
        {},
        h("div", { class: "mem-amend-head" }, when(a.created_at), a.reason ? h("span", {}, " — ", a.reason) : null),
        h("div", { class: "mem-diff" }, h("pre", { class: "mem-old", "aria-label": "Before" }, a.old_content), h("pre", { class: "mem-new", "aria-label": "After" }, a.new_content)),
      ),
    ),
  );
}

function episode(e) {
  return h(
    "div",
    { class: "mem-episode" },
    episodeLink(e),
    " ",
    badge(e.state),
    " ",
    h("span", { class: "muted" }, `${e.memory_count} memories, `, when(e.started_at), " – ", when(e.ended_at)),
    e.summary ? h("p", {}, e.summary) : null,
  );
}

function origin(m, p) {
  const rows = [];
  if (p.raw) {
    rows.push(
      kv("Raw observation", h("code", {}, p.raw.id)),
      kv("Received", when(p.raw.created_at)),
      kv("Status", `${p.raw.status}${p.raw.attempts > 1 ? ` after ${p.raw.attempts} attempts` : ""}`),
    );
    if (p.raw.error) rows.push(kv("Error", p.raw.error));
  } else {
    rows.push(kv("Raw observation", h("span", { class: "muted" }, `${m.raw_id} (purged)`)));
  }
  if (p.watcher) {
    const w = p.watcher;
    rows.push(kv("Watcher event", `${w.watcher}${w.kind ? ` / ${w.kind}` : ""}`));
    if (w.path) rows.push(kv("Path", h("code", {}, w.path)));
    if (w.cwd) rows.push(kv("Directory", h("code", {}, w.cwd)));
    if (w.score !== null) rows.push(kv("Perception score", w.score.toFixed(3)));
    if (w.event) rows.push(kv("Event data", h("pre", { class: "mem-json" }, JSON.stringify(w.event, null, 2))));
  } else {
    rows.push(kv("Watcher event", h("span", { class: "muted" }, `none: written through ${m.source}`)));
  }
  const out = h("div", {}, h("dl", { class: "mem-kv" }, rows));
  if (p.raw && p.raw.content !== m.content) {
    out.append(h("details", { class: "mem-raw" }, h("summary", {}, "Text as observed"), h("pre", {}, p.raw.content)));
  }
  return out;
}

function merges(m, p) {
  const parts = [];
  if (m.merged_into) parts.push(h("p", {}, "Merged into ", idLink(m.merged_into)));
  if (p.merged_from.length) {
    parts.push(
      h("p", {}, "A gist of:"),
      h(
        "ul",
        { class: "mem-merged-from" },
        p.merged_from.map((s) =>
          h("li", {}, idLink(s.memory_id), " ", h("span", { class: "muted" }, s.unmerged_at ? "unmerged" : `was ${s.previous_state}`)),
        ),
      ),
    );
  }
  for (const g of p.merged_into) {
    if (g !== m.merged_into) parts.push(h("p", { class: "muted" }, "Was merged into ", idLink(g), " (undone)"));
  }
  return parts.length ? h("div", {}, parts) : muted("Not merged.");
}

function kv(key, value) {
  return [h("dt", {}, key), h("dd", {}, value)];
}
