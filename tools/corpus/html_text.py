"""Text blocks from help/manual HTML, for aligning an English page with its German twin.

Two readers:
  lo_help_paragraphs  LibreOffice help: {paragraph id: text}; hidden per-platform/per-module
                      inline variants (<span hidden class="MAC">) are dropped, the default kept.
  manual_blocks       DocBook/asciidoc manuals: [(signature, text)] in document order, where the
                      signature holds what translation leaves unchanged (tag, anchors, links,
                      numbers, literals) and serves difflib alignment.
"""

import html.parser
import re

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr"}
SKIP_CONTENT = {"script", "style", "pre", "noscript", "head", "title", "textarea", "svg"}


class _LoHelp(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []        # (tag, kind) kind: "para", "hidden", "skip", ""
        self.cur_id = None
        self.buf = []
        self.out = {}

    def _hidden_depth(self):
        return any(k in ("hidden", "skip") for _, k in self.stack)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in VOID:
            if tag == "br" and self.cur_id is not None:
                self.buf.append(" ")
            return
        kind = ""
        cls = a.get("class") or ""
        if tag in SKIP_CONTENT or "code" in cls.split() or cls in ("bascode", "pycode"):
            kind = "skip"
        elif a.get("hidden") is not None and cls and self.cur_id is not None:
            # An inline platform/module variant (MAC, WIN, CALC, ...): only the unclassed
            # "default" variant is what a reader sees.
            kind = "hidden"
        elif tag in ("p", "h1", "h2", "h3", "h4", "h5", "h6") and a.get("id") and \
                re.match(r"(par|hd)_", a["id"]) and self.cur_id is None:
            kind = "para"
            self.cur_id = a["id"]
            self.buf = []
        self.stack.append((tag, kind))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        # Pop to the matching tag (tolerates unclosed inline elements).
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                popped = self.stack[i:]
                del self.stack[i:]
                if any(k == "para" for _, k in popped) and self.cur_id is not None:
                    text = "".join(self.buf)
                    if self.cur_id not in self.out:
                        self.out[self.cur_id] = text
                    self.cur_id = None
                    self.buf = []
                return

    def handle_data(self, data):
        if self.cur_id is not None and not self._hidden_depth():
            self.buf.append(data)


def lo_help_paragraphs(text):
    p = _LoHelp()
    p.feed(text)
    p.close()
    return p.out


BLOCK = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "td", "th", "caption",
         "figcaption", "blockquote", "div", "title"}
LITERAL_CLASSES = {"literal", "command", "filename", "option", "userinput", "systemitem",
                   "computeroutput", "varname", "function", "code", "package", "parameter",
                   "replaceable", "envar", "keycap", "uri", "email", "ulink"}
NAV_CLASSES = {"navheader", "navfooter", "toc", "list-of-tables", "list-of-figures",
               "list-of-examples", "breadcrumbs", "navigation", "footer"}


class _Blocks(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []     # [tag, skip, block-record or None]
        self.blocks = []    # finished: [tag, textparts, features]
        self.open = []      # open block records, innermost last

    def _skipping(self):
        return any(s for _, s, _ in self.stack)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = set((a.get("class") or "").split())
        if tag in VOID:
            if tag == "br" and self.open:
                self.open[-1][1].append(" ")
            if tag == "img" and self.open:
                self.open[-1][2].append("img:" + (a.get("src") or "").rsplit("/", 1)[-1])
            return
        skip = tag in SKIP_CONTENT or bool(cls & NAV_CLASSES)
        rec = None
        if not skip and not self._skipping():
            if tag in BLOCK:
                rec = [tag, [], []]
                self.open.append(rec)
            target = self.open[-1] if self.open else None
            if target is not None:
                for k in ("id", "name"):
                    if a.get(k):
                        target[2].append("#" + a[k])
                if tag == "a" and a.get("href"):
                    href = re.sub(r"\.(en|de|en-US|de-DE)\.html", ".html", a["href"])
                    href = re.sub(r"/(en|de)/", "/", href)
                    target[2].append("href:" + href)
                if cls & LITERAL_CLASSES or tag in ("code", "tt", "kbd", "var"):
                    target[2].append("lit")
        self.stack.append([tag, skip, rec])

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                popped = self.stack[i:]
                del self.stack[i:]
                for _, _, rec in reversed(popped):
                    if rec is not None:
                        for j in range(len(self.open) - 1, -1, -1):
                            if self.open[j] is rec:
                                del self.open[j]
                                break
                        text = " ".join("".join(rec[1]).split())
                        if text:
                            self.blocks.append(rec)
                return

    def handle_data(self, data):
        if self.open and not self._skipping():
            self.open[-1][1].append(data)


def manual_blocks(text):
    """[(signature, text)] of the innermost text blocks of a manual page, in order."""
    p = _Blocks()
    p.feed(text)
    p.close()
    out = []
    for tag, parts, feats in p.blocks:
        t = " ".join("".join(parts).split())
        nums = re.findall(r"\d+", t)
        sig = (tag, tuple(feats), tuple(nums))
        out.append((sig, t))
    # Blocks are listed in closing order (an inner block before its container); that order
    # is the same for both languages, which is all the alignment needs.
    return out
