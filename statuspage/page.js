"use strict";
(function () {
  var main = document.getElementById("state"), live = document.getElementById("live"), skew = 0;
  function fmt(ms) {
    if (ms <= 0) return "now";
    var s = ms / 1000;
    if (s < 10) return s.toFixed(1) + "s";
    if (s < 60) return Math.floor(s) + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + ("0" + Math.floor(s % 60)).slice(-2) + "s";
    if (s < 172800) return (s / 3600).toFixed(1) + "h";
    return (s / 86400).toFixed(1) + "d";
  }
  function tick() {
    var now = Date.now() + skew, els = main.querySelectorAll("[data-until]");
    for (var i = 0; i < els.length; i++) els[i].textContent = fmt(+els[i].getAttribute("data-until") - now);
  }
  function mark(text, cls) { live.textContent = text; live.className = cls; }
  if (!window.EventSource) return;
  var es = new EventSource("?format=sse");
  es.onmessage = function (m) {
    var d = JSON.parse(m.data);
    skew = d.now - Date.now();
    if (typeof d.html === "string") main.innerHTML = d.html;
    mark("live", "pass");
    tick();
  };
  es.onerror = function () {
    if (es.readyState === 2) mark("not updating: reload to retry", "fail");
    else mark("reconnecting", "warn");
  };
  setInterval(tick, 250);
})();
