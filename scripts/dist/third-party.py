#!/usr/bin/env python3
"""Prints the third-party notice of payidem's artifacts: every crate linked
into them (normal dependencies of the named workspace packages for the
target), with its licence.

    cargo metadata --locked --format-version 1 --filter-platform TRIPLE | third-party.py [PACKAGE...]

PACKAGE is payidem-ffi (libpayidem, the default), payidem-cli (the
payidem command) and/or payidem-mock (the Windows zip ships it); with several, the notice lists the union once.
"""
import json
import sys

ARTIFACTS = {
    "payidem-ffi": "libpayidem",
    "payidem-cli": "the payidem command",
    "payidem-mock": "the payidem-mock simulator",
}

roots = sys.argv[1:] or ["payidem-ffi"]
for name in roots:
    if name not in ARTIFACTS:
        sys.exit(f"third-party.py: unknown package {name!r} (expected one of {', '.join(ARTIFACTS)})")

meta = json.load(sys.stdin)
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
pkgs = {p["id"]: p for p in meta["packages"]}
seen, todo = set(), []
for name in roots:
    ids = [p["id"] for p in meta["packages"] if p["name"] == name]
    if not ids:
        sys.exit(f"third-party.py: package {name!r} is not in the workspace metadata")
    todo.extend(ids)
while todo:
    i = todo.pop()
    if i in seen:
        continue
    seen.add(i)
    for dep in nodes[i]["deps"]:
        if any(kind["kind"] is None for kind in dep["dep_kinds"]):
            todo.append(dep["pkg"])
what = " and ".join(ARTIFACTS[name] for name in roots)
verb = "link" if len(roots) > 1 else "links"
# "libpayidem" keeps its lower case at the start of the sentence; "the" does not.
if what.startswith("the "):
    what = "T" + what[1:]
print(f"{what} (Apache-2.0) {verb} these crates (name, version, licence).")
print("SQLite, bundled by libsqlite3-sys, is in the public domain.\n")
# Several versions of one crate may be linked: name then version (then id)
# makes the order independent of set iteration.
for p in sorted((pkgs[i] for i in seen if pkgs[i]["source"]), key=lambda p: (p["name"], p["version"], p["id"])):
    print(f"{p['name']} {p['version']}: {p.get('license') or 'see the crate'}")
