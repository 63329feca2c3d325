#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/check_links.py [ROOT]: every relative link in the repository's Markdown files
resolves: [text](path), [text](path#anchor) and [text](#anchor) name a file or folder that
exists, and an anchor into a Markdown file names one of its headings (GitHub's rule: lower
case, punctuation other than '-' and '_' dropped, spaces made '-'). Links with a scheme
(https:, mailto:) are not followed. `make doc-check` runs this; exit 1 lists every broken link.
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"(?<!!)\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)  # a link in a heading counts by its text
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out, fenced = {}, set(), False
        for line in open(path, encoding="utf-8"):
            if FENCE.match(line):
                fenced = not fenced
            if fenced:
                continue
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
        for m in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', open(path, encoding="utf-8").read()):
            out.add(m.group(1))
        cache[path] = out
    return cache[path]


def links(path):
    fenced = False
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        if FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        line = re.sub(r"`[^`]*`", "", line)  # code spans are not links
        for rx in (LINK, IMAGE):
            for m in rx.finditer(line):
                yield no, m.group(1)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.md"], cwd=root,
                           check=True, capture_output=True, text=True).stdout.split()
    bad, count = [], 0
    for rel in files:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        for no, target in links(path):
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue
            count += 1
            where, _, frag = target.partition("#")
            dest = path if not where else os.path.normpath(
                os.path.join(os.path.dirname(path), where))
            if not os.path.exists(dest):
                bad.append(f"{rel}:{no}: {target}: no such file ({os.path.relpath(dest, root)})")
            elif frag and dest.endswith(".md") and frag not in anchors(dest):
                bad.append(f"{rel}:{no}: {target}: {os.path.relpath(dest, root)} has no "
                           f"heading with anchor #{frag}")
    if bad:
        print(f"check_links: {len(bad)} broken relative link(s) of {count}:", file=sys.stderr)
        print("\n".join(bad), file=sys.stderr)
        return 1
    print(f"check_links: {count} relative links in {len(files)} Markdown files resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
