// weft dashboard: DOM and API helpers shared by every view.
//
// Safety contract: everything a task, an agent or a file can influence reaches the page
// through textContent or setAttribute on a fixed attribute name; no file parses data as
// markup (src/assets.rs has a test that greps for the ways to). `h` is the only builder.
"use strict";

const Weft = (window.Weft = window.Weft || {});

// h("div.cls#id", {attrs, on: {click}}, children...): strings become text nodes.
Weft.h = function h(spec, attrs, ...children) {
  const m = /^([a-z0-9]+)((?:[.#][\w-]+)*)$/i.exec(spec);
  const el = document.createElement(m ? m[1] : "div");
  if (m && m[2]) {
    for (const part of m[2].match(/[.#][\w-]+/g)) {
      if (part[0] === ".") el.classList.add(part.slice(1));
      else el.id = part.slice(1);
    }
  }
  if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "on") {
        for (const [ev, fn] of Object.entries(value)) el.addEventListener(ev, fn);
      } else if (key === "dataset") {
        Object.assign(el.dataset, value);
      } else if (key === "value") {
        el.value = value;
      } else if (key === "checked") {
        el.checked = !!value;
      } else {
        el.setAttribute(key, value === true ? "" : String(value));
      }
    }
  }
  Weft.append(el, children);
  return el;
};

Weft.append = function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
};

// put(el, ...children): append, skipping null/undefined/false (the native Element.append
// would write them as the text "null"), so views can pass optional parts inline.
Weft.put = function put(el, ...children) {
  return Weft.append(el, children);
};

Weft.clear = function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
};

Weft.$ = (sel, root) => (root || document).querySelector(sel);

// An error the server returned: its message, hint and causes, as the CLI prints them.
class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || `request failed (HTTP ${status})`);
    this.status = status;
    this.hint = body && body.hint;
    this.causes = (body && body.causes) || [];
  }
}
Weft.ApiError = ApiError;

// fetch a route; JSON in and out (text for text/plain). Throws ApiError on a non-2xx.
Weft.api = async function api(method, path, body, opts) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const type = res.headers.get("Content-Type") || "";
  const parsed = type.includes("json") ? await res.json().catch(() => null) : await res.text();
  if (res.status === 401) Weft.loggedOut && Weft.loggedOut();
  if (!res.ok) throw new ApiError(res.status, typeof parsed === "object" ? parsed : { error: parsed || null });
  if (opts && opts.withHeaders) return { body: parsed, headers: res.headers };
  return parsed;
};

// Toasts: notices that fade (errors stay until dismissed).
Weft.toast = function toast(kind, title, detail, hint) {
  const box = Weft.$("#toasts");
  const el = Weft.h(
    "div.toast." + kind,
    { role: kind === "error" ? "alert" : "status" },
    Weft.h("button.close", { "aria-label": "dismiss", on: { click: () => el.remove() } }, "×"),
    Weft.h("div.t", title),
    detail ? Weft.h("div.d", detail) : null,
    hint ? Weft.h("div.hint", "hint: " + hint) : null
  );
  box.appendChild(el);
  while (box.children.length > 6) box.firstChild.remove();
  if (kind !== "error") setTimeout(() => el.remove(), 9000);
  return el;
};

Weft.showError = function showError(err, what) {
  if (err instanceof ApiError) {
    const causes = err.causes.length ? err.causes.join("; ") : null;
    Weft.toast("error", (what ? what + ": " : "") + err.message, causes, err.hint);
  } else {
    Weft.toast("error", (what ? what + ": " : "") + String(err && err.message ? err.message : err));
  }
};

// A confirmation dialog; resolves true when confirmed. `danger` styles the button.
Weft.confirm = function confirm(title, text, action, danger) {
  return new Promise((resolve) => {
    const modal = Weft.$("#modal");
    const done = (ok) => {
      modal.classList.add("hidden");
      Weft.clear(modal);
      document.removeEventListener("keydown", onKey);
      resolve(ok);
    };
    const onKey = (e) => {
      if (e.key === "Escape") done(false);
    };
    document.addEventListener("keydown", onKey);
    Weft.clear(modal).appendChild(
      Weft.h(
        "div.dialog",
        Weft.h("h2", title),
        Weft.h("p", text),
        Weft.h(
          "div.actions",
          Weft.h("button#modal-cancel", { on: { click: () => done(false) } }, "Cancel"),
          Weft.h("button#modal-confirm." + (danger ? "danger" : "primary"), { on: { click: () => done(true) } }, action)
        )
      )
    );
    modal.classList.remove("hidden");
    Weft.$("#modal-confirm").focus();
  });
};

Weft.fmt = {
  age(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
  },
  time(at) {
    return at ? new Date(at).toLocaleString() : "";
  },
  tokens(n) {
    if (!n) return "0";
    if (n < 1000) return String(n);
    if (n < 1e6) return (n / 1000).toFixed(1) + "k";
    return (n / 1e6).toFixed(2) + "M";
  },
  cost(usd) {
    return "$" + (usd || 0).toFixed(usd && usd < 1 ? 4 : 2);
  },
  status(s) {
    return String(s || "").replace(/_/g, " ");
  },
};
