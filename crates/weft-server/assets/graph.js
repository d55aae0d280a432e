// weft dashboard: the plan graph.
//
// Layout (Sugiyama-style, kept simple so 1,000 tasks lay out in a few milliseconds):
// 1. layering: a task's column is its dependency depth (longest path from a root). A
//    dependency always points at an earlier task, so one pass in plan order is enough.
// 2. ordering: within a column, tasks start in plan order, then four sweeps (left to right,
//    right to left, twice) sort each column by the barycentre (mean row) of its neighbours
//    in the columns already placed, which untangles most crossings.
// 3. placement: each task wants the mean y of its dependencies; rows keep a minimum gap, so
//    a column is never overlapped and chains stay on a line.
// Nodes are absolutely positioned HTML (the titles are DOM text, searchable and
// selectable); edges are one SVG underneath. A status change repaints only that node; a
// change of shape (tasks, dependencies, titles) lays the graph out again.
"use strict";

(function () {
  const { h } = Weft;
  const NODE_W = 232;
  const NODE_H = 58;
  const GAP_X = 72;
  const GAP_Y = 14;
  const PAD = 24;
  const SVG = "http://www.w3.org/2000/svg";

  function layout(tasks) {
    const byId = new Map();
    tasks.forEach((t, i) => byId.set(t.id, i));
    const n = tasks.length;
    const layer = new Array(n).fill(0);
    const parents = tasks.map((t) => (t.dependencies || []).map((d) => byId.get(d)).filter((j) => j !== undefined));
    const children = tasks.map(() => []);
    for (let i = 0; i < n; i++) {
      let depth = 0;
      for (const p of parents[i]) {
        children[p].push(i);
        // Robust against a dependency on a later task (never valid, but never a hang).
        if (p < i) depth = Math.max(depth, layer[p] + 1);
      }
      layer[i] = depth;
    }
    const columns = [];
    for (let i = 0; i < n; i++) (columns[layer[i]] = columns[layer[i]] || []).push(i);
    const pos = new Float64Array(n);
    columns.forEach((col) => col.forEach((v, k) => (pos[v] = k)));
    const sweep = (cols, neighbours) => {
      for (const col of cols) {
        const key = new Map();
        for (const v of col) {
          const ns = neighbours[v];
          if (ns.length) {
            let sum = 0;
            for (const u of ns) sum += pos[u];
            key.set(v, sum / ns.length);
          } else key.set(v, pos[v]);
        }
        col.sort((a, b) => key.get(a) - key.get(b) || a - b);
        col.forEach((v, k) => (pos[v] = k));
      }
    };
    for (let round = 0; round < 2; round++) {
      sweep(columns.slice(1), parents);
      sweep(columns.slice(0, -1).reverse(), children);
    }
    // Placement: y wanted = mean y of dependencies (roots: their row), kept apart by a gap.
    // Every column fits in the height of the tallest one, so wanting to sit beside a
    // dependency never lets a long chain drift downwards without bound.
    const step = NODE_H + GAP_Y;
    const tallest = columns.reduce((m, col) => Math.max(m, col.length), 0);
    const bottom = (tallest - 1) * step;
    const y = new Float64Array(n);
    columns.forEach((col, c) => {
      let last = -Infinity;
      for (const v of col) {
        let want = (pos[v] + (tallest - col.length) / 2) * step;
        if (c > 0 && parents[v].length) {
          let sum = 0;
          for (const u of parents[v]) sum += y[u];
          want = sum / parents[v].length;
        }
        y[v] = Math.max(want, last + step);
        last = y[v];
      }
      let next = bottom + step;
      for (let k = col.length - 1; k >= 0; k--) {
        y[col[k]] = Math.max(0, Math.min(y[col[k]], next - step));
        next = y[col[k]];
      }
    });
    let height = 0;
    for (let i = 0; i < n; i++) height = Math.max(height, y[i] + NODE_H);
    const x = layer.map((l) => l * (NODE_W + GAP_X));
    return {
      x,
      y,
      parents,
      children,
      width: columns.length * (NODE_W + GAP_X) - GAP_X + 2 * PAD,
      height: height + 2 * PAD,
    };
  }

  // The part of the plan whose change needs a new layout.
  function shapeOf(tasks) {
    return tasks.map((t) => t.id + "\u0001" + t.title + "\u0001" + (t.dependencies || []).join(",")).join("\u0002");
  }

  class Graph {
    constructor(root, onSelect) {
      this.root = root;
      this.onSelect = onSelect;
      this.shape = null;
      this.nodes = new Map(); // task id -> element
      this.edges = []; // {from, to, el}
      this.selected = null;
      this.scale = 1;
      root.addEventListener("click", (e) => {
        const node = e.target.closest(".node");
        if (node) this.onSelect(node.dataset.id);
      });
      root.addEventListener("keydown", (e) => {
        const node = e.target.closest(".node");
        if (node && (e.key === "Enter" || e.key === " ")) {
          e.preventDefault();
          this.onSelect(node.dataset.id);
        }
      });
    }

    // Draw or repaint `tasks` (weft status --json's task objects). `defaultRunner` names
    // the plan's runner for tasks that name none.
    render(tasks, defaultRunner) {
      const shape = shapeOf(tasks);
      if (shape !== this.shape) {
        this.shape = shape;
        this.draw(tasks, defaultRunner);
      } else {
        for (const t of tasks) this.paint(this.nodes.get(t.id), t, defaultRunner);
      }
      this.tasks = tasks;
      this.highlight(this.selected);
    }

    draw(tasks, defaultRunner) {
      const started = performance.now();
      const lay = layout(tasks);
      this.layout = lay;
      this.index = new Map(tasks.map((t, i) => [t.id, i]));
      const canvas = h("div.canvas");
      canvas.style.width = lay.width + "px";
      canvas.style.height = lay.height + "px";
      const svg = document.createElementNS(SVG, "svg");
      svg.setAttribute("class", "edges");
      svg.setAttribute("width", lay.width);
      svg.setAttribute("height", lay.height);
      this.edges = [];
      const frag = document.createDocumentFragment();
      tasks.forEach((t, i) => {
        for (const p of lay.parents[i]) {
          const x1 = PAD + lay.x[p] + NODE_W;
          const y1 = PAD + lay.y[p] + NODE_H / 2;
          const x2 = PAD + lay.x[i];
          const y2 = PAD + lay.y[i] + NODE_H / 2;
          const dx = Math.max(24, (x2 - x1) / 2);
          const path = document.createElementNS(SVG, "path");
          path.setAttribute("d", `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`);
          path.setAttribute("class", "edge");
          frag.appendChild(path);
          this.edges.push({ from: p, to: i, el: path });
        }
      });
      svg.appendChild(frag);
      canvas.appendChild(svg);
      this.nodes = new Map();
      const nodes = document.createDocumentFragment();
      tasks.forEach((t, i) => {
        const el = h(
          "div.node",
          { tabindex: "0", role: "button", dataset: { id: t.id, order: String(t.order) } },
          h("div.node-head", h("span.order", "#" + t.order), h("span.title")),
          h("div.node-meta", h("span.runner"), h("span.state"))
        );
        el.style.left = PAD + lay.x[i] + "px";
        el.style.top = PAD + lay.y[i] + "px";
        this.paint(el, t, defaultRunner);
        this.nodes.set(t.id, el);
        nodes.appendChild(el);
      });
      canvas.appendChild(nodes);
      Weft.clear(this.root).appendChild(canvas);
      this.canvas = canvas;
      this.applyScale();
      this.drawMs = performance.now() - started;
    }

    paint(el, t, defaultRunner) {
      if (!el) return;
      const status = t.hold && t.status === "pending" ? "held" : t.status;
      if (el.dataset.status !== status) {
        if (el.dataset.status) el.classList.remove("s-" + el.dataset.status);
        el.classList.add("s-" + status);
        el.dataset.status = status;
      }
      const title = el.querySelector(".title");
      if (title.textContent !== t.title) title.textContent = t.title;
      el.title = "#" + t.order + " " + t.title;
      const runner = t.kind === "ops" ? "ops" : t.kind === "manual" ? "manual" : t.runner || defaultRunner || "";
      const meta = runner + (t.model ? " · " + t.model : "");
      const r = el.querySelector(".runner");
      if (r.textContent !== meta) r.textContent = meta;
      const s = el.querySelector(".state");
      const label = Weft.fmt.status(status) + (t.attempts > 1 ? " ×" + t.attempts : "");
      if (s.textContent !== label) s.textContent = label;
    }

    // Highlight the selected task, everything it depends on (the path to it) and, fainter,
    // what depends on it.
    highlight(id) {
      this.selected = id;
      if (!this.layout) return;
      const sel = id !== null && id !== undefined ? this.index.get(id) : undefined;
      this.root.classList.toggle("has-selection", sel !== undefined);
      const up = new Set();
      const down = new Set();
      if (sel !== undefined) {
        const walk = (start, next, seen) => {
          const stack = [start];
          while (stack.length) {
            const v = stack.pop();
            for (const u of next[v]) if (!seen.has(u)) seen.add(u), stack.push(u);
          }
        };
        walk(sel, this.layout.parents, up);
        walk(sel, this.layout.children, down);
      }
      this.tasks.forEach((t, i) => {
        const el = this.nodes.get(t.id);
        if (!el) return;
        el.classList.toggle("selected", i === sel);
        el.classList.toggle("on-path", up.has(i));
        el.classList.toggle("downstream", down.has(i));
      });
      for (const e of this.edges) {
        const onPath = (up.has(e.from) || e.from === sel) && (up.has(e.to) || e.to === sel);
        const downstream = (down.has(e.to) && (down.has(e.from) || e.from === sel));
        e.el.classList.toggle("on-path", onPath);
        e.el.classList.toggle("downstream", downstream);
      }
    }

    reveal(id) {
      const el = this.nodes.get(id);
      if (el) el.scrollIntoView({ block: "nearest", inline: "nearest" });
    }

    filter(text) {
      const needle = text.trim().toLowerCase();
      let first = null;
      for (const t of this.tasks || []) {
        const el = this.nodes.get(t.id);
        const hit = needle && (t.title.toLowerCase().includes(needle) || String(t.order) === needle.replace(/^#/, "") || t.id.toLowerCase().includes(needle));
        el.classList.toggle("match", !!hit);
        if (hit && !first) first = t.id;
      }
      this.root.classList.toggle("filtering", !!needle);
      if (first) this.reveal(first);
    }

    zoom(factor) {
      this.scale = factor === 0 ? this.fitScale() : Math.min(2, Math.max(0.2, this.scale * factor));
      this.applyScale();
    }

    fitScale() {
      if (!this.layout) return 1;
      const box = this.root.parentElement.getBoundingClientRect();
      return Math.min(1, Math.max(0.2, Math.min(box.width / this.layout.width, box.height / this.layout.height)));
    }

    applyScale() {
      if (!this.canvas) return;
      this.canvas.style.transform = `scale(${this.scale})`;
      this.root.style.width = this.layout.width * this.scale + "px";
      this.root.style.height = this.layout.height * this.scale + "px";
    }
  }

  Weft.Graph = Graph;
  Weft.layout = layout;
})();
