// Live device states: the events "device" of live.js's stream (one per
// page) replace a Device's row on the fleet page, adding it when new and
// removing it when deleted, and its namespace's counts wherever shown
// (textContent: nothing from the server is read as HTML).
"use strict";
(function () {
  const events = window.solarEvents;
  if (!events) return;
  const fields = ["deviceId", "platform", "labels", "state", "detail", "stateTime", "running", "attempt", "attemptTime", "reason", "repair"];
  const fill = (row, d) => {
    for (const f of fields) {
      const cell = row.querySelector('[data-field="' + f + '"]');
      if (!cell) continue;
      if (f === "repair") {
        const code = document.createElement("code");
        code.textContent = d.repair || "";
        cell.replaceChildren(...(d.repair ? [code] : []));
      } else {
        cell.textContent = d[f] || "";
      }
      if (f === "state") cell.className = "state " + (d.state || "");
      if (f === "attempt") cell.title = d.attemptId || "";
    }
  };
  const newRow = (d) => {
    const tr = document.createElement("tr");
    tr.id = "d/" + d.namespace + "/" + d.name;
    const name = document.createElement("td");
    name.textContent = d.name;
    tr.append(name);
    for (const f of fields) {
      const td = document.createElement("td");
      td.dataset.field = f;
      tr.append(td);
    }
    return tr;
  };
  events.addEventListener("device", (e) => {
    const c = JSON.parse(e.data);
    const d = c.device;
    const counts = document.getElementById("f/" + d.namespace);
    if (counts) {
      counts.replaceChildren(...(c.counts || []).map((n) => {
        const li = document.createElement("li");
        li.className = "state " + n.State;
        li.textContent = n.State + ": " + n.N;
        return li;
      }));
    }
    let row = document.getElementById("d/" + d.namespace + "/" + d.name);
    if (c.deleted) {
      if (row) row.remove();
      return;
    }
    const body = document.querySelector("#fleet tbody");
    if (!row && body && counts) { // this namespace's fleet page
      row = newRow(d);
      body.append(row);
    }
    if (row) fill(row, d);
  });
})();
