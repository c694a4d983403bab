# Sourced by scripts/dist/install-c.sh and package-c.sh: which documentation
# pages ship with the C library and with the payidem command, and how they
# are copied. Expects $root, the repository root.
#
#   cli_docs   the pages `payidem --help` and its manual pages point to
#   c_docs     those and the pages the C README links
#   ship_docs DIR SRC=DST...  pages of the checkout into DIR, their links to
#              each other kept, those to other files of the checkout pointing
#              to the repository (scripts/dist/ship-docs.py)
#   c_doc_files   every file ship_c_docs writes, relative to its DIR
#   ship_c_docs DIR  README.md (the C README), docs/ and examples/c/ into DIR

cli_docs=(cli.md journal-integrity.md postgres-journal.md metrics.md)
c_docs=("${cli_docs[@]}" replay-store.md versioning.md)
c_examples=(pay.c CMakeLists.txt)

# The repository's address: Cargo.toml's [workspace.metadata.release]
# repository (read without cargo: `sudo make install` may have none).
docs_repository() {
    awk -F' = ' '/^\[/ { section = $0; next }
        section == "[workspace.metadata.release]" && $1 == "repository" { gsub(/"/, "", $2); print $2 }' \
        "$root/Cargo.toml"
}

ship_docs() {
    local dir=$1 repository
    shift
    repository="$(docs_repository)"
    [ -n "$repository" ] || { echo "docs.sh: no repository in Cargo.toml's [workspace.metadata.release]" >&2; return 1; }
    python3 "$root/scripts/dist/ship-docs.py" "$root" "$repository" "$dir" "$@"
}

c_doc_files() {
    local page
    echo README.md
    for page in "${c_docs[@]}"; do echo "docs/$page"; done
    for page in "${c_examples[@]}"; do echo "examples/c/$page"; done
}

ship_c_docs() {
    local pages=(ffi/README.md=README.md) page
    for page in "${c_docs[@]}"; do pages+=("docs/$page=docs/$page"); done
    ship_docs "$1" "${pages[@]}" || return 1
    install -d "$1/examples/c"
    for page in "${c_examples[@]}"; do install -m 0644 "$root/examples/c/$page" "$1/examples/c/"; done
    chmod -R u=rwX,go=rX "$1/README.md" "$1/docs" "$1/examples"
}
