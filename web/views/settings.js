// Settings: what perception ignores (runtime exclusions: add and remove, in force at once
// and kept across restarts), what the watchers watch (roots come from config.yaml and are
// shown read-only), and the API token (rotate: the old token and every other dashboard
// session stop working; this page is logged in again and keeps working).
import { h, clear } from "../lib/dom.js";
import { ago, errorText, kv, pill, statusLine, table } from "../lib/health-kit.js";

export const title = "Settings";

function stateKind(state) {
  return { running: "ok", degraded: "warn", disabled: "warn", stopped: "bad", off: "muted" }[state] || "info";
}

export function mount(root, params, ctx) {
  let alive = true;
  root.classList.add("view-settings");

  // ---- exclusions ------------------------------------------------------------------------
  const exStatus = statusLine();
  const exList = h("div", { class: "set-exclusions" });
  const pathIn = h("input", { name: "path", type: "text", required: true, placeholder: "/home/me/secret-project", autocomplete: "off", spellcheck: "false", "aria-label": "Absolute path to exclude", class: "set-path" });
  const reasonIn = h("input", { name: "reason", type: "text", maxlength: "200", placeholder: "reason (optional)", "aria-label": "Reason" });
  const addForm = h(
    "form",
    { class: "kit-filters set-add", onsubmit: (e) => { e.preventDefault(); addExclusion(); } },
    pathIn,
    reasonIn,
    h("button", { type: "submit" }, "Exclude"),
  );

  async function loadExclusions() {
    try {
      const answer = await ctx.api.get("/api/v1/exclusions");
      if (!alive) return;
      clear(exList);
      exList.append(
        table(
          [
            { label: "Path", cell: (x) => h("code", { class: "set-code" }, x.path) },
            { label: "Reason", cell: (x) => x.reason || "–" },
            { label: "Origin", cell: (x) => pill(x.origin, x.origin === "auto" ? "warn" : "muted") },
            { label: "Since", cell: (x) => ago(x.created_at) },
            { label: "", cell: (x) => h("button", { type: "button", class: "set-remove", "aria-label": `Stop excluding ${x.path}`, onclick: (e) => removeExclusion(x.path, e.currentTarget) }, "Remove") },
          ],
          answer.items,
          { empty: "Nothing excluded at runtime (config.yaml's ignore rules still apply).", rowAttrs: (x) => ({ dataset: { path: x.path } }) },
        ),
      );
    } catch (err) {
      if (alive) exStatus.error(err);
    }
  }

  async function addExclusion() {
    const path = pathIn.value.trim();
    if (!path) return;
    try {
      const answer = await ctx.api.post("/api/v1/exclusions", { path, reason: reasonIn.value.trim() || undefined });
      if (!alive) return;
      exStatus.ok(answer.created ? `Excluded ${answer.path}.` : `${answer.path} was already excluded.`);
      pathIn.value = "";
      reasonIn.value = "";
      await loadExclusions();
    } catch (err) {
      if (alive) exStatus.error(err);
    }
  }

  async function removeExclusion(path, button) {
    if (button) button.disabled = true;
    try {
      await ctx.api.del("/api/v1/exclusions", { path });
      if (!alive) return;
      exStatus.ok(`No longer excluding ${path}.`);
      await loadExclusions();
    } catch (err) {
      if (button) button.disabled = false;
      if (alive) exStatus.error(err);
    }
  }

  // ---- watchers --------------------------------------------------------------------------
  const watchBox = h("div", { class: "set-watchers" });

  async function loadWatchers() {
    try {
      const answer = await ctx.api.get("/api/v1/watchers");
      if (!alive) return;
      clear(watchBox);
      watchBox.append(
        table(
          [
            { label: "Watcher", cell: (w) => h("strong", {}, w.name) },
            { label: "State", cell: (w) => pill(w.enabled ? w.state : "off in config", w.enabled ? stateKind(w.state) : "muted") },
            {
              label: "Roots",
              cell: (w) =>
                w.roots.length
                  ? h("ul", { class: "set-roots" }, w.roots.map((r) => h("li", {}, h("code", { class: "set-code" }, r.path), r.mode ? h("span", { class: "muted" }, ` (${r.mode})`) : null, r.message ? h("span", { class: "kit-warn" }, ` ${r.message}`) : null)))
                  : h("span", { class: "muted" }, w.name === "terminal" ? "the shell's default history files" : "–"),
            },
            { label: "Events", class: "num", cell: (w) => String(w.events) },
            { label: "Set in", cell: (w) => h("code", {}, `${w.config_key}:`) },
            { label: "Note", cell: (w) => w.message || "" },
          ],
          answer.items,
          { rowAttrs: (w) => ({ dataset: { watcher: w.name } }) },
        ),
        h("p", { class: "muted" }, "Roots are set in config.yaml (", h("code", {}, "mnemonic config show"), " prints what is in force); the daemon reads them when it starts."),
      );
    } catch (err) {
      if (!alive) return;
      clear(watchBox);
      watchBox.append(h("p", { class: "kit-status kit-bad" }, errorText(err)));
    }
  }

  // ---- token -----------------------------------------------------------------------------
  const tokStatus = statusLine();
  const tokBox = h("div", { class: "set-token-actions" });
  const tokResult = h("div", { class: "set-token-result", "aria-live": "polite" });

  function tokenIdle() {
    clear(tokBox);
    const ask = h("button", { type: "button", class: "danger set-rotate" }, "Rotate token…");
    ask.addEventListener("click", () => {
      clear(tokBox);
      const yes = h("button", { type: "button", class: "danger set-rotate-confirm" }, "Rotate now");
      const no = h("button", { type: "button", onclick: () => { tokenIdle(); tokBox.querySelector("button").focus(); } }, "Cancel");
      yes.addEventListener("click", rotate);
      tokBox.append(h("span", {}, "API clients using the old token will get 401 until they use the new one. "), yes, " ", no);
      yes.focus();
    });
    tokBox.append(ask);
  }

  async function rotate(event) {
    event.currentTarget.disabled = true;
    try {
      const answer = await ctx.api.post("/api/v1/token/rotate");
      if (!alive) return;
      clear(tokResult);
      tokResult.append(
        kv([
          ["Written to", h("code", { class: "set-code" }, answer.token_file)],
          ["Sessions ended", String(answer.sessions_ended)],
          ["New token", answer.token ? h("code", { class: "set-code set-new-token" }, answer.token) : null],
        ]),
        h(
          "p",
          {},
          answer.session_renewed
            ? "This page was logged in again and keeps working. Other open dashboards must be re-opened with `mnemonic open`; the CLI reads the new token from the file."
            : "The old session ended: re-open the dashboard with `mnemonic open`.",
        ),
      );
      tokStatus.ok("Token rotated.");
    } catch (err) {
      if (alive) tokStatus.error(err);
    } finally {
      if (alive) tokenIdle();
    }
  }

  tokenIdle();

  root.append(
    h("header", { class: "view-head" }, h("h1", {}, "Settings")),
    h(
      "section",
      { class: "kit-panel", id: "set-exclusions", "aria-labelledby": "set-exclusions-title" },
      h("h2", { id: "set-exclusions-title" }, "Runtime exclusions"),
      h("p", { class: "muted" }, "Paths perception ignores from now on (files under them, commands run in them). Kept across restarts."),
      addForm,
      exStatus.el,
      exList,
    ),
    h(
      "section",
      { class: "kit-panel", id: "set-watchers", "aria-labelledby": "set-watchers-title" },
      h("h2", { id: "set-watchers-title" }, "Watchers"),
      watchBox,
    ),
    h(
      "section",
      { class: "kit-panel", id: "set-token", "aria-labelledby": "set-token-title" },
      h("h2", { id: "set-token-title" }, "API token"),
      h("p", { class: "muted" }, "Rotating writes a new token to the token file (where the CLI reads it) and ends the old one at once, with every other dashboard session."),
      tokBox,
      tokStatus.el,
      tokResult,
    ),
  );
  loadExclusions();
  loadWatchers();

  return () => {
    alive = false;
  };
}
