// The step and agent tables of the report and of TraceView in a notebook, each drawn from its
// columns: every value is set as text. A table scrolls in a box of its own and only the rows in
// view (and a few around them) are in the page, between two spacers as high as the rows left out,
// so the scrollbar says where the view is: a 16,666-step run's table laid out whole took seconds to
// open and to sort. Its columns keep their widths, so they do not move as rows come and go, and fit
// the page (`fit`): a number's column is as wide as its widest number, never less; a text's as its
// longest text up to a point, and less when the page is narrow (a text cut shows it whole in its
// tooltip, down to its heading's longest word); a heading wraps between its words, never within
// one: a page narrower than that scrolls the table sideways in its box, its texts cut less.
// A click on a column's heading sorts the rows by it, numbers largest first (the slowest step, the
// most tokens) and text in order (numbers in it as numbers: step 9 before step 10); a second click
// the other way; empty cells last. A table that scrolls has a box that finds rows by their text
// (the browser's find sees only the rows drawn). Sorting and finding order the rows' numbers, then
// draw the view again. A step's label links to its section; a step that failed is drawn red.
// Printed, a table is drawn whole, out of its box (the page's print rules).

const HEIGHT = 480;  // px: the most a table's box takes of the page
const AROUND = 30;  // rows drawn above and below the view: what the next scroll frames show
const WIDEST = 40;  // characters: the most of a text its column is sized for
const PAD = 11;  // px a cell takes beside its text: padding, borders (two in the first), 1 spare
const NARROWEST = 64;  // px: a text's column is cut to this first, then to its heading's word

function made(tag, text) {
  const node = document.createElement(tag);
  node.textContent = text;
  return node;
}

function shown(value, decimals) {  // a value as its cell says it
  if (value === null) return "";
  if (!decimals) return String(value);
  const text = value.toFixed(3);  // the three decimals the table shows, unless they read 0 for
  return Number(text) === 0 && value !== 0 ? value.toPrecision(2) : text;  // a value that is not
}

function order(values, down) {  // the rows' numbers, sorted by their values
  const text = new Intl.Collator(undefined, { numeric: true });
  const compare = (a, b) => (typeof a === "number" && typeof b === "number"
    ? a - b : text.compare(String(a), String(b)));  // a column of both: as text
  return values.map((_, r) => r).sort((a, b) => {
    const [x, y] = [values[a], values[b]];
    if (x === null || y === null) return (x === null) - (y === null);
    return down ? compare(y, x) : compare(x, y);
  });
}

function gap() {  // a spacer row, as high as the rows it stands for
  const row = document.createElement("tr");
  row.className = "wb-gap";
  row.append(document.createElement("td"));
  return row;
}

const ruler = document.createElement("canvas").getContext("2d");
function measured(text, font) {  // px `text` takes in `font`
  ruler.font = font;
  return ruler.measureText(text).width;
}

function between(least, most, room) {  // widths from `least` towards `most`, as `room` allows
  const [low, high] = [least, most].map((widths) => widths.reduce((a, b) => a + b, 0));
  const share = high > low ? Math.min(1, Math.max(0, (room - low) / (high - low))) : 1;
  return least.map((width, c) => Math.floor(width + (most[c] - width) * share));
}

function fit(heads, arrowed, contents, numeric, room) {  // each column's px (see the top)
  const whole = contents.map((width, c) => Math.max(width, arrowed[c]));  // all of it
  const cut = contents.map((width, c) => (numeric[c] ? Math.max(width, heads[c])  // a sort's
    : Math.min(whole[c], Math.max(NARROWEST, heads[c]))));  // arrow may wrap; texts cut
  const least = cut.map((width, c) => (numeric[c] ? width : Math.min(width, heads[c])));
  const sum = (widths) => widths.reduce((a, b) => a + b, 0);
  if (sum(least) > room) return cut;  // it scrolls sideways: texts as readable as they were
  return sum(cut) > room ? between(least, cut, room) : between(cut, whole, room);
}

