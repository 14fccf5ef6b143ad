// The trace explorer's page side: draws the rows it is given and says what the user did.
//
// The model is an anywidget model in a notebook (the kernel computes the rows) or, in the
// standalone report, the in-page model of explorer_static.js (same traits, same messages).
// Everything from the trace is set as text (textContent); only `detail` is HTML, built escaped.

const ROW = 22;
const INDENT = 12;
const TICK_SPACE = 72; // px a tick's label needs, so labels never overlap however narrow the page
const COLOURS = {
  agent: "#6c5ce7", step: "#a4b0be", phase: "#dfe4ea", model: "#0984e3",
  tool: "#e17055", hook: "#00b894", other: "#636e72",
};

function make(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function ms(value) {
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(value < 10 ? 2 : 1)} ms`;
}

function toolbar(model) {
  const bar = make("div", "wbx-toolbar");
  const search = make("input", "wbx-search");
  search.type = "search";
  search.placeholder = "search name, attribute, id";
  search.value = model.get("query");
  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { model.set("query", search.value); model.save_changes(); }, 150);
  });
  const status = make("select", "wbx-status");
  // OpenTelemetry's span statuses, as a person says them (most spans that went well set none)
  const STATUSES = [["", "any status"], ["error", "failed"], ["ok", "marked ok"], ["unset", "no status set"]];
  for (const [value, label] of STATUSES) {
    const option = make("option", "", label);
    option.value = value;
    status.append(option);
  }
  status.value = model.get("status");
  status.addEventListener("change", () => { model.set("status", status.value); model.save_changes(); });
  const errors = make("input", "wbx-errors");
  errors.type = "checkbox";
  errors.checked = model.get("errors_only");
  errors.addEventListener("change", () => { model.set("errors_only", errors.checked); model.save_changes(); });
  const errorsLabel = make("label", "", " errors only ");
  errorsLabel.prepend(errors);
  const slowest = make("input", "wbx-slowest");
  slowest.type = "number";
  slowest.min = "0";
  slowest.placeholder = "slowest N";
  slowest.value = model.get("slowest") || "";
  slowest.addEventListener("change", () => {
    model.set("slowest", Math.max(0, parseInt(slowest.value || "0", 10) || 0));
    model.save_changes();
  });
  const count = make("span", "wbx-count");
  bar.append(search, status, errorsLabel, slowest, count);
  return { bar, count };
}

function render({ model, el }) {
  const root = make("div", "wbx");
  const { bar, count } = toolbar(model);
  const main = make("div", "wbx-main");
  const left = make("div", "wbx-left");
  const axis = make("div", "wbx-axis");
  const scroll = make("div", "wbx-scroll");
  scroll.tabIndex = 0;
  const spacer = make("div", "wbx-spacer");
  const rowsBox = make("div", "wbx-rows");
  scroll.append(spacer, rowsBox);
  left.append(axis, scroll);
  const detail = make("div", "wbx-detail");
  main.append(left, detail);
  root.append(bar, main);
  const summary = model.get("summary");  // what went wrong first, as every view says it
  if (summary) root.prepend(make("div", model.get("failed") ? "wbx-summary wbx-failed" : "wbx-summary", summary));
  el.append(root);

  function drawAxis() {
    axis.replaceChildren(make("div", "wbx-axis-name", "span"));
    const track = make("div", "wbx-axis-track");
    axis.append(track);
    const length = model.get("axis_ms") || 1;
    const width = track.clientWidth || 4 * TICK_SPACE;
    const gaps = Math.max(1, Math.min(4, Math.floor(width / TICK_SPACE)));
    for (let i = 0; i <= gaps; i++) {
      const tick = make("span", "wbx-tick", ms((length * i) / gaps));
      tick.style.left = `${(i / gaps) * 100}%`;
      track.append(tick);
    }
  }

  function drawRows() {
    const total = model.get("total");
    const offset = model.get("offset");
    const length = model.get("axis_ms") || 1;
    const selected = model.get("selected");
    const interrupted = model.get("interrupted");  // why its open spans will never end
    spacer.style.height = `${total * ROW}px`;
    scroll.style.height = `${Math.min(480, Math.max(total, 1) * ROW + 2)}px`;
    const nodes = model.get("rows").map((row, i) => {
      const line = make("div", "wbx-row");
      if (row.id === selected) line.classList.add("wbx-selected");
      if (row.status === "error") line.classList.add("wbx-error");
      if (row.match) line.classList.add("wbx-match");
      const cut = row.in_progress && interrupted;  // its process ended: it never will
      if (row.in_progress) line.classList.add(cut ? "wbx-cut" : "wbx-open");
      line.dataset.id = row.id;
      line.style.top = `${(offset + i) * ROW}px`;
      const name = make("div", "wbx-name");
      name.style.paddingLeft = `${row.depth * INDENT + 4}px`;
      name.title = row.name;
      const fold = make("span", "wbx-fold", row.children ? (row.folded ? "▸" : "▾") : "");
      if (row.children) fold.title = `${row.folded ? "open" : "fold"} (${row.children} below)`;
      const dot = make("span", "wbx-dot");
      dot.style.background = COLOURS[row.category] || COLOURS.other;
      name.append(fold, dot, make("span", "wbx-label", row.name));
      const time = make("div", "wbx-time");
      const barNode = make("div", "wbx-bar");
      barNode.style.left = `${(row.start / length) * 100}%`;
      barNode.style.width = `max(2px, ${(row.duration / length) * 100}%)`;
      barNode.style.backgroundColor = row.status === "error" ? "#c62828" : (COLOURS[row.category] || COLOURS.other);
      const took = make("span", "wbx-dur", ms(row.duration) + (cut ? " cut off" : row.in_progress ? " so far" : ""));
      if (cut) line.title = `cut off: ${interrupted}`;
      else if (row.in_progress) line.title = "in progress: still open when the trace was taken (its time so far)";
      time.append(barNode, took);
      line.append(name, time);
      return line;
    });
    rowsBox.replaceChildren(...nodes);
    const matched = model.get("matched");
    const waited = model.get("waited");  // a run stepped by hand: the time it waited on you
    count.textContent = `${total.toLocaleString()} of ${model.get("span_count").toLocaleString()} spans shown`
      + (matched >= 0 ? ` · ${matched.toLocaleString()} matched` : "")
      + (waited ? ` · ${waited}` : "");
  }

  function drawDetail() {
    detail.innerHTML = model.get("detail") || "<div class='wbx-hint'>click a span</div>";
  }

  rowsBox.addEventListener("click", (event) => {
    const line = event.target.closest(".wbx-row");
    if (!line) return;
    if (event.target.classList.contains("wbx-fold") && event.target.textContent) {
      model.send({ type: "toggle", id: line.dataset.id });
    } else {
      model.set("selected", line.dataset.id);
      model.save_changes();
    }
    scroll.focus({ preventScroll: true });
  });
  scroll.addEventListener("keydown", (event) => {
    const moves = { ArrowDown: ["move", 1], ArrowUp: ["move", -1], ArrowLeft: ["fold", 0], ArrowRight: ["open", 0] };
    const move = moves[event.key];
    if (!move) return;
    event.preventDefault();
    model.send({ type: move[0], by: move[1] });
  });
  let pending = false;
  scroll.addEventListener("scroll", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const offset = Math.max(0, Math.floor(scroll.scrollTop / ROW) - 5);
      if (offset !== model.get("offset")) { model.set("offset", offset); model.save_changes(); }
    });
  });
  model.on("change:scroll_to", () => {
    const target = model.get("scroll_to") * ROW;
    if (target < scroll.scrollTop || target > scroll.scrollTop + scroll.clientHeight - ROW) {
      scroll.scrollTop = Math.max(0, target - scroll.clientHeight / 2);
    }
  });
  model.on("change:rows", drawRows);
  model.on("change:selected", drawRows);
  model.on("change:detail", drawDetail);
  model.on("change:axis_ms", drawAxis);
  new ResizeObserver(drawAxis).observe(axis); // fewer ticks on a narrow page
  drawAxis();
  drawRows();
  drawDetail();
}

export default { render };
