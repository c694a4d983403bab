# Sourced by the scripts/dist tests: checks of a built ELF file, the same
# for every architecture. $elf_prefix names the binutils to read it with
# ("" for the host's, aarch64-linux-gnu- for arm64 files); each function
# prints what it found and returns non-zero when the promise does not hold.

# The newest GLIBC_x.y version an ELF file needs (empty for none).
glibc_floor() { "${elf_prefix:-}objdump" -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1; }
at_most_2_17() {
    local v
    v="$(glibc_floor "$1")"
    echo "$1 needs glibc $v"
    [ -n "$v" ] && [ "$(printf '%s\n2.17\n' "$v" | sort -V | tail -n 1)" = 2.17 ]
}
# The machine an ELF file is for, as readelf names it (X86-64, AArch64).
machine_is() { local m; m="$(readelf -hW "$1" | sed -n 's/^ *Machine: *//p')"; echo "$1: $m"; [ "$m" = "$2" ]; }
only_payidem_dynamic() { ! "${elf_prefix:-}nm" -D --defined-only "$1" | awk '{print $NF}' | grep -v '^payidem_'; }
only_payidem_global() { ! "${elf_prefix:-}nm" -g --defined-only "$1" | awk 'NF == 3 {print $3}' | grep -v '^payidem_'; }
sections() { readelf -SW "$1" | awk '{print $2}'; }
stripped_with_link() { local s; s="$(sections "$1")"; ! grep -qx '\.debug_info' <<< "$s" && grep -qx '\.gnu_debuglink' <<< "$s"; }
no_debug_info() { local s; s="$(sections "$1")"; ! grep -qx '\.debug_info' <<< "$s"; }
# The functions the header declares, and those an artifact defines.
declared() { grep -E '^[a-z].*payidem_[a-z0-9_]+\(' "$1" | grep -oE 'payidem_[a-z0-9_]+\(' | tr -d '(' | sort -u; }
defined_in_a() { "${elf_prefix:-}nm" -g --defined-only "$1" | awk '$2 == "T" {print $3}' | sort -u; }
defined_in_so() { "${elf_prefix:-}nm" -D --defined-only "$1" | awk '$2 == "T" {print $3}' | sort -u; }
same_functions() { diff <(declared "$1") <("$2" "$3"); }
size_of() { stat -c %s "$1"; }
