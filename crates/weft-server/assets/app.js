// weft dashboard: the app. It keeps no plan state of its own beyond the last document the
// server returned: every event from `/api/events` that touches what is on screen schedules
// a re-read of that route (debounced, so a burst of events costs one read), exactly like
// a second terminal running `weft status`.
//
// Marker for the browser test and benchmark: once the graph of a plan is drawn,
// `document.body.dataset.graphDrawn` holds `performance.now()` at that moment and
// `window.weftMetrics` the figures (`load_to_render_ms`, `layout_ms`, `tasks`).
"use strict";

(function () {
  const { h, api, clear, put, $ } = Weft;

  // Every event kind of schemas/events.schema.json. EventSource delivers a named event only
  // to a listener of that name, so each one is listened for.
  const KINDS = [
    "approval_answered", "approval_asked", "approval_settled", "attempt_failed_to_start", "attempt_finished",
    "attempt_interrupted", "attempt_started", "budget_reached", "control_handled", "control_requested", "current_plan_set",
    "dependencies_set", "handoff_discarded", "handoff_merged", "landing_finished", "landing_started",
    "manual_steps_ticked", "notice", "plan_created", "plan_deleted", "plan_planned", "plan_revised",
    "plan_status_changed", "planner_logged", "run_continued", "run_ended", "run_halted", "run_isolated",
    "run_started", "spend_updated", "task_added", "task_cancelled", "task_edited", "task_finished", "task_held",
    "task_marked_complete", "task_marked_not_done", "task_moved", "task_rearmed", "task_released",
    "task_removed", "task_repair_requested", "task_retried", "task_skipped", "task_started", "tasks_blocked",
    "tasks_released", "tasks_requeued", "unrecognized", "waiting_for_person", "message",
  ];
  const STATUSES = ["pending", "held", "in_progress", "completed", "failed", "blocked", "conflicted", "skipped", "cancelled", "interrupted"];

  class App {
    constructor() {
      this.planId = null;
      this.plan = null;
      this.selected = null;
      this.view = "graph";
      this.run = null;
      this.runStartedAt = null;
      this.runEndedAt = null;
      this.approvals = [];
      this.timers = {};
      this.openedAt = Date.now();
      this.graph = new Weft.Graph($("#graph"), (id) => this.select(id));
      this.panel = new Weft.Panel($("#panel"), this);
      this.wire();
    }

    wire() {
      for (const tab of document.querySelectorAll("#tabs .tab")) tab.addEventListener("click", () => this.show(tab.dataset.view));
      $("#plan-select").addEventListener("change", (e) => this.loadPlan(e.target.value));
      $("#run-start").addEventListener("click", () => this.startRun());
      $("#run-stop").addEventListener("click", () => this.stopRun());
      $("#zoom-in").addEventListener("click", () => this.graph.zoom(1.25));
      $("#zoom-out").addEventListener("click", () => this.graph.zoom(0.8));
      $("#zoom-fit").addEventListener("click", () => this.graph.zoom(0));
      $("#add-task").addEventListener("click", () => this.addTask());
      $("#graph-filter").addEventListener("input", (e) => this.graph.filter(e.target.value));
      document.addEventListener("keydown", (e) => {
        if (e.key === "Escape" && $("#modal").classList.contains("hidden")) this.select(null);
      });
      setInterval(() => this.renderProgress(), 1000);
      put($("#legend"), ...STATUSES.map((s) => h("span.legend-item", h("span.swatch.s-" + s), Weft.fmt.status(s))));
      Weft.loggedOut = () => this.loggedOut();
    }

    async start() {
      // The plan list and the current plan in parallel: the graph waits for one read only.
      await Promise.all([this.refreshPlans(), this.refreshPlan(), this.refreshApprovals()]);
      await this.refreshRun();
      this.connect();
    }

    loggedOut() {
      if (this.loggedOutShown) return;
      this.loggedOutShown = true;
      Weft.toast("error", "not logged in", "open the URL `weft serve` printed (it carries a one-time code)");
    }

    // ---- data -------------------------------------------------------------------------

    async refreshPlans() {
      try {
        this.plans = await api("GET", "/api/plans");
      } catch (err) {
        return Weft.showError(err, "plans");
      }
      const current = this.plans.find((p) => p.current);
      if (!this.planId || !this.plans.some((p) => p.id === this.planId)) this.planId = current ? current.id : this.plans.length ? this.plans[0].id : null;
      const select = clear($("#plan-select"));
      for (const p of this.plans) put(select, h("option", { value: p.id }, `${p.short_id} — ${p.goal}`));
      if (this.planId) select.value = this.planId;
      if (this.view === "plans") this.show("plans");
    }

    async refreshPlan() {
      const started = performance.now();
      let doc;
      try {
        doc = await api("GET", `/api/plans/${encodeURIComponent(this.planId || "current")}`);
      } catch (err) {
        if (err.status === 404 && (!this.plans || !this.plans.length)) {
          this.plan = null;
          put(clear($("#graph")), h("div.empty", h("h2", "No plan yet"), h("p", "Import a workflow file in Plans, or run `weft plan \"goal\"` in a terminal.")));
          return;
        }
        return Weft.showError(err, "plan");
      }
      const fetched = performance.now();
      this.plan = doc.plan;
      this.spend = doc.spend || null;
      if (!this.planId) this.planId = doc.plan.id;
      if ($("#plan-select").value !== this.planId) $("#plan-select").value = this.planId;
      this.orders = new Map(this.plan.tasks.map((t) => [t.id, t.order]));
      $("#plan-goal").textContent = this.plan.goal;
      $("#plan-goal").title = this.plan.id;
      this.graph.render(this.plan.tasks, this.plan.runner);
      if (!document.body.dataset.graphDrawn) {
        // The first drawing of a plan: what the browser benchmark reads.
        const drawn = performance.now();
        document.body.dataset.graphDrawn = String(drawn);
        window.weftMetrics = { load_to_render_ms: drawn, fetch_ms: fetched - started, layout_ms: this.graph.drawMs, tasks: this.plan.tasks.length };
      }
      if (this.selected) {
        const t = this.plan.tasks.find((x) => x.id === this.selected);
        if (t) this.panel.open(t);
        else this.select(null);
      }
      this.renderProgress();
    }

    async refreshRun() {
      try {
        this.run = await api("GET", "/api/runs/current" + (this.planId ? "?plan=" + encodeURIComponent(this.planId) : ""));
      } catch (err) {
        this.run = null;
      }
      this.renderRun();
    }

    async refreshApprovals() {
      if (this.view === "approvals") return this.show("approvals");
      try {
        this.setApprovals(await api("GET", "/api/approvals"));
      } catch (err) {
        /* shown when the view is opened */
      }
    }

    setApprovals(asks) {
      const before = new Set(this.approvals.map((a) => a.id));
      this.approvals = asks || [];
      const badge = $("#approvals-count");
      badge.textContent = String(this.approvals.length);
      badge.classList.toggle("hidden", !this.approvals.length);
      document.title = (this.approvals.length ? `(${this.approvals.length}) ` : "") + "weft";
      const fresh = this.approvals.filter((a) => !before.has(a.id));
      if (fresh.length && this.view !== "approvals") {
        const t = Weft.toast("wait", `${fresh.length === 1 ? "A question waits" : fresh.length + " questions wait"} for you`, fresh[0].subject);
        t.addEventListener("click", () => this.show("approvals"));
      }
    }

    refreshSoon(ms, what) {
      const key = what || "plan";
      clearTimeout(this.timers[key]);
      this.timers[key] = setTimeout(() => {
        if (key === "plan") this.refreshPlan();
        else if (key === "run") this.refreshRun();
        else if (key === "plans") this.refreshPlans();
        else if (key === "approvals") this.refreshApprovals();
        else if (key === "view") this.show(this.view);
      }, ms === undefined ? 120 : ms);
    }

    orderOf(id) {
      return (this.orders && this.orders.get(id)) || id;
    }

    // ---- live events ------------------------------------------------------------------

    connect() {
      const url = "/api/events" + (this.lastSeq ? "?after=" + this.lastSeq : "");
      const source = new EventSource(url, { withCredentials: true });
      this.source = source;
      const onEvent = (msg) => {
        let ev;
        try {
          ev = JSON.parse(msg.data);
        } catch (err) {
          return;
        }
        if (typeof ev.seq === "number") this.lastSeq = Math.max(this.lastSeq || 0, ev.seq);
        this.onEvent(ev);
      };
      for (const kind of KINDS) source.addEventListener(kind, onEvent);
      source.onopen = () => $("#conn-state").classList.add("live");
      source.onerror = () => $("#conn-state").classList.remove("live");
    }

    onEvent(ev) {
      const kind = ev.event && ev.event.kind;
      const live = ev.at >= this.openedAt - 3000;
      const mine = !ev.plan || ev.plan === this.planId;
      if (kind === "run_started" && mine) {
        this.runStartedAt = ev.at;
        this.runEndedAt = null;
      }
      if (kind === "run_continued" && mine && !this.runStartedAt) this.runStartedAt = ev.at;
      if (kind === "run_ended" && mine) {
        this.runEndedAt = ev.at;
        this.runTotals = ev.event.totals;
      }
      if (!live) return;
      if (/^plan_(created|deleted|planned|revised|status_changed)$|^current_plan_set$/.test(kind)) this.refreshSoon(150, "plans");
      if (/^approval_|^waiting_for_person$/.test(kind)) this.refreshSoon(100, "approvals");
      if (/^run_|^plan_status_changed$/.test(kind)) this.refreshSoon(100, "run");
      if (/^handoff_/.test(kind) && this.view === "handoff") this.refreshSoon(150, "view");
      if (mine && kind !== "planner_logged") this.refreshSoon(kind === "task_started" || kind === "task_finished" ? 60 : 150, "plan");
      if (!mine) return;
      if (kind === "task_finished" && ev.event.status === "failed") {
        const id = ev.task;
        const t = Weft.toast("error", `#${ev.event.order} ${ev.event.title} failed`, ev.event.reason, "open the task to see its verdict and output");
        t.addEventListener("click", () => this.select(id));
      } else if (kind === "task_finished" && ev.event.status === "conflicted") {
        Weft.toast("error", `#${ev.event.order} ${ev.event.title} conflicted`, ev.event.reason, "`Repair` gives it one repair attempt");
      } else if (kind === "waiting_for_person") {
        Weft.toast("wait", "weft waits for you", ev.event.reason || ev.event.message || kind.replace(/_/g, " "));
      } else if (kind === "run_ended") {
        const s = ev.event.status;
        Weft.toast(s === "completed" ? "ok" : "error", `run ${ev.run || ""} ${s}`, s === "completed" ? "review it in Handoff" : null);
      } else if (kind === "budget_reached") {
        Weft.toast("error", "budget reached: no new task starts", `spent ${ev.event.spent} (${ev.event.limit})`, "raise budget_usd / budget_tokens and start the run again to continue");
      } else if (kind === "notice" && ev.event.message) {
        Weft.toast("info", ev.event.message);
      }
    }

    // ---- header -----------------------------------------------------------------------

    renderRun() {
      const running = !!(this.run && this.run.running);
      const engine = this.run && this.run.engine;
      const state = $("#run-state");
      state.textContent = running ? "running" + (engine && engine.surface === "cli" ? " (weft run, pid " + engine.pid + ")" : "") : this.plan ? Weft.fmt.status(this.plan.status) : "idle";
      state.className = "pill s-" + (running ? "in_progress" : this.plan ? this.plan.status : "pending");
      $("#run-start").disabled = running || !this.planId;
      $("#run-stop").disabled = !running;
    }

    renderProgress() {
      if (!this.plan) return;
      const counts = {};
      let input = 0;
      let output = 0;
      let cost = 0;
      for (const t of this.plan.tasks) {
        counts[t.status] = (counts[t.status] || 0) + 1;
        input += t.input_tokens || 0;
        output += t.output_tokens || 0;
        cost += t.cost_usd || 0;
      }
      const total = this.plan.tasks.length;
      const done = (counts.completed || 0) + (counts.skipped || 0);
      const parts = [`${done}/${total} done`];
      for (const s of ["in_progress", "failed", "blocked", "conflicted", "pending"]) if (counts[s]) parts.push(`${counts[s]} ${Weft.fmt.status(s)}`);
      $("#progress-counts").textContent = parts.join(" · ");
      $("#progress-bar").style.width = total ? (100 * done) / total + "%" : "0";
      const running = this.run && this.run.running;
      if (this.runStartedAt) {
        const end = running || !this.runEndedAt ? Date.now() : this.runEndedAt;
        $("#progress-elapsed").textContent = "elapsed " + Weft.fmt.age(end - this.runStartedAt);
      }
      // Spend against the plan's budget; a model without a price is "cost unknown", never $0.
      const spend = this.spend;
      let money = Weft.fmt.cost(cost);
      if (spend && spend.cost_usd === null && (spend.input_tokens || spend.output_tokens)) money = `≥ ${Weft.fmt.cost(spend.cost_usd_known)} (a price is unknown)`;
      if (spend && spend.budget_usd !== null && spend.budget_usd !== undefined) money += ` of ${Weft.fmt.cost(spend.budget_usd)}`;
      let tokens = `tokens ${Weft.fmt.tokens(input)} in / ${Weft.fmt.tokens(output)} out`;
      if (spend && spend.budget_tokens !== null && spend.budget_tokens !== undefined) tokens += ` (budget ${Weft.fmt.tokens(spend.budget_tokens)})`;
      const usage = $("#progress-usage");
      usage.textContent = `${tokens} · ${money}` + (spend && spend.reached ? ` · budget reached (${spend.reached}): no new task starts` : "");
      usage.classList.toggle("over-budget", !!(spend && spend.reached));
      this.renderRun();
    }

    // ---- actions ----------------------------------------------------------------------

    select(id) {
      this.selected = id;
      this.graph.highlight(id);
      if (!id || !this.plan) return this.panel.close();
      const t = this.plan.tasks.find((x) => x.id === id);
      if (!t) return;
      const opening = this.panel.root.classList.contains("hidden");
      this.panel.open(t);
      // Opening the panel narrows the graph: keep the selected task in sight.
      if (opening) this.graph.reveal(id);
    }

    async loadPlan(id) {
      try {
        await api("POST", `/api/plans/${encodeURIComponent(id)}/load`, {});
      } catch (err) {
        return Weft.showError(err, "load plan");
      }
      this.planId = id;
      this.select(null);
      this.show("graph");
      await this.refreshPlans();
      await Promise.all([this.refreshPlan(), this.refreshRun()]);
    }

    async deletePlan(p) {
      if (!(await Weft.confirm(`Delete plan ${p.short_id}?`, `"${p.goal}" and its ${p.task_count} tasks are deleted from the store.`, "Delete", true))) return;
      try {
        await api("DELETE", `/api/plans/${encodeURIComponent(p.id)}`);
      } catch (err) {
        return Weft.showError(err, "delete plan");
      }
      if (p.id === this.planId) this.planId = null;
      await this.refreshPlans();
      this.refreshPlan();
    }

    async startRun() {
      const body = { plan: this.planId, parallel: Number($("#run-parallel").value) || undefined, halt_on_failure: $("#run-halt").checked };
      try {
        await api("POST", "/api/runs", body);
        this.runStartedAt = Date.now();
        this.runEndedAt = null;
        Weft.toast("ok", "run started");
      } catch (err) {
        Weft.showError(err, "start run");
      }
      this.refreshSoon(100, "run");
    }

    async stopRun() {
      if (!(await Weft.confirm("Stop the run?", "Running tasks are stopped and marked interrupted; `Start run` continues later.", "Stop", true))) return;
      try {
        await api("POST", "/api/runs/stop", { plan: this.planId });
        Weft.toast("ok", "stop requested");
      } catch (err) {
        Weft.showError(err, "stop run");
      }
      this.refreshSoon(300, "run");
    }

    async addTask() {
      if (!this.planId) return;
      const title = window.prompt("Title of the new task?");
      if (!title) return;
      const prompt = window.prompt("Its prompt?") || "";
      try {
        await api("POST", `/api/plans/${encodeURIComponent(this.planId)}/tasks`, { title, prompt });
        this.refreshSoon(0);
      } catch (err) {
        Weft.showError(err, "add task");
      }
    }

    async show(view) {
      this.view = view;
      for (const tab of document.querySelectorAll("#tabs .tab")) tab.classList.toggle("active", tab.dataset.view === view);
      for (const sec of document.querySelectorAll("main .view")) sec.classList.toggle("active", sec.id === "view-" + view);
      if (view === "graph") return;
      const root = $("#view-" + view);
      try {
        await Weft.views[view](this, root);
      } catch (err) {
        put(clear(root), h("p.error", err.message), err.hint ? h("p.hint", "hint: " + err.hint) : null);
      }
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    Weft.app = new App();
    Weft.app.start();
  });
})();
