// The runs browser's page side: draws the page of rows it is given and says what the user did.
//
// The kernel keeps the list and sends one page of rows; the filters, the page's offset and the
// ticked rows are traits the page sets, and a sort or Compare is a message. Everything from the
// runs is set as text (textContent), never as HTML.

const STATUSES = ["", "completed", "failed", "paused", "aborted", "running", "pending", "interrupted"];
const SINCE = [["", "any time"], ["15m", "last 15 min"], ["1h", "last hour"], ["24h", "last day"], ["7d", "last week"]];
const COLUMNS = [
  // [label, sort key or null, cell class, share of the room left when all is whole (texts)]
  ["", null, "wbr-pick", 0],
  ["run", "run", "wbr-id", 2],
  ["agent", "agent", "wbr-agent", 1],
  ["status", "status", "wbr-status", 0],
  ["errors", "errors", "wbr-errors", 4],
  ["tools", null, "wbr-tools", 1],
  ["steps", "steps", "wbr-num wbr-steps", 0],
  ["tokens", "tokens", "wbr-num wbr-tokens", 0],
  ["cost", "cost", "wbr-num wbr-cost", 0],
  ["time", "duration", "wbr-num wbr-time", 0],
  ["started", "started", "wbr-started", 0],
];
// The columns are sized to what the page shows (`fit`): a number, a date, a status badge and a
// heading are never cut; a text (the run's id, agent, first error, tools) is cut with its whole
// text as its title, down to NARROWEST; a window narrower than that scrolls the table sideways
// in its box. Percent widths cut "interrupted" to "interr…" and every number beside
// JupyterLab's file browser at a 1,000 px window, and ran the numbers' headings together.
const PAD = 9;  // px a cell takes beside its content: its padding, and one to spare
const NARROWEST = 64;  // px: the least a text's column is cut to
const WIDEST = 320;  // px: a text's column grows to this before any grows past it

function make(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function select(cls, options, value) {
  const node = make("select", cls);
  for (const [key, label] of options) {
    const option = make("option", "", label);
    option.value = key;
    node.append(option);
  }
  node.value = value;
  return node;
}

function setTrait(model, name, value) {
  model.set(name, value);
  model.save_changes();
}

function toolbar(model) {
  const bar = make("div", "wbr-toolbar");
  const search = make("input", "wbr-search");
  search.type = "search";
  search.placeholder = "search the messages";
  search.value = model.get("query");
  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => setTrait(model, "query", search.value), 300);
  });
  const status = select("wbr-status-filter", STATUSES.map((s) => [s, s || "any status"]), model.get("status"));
  status.addEventListener("change", () => setTrait(model, "status", status.value));
  const agent = make("select", "wbr-agent-filter");
  const tool = make("select", "wbr-tool-filter");
  const fill = () => {
    for (const [node, name, all] of [[agent, "agents", "any agent"], [tool, "tools", "any tool"]]) {
      const current = model.get(name === "agents" ? "agent" : "tool");
      node.replaceChildren();
      for (const value of ["", ...model.get(name)]) {
        const option = make("option", "", value || all);
        option.value = value;
        node.append(option);
      }
      node.value = current;
    }
  };
  fill();
  agent.addEventListener("change", () => setTrait(model, "agent", agent.value));
  tool.addEventListener("change", () => setTrait(model, "tool", tool.value));
  const errors = make("input", "wbr-errors-only");
  errors.type = "checkbox";
  errors.checked = model.get("errors_only");
  errors.addEventListener("change", () => setTrait(model, "errors_only", errors.checked));
  const errorsLabel = make("label", "", " with errors ");
  errorsLabel.prepend(errors);
  const since = select("wbr-since", SINCE, model.get("since"));
  since.addEventListener("change", () => setTrait(model, "since", since.value));
  const rollup = make("input", "wbr-rollup");
  rollup.type = "checkbox";
  rollup.checked = model.get("rollup");
  rollup.addEventListener("change", () => setTrait(model, "rollup", rollup.checked));
  const rollupLabel = make("label", "", " sub-runs under their run ");
  rollupLabel.prepend(rollup);
  bar.append(search, status, agent, tool, errorsLabel, since, rollupLabel);
  const sync = () => {
    search.value = model.get("query");
    status.value = model.get("status");
    agent.value = model.get("agent");
    tool.value = model.get("tool");
    errors.checked = model.get("errors_only");
    rollup.checked = model.get("rollup");
  };
  return { bar, fill, sync };
}

