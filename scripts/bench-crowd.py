#!/usr/bin/env python3
"""Crowd benchmark for pdvm (issue 10): N simultaneous
`palloc -N 1 --inherit none` against a pdvm with N scheduler nodes.

Every palloc runs `cat FIFO` as its command, so it holds its allocation
until the benchmark opens the FIFO: all N allocations are then held at once
and "no double grant" means N distinct nodes. Reports how many succeeded,
the latency (palloc start -> allocation printed) p50/p99/max, the same
measured from each palloc's own process start (its fork, from /proc, so the
time the benchmark itself takes to create 1000 processes on a small machine
is not counted), and pdvm's CPU time per connection.

With --prestarted, the N processes are started first, each a shell blocked
on a start gate, and released at once: each then execs palloc, so the
latency (release -> allocation printed) no longer includes the driver's
1000 forks, only what "1000 pallocs at once" costs (their exec, connect,
handshake, request, grant).

With --hold, each palloc holds its allocation itself (`palloc --hold`)
instead of running `cat FIFO`, and is ended with SIGTERM.

With --scale, runs the crowd at 30, 100, 300 and N and prints, side by
side, the latency and each palloc's CPU at each size: registering, finding
and sweeping holders must cost the same with 30 or 1000 of them alive, so
the CPU per palloc stays flat (issue 28).

usage: scripts/bench-crowd.py [N] [TARGET_DIR] [--prestarted] [--hold] [--scale]
       (default 1000, target/debug)
"""

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time

ARGS = [a for a in sys.argv[1:] if a not in ("--prestarted", "--hold", "--scale")]
SCALE = "--scale" in sys.argv[1:]
PRESTARTED = "--prestarted" in sys.argv[1:]
# --hold: each palloc holds its allocation itself (`palloc --hold`, no
# command of its own to start) until the benchmark sends it SIGTERM.
HOLD = "--hold" in sys.argv[1:]
N = int(ARGS[0]) if len(ARGS) > 0 else 1000
BIN = ARGS[1] if len(ARGS) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "target", "debug")
DEADLINE = 120.0


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime + stime


