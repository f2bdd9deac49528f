// A list with a detail pane beside it (below it in a narrow window): the layout the
// Insights and Patterns views share. The view keeps its own state and URL (`state.id` is
// the selection) and says how to fetch a page, draw a card and draw the detail; this part
// owns the paging, the aborting of stale requests, the selection and where focus lands.
// Text goes in through dom.js `h` only, as everywhere.
import { h, clear } from "./dom.js";
import { errorText } from "./health-kit.js";

/** A left click without modifiers: the one that selects in place instead of navigating. */
function plainClick(event) {
  return event.button === 0 && !event.metaKey && !event.ctrlKey && !event.shiftKey;
}

/**
 * opts:
 *   prefix       class prefix: `${prefix}-list`, -more, -detail, -layout, -main, -empty
 *   label        the list's aria-label
 *   state        the view's state object; `state.id` is the selected id (read and written)
 *   status       the view's statusLine(): list errors show there
 *   pushParams() writes the view's state to the URL
 *   hrefFor(id)  the URL that selects `id` (links work in a new tab too)
 *   fetchPage(cursor, signal) -> the page ({items, next_cursor})
 *   card(item)   one <li> with `dataset.id`; use `link` for its title
 *   empty        the text of an empty list
 *   onPage(page) optional, after each page is drawn
 *   detailPath(id), renderDetail(answer, pane), noSelection, notFound
 * Returns {layout, list, detail, select, link, loadList, loadDetail, alive, stop}.
 */
export function listDetail(ctx, opts) {
  const { prefix, state } = opts;
  let alive = true;
  let listAbort = null;
  let detailAbort = null;

  const list = h("ol", { class: `${prefix}-list`, "aria-label": opts.label });
  const more = h("button", { type: "button", class: `${prefix}-more`, hidden: true }, "Load more");
  const detail = h("aside", { class: `${prefix}-detail`, "aria-live": "polite", tabindex: "-1" });
  const layout = h("div", { class: `${prefix}-layout` }, h("div", { class: `${prefix}-main` }, list, more), detail);

  function select(id) {
    state.id = id;
    opts.pushParams();
    for (const item of list.children) item.classList.toggle("selected", item.dataset.id === id);
    loadDetail().then(() => {
      // keyboard users land on what they opened; in a narrow window it is below the list
      if (!alive) return;
      const narrow = window.matchMedia("(max-width: 800px)").matches;
      detail.focus({ preventScroll: !narrow });
      if (narrow) detail.scrollIntoView({ block: "start" });
    });
  }

  /** A link that selects `id` in place on a plain click and opens its URL otherwise. */
  function link(id, text, cls) {
    const onclick = (event) => {
      if (!plainClick(event)) return;
      event.preventDefault();
      select(id);
    };
    return h("a", { href: opts.hrefFor(id), class: cls, onclick }, text);
  }

  async function loadList(append = false, cursor = undefined) {
    if (listAbort) listAbort.abort();
    listAbort = new AbortController();
    if (!append) clear(list);
    list.setAttribute("aria-busy", "true");
    try {
      const page = await opts.fetchPage(cursor, listAbort.signal);
      if (!alive) return;
      for (const item of page.items) list.append(opts.card(item));
      if (!list.children.length) list.append(h("li", { class: `muted ${prefix}-empty` }, opts.empty));
      more.hidden = !page.next_cursor;
      more.onclick = () => loadList(true, page.next_cursor);
      if (opts.onPage) opts.onPage(page);
    } catch (err) {
      if (err.name !== "AbortError" && alive) opts.status.error(err);
    } finally {
      list.removeAttribute("aria-busy");
    }
  }

  async function loadDetail() {
    if (detailAbort) detailAbort.abort();
    clear(detail);
    if (!state.id) {
      detail.append(h("p", { class: "muted" }, opts.noSelection));
      return;
    }
    detailAbort = new AbortController();
    detail.setAttribute("aria-busy", "true");
    try {
      const answer = await ctx.api.get(opts.detailPath(state.id), undefined, { signal: detailAbort.signal });
      if (!alive) return;
      clear(detail);
      opts.renderDetail(answer, detail);
    } catch (err) {
      if (err.name === "AbortError" || !alive) return;
      clear(detail);
      detail.append(h("p", { class: "kit-status kit-bad" }, err.status === 404 ? opts.notFound : errorText(err)));
    } finally {
      detail.removeAttribute("aria-busy");
    }
  }

  function stop() {
    alive = false;
    if (listAbort) listAbort.abort();
    if (detailAbort) detailAbort.abort();
  }

  return { layout, list, detail, select, link, loadList, loadDetail, alive: () => alive, stop };
}
