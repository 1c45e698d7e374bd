// Live updates: one server-sent event stream per page; each change replaces
// the text of the cells it names (textContent: nothing from the server is
// read as HTML).
"use strict";
(function () {
  const live = document.getElementById("live");
  const say = (text) => { if (live) live.textContent = text; };
  const set = (row, field, value) => {
    const cell = row.querySelector('[data-field="' + field + '"]');
    if (cell) {
      cell.textContent = value || "";
      if (field === "state" || field === "phase") cell.className = "state " + (value || "");
    }
  };
  const members = (doc) => {
    const body = document.querySelector("#members tbody");
    if (!body || !doc.decision) return;
    body.replaceChildren(...(doc.decision.members || []).map((m) => {
      const tr = document.createElement("tr");
      for (const [v, cls] of [[m.wave], [m.name], [m.state, "state " + m.state], [m.reason]]) {
        const td = document.createElement("td");
        td.textContent = v || "";
        if (cls) td.className = cls;
        tr.append(td);
      }
      return tr;
    }));
  };
  const events = new EventSource("/events");
  window.solarEvents = events; // fleet.js listens to it too: one stream per page
  events.onopen = () => say("Live updates: on");
  events.onerror = () => say("Live updates: reconnecting…");
  events.addEventListener("target", (e) => {
    const t = JSON.parse(e.data);
    const row = document.getElementById("t/" + t.namespace + "/" + t.name);
    if (!row) return;
    set(row, "state", t.state);
    set(row, "bootstrap", t.bootstrap);
    set(row, "message", t.message);
    set(row, "lastReportTime", t.lastReportTime ? t.lastReportTime.replace("T", " ") : "");
  });
  events.addEventListener("rollout", (e) => {
    const r = JSON.parse(e.data);
    const row = document.getElementById("r/" + r.namespace + "/" + r.name);
    if (!row) return;
    set(row, "phase", r.decision && r.decision.phase);
    set(row, "message", r.decision && r.decision.message);
    set(row, "flags", [r.paused ? "paused" : "", r.aborted ? "aborted" : ""].join(" ").trim() || "no");
    if (document.getElementById("members")) members(r);
  });
})();
