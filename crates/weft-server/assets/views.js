// weft dashboard: the views beside the graph: plans, approvals inbox, handoff, runners,
// settings. Each `render*` fetches its route and rebuilds its section; the app calls them
// again when an event says their data changed.
"use strict";

(function () {
  const { h, api, clear, put } = Weft;

  function table(head, rows) {
    return h("table.grid", h("thead", h("tr", head.map((c) => h("th", c)))), h("tbody", rows));
  }

  Weft.views = {
    async plans(app, root) {
      const plans = await api("GET", "/api/plans");
      const rows = plans.map((p) =>
        h(
          "tr" + (p.current ? ".current" : ""),
          { dataset: { plan: p.id } },
          h("td", h("code", p.short_id)),
          h("td", p.goal),
          h("td", h("span.pill.s-" + p.status, Weft.fmt.status(p.status))),
          h("td.num", String(p.task_count)),
          h("td", Weft.fmt.time(p.updated_at)),
          h(
            "td.actions",
            p.current ? h("span.muted", "current") : h("button", { on: { click: () => app.loadPlan(p.id) } }, "Load"),
            " ",
            h("button.danger", { on: { click: () => app.deletePlan(p) } }, "Delete")
          )
        )
      );
      const list = plans.length
        ? table(["id", "goal", "status", "tasks", "updated", ""], rows)
        : h("p.muted", "no plan yet: import one below or run `weft plan \"goal\"`");
      // A refresh replaces the list only: what a person is typing in the import box stays.
      const existing = root.querySelector(".plans-list");
      if (existing && root.querySelector("#import-text")) {
        put(clear(existing), list);
        return;
      }
      const text = h("textarea#import-text", { rows: 10, spellcheck: "false", placeholder: 'goal = "…"\nrunner = "claude-code"\n\n[[tasks]]\ntitle = "…"\nprompt = "…"' });
      put(
        clear(root),
        h("h2", "Plans of this workspace"),
        h("div.plans-list", list),
        h("h3", "Import a workflow file"),
        text,
        h(
          "div.actions",
          h("button.primary#import-plan", {
            on: {
              click: async () => {
                try {
                  const made = await api("POST", "/api/plans", { workflow: text.value });
                  Weft.toast("ok", "plan imported", made && made.warnings && made.warnings.length ? made.warnings.join("\n") : null);
                  text.value = "";
                  await app.refreshPlans();
                  const id = made && (made.id || (made.plan && made.plan.id));
                  if (id) app.loadPlan(id);
                } catch (err) {
                  Weft.showError(err, "import");
                }
              },
            },
          }, "Import and make current")
        )
      );
    },

    async approvals(app, root) {
      const asks = await api("GET", "/api/approvals");
      app.setApprovals(asks);
      const now = Date.now();
      // A re-render (another question arrived) keeps the scopes a person was editing.
      const typed = new Map(Array.from(root.querySelectorAll(".ask"), (el) => [el.dataset.ask, el.querySelector("input.scope").value]));
      put(clear(root), h("h2", "Approvals"));
      if (!asks.length) return put(root, h("p.muted", "nothing is waiting for you"));
      for (const ask of asks) {
        const scope = h("input.scope", { value: typed.get(String(ask.id)) || widerScope(ask.scope), "aria-label": "wider scope" });
        const answer = async (allow, withScope) => {
          try {
            if (allow) await api("POST", `/api/approvals/${ask.id}/allow`, withScope ? { scope: scope.value } : {});
            else await api("POST", `/api/approvals/${ask.id}/deny`, {});
            Weft.toast("ok", `approval ${ask.id} ${allow ? "allowed" : "denied"}`);
          } catch (err) {
            Weft.showError(err, `approval ${ask.id}`);
          }
          app.refreshApprovals();
        };
        put(root, 
          h(
            "div.ask",
            { dataset: { ask: String(ask.id) } },
            h("div.ask-subject", ask.subject),
            h(
              "div.ask-meta",
              h("span", "scope ", h("code", ask.scope)),
              h("span", "from " + (ask.asker || "?") + (ask.plan_id ? " · plan " + ask.plan_id.slice(0, 8) : "")),
              h("span", "waiting " + Weft.fmt.age(now - ask.created_at)),
              ask.expires_at ? h("span.warn", "denied by itself in " + Weft.fmt.age(ask.expires_at - now)) : null
            ),
            h(
              "div.actions",
              h("button.primary.allow", { on: { click: () => answer(true, false) } }, "Allow"),
              h("button.allow-wider", { on: { click: () => answer(true, true) } }, "Allow scope"),
              scope,
              h("button.danger.deny", { on: { click: () => answer(false) } }, "Deny")
            )
          )
        );
      }
    },

    async handoff(app, root) {
      put(clear(root), h("h2", "Handoff"));
      let review;
      try {
        review = await api("GET", "/api/handoff/review");
      } catch (err) {
        put(root, h("p.muted", err.message), err.hint ? h("p.hint", "hint: " + err.hint) : null, cleanupButton());
        return;
      }
      const files = splitDiff(review.text || review.diff || "");
      put(root, 
        h("p", "run ", h("code", review.run), " · integration branch ", h("code", review.integration_branch), ` · ${files.length} file${files.length === 1 ? "" : "s"} changed`),
        review.empty ? h("p.muted", "the run changed nothing: there is nothing to merge") : null,
        h(
          "div.actions",
          h("button.primary#handoff-merge", { on: { click: () => step("merge") } }, "Merge…"),
          h("button.danger#handoff-discard", { on: { click: () => step("discard") } }, "Discard…"),
          cleanupButton()
        ),
        h("ul.filelist", files.map((f) => h("li", h("a", { href: "#file-" + encodeURIComponent(f.path), on: { click: (e) => (e.preventDefault(), document.getElementById("file-" + encodeURIComponent(f.path)).scrollIntoView()) } }, f.path), " ", h("span.muted", `+${f.added} −${f.removed}`))))
      );
      for (const f of files) {
        const el = Weft.renderPatch(f, () => {});
        el.id = "file-" + encodeURIComponent(f.path);
        el.open = files.length <= 20;
        put(root, el);
      }
      async function step(what) {
        const text =
          what === "merge"
            ? `Merge ${review.integration_branch} into your branch? weft checks the branch first and stops if it moved.`
            : `Discard run ${review.run}? Its tip is kept under refs/weft/discarded/${review.run}.`;
        if (!(await Weft.confirm(what === "merge" ? "Merge the run" : "Discard the run", text, what === "merge" ? "Merge" : "Discard", what !== "merge"))) return;
        try {
          await api("POST", "/api/handoff/" + what, { confirm: true });
          Weft.toast("ok", what === "merge" ? "merged" : "discarded");
        } catch (err) {
          Weft.showError(err, "handoff " + what);
        }
        app.show("handoff");
        app.refreshSoon(0);
      }
      function cleanupButton() {
        return h("button#handoff-cleanup", {
          on: {
            click: async () => {
              try {
                await api("POST", "/api/handoff/cleanup", {});
                Weft.toast("ok", "cleaned up");
              } catch (err) {
                Weft.showError(err, "cleanup");
              }
            },
          },
        }, "Clean up");
      }
    },

    async runners(app, root) {
      const runners = await api("GET", "/api/runners");
      put(clear(root), 
        h("h2", "Runners"),
        table(
          ["runner", "origin", "available", "program", "version", "plans", "why not"],
          runners.map((r) =>
            h(
              "tr",
              h("td", h("code", r.name)),
              h("td", r.origin || ""),
              h("td", h("span.pill." + (r.available ? "s-completed" : "s-failed"), r.available ? "yes" : "no")),
              h("td", h("code", r.program || "")),
              h("td", r.version || ""),
              h("td", r.can_plan ? "yes" : ""),
              h("td.reason", r.reason || "")
            )
          )
        )
      );
    },

    async settings(app, root) {
      const settings = await api("GET", "/api/settings");
      put(clear(root), 
        h("h2", "Settings"),
        h("p.muted", "Resolved like the CLI: -c, the environment, weft.toml, ~/.config/weft/config.toml, the defaults."),
        table(
          ["key", "value", "from"],
          Object.entries(settings).map(([key, s]) =>
            h("tr", h("td", h("code", key)), h("td", h("code", s && typeof s === "object" ? String(s.value) : String(s))), h("td", s && typeof s === "object" ? s.from || s.source || "" : ""))
          )
        )
      );
    },
  };

  // The next wider scope a person may grant: a path's parent folder, a command's program.
  function widerScope(scope) {
    const path = /^path:(.*?)\/?\*?$/.exec(scope);
    if (path) {
      const parent = path[1].replace(/\/[^/]*$/, "");
      return "path:" + (parent || "") + "/*";
    }
    const cmd = /^command:(\S+)\s+\S/.exec(scope);
    if (cmd) return "command:" + cmd[1];
    return scope;
  }
  Weft.widerScope = widerScope;

  // `git diff` text -> [{path, patch, added, removed}].
  function splitDiff(text) {
    const files = [];
    let cur = null;
    for (const line of text.split("\n")) {
      const m = /^diff --git a\/(.*) b\/(.*)$/.exec(line);
      if (m) {
        cur = { path: m[2], lines: [], added: 0, removed: 0 };
        files.push(cur);
      } else if (cur) {
        if (line.startsWith("+") && !line.startsWith("+++")) cur.added++;
        if (line.startsWith("-") && !line.startsWith("---")) cur.removed++;
      }
      if (cur) cur.lines.push(line);
    }
    return files.map((f) => ({ path: f.path, patch: f.lines.join("\n"), added: f.added, removed: f.removed }));
  }
  Weft.splitDiff = splitDiff;
})();