function cell(row, cls) {
  const td = make("td", cls);
  switch (cls) {
    case "wbr-id":
      td.textContent = row.id;
      td.title = row.id;  // whole when its column is cut
      break;
    case "wbr-agent":
      td.textContent = (row.depth ? `${"  ".repeat(row.depth)}└ ` : "") + row.agent;
      if (row.subruns) td.append(make("span", "wbr-subruns", ` +${row.subruns} sub-run${row.subruns > 1 ? "s" : ""}`));
      td.title = td.textContent.trim();  // a cut name (or sub-run count) whole on hover
      break;
    case "wbr-status":
      td.append(make("span", `wbr-badge wbr-${row.status}`, row.status));
      if (row.stop && row.stop !== row.status) {
        td.append(make("span", "wbr-stop", ` ${row.stop}`));
        td.title = `${row.status} ${row.stop}`;
      }
      break;
    case "wbr-errors":
      if (row.errors > 0) {
        td.append(make("span", "wbr-error-count", String(row.errors)));
        const first = make("span", "wbr-first-error", ` ${row.first_error}`);
        first.title = row.first_error;
        td.append(first);
      } else {
        td.textContent = row.errors < 0 ? "?" : "";
      }
      break;
    case "wbr-tools":
      td.textContent = row.tools;
      td.title = row.tools;
      break;
    case "wbr-started":
      td.textContent = row.started;
      break;
    default:
      break;
  }
  return td;
}

function width(node) {  // px its content takes, whatever its cell's width (cells do not wrap)
  const range = document.createRange();
  range.selectNodeContents(node);
  return range.getBoundingClientRect().width;
}

function fit(table, room) {  // each column's px in a box `room` px wide (see COLUMNS)
  const rows = [table.tHead.rows[0], ...table.tBodies[0].rows];
  const least = [];
  const whole = [];
  COLUMNS.forEach(([, , cls, share], c) => {
    const cells = rows.map((row) => row.cells[c]);
    const head = PAD + width(cells[0]);
    const content = Math.max(0, ...cells.slice(1).map(width)) + PAD;
    if (cls === "wbr-status") {  // its badge whole; what it says of the stop may be cut
      const badges = [...table.querySelectorAll(".wbr-badge")].map((b) => b.offsetWidth);
      least.push(Math.max(head, PAD + Math.max(0, ...badges)));
    } else {
      least.push(share ? Math.max(head, Math.min(content, NARROWEST)) : Math.max(head, content));
    }
    whole.push(Math.max(least[c], content));
  });
  const sized = whole.map((px, c) => Math.max(least[c], Math.min(px, WIDEST)));
  const sum = (widths) => widths.reduce((a, b) => a + b, 0);
  // From the least to each text's WIDEST, then to the whole of each: a long error does not take
  // the room a run's id needs to be read.
  for (const [low, high] of [[least, sized], [sized, whole]]) {
    if (sum(low) >= room) return low;  // it scrolls sideways
    if (sum(high) > room) {
      const share = Math.max(0, room - sum(low)) / (sum(high) - sum(low));
      return low.map((px, c) => Math.floor(px + (high[c] - px) * share));
    }
  }
  const shares = COLUMNS.reduce((total, column) => total + column[3], 0);
  const spare = room - sum(whole);  // all of it whole: the texts share what is left
  return whole.map((px, c) => Math.floor(px + (spare * COLUMNS[c][3]) / shares));
}

function reveal(box, what) {  // bring what a button opened (class `what`) into view, once shown
  const show = (node) => {
    const view = window.innerHeight;
    const top = node.getBoundingClientRect().top;
    if (top >= 0 && top < (view * 2) / 3) return;  // in view already: the page stays where it is
    const buttons = box.querySelector(".wbr-buttons");  // the buttons clicked, above it if they
    const near = buttons && top - buttons.getBoundingClientRect().top < view / 3;  // fit too
    (near ? buttons : node).scrollIntoView({ block: "start", behavior: "smooth" });
  };
  const found = box.querySelector(`.${what}`);
  if (found) {
    show(found);
    return;
  }
  const watch = new MutationObserver(() => {  // its view is made after this message comes
    const node = box.querySelector(`.${what}`);
    if (!node) return;
    watch.disconnect();
    show(node);
  });
  watch.observe(box, { childList: true, subtree: true });
  setTimeout(() => watch.disconnect(), 30000);
}

function numbers(row) {
  return [String(row.steps), row.tokens.toLocaleString(), row.cost, row.duration];
}

