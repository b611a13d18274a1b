#!/usr/bin/env python3
"""Checks the relative links of the documentation: every [text](path#anchor) resolves.

For each link in the given Markdown files (default: README.md and docs/*.md) that is not a URL
(http:, https:, mailto:, ...), the path must exist, relative to the linking file (or to the
repository root when it starts with '/'), and an anchor must be the GitHub-style slug of a
heading of the target file (or an explicit <a name="..."> / id="..."). Headings and links
inside fenced code blocks and inline code are ignored, as GitHub ignores them.

Prints one line per broken link, `FILE:LINE: [text](target): why`, and a summary line;
exits 1 when any link is broken, 0 otherwise.

  tools/check_doc_links.py                  # README.md and docs/*.md
  tools/check_doc_links.py e2e/*/README.md  # other files
"""

import glob
import os
import re
import sys
import unicodedata

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); the target may be <...> and may carry a "title".
INLINE_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"<a\s+[^>]*(?:name|id)\s*=\s*\"([^\"]+)\"", re.IGNORECASE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def slug(heading):
    """GitHub's anchor for a heading's text: formatting dropped, lowercased, punctuation
    other than '-' and '_' removed, each space a '-'."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = re.sub(r"(\*\*|__|\*|_(?=\W|$)|(?<=\W)_)", "", text)  # emphasis markers
    text = text.strip().lower()
    out = []
    for ch in text:
        if ch in "-_" or ch == " ":
            out.append("-" if ch == " " else ch)
        elif unicodedata.category(ch)[0] in "LN":
            out.append(ch)
    return "".join(out)


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fence = None
    for number, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, line


_anchor_cache = {}


def anchors_of(path):
    """Every anchor a Markdown file offers: its headings' slugs (repeats get -1, -2, ...) and
    its explicit HTML anchors."""
    if path not in _anchor_cache:
        anchors, seen = set(), {}
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                anchors.add(base if n == 0 else f"{base}-{n}")
            anchors.update(HTML_ANCHOR.findall(line))
        _anchor_cache[path] = anchors
    return _anchor_cache[path]


def links_of(path):
    """(line number, text, target) of every link outside code."""
    for number, line in prose_lines(path):
        line = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        for m in INLINE_LINK.finditer(line):
            yield number, m.group(1), m.group(2).strip("<>")
        m = REFERENCE_DEF.match(line)
        if m:
            yield number, m.group(1), m.group(2).strip("<>")


def check(path):
    """The broken links of one file, as printable lines."""
    problems = []
    rel = os.path.relpath(path, ROOT)
    for number, text, target in links_of(path):
        if SCHEME.match(target) or target.startswith("//"):
            continue  # a URL: not checked here
        file_part, _, anchor = target.partition("#")
        file_part = file_part.split("?", 1)[0]
        if file_part:
            base = ROOT if file_part.startswith("/") else os.path.dirname(path)
            dest = os.path.normpath(os.path.join(base, file_part.lstrip("/")))
        else:
            dest = path
        where = f"{rel}:{number}: [{text}]({target})"
        if not os.path.exists(dest):
            problems.append(f"{where}: no such file {os.path.relpath(dest, ROOT)}")
            continue
        if not anchor:
            continue
        if os.path.isdir(dest) or not dest.endswith(".md"):
            problems.append(f"{where}: an anchor on {os.path.relpath(dest, ROOT)}, which is no Markdown file")
        elif anchor not in anchors_of(dest):
            problems.append(f"{where}: {os.path.relpath(dest, ROOT)} has no heading #{anchor}")
    return problems


def main(argv):
    if argv:
        files = [os.path.abspath(a) for a in argv]
    else:
        files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    problems, links = [], 0
    for path in files:
        links += sum(1 for _ in links_of(path))
        problems += check(path)
    for p in problems:
        print(p)
    print(f"check_doc_links: {len(files)} files, {links} links, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
