// The report's explorer model: the anywidget model's traits and messages, answered in the page.
//
// The standalone report has no kernel, so the trace is inlined (its spans as columns, in tree
// order, and the detail HTML of each) and this model does what the kernel's ExplorerView does:
// folds, filters and windows. It is the same walk over the same arrays (`end`: where a subtree
// ends, read off the depths). A detail is written as numbers of pieces in `data.shared`, the HTML that details
// repeat, stored once (a run of consecutive ones as a [start, end) range): every model call's
// messages are the whole conversation so far, and a run's spans share most of their
// attributes. Details of one kind share a template (`data.templates`) and hold only their own
// numbers, those of the template's holes. A piece with tags or ids is stored as the numbers
// of its runs (of markup, of ids, of the text between) in `data.runs`, the same way: a
// template of its markup (`data.piece_templates`: boxes and rows share theirs) and its own
// text (a tool call's id, in the boxes, rows and diff lines of two steps, is one run).
// Elements of the page with a `data-pieces` attribute (the report's step sections) are made of
// the same pieces, filled when the page has loaded (past `AT_ONCE` of them, each when it comes
// near the view). A search looks through each stored piece's text once, and each span's name
// and ids: a span matches when they or a piece of its detail hold what was typed.
const WHERE = -1;  // in a detail: the span's line of times and ids, drawn from its row
const HOLE = -2;  // in a template: where a detail made from it has a number of its own

function piece(data, i) {  // HTML, or its runs of markup, ids and text (a template, its own)
  const stored = data.shared[i];
  if (typeof stored === "string") return stored;
  return filled(data.piece_templates, stored).map((run) => data.runs[run]).join("");
}

function numbers(items) {  // items as numbers: a number each, a [start, end) range of them
  const out = [];
  for (const item of items) {
    if (typeof item === "number") out.push(item);
    else for (let i = item[0]; i < item[1]; i += 1) out.push(i);
  }
  return out;
}

function joined(data, items, where) {  // the HTML of items (WHERE: the span's line)
  return numbers(items).map((n) => (n === WHERE ? where() : piece(data, n))).join("");
}

function filled(templates, [template, ...own]) {  // a template, its holes filled with `own`
  const holes = numbers(own);
  let next = 0;
  return numbers(templates[template]).map((n) => (n === HOLE ? holes[next++] : n));
}

const AT_ONCE = 500;  // the most elements made of pieces that are all drawn when the page loads
const SAMPLES = 5;  // elements drawn at once when there are more: what a piece takes in them
const PIECE_PX = 40;  // px a piece of them takes, guessed (a message box's lines, a diff line)

function topmost(elements) {  // the first of `elements` (in the page's order) not above the view
  let [low, high] = [0, elements.length - 1];
  while (low < high) {
    const middle = (low + high) >> 1;
    if (elements[middle].getBoundingClientRect().bottom > 0) high = middle; else low = middle + 1;
  }
  return elements[low];
}