def proc_start(pid):
    """When process `pid` started (its fork), in CLOCK_BOOTTIME seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))] if v else float("nan")


def main():
    if not SCALE:
        return crowd(N)["code"]
    rows = []
    for n in sorted({min(30, N), min(100, N), min(300, N), N}):
        rows.append(crowd(n))
    print("\nscale (same run): holders  granted  p50 s  p99 s  palloc CPU ms each  pdvm CPU us each")
    for r in rows:
        print(f"  {r['n']:>8}  {r['ok']:>7}  {r['p50']:.3f}  {r['p99']:.3f}  {r['cpu_ms']:>18.2f}  {r['dvm_us']:>16.0f}")
    return max(r["code"] for r in rows)


def crowd(N):
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    tmp = tempfile.mkdtemp(prefix="bench-crowd.")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMIX_", "PRTE_", "OMPI_"))}
    env["TMPDIR"] = tmp
    env["NO_COLOR"] = "1"
    # pdvm says "DVM ready" on stderr; wait for it at most 20 s.
    dvm = subprocess.Popen(
        [os.path.join(BIN, "pdvm"), "--nodes", "1", "--scheduler-nodes", str(N), "--tmpdir", tmp],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    ready = selectors.DefaultSelector()
    ready.register(dvm.stderr, selectors.EVENT_READ)
    if not ready.select(timeout=20) or dvm.stderr.readline().strip() != "DVM ready":
        dvm.kill()
        sys.exit("bench-crowd: pdvm did not start")
    # Keep reading pdvm's stderr so it can never block on a full pipe.
    import threading
    threading.Thread(target=lambda: [None for _ in dvm.stderr], daemon=True).start()
    fifo = os.path.join(tmp, "gate")
    os.mkfifo(fifo)
    # Held open read-write: every `cat` opens at once and blocks reading;
    # closing it is the release signal (EOF for all).
    gate = os.open(fifo, os.O_RDWR)
    # Raise our fd limit for N pipes.
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * N + 64)), hard))
    except Exception:
        pass
    ticks0 = cpu_ticks(dvm.pid)
    sel = selectors.DefaultSelector()
    procs = []
    t0 = time.monotonic()
    palloc = [os.path.join(BIN, "palloc"), "-N", "1", "--inherit", "none", "--json"]
    palloc += ["--hold"] if HOLD else ["--", "cat", fifo]
    start_gate = None
    if PRESTARTED:
        start = os.path.join(tmp, "start")
        os.mkfifo(start)
        start_gate = os.open(start, os.O_RDWR)
        # `read` returns at the gate's EOF; then the shell becomes palloc.
        palloc = ["/bin/sh", "-c", 'read _ < "$0"; exec "$@"', start] + palloc
    for i in range(N):
        p = subprocess.Popen(palloc, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, env=env)
        rec = {"i": i, "start": time.monotonic(), "lat": None, "alloc": None, "nodes": [], "buf": b"",
               "born": proc_start(p.pid), "own": None}
        procs.append((p, rec))
        os.set_blocking(p.stdout.fileno(), False)
        sel.register(p.stdout, selectors.EVENT_READ, (p, rec))
    spawned = time.monotonic() - t0
    if PRESTARTED:
        # Every shell blocked in its read, then all released at once.
        def blocked(pid):
            try:
                with open(f"/proc/{pid}/wchan") as f:
                    return f.read().strip() in ("pipe_read", "pipe_wait", "fifo_open", "wait_for_partner")
            except OSError:
                return False
        wait_end = time.monotonic() + 120
        while not all(blocked(p.pid) for p, _ in procs) and time.monotonic() < wait_end:
            time.sleep(0.2)
        ticks0 = cpu_ticks(dvm.pid)
        released = time.monotonic()
        os.close(start_gate)
        for _, rec in procs:
            rec["start"] = released
            rec["born"] = None
    pending = N
    end = time.monotonic() + DEADLINE
    while pending > 0 and time.monotonic() < end:
        for key, _ in sel.select(timeout=0.5):
            p, rec = key.data
            try:
                chunk = os.read(key.fileobj.fileno(), 65536)
            except BlockingIOError:
                continue
            if not chunk:
                sel.unregister(key.fileobj)
                if rec["lat"] is None:
                    pending -= 1
                continue
            rec["buf"] += chunk
            while b"\n" in rec["buf"]:
                line, rec["buf"] = rec["buf"].split(b"\n", 1)
                try:
                    v = json.loads(line)
                except ValueError:
                    continue
                if v.get("type") == "allocation" and rec["lat"] is None:
                    rec["lat"] = time.monotonic() - rec["start"]
                    if rec["born"] is not None:
                        rec["own"] = time.clock_gettime(time.CLOCK_BOOTTIME) - rec["born"]
                    rec["alloc"] = v.get("alloc_id")
                    rec["nodes"] = v.get("nodes") or []
                    pending -= 1
    ticks1 = cpu_ticks(dvm.pid)
    # Release everyone at once.
    os.close(gate)
    if HOLD:
        import signal
        for p, _ in procs:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    # A `cat` that opened the FIFO after that close waits for a writer:
    # open and close it again until every palloc has ended.
    end = time.monotonic() + 60
    while any(p.poll() is None for p, _ in procs) and time.monotonic() < end:
        fd = os.open(fifo, os.O_RDWR)
        time.sleep(0.2)
        os.close(fd)
    codes = []
    for p, _ in procs:
        try:
            codes.append(p.wait(timeout=5))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(-9)
    import resource
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    tools_cpu = (kids.ru_utime + kids.ru_stime) - (before.ru_utime + before.ru_stime)
    dvm.terminate()
    dvm.wait(timeout=30)
    ok = [r for _, r in procs if r["lat"] is not None]
    lats = [r["lat"] for r in ok]
    nodes = [n for r in ok for n in r["nodes"]]
    ids = [r["alloc"] for r in ok]
    hz = os.sysconf("SC_CLK_TCK")
    cpu = (ticks1 - ticks0) / hz
    how = "prestarted, released at once" if PRESTARTED else "spawned"
    how += ", --hold" if HOLD else ", -- cat FIFO"
    print(f"crowd: {N} simultaneous palloc -N 1 --inherit none ({how}; driver spawned them in {spawned:.2f}s)")
    # Under --hold each palloc is ended by SIGTERM: 143, having released.
    expect = 143 if HOLD else 0
    print(f"  granted:  {len(ok)}/{N}; exit {expect}: {sum(1 for c in codes if c == expect)}/{N}")
    print(f"  latency:  p50 {pct(lats, 50):.3f}s  p99 {pct(lats, 99):.3f}s  max {max(lats) if lats else float('nan'):.3f}s")
    own = [r["own"] for r in ok if r["own"] is not None]
    if own:
        print(f"  from each palloc's own start (1/{os.sysconf('SC_CLK_TCK')} s resolution): "
              f"p50 {pct(own, 50):.3f}s  p99 {pct(own, 99):.3f}s  max {max(own):.3f}s")
    print(f"  double grants: {len(nodes) - len(set(nodes))} (nodes held at once: {len(set(nodes))}); "
          f"duplicate ids: {len(ids) - len(set(ids))}")
    print(f"  pdvm CPU while granting: {cpu:.2f}s = {1e6 * cpu / max(1, N):.0f} us per palloc "
          f"(connect, handshake, NEW, status)")
    print(f"  the pallocs' own CPU (and their `cat`s): {tools_cpu:.2f}s = "
          f"{1e3 * tools_cpu / max(1, N):.2f} ms per palloc; on {os.cpu_count()} cores that alone "
          f"takes at least {tools_cpu / max(1, os.cpu_count()):.2f}s")
    return {"n": N, "ok": len(ok), "p50": pct(lats, 50), "p99": pct(lats, 99),
            "cpu_ms": 1e3 * tools_cpu / max(1, N), "dvm_us": 1e6 * cpu / max(1, N),
            "code": 0 if len(ok) == N and len(nodes) == len(set(nodes)) else 1}


if __name__ == "__main__":
    sys.exit(main())
