#!/usr/bin/env python3
"""Copies Markdown pages of the checkout into a package's documentation
directory and keeps their links working there: a relative link to a page
that is shipped too points to its shipped copy; one to anything else in the
checkout points to that file in the project's repository.

    ship-docs.py ROOT REPOSITORY_URL DEST SRC=DST...

ROOT is the checkout, SRC a page's path in it (e.g. ffi/README.md), DST its
path under DEST (e.g. README.md). Pages are written 0644.
"""
import os
import posixpath
import re
import sys

root, repository, dest, *pairs = sys.argv[1:]
if not pairs:
    sys.exit("usage: ship-docs.py ROOT REPOSITORY_URL DEST SRC=DST...")
shipped = dict(pair.split("=", 1) for pair in pairs)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def rewrite(src, dst, text):
    def one(match):
        target = match.group(1)
        path, hashmark, fragment = target.partition("#")
        if not path or "://" in path or path.startswith("mailto:"):
            return match.group(0)
        in_repo = posixpath.normpath(posixpath.join(posixpath.dirname(src), path))
        if in_repo in shipped:
            new = posixpath.relpath(shipped[in_repo], posixpath.dirname(dst) or ".")
        elif in_repo.startswith("../") or not os.path.exists(os.path.join(root, in_repo)):
            sys.exit(f"ship-docs.py: {src} links {target}, which is not in the checkout")
        else:
            new = f"{repository}/blob/main/{in_repo}"
        return f"]({new}{hashmark}{fragment})"

    return LINK.sub(one, text)


for src, dst in shipped.items():
    with open(os.path.join(root, src), encoding="utf-8") as f:
        text = f.read()
    out = os.path.join(dest, dst)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(rewrite(src, dst, text))
    os.chmod(out, 0o644)
