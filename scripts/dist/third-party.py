#!/usr/bin/env python3
"""Prints the third-party notice of libpayidem: every crate linked into the
library (normal dependencies of payidem-ffi for the target), with its licence.

    cargo metadata --locked --format-version 1 --filter-platform TRIPLE | third-party.py
"""
import json
import sys

meta = json.load(sys.stdin)
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
pkgs = {p["id"]: p for p in meta["packages"]}
root = next(p["id"] for p in meta["packages"] if p["name"] == "payidem-ffi")
seen, todo = set(), [root]
while todo:
    i = todo.pop()
    if i in seen:
        continue
    seen.add(i)
    for dep in nodes[i]["deps"]:
        if any(kind["kind"] is None for kind in dep["dep_kinds"]):
            todo.append(dep["pkg"])
print("libpayidem (Apache-2.0) links these crates (name, version, licence).")
print("SQLite, bundled by libsqlite3-sys, is in the public domain.\n")
# Several versions of one crate may be linked: name then version (then id)
# makes the order independent of set iteration.
for p in sorted((pkgs[i] for i in seen if pkgs[i]["source"]), key=lambda p: (p["name"], p["version"], p["id"])):
    print(f"{p['name']} {p['version']}: {p.get('license') or 'see the crate'}")