function fillPieces(data) {  // the page's elements made of stored pieces: the HTML is ours, escaped
  const elements = [...document.querySelectorAll("[data-pieces]")];
  const fill = (el) => {
    if (!el.dataset.pieces) return;
    el.insertAdjacentHTML("beforeend", joined(data, JSON.parse(el.dataset.pieces)));
    delete el.dataset.pieces;
  };
  if (elements.length <= AT_ONCE) { elements.forEach(fill); return; }
  // more (a long run's step sections): each is drawn when it comes near the view (scrolled
  // to, or a link's target), as the page drawn whole took seconds to lay out at every change;
  // the lines that say so are shown, and printing draws them all. Until drawn, a section is as
  // high as a few drawn at once, spread over the run, are on average (one rule of the page's,
  // `--wb-section-px`): guessed from their pieces (PIECE_PX each) before the page is first laid
  // out, measured after it, and set again when the guess was more than 5% off (1/8 left a
  // run's scrollbar 12% short; setting it lays the page out again, a fifth of a second at
  // 16,666 sections). The scrollbar is about true from the start and does not grow as you read.
  // A section drawn above the view moves what is in it: the page itself puts back the section
  // at the top of the view where it was. The browser's scroll anchoring does that only until
  // the anchor's own height rule changes (the section drawn at a link's target): then those
  // drawn above it pushed it out of view.
  document.documentElement.style.overflowAnchor = "none";
  const samples = [...Array(SAMPLES).keys()].map((i) => elements[Math.floor(((i + 1) * elements.length) / (SAMPLES + 1))]);
  const pieces = samples.reduce((count, el) => count + numbers(JSON.parse(el.dataset.pieces)).length, 0);
  const high = (px) => document.documentElement.style.setProperty("--wb-section-px", `${px}px`);
  const guessed = (pieces / SAMPLES) * PIECE_PX;
  high(guessed);  // before the page is first laid out: that layout has it
  samples.forEach(fill);
  let sized = false;
  const size = () => {  // the samples laid out by now: what a section takes in this run
    sized = true;
    const px = samples.reduce((sum, el) => sum + el.offsetHeight, 0) / SAMPLES;
    if (Math.abs(px - guessed) > guessed / 20) high(px);  // off by more than 5%: again
  };
  const steady = (change) => {  // `change` the sections; the one at the top of the view stays
    const anchor = topmost(elements);
    const top = anchor.getBoundingClientRect().top;
    change();
    const moved = anchor.getBoundingClientRect().top - top;
    if (moved) scrollBy(0, moved);
  };
  const near = new IntersectionObserver((entries) => steady(() => {  // first after the page's
    if (!sized) size();  // first layout: reading it costs no layout of its own
    for (const entry of entries) {
      if (entry.isIntersecting) { fill(entry.target); near.unobserve(entry.target); }
    }
  }), { rootMargin: "1000px 0px" });
  elements.forEach((el) => near.observe(el));
  for (const line of document.querySelectorAll(".wb-drawn-near")) line.hidden = false;
  addEventListener("beforeprint", () => elements.forEach(fill));
}

function whenLoaded(f) {  // the elements to fill come after the explorer's script in the page
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", f);
  else f();
}

function spansOf(columns) {  // the spans' rows; parents and subtree ends read off the depths
  const spans = columns.id.map((id, i) => {
    const [category, status, span_status, open] = columns.kinds[columns.kind[i]];
    return {
      id, name: columns.words[columns.name[i]], depth: columns.depth[i],
      start: columns.start[i], duration: columns.duration[i],
      category, status, span_status, in_progress: open === 1, parent: -1, end: columns.id.length,
    };
  });
  const open = [];  // the span's ancestors, in depth-first order: the nearest last
  spans.forEach((span, i) => {
    while (open.length && spans[open[open.length - 1]].depth >= span.depth) spans[open.pop()].end = i;
    if (open.length) span.parent = open[open.length - 1];
    open.push(i);
  });
  return spans;
}