function render({ model, el }) {
  const root = make("div", "wbr");
  const { bar, fill, sync } = toolbar(model);
  const table = make("table", "wbr-table");
  const head = make("tr", "wbr-head");
  const body = make("tbody");
  const columns = make("colgroup");
  COLUMNS.forEach(() => columns.append(make("col")));
  table.append(columns, make("thead"), body);
  table.tHead.append(head);
  const footer = make("div", "wbr-footer");
  const first = make("button", "wbr-first", "«");
  const prev = make("button", "wbr-prev", "‹ previous");
  const next = make("button", "wbr-next", "next ›");
  const count = make("span", "wbr-count");
  const compare = make("button", "wbr-compare", "Compare the two ticked");
  const note = make("span", "wbr-note");
  footer.append(first, prev, count, next, compare, note);
  const scroll = make("div", "wbr-scroll");
  scroll.append(table);
  root.append(bar, make("div", "wbr-source"), scroll, footer);
  el.append(root);

  function size() {  // the columns' widths for the rows and the room there are now
    const px = fit(table, scroll.clientWidth);
    px.forEach((w, c) => { columns.children[c].style.width = `${w}px`; });
    table.style.width = `${px.reduce((a, b) => a + b, 0)}px`;
  }
  new ResizeObserver(size).observe(scroll);

  function drawHead() {
    const sort = model.get("sort");
    head.replaceChildren(...COLUMNS.map(([label, key, cls]) => {
      const th = make("th", cls, label);
      if (key) {
        th.classList.add("wbr-sortable");
        th.dataset.sort = key;
        if (key === sort) th.textContent = `${label} ${model.get("descending") ? "▼" : "▲"}`;
      }
      return th;
    }));
    size();
  }

  function drawRows() {
    const picked = new Set(model.get("picked"));
    const opened = model.get("opened");
    body.replaceChildren(...model.get("rows").map((row) => {
      const tr = make("tr", "wbr-row");
      tr.dataset.id = row.id;
      if (row.id === opened) tr.classList.add("wbr-opened");
      if (row.errors > 0 || row.status === "failed") tr.classList.add("wbr-has-error");
      const pick = make("td", "wbr-pick");
      const box = make("input", "wbr-tick");
      box.type = "checkbox";
      box.checked = picked.has(row.id);
      box.title = "tick two runs to compare them";
      pick.append(box);
      tr.append(pick);
      for (const [, , cls] of COLUMNS.slice(1, 6)) tr.append(cell(row, cls));
      const values = numbers(row);
      COLUMNS.slice(6, 10).forEach(([, , cls], i) => tr.append(make("td", cls, values[i])));
      tr.append(cell(row, "wbr-started"));
      return tr;
    }));
    const total = model.get("total");
    const offset = model.get("offset");
    const shown = model.get("rows").length;
    count.textContent = total
      ? `${(offset + 1).toLocaleString()}–${(offset + shown).toLocaleString()} of ${total.toLocaleString()}${model.get("complete") ? "" : "+"} runs`
      : "no runs";
    first.disabled = prev.disabled = offset === 0;
    next.disabled = offset + shown >= total;
    compare.disabled = model.get("picked").length !== 2;
    size();
  }

  head.addEventListener("click", (event) => {
    const th = event.target.closest("th");
    if (th && th.dataset.sort) model.send({ type: "sort", column: th.dataset.sort });
  });
  body.addEventListener("click", (event) => {
    const tr = event.target.closest(".wbr-row");
    if (!tr) return;
    if (event.target.classList.contains("wbr-tick")) {
      const picked = model.get("picked").filter((id) => id !== tr.dataset.id);
      if (event.target.checked) picked.push(tr.dataset.id);
      setTrait(model, "picked", picked.slice(-2));
    } else if (!event.target.closest(".wbr-pick")) {
      setTrait(model, "opened", tr.dataset.id);
    }
  });
  const turn = (offset) => setTrait(model, "offset", Math.max(0, offset));
  first.addEventListener("click", () => turn(0));
  prev.addEventListener("click", () => turn(model.get("offset") - model.get("page_size")));
  next.addEventListener("click", () => turn(model.get("offset") + model.get("page_size")));
  compare.addEventListener("click", () => model.send({ type: "compare" }));
  model.on("msg:custom", (message) => {
    if (message.type === "reveal") reveal(el.closest(".wbr-browser") ?? document.body, message.what);
  });

  const source = root.querySelector(".wbr-source");
  const drawSource = () => { source.textContent = model.get("source"); };
  const drawNote = () => { note.textContent = model.get("note"); };
  model.on("change:rows", drawRows);
  model.on("change:total", drawRows);
  model.on("change:complete", drawRows);
  model.on("change:picked", drawRows);
  model.on("change:opened", drawRows);
  model.on("change:sort", drawHead);
  model.on("change:descending", drawHead);
  model.on("change:agents", fill);
  model.on("change:tools", fill);
  model.on("change:note", drawNote);
  for (const name of ["query", "status", "agent", "tool", "errors_only", "rollup"]) model.on(`change:${name}`, sync);
  drawSource();
  drawHead();
  drawRows();
  drawNote();
}

export default { render };