function drawTable(box, table) {
  const count = table.columns.length ? table.columns[0].length : 0;
  const texts = table.columns.map((values, c) => values.map((v) => shown(v, table.decimals[c])));
  const element = document.createElement("table");
  element.className = "dataframe wb-windowed";
  const numeric = table.columns.map((values) => values.some((v) => typeof v === "number"));
  const longest = texts.map((column, c) => {  // the text each column is sized for
    const text = column.reduce((most, t) => (t.length > most.length ? t : most), "");
    // digits alike wide, and a sign as wide as one: "-8.490" is sized as wide as "27.467"
    return numeric[c] ? text.replace(/[0-9-]/g, "0") : text.slice(0, WIDEST);
  });
  const columns = element.appendChild(document.createElement("colgroup"));
  table.names.forEach(() => columns.appendChild(document.createElement("col")));
  const head = element.createTHead().insertRow();
  const body = element.createTBody();
  const scroller = document.createElement("div");
  scroller.className = "wb-table-scroll";
  scroller.append(element);
  const [above, below] = [gap(), gap()];
  [above, below].forEach((row) => { row.firstChild.colSpan = table.names.length; });

  let widths = [];  // px each column has for its text, set by `size`
  let font = "";  // the cells' font
  let sizedFor = -1;  // the box's width they were set for
  function size() {  // the columns' widths in the page's width: `fit`
    if (box.clientWidth === sizedFor) return false;
    sizedFor = box.clientWidth;
    font = getComputedStyle(element).font;
    const bold = getComputedStyle(head.firstChild).font;
    const heads = table.names.map((name) => PAD + Math.max(  // its longest word
      ...name.split(" ").map((word) => measured(word, bold))));
    const arrowed = table.names.map((name, c) => Math.max(  // and its last with a sort's arrow
      heads[c], PAD + measured(`${name.split(" ").pop()} \u25bc`, bold)));
    const contents = longest.map((text) => PAD + measured(text, font));
    const room = box.clientWidth - (scroller.offsetWidth - scroller.clientWidth);  // its scrollbar's
    const px = fit(heads, arrowed, contents, numeric, room);
    px.forEach((width, c) => { columns.children[c].style.width = `${width}px`; });
    element.style.width = `${px.reduce((a, b) => a + b, 0)}px`;
    widths = px.map((width) => width - PAD + 1);  // the text fits in these, its spare pixel too
    return true;
  }

  let rows = [...Array(count).keys()];  // the rows' numbers, in the order shown
  let found = rows;  // those the find box keeps, in that order
  let height = 0;  // px a row takes, measured on the first one drawn
  let drawn = [-1, -1];

  const marked = new Set(table.marked);  // rows of steps that failed
  function row(r) {
    const line = document.createElement("tr");
    if (marked.has(r)) line.className = "wb-failed";
    texts.forEach((column, c) => {
      const cell = document.createElement("td");
      if (table.links && c === 0) {  // to the step's section
        const link = cell.appendChild(made("a", column[r]));
        link.href = `#step-${r}`;
      } else {
        cell.textContent = column[r];
      }
      if (!numeric[c] && measured(column[r], font) > widths[c]) cell.title = column[r];  // cut
      if (numeric[c]) cell.className = "wb-number";
      line.append(cell);
    });
    return line;
  }

  let printing = false;  // a printed page has no view to scroll: every row is drawn
  function draw(again) {  // the rows in view and AROUND them, at multiples of AROUND
    const view = height ? Math.floor(scroller.scrollTop / height) : 0;
    const first = printing ? 0 : Math.max(0, Math.floor(view / AROUND) * AROUND - AROUND);
    const last = printing ? found.length
      : Math.min(found.length, first + 3 * AROUND + Math.ceil(HEIGHT / (height || 20)));
    if (!again && first === drawn[0] && last === drawn[1]) return;
    drawn = [first, last];
    body.replaceChildren(above, ...found.slice(first, last).map(row), below);
    if (!height && last > first) height = above.nextSibling.getBoundingClientRect().height;
    above.firstChild.style.height = `${first * height}px`;
    below.firstChild.style.height = `${(found.length - last) * height}px`;
    above.hidden = first === 0;
    below.hidden = last === found.length;
  }

  const sorted = { column: -1, down: false };
  const headings = table.names.map((name, c) => {
    const heading = made("th", name);
    heading.title = "sort by this column";
    if (numeric[c]) heading.className = "wb-number";
    heading.tabIndex = 0;  // sorted from the keyboard too: Enter or Space on a focused heading
    heading.addEventListener("click", () => {
      sorted.down = sorted.column === c ? !sorted.down : numeric[c];
      sorted.column = c;
      rows = order(table.columns[c], sorted.down);
      find();
      headings.forEach((other, i) => {
        other.textContent = table.names[i] + (i === c ? (sorted.down ? " \u25bc" : " \u25b2") : "");
        if (i === c) other.setAttribute("aria-sort", sorted.down ? "descending" : "ascending");
        else other.removeAttribute("aria-sort");
      });
    });
    heading.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" && event.key !== " ") return;
      event.preventDefault();
      heading.click();
    });
    return heading;
  });
  head.append(...headings);

  const search = made("input", "");
  const said = made("span", "");
  let words = null;  // each row's text, lowercased, made on the first search
  function find() {
    const query = search.value.trim().toLowerCase();
    if (query && words === null) {
      words = rows.map((_, r) => texts.map((column) => column[r]).join("\n").toLowerCase());
    }
    found = query ? rows.filter((r) => words[r].includes(query)) : rows;
    said.textContent = query ? `${found.length.toLocaleString()} of ${count.toLocaleString()} rows`
      : `${count.toLocaleString()} rows`;
    scroller.scrollTop = 0;
    draw(true);
  }
  if (count > HEIGHT / 20) {  // it scrolls: a box to find rows by their text
    const tools = box.appendChild(document.createElement("div"));
    tools.className = "wb-table-tools";
    search.type = "search";
    search.placeholder = "find rows by their text";
    let timer = null;
    search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(find, 150); });
    tools.append(search, said);
    said.textContent = `${count.toLocaleString()} rows`;
  }
  box.append(scroller);
  let pending = false;
  scroller.addEventListener("scroll", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(false); });
  });
  addEventListener("beforeprint", () => { printing = true; draw(true); });
  addEventListener("afterprint", () => { printing = false; draw(true); });
  draw(true);
  size();  // with the rows drawn: beside the scrollbar they make
  draw(true);
  new ResizeObserver(() => { if (size()) draw(true); }).observe(box);  // the window's width
}

function drawTables() {  // each once: a notebook's page holds tables other outputs drew
  for (const box of document.querySelectorAll("div.wb-table[data-table]")) {
    const data = document.getElementById(box.dataset.table);
    delete box.dataset.table;
    drawTable(box, JSON.parse(data.textContent));
  }
}
// once the page is parsed, after the explorer's script (earlier in the page) has sized the
// step sections: drawing a table lays the page out to measure its rows, and sizing the
// sections after that laid all 16,666 of them out again
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawTables);
else drawTables();
