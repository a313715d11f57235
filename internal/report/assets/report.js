// Opens the failed attempt a timeline bar links to (and the folded lanes
// or sections around it), and expands or collapses every failure at once.
(function () {
  "use strict";
  function reveal(id) {
    var el = id && document.getElementById(id);
    if (!el) return;
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
  }
  function fromHash() {
    reveal(decodeURIComponent(location.hash.slice(1)));
  }
  document.addEventListener("click", function (e) {
    var t = e.target;
    var a = t && t.closest ? t.closest("a[href^='#']") : null;
    if (a) reveal(a.getAttribute("href").slice(1));
    var b = t && t.closest ? t.closest("button[data-all]") : null;
    if (b) {
      var open = b.getAttribute("data-all") === "open";
      var list = document.querySelectorAll("details.attempt");
      for (var i = 0; i < list.length; i++) list[i].open = open;
    }
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
