// The report's tables (its steps, its agents), each drawn from its columns: every value is set
// as text. A step's label links to its section. A click on a column's heading sorts the rows by
// it, numbers largest first (the slowest step, the most tokens) and text in order (numbers in
// it as numbers: step 9 before step 10); a second click the other way; empty cells last.

function made(tag, text) {
  const node = document.createElement(tag);
  node.textContent = text;
  return node;
}

function order(values, down) {  // the rows' indexes, sorted by their values
  const text = new Intl.Collator(undefined, { numeric: true });
  const compare = (a, b) => (typeof a === "number" && typeof b === "number"
    ? a - b : text.compare(String(a), String(b)));  // a column of both: as text
  return values.map((_, r) => r).sort((a, b) => {
    const [x, y] = [values[a], values[b]];
    if (x === null || y === null) return (x === null) - (y === null);
    return down ? compare(y, x) : compare(x, y);
  });
}

function drawTable(box, table) {
  const element = document.createElement("table");
  element.className = "dataframe";
  const head = element.createTHead().insertRow();
  const body = element.createTBody();
  const count = table.columns.length ? table.columns[0].length : 0;
  const rows = [];
  for (let r = 0; r < count; r += 1) {
    const row = body.insertRow();
    table.columns.forEach((values, c) => {
      const value = values[r];
      const text = value === null ? "" : table.decimals[c] ? value.toFixed(3) : String(value);
      if (table.links && c === 0) {  // to the step's section
        const link = made("a", text);
        link.href = `#step-${r}`;
        row.insertCell().append(link);
      } else {
        row.append(made("td", text));
      }
    });
    rows.push(row);
  }
  const sorted = { column: -1, down: false };
  const headings = table.names.map((name, c) => {
    const heading = made("th", name);
    heading.title = "sort by this column";
    heading.style.cursor = "pointer";
    heading.addEventListener("click", () => {
      const values = table.columns[c];
      const numbers = values.some((v) => typeof v === "number");
      sorted.down = sorted.column === c ? !sorted.down : numbers;
      sorted.column = c;
      body.append(...order(values, sorted.down).map((r) => rows[r]));
      headings.forEach((other, i) => {
        other.textContent = table.names[i] + (i === c ? (sorted.down ? " \u25bc" : " \u25b2") : "");
      });
    });
    return heading;
  });
  head.append(...headings);
  box.append(element);
}

for (const box of document.querySelectorAll("div.wb-table[data-table]")) {
  drawTable(box, JSON.parse(document.getElementById(box.dataset.table).textContent));
}
