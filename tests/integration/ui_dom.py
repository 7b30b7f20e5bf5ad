#!/usr/bin/env python3
"""Reads what `rdmaemu ui`'s page showed, from the DOM headless Chromium dumped (--dump-dom).

usage: ui_dom.py DOM updates            how many times the page redrew itself from /status.json
       ui_dom.py DOM HOST CLASS         each cell of that class in host HOST's box, one a line
                                        (qp-state, qp-qpn, qp-peer, qp-dest_qpn, mr-lkey, ...)
       ui_dom.py DOM HOST counter NAME  host HOST's counter NAME
       ui_dom.py DOM timeline           the timeline's texts, one a line
"""
import html.parser
import sys


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.updates = None
        self.host = None  # the host box we are in
        self.depth = 0  # <div> depth inside it
        self.cells = {}  # (host, class) -> [text]
        self.counters = {}  # (host, name) -> value
        self.in_timeline = 0
        self.timeline = []
        self.open = None  # (key, text list) of the element whose text we collect

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "updated":
            self.updates = a.get("data-updates")
        if tag == "div":
            if self.host is not None:
                self.depth += 1
            elif (a.get("id") or "").startswith("host-"):
                self.host, self.depth = a["id"][5:], 1
            if a.get("id") == "timeline":
                self.in_timeline = 1
            elif self.in_timeline:
                self.in_timeline += 1
        if self.host is not None and tag == "td" and a.get("class"):
            self.open = ((self.host, a["class"]), [])
        if self.host is not None and tag == "span" and a.get("data-counter"):
            self.open = ((self.host, "counter " + a["data-counter"]), [])
        if self.in_timeline and tag == "text":
            self.open = (("timeline",), [])

    def handle_data(self, data):
        if self.open:
            self.open[1].append(data)

    def handle_endtag(self, tag):
        if self.open and tag in ("td", "span", "text"):
            key, text = self.open
            self.cells.setdefault(key, []).append("".join(text))
            self.open = None
        if tag == "div":
            if self.host is not None:
                self.depth -= 1
                if self.depth == 0:
                    self.host = None
            if self.in_timeline:
                self.in_timeline -= 1


def main():
    p = Page()
    with open(sys.argv[1], encoding="utf-8") as f:
        p.feed(f.read())
    what = sys.argv[2:]
    if what == ["updates"]:
        print(p.updates or 0)
    elif what == ["timeline"]:
        print("\n".join(p.cells.get(("timeline",), [])))
    elif len(what) == 3 and what[1] == "counter":
        for v in p.cells.get((what[0], "counter " + what[2]), []):
            print(v.split("=", 1)[1])
    elif len(what) == 2:
        print("\n".join(p.cells.get((what[0], what[1]), [])))
    else:
        sys.exit(__doc__)


main()
