// weft dashboard: the task panel (fields, controls, verdict, output, transcript, diff and
// review comments, attempts).
//
// Output is read by byte offset from the task's log route and appended as text nodes; the
// panel keeps at most OUTPUT_KEEP characters in the page (older text is dropped from the
// top and the panel says so), so a chatty agent never grows the page without bound.
"use strict";

(function () {
  const { h, api, clear, put } = Weft;
  const OUTPUT_KEEP = 1 << 20;
  const OUTPUT_CHUNK = 256 * 1024;
  const POLL_MS = 600;

  // What a person may do with a task in each state (the server refuses anything else with
  // the CLI's message, shown as an error).
  const CONTROLS = {
    pending: ["hold", "skip", "force-start"],
    held: ["release", "skip"],
    approved: ["hold", "skip", "force-start"],
    in_progress: ["cancel"],
    completed: ["uncomplete", "retry"],
    failed: ["retry", "skip", "complete"],
    blocked: ["skip", "complete"],
    skipped: ["retry"],
    cancelled: ["retry", "skip"],
    conflicted: ["repair", "retry", "skip"],
    interrupted: ["retry", "skip", "cancel"],
  };
  const LABELS = {
    hold: "Hold", release: "Release", skip: "Skip", "force-start": "Force start", cancel: "Cancel",
    uncomplete: "Uncomplete", retry: "Retry", complete: "Mark complete", repair: "Repair",
  };
  // The fields of `weft task edit`, by kind: [key, label, input, list?].
  const COMMON_HEAD = [["title", "Title", "input"], ["description", "Description", "textarea"]];
  const COMMON_TAIL = [["checks", "Checks (one command a line)", "textarea", true], ["deps", "Depends on (order numbers)", "input"]];
  const FIELDS = {
    ai: [...COMMON_HEAD, ["prompt", "Prompt", "textarea"], ["runner", "Runner", "input"], ["model", "Model", "input"], ["effort", "Effort", "input"], ["mode", "Mode", "input"], ...COMMON_TAIL],
    ops: [...COMMON_HEAD, ["command", "Command", "textarea"], ...COMMON_TAIL],
    manual: [...COMMON_HEAD, ["steps", "Steps (one a line)", "textarea", true], ["deps", "Depends on (order numbers)", "input"]],
  };
  const fieldsOf = (kind) => FIELDS[kind] || FIELDS.ai;

  function attemptClass(status) {
    return { running: "in_progress", passed: "completed", failed: "failed", interrupted: "interrupted", cancelled: "cancelled" }[status] || "pending";
  }
  function stateOf(t) {
    return t.hold && t.status === "pending" ? "held" : t.status;
  }
  // A task's fields are edited in place until it first runs; afterwards a change re-arms it.
  function editable(t) {
    return (t.status === "pending" || t.status === "approved") && !t.attempts;
  }

  class Panel {
    constructor(root, app) {
      this.root = root;
      this.app = app;
      this.task = null;
      this.poll = null;
      this.comments = [];
    }

    taskPath(suffix) {
      return `/api/plans/${encodeURIComponent(this.app.planId)}/tasks/${this.task.order}${suffix || ""}`;
    }

    open(task) {
      const same = this.task && this.task.id === task.id;
      this.task = task;
      this.root.classList.remove("hidden");
      if (!same) {
        this.comments = [];
        this.attempt = null;
        this.attemptList = [];
        this.build();
      } else this.update(task);
    }

    close() {
      this.stopOutput();
      this.task = null;
      this.root.classList.add("hidden");
      clear(this.root);
    }

    build() {
      const t = this.task;
      this.stopOutput();
      clear(this.root);
      this.els = {
        head: h("div.panel-head"),
        controls: h("div.controls"),
        fields: h("form.fields", { on: { submit: (e) => (e.preventDefault(), this.save()) } }),
        verdict: h("div.verdict"),
        attempts: h("div.attempts"),
        output: h("pre.output", { tabindex: "0" }),
        outputNote: h("div.note"),
        follow: h("input#follow-output", { type: "checkbox", checked: true }),
        transcript: h("div.transcript"),
        diff: h("div.diff"),
      };
      const e = this.els;
      e.output.addEventListener("scroll", () => {
        const atEnd = e.output.scrollTop + e.output.clientHeight >= e.output.scrollHeight - 4;
        if (!atEnd && e.follow.checked && !this.autoScrolling) e.follow.checked = false;
      });
      e.follow.addEventListener("change", () => e.follow.checked && this.scrollOutput());
      const section = (title, ...body) => h("section.psec", h("h3", title), ...body);
      // Fields first while they are the point (the task has not run); else the evidence.
      e.fieldsBox = h("details.psec.fields-box", { open: editable(t) }, h("summary", h("h3", "Fields")), e.fields);
      Weft.append(this.root, [
        e.head,
        e.controls,
        editable(t) ? e.fieldsBox : null,
        section("Verdict", e.verdict),
        section("Attempts", e.attempts),
        section("Output", h("label.follow", e.follow, " follow"), e.outputNote, e.output),
        section("Final answer", e.transcript),
        section("Diff and review", e.diff),
        editable(t) ? null : e.fieldsBox,
      ]);
      this.renderHead();
      this.renderControls();
      this.renderVerdict();
      this.renderAttempts();
      this.loadAttempts();
      this.loadFields();
      this.startOutput();
      this.loadTranscript();
      this.loadDiff();
    }

    // The plan changed: repaint what depends on the task's state, keep what a person types.
    update(task) {
      const before = this.task;
      this.task = task;
      this.renderHead();
      this.renderControls();
      this.renderVerdict();
      this.renderAttempts();
      if (editable(before) !== editable(task) || before.title !== task.title || before.attempts !== task.attempts || before.status !== task.status) {
        if (!this.dirty) this.loadFields();
      }
      if (before.attempts !== task.attempts || (before.status !== task.status && task.status === "in_progress")) {
        this.attempt = null;
        this.startOutput();
      } else if (!this.poll && task.status === "in_progress") this.startOutput(true);
      if (before.status !== task.status || before.attempts !== task.attempts) this.loadAttempts();
      if (before.status !== task.status && task.status !== "in_progress") {
        this.loadTranscript();
        this.loadDiff();
      }
    }

    renderHead() {
      const t = this.task;
      const s = stateOf(t);
      put(clear(this.els.head), 
        h("span.order", "#" + t.order),
        h("h2.ptitle", t.title),
        h("span.pill.s-" + s, Weft.fmt.status(s)),
        h("button.close", { "aria-label": "close the task panel", on: { click: () => this.app.select(null) } }, "×"),
        h("div.pid", t.id + " · " + t.kind + (t.runner ? " · " + t.runner : "") + (t.model ? " · " + t.model : ""))
      );
    }

    renderControls() {
      const t = this.task;
      const buttons = (CONTROLS[stateOf(t)] || []).map((action) =>
        h("button.ctl", { dataset: { action }, on: { click: () => this.control(action) } }, LABELS[action])
      );
      if (t.kind === "manual") buttons.push(h("button.ctl", { on: { click: () => this.manual() } }, "Tick steps…"));
      buttons.push(h("button.ctl.danger", { dataset: { action: "remove" }, on: { click: () => this.remove() } }, "Remove"));
      put(clear(this.els.controls), ...buttons);
    }

    async control(action) {
      try {
        const answer = await api("POST", this.taskPath("/" + action), {});
        const report = answer && Array.isArray(answer.report) ? answer.report.join("\n") : null;
        Weft.toast("ok", `#${this.task.order}: ${LABELS[action] || action} done`, report);
        this.app.refreshSoon(0);
      } catch (err) {
        Weft.showError(err, `${LABELS[action] || action} #${this.task.order}`);
      }
    }

    async manual() {
      const steps = window.prompt("Tick which steps (numbers, comma separated)?", "");
      if (!steps) return;
      const done = steps.split(/[ ,]+/).filter(Boolean).map(Number);
      try {
        await api("POST", this.taskPath("/manual"), { done });
        this.app.refreshSoon(0);
      } catch (err) {
        Weft.showError(err, "manual steps");
      }
    }

    async remove() {
      const t = this.task;
      if (!(await Weft.confirm(`Remove task #${t.order}?`, `"${t.title}" is removed from the plan; tasks that depended on it are detached.`, "Remove", true))) return;
      try {
        await api("DELETE", this.taskPath());
        this.app.select(null);
        this.app.refreshSoon(0);
      } catch (err) {
        Weft.showError(err, `remove #${t.order}`);
      }
    }

    renderVerdict() {
      const v = this.task.verdict;
      const box = clear(this.els.verdict);
      if (!v) return put(box, h("p.muted", "no verdict yet"));
      put(box, h("p.reason.o-" + v.outcome, v.reason));
      const list = h("ul.checks");
      for (const c of v.checks || []) {
        const mark = c.skipped ? "–" : c.passed ? "✔" : "✘";
        put(list, h("li." + (c.skipped ? "skipped" : c.passed ? "pass" : "fail"), h("span.mark", mark), h("code", c.name), " ", h("span.detail", c.detail || "")));
      }
      put(box, list);
      const t = this.task;
      if (t.input_tokens || t.output_tokens || t.cost_usd) {
        const cost = t.cost_unknown ? "cost unknown (a model without a price)" : Weft.fmt.cost(t.cost_usd);
        put(box, h("p.muted", `tokens ${Weft.fmt.tokens(t.input_tokens)} in, ${Weft.fmt.tokens(t.output_tokens)} out · ${cost}`));
      }
      if (t.landing) put(box, h("p.muted", "landing: " + t.landing.status + (t.landing.merge ? " " + t.landing.merge.slice(0, 12) : "")));
      // The task's own limits (unset: the settings apply), its spend against its budget, and an idle attempt.
      const l = t.limits || {};
      const limits = [["timeout", l.timeout], ["idle_timeout", l.idle_timeout], ["budget_usd", l.budget_usd != null ? Weft.fmt.cost(l.budget_usd) : null], ["budget_tokens", l.budget_tokens]]
        .filter(([, v]) => v != null).map(([k, v]) => `${k} ${v}`);
      if (limits.length) put(box, h("p.muted", "limits: " + limits.join(" · ")));
      if (t.budget) put(box, h("p.muted", "task budget: spent " + t.budget.text + (t.budget.exceeded ? " (over its " + t.budget.exceeded + ")" : "")));
      if (t.idle_secs != null) put(box, h("p.muted", `idle for ${Math.floor(t.idle_secs / 60)}m ${t.idle_secs % 60}s`));
    }

    renderAttempts() {
      const t = this.task;
      const box = clear(this.els.attempts);
      if (!t.attempts) return put(box, h("p.muted", "not run yet"));
      const known = new Map((this.attemptList || []).map((a) => [a.number, a]));
      const rows = [];
      for (let k = 1; k <= t.attempts; k++) {
        const a = known.get(k);
        const current = (this.attempt || t.attempts) === k;
        const took = a && a.ended_at ? Weft.fmt.age(a.ended_at - a.started_at) : a ? "running" : "";
        rows.push(
          h(
            "tr.attempt" + (current ? ".current" : ""),
            { dataset: { number: String(k) }, on: { click: () => ((this.attempt = k), this.renderAttempts(), this.startOutput()) } },
            h("td", "#" + k),
            h("td", a ? h("span.pill.s-" + attemptClass(a.status), a.status) : ""),
            h("td", a ? a.runner : ""),
            h("td", a ? Weft.fmt.time(a.started_at) : ""),
            h("td", took),
            h("td", a && a.exit_code !== null && a.exit_code !== undefined ? "exit " + a.exit_code : a && a.signal ? "signal " + a.signal : ""),
            h("td", a && (a.input_tokens || a.output_tokens) ? Weft.fmt.tokens((a.input_tokens || 0) + (a.output_tokens || 0)) + " tok" : "")
          )
        );
      }
      put(box, h("table.grid.attempt-list", h("tbody", rows)), h("p.muted", "click an attempt to read its output"));
    }

    async loadAttempts() {
      const t = this.task;
      if (!t.attempts) return;
      try {
        const list = await api("GET", this.taskPath("/attempts"));
        if (this.task && this.task.id === t.id) {
          this.attemptList = Array.isArray(list) ? list : [];
          this.renderAttempts();
        }
      } catch (err) {
        /* the count from the plan is shown */
      }
    }

    async loadFields() {
      const t = this.task;
      const form = clear(this.els.fields);
      this.dirty = false;
      let stored;
      try {
        stored = await api("GET", this.taskPath());
      } catch (err) {
        put(form, h("p.error", err.message));
        return;
      }
      if (!this.task || this.task.id !== t.id) return;
      const canEdit = editable(this.task);
      const text = (v) => (v === null || v === undefined ? "" : String(v));
      const values = {};
      for (const [key, , , list] of fieldsOf(stored.kind)) {
        if (key === "deps") values.deps = (stored.dependencies || []).map((id) => this.app.orderOf(id)).join(",");
        else values[key] = list ? (stored[key] || []).join("\n") : text(stored[key]);
      }
      this.original = values;
      this.kind = stored.kind;
      for (const [key, label, kind] of fieldsOf(stored.kind)) {
        const input = h(kind === "textarea" ? "textarea" : "input", {
          name: key,
          rows: key === "prompt" || key === "command" ? 8 : 3,
          spellcheck: "false",
          on: { input: () => (this.dirty = true) },
        });
        input.value = values[key];
        put(form, h("label.field", h("span", label), input));
      }
      const note = canEdit
        ? "Edits are validated by the server exactly like `weft task edit`; an empty optional field is cleared."
        : "This task has run: saving re-arms it with the new fields (like `weft rearm`).";
      put(
        form,
        h("p.muted", note),
        h("div.actions", h("button.primary#save-task", { type: "submit" }, canEdit ? "Save" : "Re-arm with changes"), h("span.form-error"))
      );
    }

    changedFields() {
      const form = this.els.fields;
      const body = {};
      let deps = null;
      for (const [key, , , list] of fieldsOf(this.kind)) {
        const value = form.elements[key].value;
        if (value === this.original[key]) continue;
        if (list) body[key] = value.split("\n").map((s) => s.trim()).filter(Boolean);
        else if (key === "deps") deps = value.split(/[ ,]+/).filter(Boolean).map((s) => s.replace(/^#/, ""));
        else body[key] = value;
      }
      return { body, deps };
    }

    async save() {
      const t = this.task;
      const { body, deps } = this.changedFields();
      const errBox = this.els.fields.querySelector(".form-error");
      errBox.textContent = "";
      try {
        if (deps) await api("PUT", this.taskPath("/deps"), { deps });
        if (editable(t)) {
          if (Object.keys(body).length) await api("PATCH", this.taskPath(), body);
        } else {
          await api("POST", this.taskPath("/rearm"), body);
        }
        this.dirty = false;
        Weft.toast("ok", `#${t.order} saved`);
        this.app.refreshSoon(0);
        setTimeout(() => this.task && this.task.id === t.id && this.loadFields(), 250);
      } catch (err) {
        errBox.textContent = err.message + (err.hint ? " — hint: " + err.hint : "");
        Weft.showError(err, `edit #${t.order}`);
      }
    }

    // Output: history from offset 0, then follow while the attempt runs.
    startOutput(resume) {
      this.stopOutput();
      if (!resume) {
        this.offset = 0;
        this.kept = 0;
        clear(this.els.output);
        this.els.outputNote.textContent = "";
      }
      this.els.output.classList.add("empty");
      if (!this.task.attempts) {
        this.els.outputNote.textContent = "no output yet";
        return;
      }
      const token = (this.outputToken = {});
      const step = async () => {
        if (this.outputToken !== token || !this.task) return;
        let more = false;
        try {
          const q = `?offset=${this.offset}&max=${OUTPUT_CHUNK}` + (this.attempt ? `&attempt=${this.attempt}` : "");
          const { body, headers } = await api("GET", this.taskPath("/log") + q, undefined, { withHeaders: true });
          if (this.outputToken !== token) return;
          const next = Number(headers.get("X-Weft-Next-Offset"));
          const done = headers.get("X-Weft-Done") === "1";
          if (typeof body === "string" && body.length) this.appendOutput(body);
          more = Number.isFinite(next) && next > this.offset;
          if (Number.isFinite(next)) this.offset = next;
          if (done && !more) {
            if (!this.kept) this.els.outputNote.textContent = "the attempt printed nothing";
            return;
          }
        } catch (err) {
          if (err.status === 404) this.els.outputNote.textContent = err.message;
          else this.els.outputNote.textContent = "output unavailable: " + err.message;
          if (this.task.status !== "in_progress") return;
        }
        this.poll = setTimeout(step, more ? 0 : POLL_MS);
      };
      step();
    }

    stopOutput() {
      this.outputToken = null;
      clearTimeout(this.poll);
      this.poll = null;
    }

    appendOutput(text) {
      const pre = this.els.output;
      pre.classList.remove("empty");
      pre.appendChild(document.createTextNode(text));
      this.kept += text.length;
      while (this.kept > OUTPUT_KEEP && pre.firstChild && pre.childNodes.length > 1) {
        this.kept -= pre.firstChild.textContent.length;
        pre.removeChild(pre.firstChild);
        this.els.outputNote.textContent = "earlier output is trimmed here; `weft log " + this.task.order + "` has all of it";
      }
      if (this.els.follow.checked) this.scrollOutput();
    }

    scrollOutput() {
      const pre = this.els.output;
      this.autoScrolling = true;
      pre.scrollTop = pre.scrollHeight;
      requestAnimationFrame(() => (this.autoScrolling = false));
    }

    async loadTranscript() {
      const box = clear(this.els.transcript);
      if (!this.task.attempts) return put(box, h("p.muted", "not run yet"));
      try {
        const found = await api("GET", this.taskPath("/transcript"));
        clear(box);
        if (!found) return put(box, h("p.muted", "no transcript found for the latest attempt"));
        put(box, h("pre.answer", found.final_answer || "(no final answer)"), h("p.muted", (found.path || "") + (found.marker_found ? " · marker found" : "")));
      } catch (err) {
        put(clear(box), h("p.muted", err.message));
      }
    }

    async loadDiff() {
      const box = clear(this.els.diff);
      if (!this.task.attempts) return put(box, h("p.muted", "no diff before the task runs"));
      try {
        const diff = await api("GET", this.taskPath("/diff"));
        this.renderDiff(diff);
      } catch (err) {
        put(clear(box), h("p.muted", err.message));
      }
    }

    renderDiff(diff) {
      const box = clear(this.els.diff);
      const files = (diff && diff.files) || [];
      put(box, 
        h("p.muted", `attempt ${diff.attempt || ""} ${diff.landed ? "as landed" : "on its branch"}, against ${String(diff.base || "").slice(0, 12)} · ${files.length} file${files.length === 1 ? "" : "s"} · click a line, shift-click to extend, then comment`),
        diff.truncated ? h("p.warn", "the diff is cut short here; `git diff` shows all of it") : null
      );
      for (const f of files) put(box, Weft.renderPatch(f, (sel) => this.commentBox(sel)));
      this.reviewBar = h("div.review-bar");
      put(box, this.reviewBar);
      this.renderReviewBar();
    }

    commentBox(sel) {
      const old = this.els.diff.querySelector(".comment-box");
      if (old) old.remove();
      const text = h("textarea.comment-text", { rows: 3, placeholder: "what should change here?" });
      const label = sel.from === sel.to ? `line ${sel.from}` : `lines ${sel.from}–${sel.to}`;
      const box = h(
        "tr.comment-row",
        h(
          "td",
          { colspan: "3" },
          h(
            "div.comment-box",
            h("div.muted", sel.path + ", " + label),
            text,
            h(
              "div.actions",
              h("button", { on: { click: () => (sel.clear(), box.remove()) } }, "Cancel"),
              h(
                "button.primary.add-comment",
                {
                  on: {
                    click: () => {
                      const body = text.value.trim();
                      if (!body) return text.focus();
                      this.comments.push({ path: sel.path, line: sel.from, body: sel.from === sel.to ? body : `(lines ${sel.from}–${sel.to}) ${body}` });
                      sel.mark();
                      box.remove();
                      this.renderReviewBar();
                    },
                  },
                },
                "Add comment"
              )
            )
          )
        )
      );
      sel.row.after(box);
      text.focus();
    }

    renderReviewBar() {
      const bar = clear(this.reviewBar);
      if (!this.comments.length) return put(bar, h("span.muted", "no review comments yet"));
      const list = h("ol.comments");
      this.comments.forEach((c, i) =>
        put(list, h("li", h("code", `${c.path}:${c.line}`), " ", c.body, " ", h("button.link", { on: { click: () => (this.comments.splice(i, 1), this.renderReviewBar()) } }, "remove")))
      );
      put(bar, 
        list,
        h("button.primary#request-changes", { on: { click: () => this.review(true) } }, `Request changes (${this.comments.length})`),
        h("span.muted", " re-arms the task with these comments appended to its prompt as review notes")
      );
    }

    async review(requestChanges) {
      const t = this.task;
      try {
        await api("POST", this.taskPath("/review"), { comments: this.comments, request_changes: requestChanges });
        Weft.toast("ok", `#${t.order} re-armed with ${this.comments.length} review note${this.comments.length === 1 ? "" : "s"}`, "start the run to give it another attempt");
        this.comments = [];
        this.renderReviewBar();
        this.app.refreshSoon(0);
        setTimeout(() => this.task && this.task.id === t.id && this.loadFields(), 300);
      } catch (err) {
        Weft.showError(err, "review");
      }
    }
  }

  // One file of a diff as a table of lines; `onSelect` gets the selected new-file lines.
  Weft.renderPatch = function renderPatch(file, onSelect) {
    const table = h("table.patch");
    const body = h("tbody");
    put(table, body);
    let oldNo = 0;
    let newNo = 0;
    let anchor = null;
    const rows = [];
    const lines = String(file.patch || "").split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    for (const line of lines) {
      const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
      if (hunk) {
        oldNo = Number(hunk[1]);
        newNo = Number(hunk[2]);
        put(body, h("tr.hunk", h("td.ln"), h("td.ln"), h("td.code", line)));
        continue;
      }
      if (/^(diff --git|index |--- |\+\+\+ |new file|deleted file|similarity|rename |old mode|new mode)/.test(line) ) continue;
      const kind = line[0] === "+" ? "add" : line[0] === "-" ? "del" : line[0] === "\\" ? "meta" : "ctx";
      const o = kind === "add" || kind === "meta" ? "" : oldNo++;
      const n = kind === "del" || kind === "meta" ? "" : newNo++;
      const row = h("tr.line." + kind, { dataset: { line: String(n || o), path: file.path } }, h("td.ln", String(o)), h("td.ln", String(n)), h("td.code", line));
      rows.push(row);
      put(body, row);
    }
    body.addEventListener("click", (e) => {
      const row = e.target.closest("tr.line");
      if (!row) return;
      const i = rows.indexOf(row);
      if (!e.shiftKey || anchor === null) anchor = i;
      const a = Math.min(anchor, i);
      const b = Math.max(anchor, i);
      rows.forEach((r, k) => r.classList.toggle("sel", k >= a && k <= b));
      const from = Number(rows[a].dataset.line);
      const to = Number(rows[b].dataset.line);
      onSelect({
        path: file.path,
        from: Math.min(from, to),
        to: Math.max(from, to),
        row: rows[b],
        clear: () => rows.forEach((r) => r.classList.remove("sel")),
        mark: () => rows.forEach((r, k) => k >= a && k <= b && (r.classList.remove("sel"), r.classList.add("commented"))),
      });
    });
    const status = file.status ? " (" + file.status + ")" : "";
    return h("details.file", { open: true }, h("summary", h("code", file.path), status), table);
  };

  Weft.Panel = Panel;
})();
