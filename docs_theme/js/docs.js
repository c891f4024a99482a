/* The docs' own script (docs_theme/README.md), loaded after Bootstrap and before the theme's
   base.js:

   - code blocks highlighted by the vendored highlight.js (js/highlight.min.js);
   - a table-of-contents scrollspy in place of Bootstrap's, which base.js starts: Bootstrap's
     looks each heading up with querySelector("#" + id), which throws a SyntaxError on an id
     starting with a digit ("1-write-the-definition", from a numbered heading); this one uses
     getElementById, which takes any id. */
(function () {
  "use strict";

  function TocSpy(element, options) {
    var sidebar = document.querySelector((options && options.target) || ".bs-sidebar");
    if (!sidebar || !("IntersectionObserver" in window)) {
      return;
    }
    var links = new Map();
    sidebar.querySelectorAll("a.nav-link").forEach(function (link) {
      var id = link.hash ? decodeURIComponent(link.hash.slice(1)) : "";
      var heading = id ? document.getElementById(id) : null;
      if (heading) {
        links.set(heading, link);
      }
    });
    var shown = new Set();
    var observer = new IntersectionObserver(
      function (entries) {
        entries.forEach(function (entry) {
          if (entry.isIntersecting) {
            shown.add(entry.target);
          } else {
            shown.delete(entry.target);
          }
        });
        var first = null;
        shown.forEach(function (heading) {
          if (first === null || heading.getBoundingClientRect().top < first.getBoundingClientRect().top) {
            first = heading;
          }
        });
        if (first === null) {
          return;
        }
        links.forEach(function (link) {
          link.classList.toggle("active", link === links.get(first));
        });
      },
      { rootMargin: "0px 0px -60% 0px" }
    );
    links.forEach(function (link, heading) {
      observer.observe(heading);
    });
    this.observer = observer;
  }
  TocSpy.prototype.refresh = function () {};
  TocSpy.prototype.dispose = function () {
    if (this.observer) {
      this.observer.disconnect();
    }
  };
  if (window.bootstrap) {
    window.bootstrap.ScrollSpy = TocSpy;
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (window.hljs) {
      window.hljs.highlightAll();
    }
  });
})();
