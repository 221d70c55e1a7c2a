"use strict";
// The student page: frames, keys, the URL fragment, and the sampling stages of
// core/decode/sampling.py on recorded logits (float64, the same rules and order).
(function () {
  const DATA = JSON.parse(document.getElementById("lesson-data").textContent);
  const N = DATA.frames.length;
  const TOL = DATA.top_p_tolerance;          // core's TOP_P_TOLERANCE
  const CHART_ROWS = 20;                     // candidates drawn for a big vocabulary (plus the rest)
  const TOP_K_MAX = 200;                     // the top-k slider's end (smaller for a smaller vocabulary)
  const RANGES = {                           // [least, most, slider step]; a fragment's value is clamped to these
    temperature: [0, 3, 0.01], top_p: [0.01, 1, 0.01], min_p: [0, 1, 0.01], repetition_penalty: [0.5, 3, 0.05],
  };
  const KEYS = ["temperature", "top_k", "top_p", "min_p", "repetition_penalty"];
  const $ = (id) => document.getElementById(id);
  const state = { frame: 0, lang: DATA.langs[0], settings: null, revealed: false };
  const ui = () => DATA.ui[state.lang];
  const fill = (text, values) => text.replace(/\{(\w+)\}/g, (m, k) => (k in values ? values[k] : m));

  // ------------------------------------------------------------------ sampling (as core)
  // Items: the carried ids one by one (count 1), then the rest's groups (count = their size);
  // a group's tokens share one logit, so every rule treats them alike, except top-p, which
  // may keep some of a group (the ruler adds their probabilities one token at a time).
  function items(dist) {
    const n = dist.ids.length, m = n + dist.groups.length;
    const S = { n: n, vals: new Float64Array(m), counts: new Float64Array(m), ids: new Float64Array(m),
                removedBy: new Array(m).fill(null) };
    for (let i = 0; i < n; i++) {
      const v = dist.logits[i];
      S.vals[i] = v === null ? -Infinity : v;
      S.counts[i] = v === null ? 0 : 1;
      S.ids[i] = dist.ids[i];
      if (v === null) S.removedBy[i] = "raw";
    }
    dist.groups.forEach((g, j) => { S.vals[n + j] = g[0]; S.counts[n + j] = g[1]; S.ids[n + j] = dist.vocab + j; });
    return S;
  }

  function remove(S, i, stage) { S.counts[i] = 0; S.removedBy[i] = stage; }

  function probs(S) {                        // softmax over the candidates: per-token probability of each item
    const m = S.vals.length, q = new Float64Array(m);
    let top = -Infinity, sum = 0;
    for (let i = 0; i < m; i++) if (S.counts[i] > 0 && S.vals[i] > top) top = S.vals[i];
    for (let i = 0; i < m; i++) {
      if (S.counts[i] > 0) {
        q[i] = top === Infinity ? (S.vals[i] === Infinity ? 1 : 0) : Math.exp(S.vals[i] - top);
        sum += S.counts[i] * q[i];
      }
    }
    for (let i = 0; i < m; i++) q[i] /= sum;
    return q;
  }

  function alive(S) { const out = []; for (let i = 0; i < S.vals.length; i++) if (S.counts[i] > 0) out.push(i); return out; }

  function penalise(S, seen, theta) {        // seen ids still candidates: logit / θ if > 0, logit * θ if < 0
    if (theta === 1 || seen.size === 0) return;
    for (let i = 0; i < S.n; i++) {
      if (S.counts[i] > 0 && seen.has(S.ids[i])) {
        const v = S.vals[i];
        S.vals[i] = v > 0 ? v / theta : v * theta;
      }
    }
  }

  function temper(S, t) {                    // T <= 0: the argmax only (lowest id on ties); T = 1: off
    if (t <= 0) {
      let best = -1;
      for (const i of alive(S)) if (best < 0 || S.vals[i] > S.vals[best]) best = i;
      for (const i of alive(S)) if (i !== best) remove(S, i, "temperature");
      S.counts[best] = 1;
      return;
    }
    if (t === 1) return;
    for (const i of alive(S)) S.vals[i] = S.vals[i] / t;
  }

  function topK(S, k, vocab) {               // keep every logit >= the k-th largest (ties stay); off if k <= 0 or k >= V
    if (!(k > 0 && k < vocab)) return;
    const order = alive(S);
    let count = 0;
    for (const i of order) count += S.counts[i];
    if (k >= count) return;
    order.sort((a, b) => (S.vals[b] > S.vals[a]) - (S.vals[b] < S.vals[a]));
    let seenCount = 0, kth = -Infinity;
    for (const i of order) { seenCount += S.counts[i]; if (seenCount >= k) { kth = S.vals[i]; break; } }
    for (const i of order) if (!(S.vals[i] >= kth)) remove(S, i, "top_k");
  }

  function topP(S, p) {                      // the smallest ruler prefix whose cumsum >= p - TOL; off if p >= 1
    if (p >= 1) return;
    const q = probs(S), target = p - TOL;
    const ruler = alive(S).filter((i) => q[i] > 0);
    ruler.sort((a, b) => (q[b] > q[a]) - (q[b] < q[a]) || S.ids[a] - S.ids[b]);
    let cum = 0, last = -1, keepOfLast = 0;
    search: for (let r = 0; r < ruler.length; r++) {
      const i = ruler[r];
      for (let j = 1; j <= S.counts[i]; j++) {
        cum += q[i];
        if (cum >= target) { last = r; keepOfLast = j; break search; }
      }
    }
    const kept = new Set(last < 0 ? ruler : ruler.slice(0, last + 1));
    for (const i of alive(S)) if (!kept.has(i)) remove(S, i, "top_p");
    if (last >= 0) S.counts[ruler[last]] = keepOfLast;
  }

  function minP(S, m) {                      // remove probabilities < m * the highest; off if m <= 0
    if (m <= 0) return;
    const q = probs(S);
    let top = 0;
    for (const i of alive(S)) if (q[i] > top) top = q[i];
    const bound = m * top;
    for (const i of alive(S)) if (!(q[i] >= bound)) remove(S, i, "min_p");
  }

  function sample(dist, s) {
    const S = items(dist), seen = new Set(dist.seen);
    const order = Array.isArray(s.order) ? s.order : DATA.orders[s.order];
    for (const stage of order) {
      if (stage === "repetition_penalty") penalise(S, seen, s.repetition_penalty);
      else if (stage === "temperature") temper(S, s.temperature);
      else if (stage === "top_k") topK(S, s.top_k, dist.vocab);
      else if (stage === "top_p") topP(S, s.top_p);
      else if (stage === "min_p") minP(S, s.min_p);
    }
    const q = probs(S), p = new Float64Array(S.n);
    for (let i = 0; i < S.n; i++) p[i] = S.counts[i] > 0 ? q[i] : 0;
    let rest = 0;
    for (let i = S.n; i < S.vals.length; i++) rest += S.counts[i] * q[i];
    return { p: p, removedBy: S.removedBy, rest: rest };
  }
  window.tokenExplorerSample = sample;       // for a program checking the page

  // ------------------------------------------------------------------ state and fragment
  function recorded(index) {
    const d = DATA.frames[index].dist;
    return d === null ? null : clampAll(Object.assign({}, DATA.dists[d].settings), DATA.dists[d]);
  }

  function topKMax(dist) { return Math.min(dist.vocab, TOP_K_MAX); }

  function clamp(key, value, dist) {
    if (key === "top_k") return Math.min(Math.max(Math.round(value), 0), topKMax(dist));
    const r = RANGES[key];
    return Math.min(Math.max(value, r[0]), r[1]);
  }

  function clampAll(s, dist) { for (const k of KEYS) s[k] = clamp(k, s[k], dist); return s; }

  function readOrder(text) {
    if (Object.prototype.hasOwnProperty.call(DATA.orders, text)) return text;
    const names = text.split(",").map((t) => t.trim().replace(/-/g, "_"));
    const known = names.every((n, i) => DATA.stages.includes(n) && names.indexOf(n) === i);
    return known && names.length ? names : null;
  }

  function readFragment() {
    let params;
    try { params = new URLSearchParams(location.hash.replace(/^#/, "")); } catch (e) { params = new URLSearchParams(); }
    const f = Number(params.get("frame"));
    if (params.get("frame") && Number.isFinite(f)) state.frame = Math.min(Math.max(Math.round(f), 1), N) - 1;
    if (DATA.langs.includes(params.get("lang"))) state.lang = params.get("lang");
    state.settings = recorded(state.frame);
    state.revealed = params.get("answer") === "1";
    if (state.settings === null) return;
    const dist = DATA.dists[DATA.frames[state.frame].dist];
    for (const k of KEYS) {
      const text = params.get(k), value = Number(text);
      if (text !== null && text.trim() !== "" && Number.isFinite(value)) state.settings[k] = clamp(k, value, dist);
    }
    const order = params.get("order") === null ? null : readOrder(params.get("order"));
    if (order !== null) state.settings.order = order;
  }

  function writeFragment() {
    const parts = ["frame=" + (state.frame + 1)];
    if (DATA.langs.length > 1) parts.push("lang=" + state.lang);
    if (state.revealed && DATA.frames[state.frame].texts[state.lang].question) parts.push("answer=1");
    if (state.settings !== null) {
      for (const k of KEYS) parts.push(k + "=" + String(state.settings[k]));
      const o = state.settings.order;
      parts.push("order=" + encodeURIComponent(Array.isArray(o) ? o.join(",") : o));
    }
    const hash = "#" + parts.join("&");
    try { history.replaceState(null, "", hash); } catch (e) { /* a browser refusing it keeps the page working */ }
  }

  // ------------------------------------------------------------------ drawing
  function render() {
    const frame = DATA.frames[state.frame], t = frame.texts[state.lang], u = ui();
    document.documentElement.lang = state.lang === "zh" ? "zh-Hans" : "en";
    $("lesson-title").textContent = DATA.title[state.lang];
    document.title = DATA.title[state.lang];
    const asking = Boolean(t.question) && !state.revealed;
    $("frame-title").textContent = asking ? t.question : t.title;
    $("question").hidden = !t.question;
    $("question-text").textContent = u.question + ": " + (t.question || "");
    $("question-text").hidden = asking;
    $("reveal").textContent = asking ? u.show_answer : u.hide_answer;
    $("answer").hidden = asking;
    $("slide-img").src = frame.slides[state.lang];
    $("slide-img").alt = t.alt;
    const explain = $("explain");
    explain.textContent = "";
    for (const [heading, text] of t.explain) {
      const dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = heading; dd.textContent = text;
      explain.append(dt, dd);
    }
    renderChecks();
    $("counter").textContent = (state.frame + 1) + " / " + N;
    $("prev").textContent = u.prev; $("next").textContent = u.next;
    $("prev").disabled = state.frame === 0; $("next").disabled = state.frame === N - 1;
    $("lang").hidden = DATA.langs.length < 2;
    $("lang").textContent = u.language;
    renderLive();
  }

  function otherLang() { return DATA.langs[(DATA.langs.indexOf(state.lang) + 1) % DATA.langs.length]; }

  function renderChecks() {
    const when = state.frame === 0 ? "before" : state.frame === N - 1 ? "after" : null;
    const box = $("checks"), checks = DATA.checks.filter((c) => c.when === when);
    box.textContent = "";
    box.hidden = checks.length === 0;
    if (!checks.length) return;
    const h = document.createElement("h3");
    h.textContent = ui()[when];
    box.append(h);
    for (const c of checks) {
      const div = document.createElement("div"), q = document.createElement("p"), a = document.createElement("p");
      const b = document.createElement("button");
      div.className = "check"; q.className = "q"; a.className = "a";
      q.textContent = c.question[state.lang]; a.textContent = c.answer[state.lang]; a.hidden = true;
      b.type = "button"; b.className = "show"; b.textContent = ui().show_answer;
      b.addEventListener("click", () => { a.hidden = !a.hidden; b.textContent = a.hidden ? ui().show_answer : ui().hide_answer; });
      div.append(q, b, a);
      box.append(div);
    }
  }

  let rows = null;                           // the chart's elements of the frame drawn: built once, updated in place

  function renderLive() {
    const frame = DATA.frames[state.frame], u = ui();
    $("live").hidden = frame.dist === null;
    rows = null;
    if (frame.dist === null) return;
    const dist = DATA.dists[frame.dist];
    $("live-title").textContent = u.live;
    $("live-note").textContent = u.live_note;
    $("rest-note").hidden = dist.groups.length === 0;
    if (dist.groups.length) {
      const rest = dist.groups.reduce((n, g) => n + g[1], 0);
      $("rest-note").textContent = fill(u.rest_note, { vocab: dist.vocab.toLocaleString("en-US"), top: DATA.carried.top,
        rest: rest.toLocaleString("en-US"), mass: dist.rest_mass.toFixed(4), bin: "1/" + Math.round(1 / DATA.carried.bin) });
    }
    const r = dist.settings;
    const order = Array.isArray(r.order) ? r.order.join(",") : r.order;
    $("recorded").textContent = fill(u.recorded, { settings: "T=" + r.temperature + " · top-k=" + r.top_k + " · top-p=" +
      r.top_p + " · min-p=" + r.min_p + " · θ=" + r.repetition_penalty + " · " + order });
    buildControls(dist);
    buildChart(dist);
    redraw();
  }

  function buildControls(dist) {
    const box = $("controls"), u = ui();
    box.textContent = "";
    for (const k of KEYS) {
      const label = document.createElement("label"), name = document.createElement("span");
      const input = document.createElement("input"), out = document.createElement("output");
      name.className = "name"; name.textContent = u[k];
      input.type = "range"; input.id = "set-" + k; input.name = k;
      const r = k === "top_k" ? [0, topKMax(dist), 1] : RANGES[k];
      input.min = r[0]; input.max = r[1]; input.step = r[2];
      input.value = String(state.settings[k]);
      out.id = "out-" + k; out.textContent = String(state.settings[k]);
      input.addEventListener("input", () => {
        state.settings[k] = clamp(k, Number(input.value), dist);
        out.textContent = String(state.settings[k]);
        redraw();
        writeFragment();
      });
      label.append(name, input, out);
      box.append(label);
    }
    const label = document.createElement("label"), name = document.createElement("span"), select = document.createElement("select");
    name.className = "name"; name.textContent = u.order;
    select.id = "set-order";
    const options = Object.keys(DATA.orders).map((key) => [key, key + ": " + DATA.orders[key].map((s) => u.stages[s]).join(" → ")]);
    const custom = [dist.settings.order, state.settings.order].filter(Array.isArray);
    for (const o of custom) options.push([o.join(","), o.map((s) => u.stages[s]).join(" → ")]);
    for (const [value, text] of options) {
      const opt = document.createElement("option");
      opt.value = value; opt.textContent = text;
      select.append(opt);
    }
    const now = state.settings.order;
    select.value = Array.isArray(now) ? now.join(",") : now;
    select.addEventListener("change", () => { state.settings.order = readOrder(select.value) || "hf"; redraw(); writeFragment(); });
    label.append(name, select);
    box.append(label);
    const reset = document.createElement("button");
    reset.type = "button"; reset.id = "reset"; reset.textContent = u.reset;
    reset.addEventListener("click", () => { state.settings = recorded(state.frame); renderLive(); writeFragment(); });
    box.append(reset);
  }

  function buildChart(dist) {
    const chart = $("chart");
    chart.textContent = "";
    const order = dist.ids.map((_, i) => i).filter((i) => dist.logits[i] !== null);
    order.sort((a, b) => (dist.logits[b] > dist.logits[a]) - (dist.logits[b] < dist.logits[a]) || dist.ids[a] - dist.ids[b]);
    const shown = dist.groups.length ? order.slice(0, CHART_ROWS) : order;
    rows = { dist: dist, shown: shown, els: [], rest: null };
    const row = (cls) => {
      const div = document.createElement("div"), piece = document.createElement("span"), track = document.createElement("span");
      const bar = document.createElement("span"), p = document.createElement("span"), why = document.createElement("span");
      div.className = cls; div.setAttribute("role", "listitem");
      piece.className = "piece"; track.className = "track"; bar.className = "fill"; p.className = "p"; why.className = "why";
      track.append(bar); div.append(piece, track, p, why);
      chart.append(div);
      return { div: div, piece: piece, bar: bar, p: p, why: why };
    };
    for (const i of shown) {
      const el = row("cand");
      el.div.dataset.tokenId = String(dist.ids[i]);
      el.div.dataset.logit = String(dist.logits[i]);
      el.piece.textContent = dist.pieces[i];
      el.piece.title = "id " + dist.ids[i] + " · " + ui().logit + " " + dist.logits[i];
      if (dist.ids[i] === dist.selected) { el.div.classList.add("picked"); el.piece.textContent = "▶ " + dist.pieces[i]; }
      rows.els.push(el);
    }
    if (shown.length < order.length || dist.groups.length) {
      rows.rest = row("cand rest");
      const others = dist.groups.reduce((n, g) => n + g[1], order.length - shown.length);
      rows.rest.div.dataset.restCount = String(others);
      rows.rest.piece.textContent = fill(ui().others, { n: others.toLocaleString("en-US") });
    }
  }

  function redraw() {
    if (rows === null) return;
    performance.mark("redraw-start");
    const out = sample(rows.dist, state.settings), u = ui();
    let shownMass = 0;
    rows.shown.forEach((i, r) => {
      const el = rows.els[r], p = out.p[i], gone = out.removedBy[i];
      shownMass += p;
      el.div.dataset.p = String(p);
      el.div.classList.toggle("gone", gone !== null);
      el.bar.style.width = (100 * p) + "%";
      el.p.textContent = p.toFixed(4);
      const notes = [];
      if (gone !== null) notes.push(fill(u.removed, { stage: u.stages[gone] }));
      if (rows.dist.ids[i] === rows.dist.selected) notes.push(u.picked);
      el.why.textContent = notes.join(" · ");
      el.why.hidden = notes.length === 0;
    });
    if (rows.rest !== null) {
      let rest = out.rest;
      const shown = new Set(rows.shown);
      for (let i = 0; i < out.p.length; i++) if (!shown.has(i)) rest += out.p[i];
      rows.rest.div.dataset.p = String(rest);
      rows.rest.bar.style.width = (100 * rest) + "%";
      rows.rest.p.textContent = rest.toFixed(4);
      rows.rest.why.hidden = true;
    }
    for (const k of KEYS) {
      const input = $("set-" + k);
      if (input && input.value !== String(state.settings[k])) input.value = String(state.settings[k]);
    }
    performance.measure("redraw", "redraw-start");
  }

  // ------------------------------------------------------------------ moving
  function go(index) {
    const next = Math.min(Math.max(index, 0), N - 1);
    if (next === state.frame) return;
    state.frame = next;
    state.revealed = false;
    state.settings = recorded(next);
    render();
    writeFragment();
  }

  $("prev").addEventListener("click", () => go(state.frame - 1));
  $("next").addEventListener("click", () => go(state.frame + 1));
  $("reveal").addEventListener("click", () => { state.revealed = !state.revealed; render(); writeFragment(); });
  $("lang").addEventListener("click", () => { state.lang = otherLang(); render(); writeFragment(); });
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const tag = e.target && e.target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;      // a slider's own arrows
    if (tag === "BUTTON" && (e.key === " " || e.key === "Enter")) return;       // the button's own press
    const moves = { ArrowRight: 1, PageDown: 1, " ": 1, ArrowLeft: -1, PageUp: -1 };
    if (e.key in moves) go(state.frame + moves[e.key]);
    else if (e.key === "Home") go(0);
    else if (e.key === "End") go(N - 1);
    else return;
    e.preventDefault();
  });
  window.addEventListener("hashchange", () => { readFragment(); render(); writeFragment(); });

  readFragment();
  render();
  writeFragment();
})();
