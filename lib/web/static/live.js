// roster web console: follow a live run's transcript (server-sent
// events). Text is inserted as text, never as markup.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var live = document.getElementById("live");
  var box = document.getElementById("transcript");
  if (!live || !box || !window.EventSource) { return; }
  var es = new EventSource(live.getAttribute("data-src"));
  es.addEventListener("entry", function (ev) {
    var e = JSON.parse(ev.data);
    var div = document.createElement("div");
    div.className = "e e-" + String(e.kind).replace(/[^a-z_]/g, "") + (e.is_error ? " e-error" : "");
    if (e.label) {
      var t = document.createElement("span");
      t.className = "tool";
      t.textContent = "[" + e.label + "] ";
      div.appendChild(t);
    }
    if (e.args) {
      var a = document.createElement("code");
      a.className = "args";
      a.textContent = e.args;
      div.appendChild(a);
    }
    var s = document.createElement("span");
    s.className = "t";
    s.textContent = e.text || "";
    div.appendChild(s);
    box.appendChild(div);
  });
  es.addEventListener("end", function () {
    live.textContent = "the run is over; reload for its record";
    es.close();
  });
  es.addEventListener("problem", function (ev) {
    live.textContent = "stopped following: " + ev.data;
    es.close();
  });
});