function staticModel(data) {
  const spans = spansOf(data.spans);
  let texts = null;  // the words of each stored piece and of each span's row, made on the first search
  const state = {
    rows: [], total: 0, span_count: spans.length, matched: -1, offset: 0, page_size: 40,
    axis_ms: data.axis_ms, waited: data.waited, interrupted: data.interrupted, selected: "", scroll_to: 0, detail: "",
    query: "", status: "", errors_only: false, slowest: 0,
  };
  const handlers = {};
  const changed = new Set();
  const folded = new Set();
  const byId = new Map(spans.map((s, i) => [s.id, i]));
  let visible = [];
  let matches = null;

  function escaped(text) {  // ids are hex when read from a trace; a SpanData made by hand need not be
    return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  }

  function where(i) {  // the line of times and ids under the heading (`Where` in Python)
    const span = spans[i];
    const parent = span.parent < 0 ? "\u2014" : escaped(spans[span.parent].id);
    const open = span.in_progress ? (data.interrupted ? " cut off" : " so far") : "";
    return `<span class='wbx-where'>start ${span.start.toFixed(3)} ms \u00b7 ` +
      `${span.duration.toFixed(3)} ms${open} \u00b7 span <code>${escaped(span.id)}</code>` +
      ` \u00b7 parent <code>${parent}</code>`;
  }

  function detail(id) {
    const i = byId.get(id);
    if (i === undefined) return "";
    return joined(data, filled(data.templates, data.details[i]), () => where(i));
  }

  const ENTITIES = { "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#x27;": "'", "&amp;": "&" };
  function textOf(html) {  // the detail's words, lowercased (the HTML is ours: tags and entities)
    return html.replace(/<[^>]*>/g, " ").replace(/&(lt|gt|quot|#x27|amp);/g, (e) => ENTITIES[e])
      .toLowerCase();
  }

  function searched(query) {  // the spans whose name, ids or detail hold `query`
    // piece by piece: a detail is pieces the details share (a conversation, an attribute's
    // row), so each piece's words are looked through once, not once a detail holding it
    if (texts === null) {
      texts = {
        pieces: data.shared.map((_, n) => textOf(piece(data, n))),
        rows: spans.map((span, i) => `${span.name} ${textOf(where(i))}`.toLowerCase()),
      };
    }
    const held = texts.pieces.map((text) => text.includes(query));
    return spans.map((_, i) => i).filter((i) => texts.rows[i].includes(query)
      || numbers(filled(data.templates, data.details[i])).some((n) => n >= 0 && held[n]));
  }

  function emit(name) { for (const f of handlers[`change:${name}`] || []) f(); }

  function match() {
    const query = state.query.trim().toLowerCase();
    if (!query && !state.status && !state.errors_only && !(state.slowest > 0)) return null;
    let keep = spans.map((_, i) => i);
    if (query) {
      keep = searched(query);
    }
    if (state.status) keep = keep.filter((i) => spans[i].span_status === state.status);
    if (state.errors_only) keep = keep.filter((i) => spans[i].status === "error");
    if (state.slowest > 0) {
      keep = keep.sort((a, b) => spans[b].duration - spans[a].duration).slice(0, state.slowest);
    }
    return new Set(keep);
  }

  function refresh() {
    let keep = null;
    if (matches) {
      keep = new Set(matches);
      for (const i of matches) {
        for (let p = spans[i].parent; p >= 0 && !keep.has(p); p = spans[p].parent) keep.add(p);
      }
    }
    visible = [];
    for (let i = 0; i < spans.length;) {
      if (keep && !keep.has(i)) { i = spans[i].end; continue; }
      visible.push(i);
      i = folded.has(spans[i].id) ? spans[i].end : i + 1;
    }
    state.total = visible.length;
    state.matched = matches ? matches.size : -1;
    state.offset = Math.min(state.offset, Math.max(visible.length - 1, 0));
  }

  function page() {
    state.rows = visible.slice(state.offset, state.offset + state.page_size).map((i) => ({
      ...spans[i], children: spans[i].end - i - 1, folded: folded.has(spans[i].id),
      match: matches !== null && matches.has(i),
    }));
  }

  function select(id) {
    state.selected = id;
    state.detail = detail(id);
    const row = visible.indexOf(byId.get(id));
    if (row >= 0 && (row < state.offset || row >= state.offset + state.page_size - 1)) {
      state.offset = Math.max(row - Math.floor(state.page_size / 2), 0);
    }
    page();
    state.scroll_to = Math.max(row, 0);
    for (const name of ["rows", "selected", "detail", "scroll_to"]) emit(name);
  }

  const model = {
    get: (name) => state[name],
    set: (name, value) => { state[name] = value; changed.add(name); },
    on: (name, f) => { (handlers[name] = handlers[name] || []).push(f); },
    save_changes: () => {
      const names = [...changed];
      changed.clear();
      if (names.some((n) => ["query", "status", "errors_only", "slowest"].includes(n))) {
        matches = match();
        state.offset = 0;
        refresh();
      }
      if (names.includes("selected")) { select(state.selected); return; }
      page();
      emit("rows");
    },
    send: (message) => {
      const index = visible.indexOf(byId.get(state.selected));
      if (message.type === "move") {
        const row = index < 0 ? 0 : Math.min(Math.max(index + message.by, 0), visible.length - 1);
        if (visible.length) select(spans[visible[row]].id);
        return;
      }
      const id = message.type === "toggle" ? message.id : state.selected;
      if (!id || !byId.has(id)) return;
      const open = message.type === "open" || (message.type === "toggle" && folded.has(id));
      if (open) folded.delete(id); else folded.add(id);
      refresh();
      page();
      emit("rows");
    },
  };
  refresh();
  page();
  return model;
}
