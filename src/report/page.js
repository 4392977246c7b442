// Filters by outcome, tool and rule. They read the address on load (`?outcome=blocked` or
// `#outcome=blocked&tool=bash`) and write the fragment when changed, so a view is a link.
// `#call-ID` shows that call whatever the filters.
(function () {
  "use strict";
  var form = document.getElementById("filters");
  var calls = Array.prototype.slice.call(document.querySelectorAll("article.call"));
  var bars = Array.prototype.slice.call(document.querySelectorAll(".bar"));
  var shown = document.getElementById("shown");
  var names = ["outcome", "tool", "rule"];

  function read() {
    var wanted = {};
    var parts = [location.search.slice(1)];
    if (location.hash.indexOf("=") >= 0) parts.push(location.hash.slice(1));
    parts.forEach(function (p) {
      new URLSearchParams(p).forEach(function (v, k) {
        if (names.indexOf(k) >= 0) wanted[k] = v;
      });
    });
    return wanted;
  }

  function matches(el, wanted) {
    if (wanted.outcome && el.dataset.outcome !== wanted.outcome) return false;
    if (wanted.tool && el.dataset.tool !== wanted.tool) return false;
    if (wanted.rule && (el.dataset.rules || "").split("|").indexOf(wanted.rule) < 0) return false;
    return true;
  }

  function apply(wanted) {
    var n = 0;
    var visible = {};
    calls.forEach(function (el) {
      var ok = matches(el, wanted);
      el.hidden = !ok;
      if (ok) { n++; visible[el.id] = true; }
    });
    bars.forEach(function (b) { b.classList.toggle("hidden", !visible[b.dataset.call]); });
    names.forEach(function (k) {
      var s = form.elements[k];
      if (s) s.value = wanted[k] || "";
    });
    shown.textContent = n + " of " + calls.length + " calls shown";
    document.body.dataset.shown = String(n);
  }

  function fromForm() {
    var wanted = {};
    var q = new URLSearchParams();
    names.forEach(function (k) {
      var v = form.elements[k].value;
      if (v) { wanted[k] = v; q.set(k, v); }
    });
    apply(wanted);
    var s = q.toString();
    history.replaceState(null, "", s ? "#" + s : location.pathname + location.search);
  }

  form.addEventListener("change", fromForm);
  form.addEventListener("reset", function () { setTimeout(fromForm, 0); });
  window.addEventListener("hashchange", function () {
    if (location.hash.indexOf("#call-") === 0) {
      apply({});
      var el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (el) el.scrollIntoView();
    } else {
      apply(read());
    }
  });
  apply(location.hash.indexOf("#call-") === 0 ? {} : read());
})();
