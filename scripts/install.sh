#!/usr/bin/env bash
# Install pmix-tools as site software, or take it away again.
#
#   scripts/install.sh [--prefix DIR] [--from DIR]    install (default /usr/local)
#   scripts/install.sh [--prefix DIR] --uninstall     remove what it installed
#
# What goes where, under PREFIX:
#   bin/                                   palloc pspawn prelease pwatch pdvm psched
#   share/man/man1/                        one page per binary (NAME.1)
#   share/bash-completion/completions/     NAME
#   share/zsh/site-functions/              _NAME
#   share/fish/vendor_completions.d/       NAME.fish
#   share/modulefiles/pmix-tools/VERSION   a module file (Environment Modules
#                                          and Lmod) that puts bin/ on PATH and
#                                          share/man on MANPATH
#   share/pmix-tools/systemd/{user,system}/ psched's service units (pointing at
#                                          this bin/psched) and psched.env, the
#                                          settings example (docs/psched.md:
#                                          "psched as a service")
#   share/pmix-tools/install-manifest      what was installed, for --uninstall
#
# The binaries are built with `cargo build --release` unless --from DIR names
# a folder that holds them already (e.g. target/release). A site installs a
# version beside the others with --prefix /opt/pmix-tools/VERSION and lets
# users `module use /opt/pmix-tools/VERSION/share/modulefiles; module load
# pmix-tools`. --uninstall removes exactly the files and folders the
# manifest lists (folders only once empty), then the manifest.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly BINARIES=(palloc pspawn prelease pwatch pdvm psched)
prefix=/usr/local
from=""
uninstall=0

die() { echo "install.sh: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || die "--prefix needs a folder"; prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --from) [ $# -ge 2 ] || die "--from needs a folder"; from="$2"; shift 2 ;;
        --from=*) from="${1#--from=}"; shift ;;
        --uninstall) uninstall=1; shift ;;
        -h|--help) usage 0 ;;
        *) echo "install.sh: error: unknown argument '$1'" >&2; usage 2 ;;
    esac
done
case "$prefix" in
    /*) ;;
    *) prefix="$(pwd)/$prefix" ;;
esac
manifest="$prefix/share/pmix-tools/install-manifest"

version() {
    awk -F'"' '/^version *=/ { print $2; exit }' "$repo/Cargo.toml"
}

# Remove what the manifest lists: files first, then folders deepest first,
# each only if empty (a folder shared with other software stays).
do_uninstall() {
    [ -f "$manifest" ] || die "nothing to uninstall: no manifest at $manifest"
    local kind path
    while read -r kind path; do
        [ "$kind" = f ] && rm -f -- "$path"
    done <"$manifest"
    rm -f -- "$manifest"
    local dirs
    dirs="$(grep '^d ' "$manifest.dirs" 2>/dev/null | cut -c3- | awk '{ print length, $0 }' |
        sort -rn | cut -d' ' -f2-)" || true
    rm -f -- "$manifest.dirs"
    while read -r path; do
        [ -n "$path" ] && { rmdir -- "$path" 2>/dev/null || true; }
    done <<<"$dirs"
    echo "install.sh: removed pmix-tools from $prefix"
}

CREATED=()
FILES=()

# Make folder $1 (and its parents), recording each one this run creates.
make_dir() {
    local d="$1" missing=()
    while [ ! -d "$d" ]; do
        missing+=("$d")
        d="$(dirname "$d")"
    done
    mkdir -p -- "$1"
    CREATED+=("${missing[@]}")
}

# Copy $1 to $2 with mode $3, recording it.
put() {
    make_dir "$(dirname "$2")"
    install -m "$3" -- "$1" "$2"
    FILES+=("$2")
}

module_file() {
    cat <<EOF
#%Module1.0
## pmix-tools $1: reservations and jobs on a PMIx DVM (PRRTE) from the shell.
proc ModulesHelp { } {
    puts stderr "pmix-tools $1: palloc, pspawn, prelease, pwatch, pdvm, psched (man palloc)"
}
module-whatis "pmix-tools $1: palloc, pspawn, prelease and pwatch for a PMIx DVM; pdvm; psched"
conflict pmix-tools
prepend-path PATH $prefix/bin
prepend-path MANPATH $prefix/share/man
EOF
}

do_install() {
    local v bin_dir b tmp
    v="$(version)"
    [ -n "$v" ] || die "no version in $repo/Cargo.toml"
    if [ -n "$from" ]; then
        bin_dir="$from"
    else
        command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs) or give --from DIR with built binaries"
        (cd "$repo" && cargo build --release --bins) || die "cargo build --release failed"
        bin_dir="$repo/target/release"
    fi
    for b in "${BINARIES[@]}"; do
        [ -x "$bin_dir/$b" ] || die "$bin_dir/$b not found or not executable"
    done
    [ -f "$manifest" ] && die "pmix-tools is already installed in $prefix (manifest $manifest): uninstall first (--uninstall)"
    make_dir "$(dirname "$manifest")"
    for b in "${BINARIES[@]}"; do
        put "$bin_dir/$b" "$prefix/bin/$b" 755
        put "$repo/man/$b.1" "$prefix/share/man/man1/$b.1" 644
        put "$repo/completions/$b.bash" "$prefix/share/bash-completion/completions/$b" 644
        put "$repo/completions/$b.zsh" "$prefix/share/zsh/site-functions/_$b" 644
        put "$repo/completions/$b.fish" "$prefix/share/fish/vendor_completions.d/$b.fish" 644
    done
    local unit
    for unit in "$repo"/dist/systemd/user/*.service "$repo"/dist/systemd/system/*.service; do
        tmp="$(mktemp)"
        sed "s|/usr/bin/psched|$prefix/bin/psched|" "$unit" >"$tmp"
        put "$tmp" "$prefix/share/pmix-tools/systemd/$(basename "$(dirname "$unit")")/$(basename "$unit")" 644
        rm -f -- "$tmp"
    done
    put "$repo/dist/systemd/psched.env" "$prefix/share/pmix-tools/systemd/psched.env" 644
    tmp="$(mktemp)"
    module_file "$v" >"$tmp"
    put "$tmp" "$prefix/share/modulefiles/pmix-tools/$v" 644
    rm -f -- "$tmp"
    local f d
    for d in "${CREATED[@]}"; do echo "d $d"; done >"$manifest.dirs"
    for f in "${FILES[@]}"; do echo "f $f"; done >"$manifest"
    echo "install.sh: installed pmix-tools $v in $prefix ($(wc -l <"$manifest") files)"
    case ":$PATH:" in
        *":$prefix/bin:"*) ;;
        *) echo "install.sh: $prefix/bin is not on PATH: add it, or: module use $prefix/share/modulefiles && module load pmix-tools" ;;
    esac
}

if [ "$uninstall" -eq 1 ]; then do_uninstall; else do_install; fi
