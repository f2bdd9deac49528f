// REST calls from the dashboard. The session is an HttpOnly, SameSite=Strict cookie set by
// the one-time URL `mnemonic open` prints; every state-changing request also carries the
// CSRF token, which the server hands out in the readable cookie `mnemonic_csrf` and checks
// against the header `X-CSRF-Token` (double submit, tied to the session).

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.detail) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)mnemonic_csrf=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

async function call(method, path, { query, body, signal } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value === undefined || value === null || value === "") continue;
    if (Array.isArray(value)) value.forEach((v) => url.searchParams.append(key, v));
    else url.searchParams.set(key, String(value));
  }
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers["X-CSRF-Token"] = csrfToken();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    signal,
  });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export const api = {
  get: (path, query, opts = {}) => call("GET", path, { ...opts, query }),
  post: (path, body, opts = {}) => call("POST", path, { ...opts, body }),
  patch: (path, body, opts = {}) => call("PATCH", path, { ...opts, body }),
  del: (path, query, opts = {}) => call("DELETE", path, { ...opts, query }),
};
