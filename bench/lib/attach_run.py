#!/usr/bin/env python3
"""Run a target program detached, or under `memprof-bpf attach`, and report.

usage: attach_run.py [--loader PATH --rate R [--duration S] [--out FILE]]
                     [--stop-until-attached | --gate READY [--detach-first]]
                     [--probe-object PATH]
                     [--preload LIB] [--bpf-maps FILE] -- COMMAND ARGS...

--bpf-maps FILE: once attached (with --stop-until-attached), save
`bpftool -j map show` for the loader's maps (JSON list) to FILE.
--preload LIB: LD_PRELOAD for the target only; LIB is then the probe object.
With --loader and without --stop-until-attached, the loader starts once LIB
is mapped in the target (which may wait for it: MEMPROF_WAIT_TRACER_MS).
Without --loader the target simply runs (the detached baseline, measured
the same way).  With --loader, the loader attaches to the target's pid.

--stop-until-attached: stop the target right after exec, attach, wait until
the kernel has raised the memprof:sample USDT semaphore in the probe object
(default: the target's executable), then let it run; so the whole run is
traced.  Without it the target must wait for the tracer itself (mallocmix
--wait-tracer does).
--gate READY: the target is a test program that writes its pid to READY
and waits for READY.go (tests/ocaml/progs/gate.ml): wait for READY, attach
(the loader's --ready-file READY.loader: for a program without probes the
loader injects its host first), then say go.  With --detach-first, the
loader is stopped (SIGINT) before the go, so the run measures the target
detached after a detach.  The target's CPU time is counted from the go.

Prints the target's stdout, then:
  target_s S            wall time from the (resumed) start to exit
  target_cpu_s S        the target's user+system CPU time (whole life)
  memprof_ctl_samples N control block's sample counter, last value read
                        while the target ran (polled), when it has one
  loader_rc N, loader_cpu_s S, loader_maxrss_kb K   (with --loader)
Exits non-zero with one line on stderr when the target or loader failed.
"""
import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time

SEMAPHORE_TIMEOUT_S = 30.0
POLL_S = 0.02
EXIT_GRACE_S = 2.0
LOADER_GRACE_S = 10.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
CONTROL_SYMBOL = "memprof_probe_control"
CONTROL_MAGIC = 0x4D454D50524F4631
# struct memprof_probe_control: magic u64, abi u32, flags u32,
# requested_rate f64, active_rate f64, samples u64, dropped u64.
CONTROL_FORMAT = "<QIIddQQ"


def fail(msg):
    print(f"attach_run: {msg}", file=sys.stderr)
    sys.exit(1)


def readelf(args, path):
    try:
        return subprocess.run(["readelf", "-W"] + args + [path], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", "") or ""
        fail(f"readelf {' '.join(args)} {path}: {e} {detail.strip()[:200]}")


def first_load_vaddr(path):
    for line in readelf(["-l"], path).splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            return int(f[2], 16)
    fail(f"{path}: no PT_LOAD segment")


def sample_semaphore_vaddr(path):
    out = readelf(["-n"], path)
    block = re.findall(r"Provider: (\S+)\s+Name: (\S+)\s+Location: \S+, Base: \S+, "
                       r"Semaphore: (0x[0-9a-f]+)", out)
    for provider, name, sem in block:
        if provider == "memprof" and name == "sample" and int(sem, 16):
            return int(sem, 16)
    return None


def symbol_vaddr(path, name):
    for line in readelf(["-s"], path).splitlines():
        f = line.split()
        if len(f) >= 8 and f[7] == name and f[3] == "OBJECT":
            return int(f[1], 16)
    return None


def load_bias(pid, path):
    """Where path is mapped in pid, or None; an injected library is mapped
    from the injector's vetted copy, "/memfd:NAME (deleted)"."""
    real = os.path.realpath(path)
    memfd = "/memfd:" + os.path.basename(path)
    try:
        with open(f"/proc/{pid}/maps") as m:
            for line in m:
                f = line.split()
                if len(f) >= 6 and f[2] == "00000000" and \
                        (f[5] == memfd or os.path.realpath(f[5]) == real):
                    start = int(f[0].split("-")[0], 16)
                    return start - (first_load_vaddr(path) & ~0xFFF)
    except OSError:
        return None
    return None


def read_mem(pid, addr, size):
    try:
        with open(f"/proc/{pid}/mem", "rb") as m:
            m.seek(addr)
            return m.read(size)
    except (OSError, ValueError, OverflowError):
        return None


def proc_cpu_s(pid):
    """CPU time of a live process in seconds, or None: the sum of its
    threads' schedstat run times (nanoseconds), else utime + stime from
    /proc/PID/stat (clock ticks, too coarse for an idle loader)."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, IndexError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def proc_rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def bpf_maps():
    import json
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def max_map_id():
    try:
        return max([m["id"] for m in bpf_maps()], default=0)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None


def save_loader_maps(after_id, path):
    """The BPF maps created since map id after_id (the loader's: bpftool
    here cannot name a map's owner), one per name, as bpftool shows them."""
    import json
    try:
        if after_id is None:
            raise ValueError("bpftool map show failed before attaching")
        maps = {}
        for m in sorted(bpf_maps(), key=lambda m: m["id"]):
            if m["id"] > after_id and m.get("name") not in maps:
                maps[m.get("name")] = m
        maps = list(maps.values())
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        maps = {"error": str(e)}
    with open(path, "w") as f:
        json.dump(maps, f)


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        fail("usage: attach_run.py [options] -- COMMAND ARGS...")
    sep = argv.index("--")
    opts, cmd = argv[:sep], argv[sep + 1:]
    loader = rate = out = probe_object = preload = maps_file = None
    duration = "3600"
    stop_until_attached = detach_first = False
    gate = None
    i = 0
    while i < len(opts):
        o = opts[i]
        if o in ("--loader", "--rate", "--duration", "--out", "--probe-object", "--preload",
                 "--bpf-maps"):
            if i + 1 >= len(opts):
                fail(f"{o} needs a value")
            v = opts[i + 1]
            if o == "--loader":
                loader = v
            elif o == "--rate":
                rate = v
            elif o == "--duration":
                duration = v
            elif o == "--out":
                out = v
            elif o == "--preload":
                preload = v
            elif o == "--bpf-maps":
                maps_file = v
            else:
                probe_object = v
            i += 2
        elif o == "--stop-until-attached":
            stop_until_attached = True
            i += 1
        elif o == "--gate":
            if i + 1 >= len(opts):
                fail(f"{o} needs a value")
            gate = opts[i + 1]
            i += 2
        elif o == "--detach-first":
            detach_first = True
            i += 1
        else:
            fail(f"unknown option {o}")
    if not cmd:
        fail("no command")
    if loader and not rate:
        fail("--loader needs --rate")
    if gate and stop_until_attached:
        fail("--gate and --stop-until-attached exclude each other")
    if detach_first and not (gate and loader):
        fail("--detach-first needs --gate and --loader")
    if loader and not os.access(loader, os.X_OK):
        fail(f"loader {loader} is not built")
    exe = cmd[0]
    if not os.access(exe, os.X_OK):
        fail(f"{exe} is not built")
    env = dict(os.environ)
    if preload:
        if not os.access(preload, os.R_OK):
            fail(f"{preload} is not built")
        env["LD_PRELOAD"] = os.path.abspath(preload)
    probe_object = probe_object or preload or exe

    target = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    pid = target.pid
    lp = None
    if stop_until_attached:
        os.kill(pid, signal.SIGSTOP)
    elif loader and preload:
        # The loader finds the probes in the mapped preload: wait until the
        # dynamic linker mapped it (the target then waits for the tracer,
        # MEMPROF_WAIT_TRACER_MS, or by itself).
        deadline = time.monotonic() + SEMAPHORE_TIMEOUT_S
        while load_bias(pid, probe_object) is None:
            if target.poll() is not None or time.monotonic() > deadline:
                fail(f"{probe_object} never mapped in the target")
            time.sleep(0.002)
    elif gate:
        deadline = time.monotonic() + SEMAPHORE_TIMEOUT_S
        while not os.path.exists(gate):
            if target.poll() is not None or time.monotonic() > deadline:
                fail(f"the target never wrote {gate}")
            time.sleep(0.002)
    t0 = time.monotonic()
    first_map_id = max_map_id() if maps_file else None
    if loader:
        largs = [loader, "attach", str(pid), "-d", duration, "--rate", rate]
        if out:
            largs += ["-o", out]
        if gate:
            largs += ["--ready-file", gate + ".loader"]
        lp = subprocess.Popen(largs, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    cpu_at_go = 0.0
    if gate:
        if loader:
            deadline = time.monotonic() + SEMAPHORE_TIMEOUT_S
            while not os.path.exists(gate + ".loader"):
                if lp.poll() is not None or time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    err = lp.stderr.read().strip().splitlines() if lp.poll() is not None else []
                    fail("loader did not attach: " + (err[-1] if err else "no ready file"))
                time.sleep(POLL_S)
            if detach_first:
                _, status, _ = _interrupt(lp)
                if os.waitstatus_to_exitcode(status) not in (0, -signal.SIGINT, 130):
                    fail("the loader failed at the detach")
                lp = None
        cpu_at_go = proc_cpu_s(pid) or 0.0
        open(gate + ".go", "w").close()
        t0 = time.monotonic()
    if stop_until_attached:
        if loader:
            sem = sample_semaphore_vaddr(probe_object)
            if sem is None:
                os.kill(pid, signal.SIGKILL)
                fail(f"{probe_object} has no memprof:sample probe with a semaphore")
            deadline = time.monotonic() + SEMAPHORE_TIMEOUT_S
            while True:
                bias = load_bias(pid, probe_object)
                raw = read_mem(pid, bias + sem, 2) if bias is not None else None
                if raw and struct.unpack("<H", raw)[0] > 0:
                    break
                if lp.poll() is not None or time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    err = lp.stderr.read().strip().splitlines() if lp.poll() is not None else []
                    fail("loader did not attach: " + (err[-1] if err else "semaphore never rose"))
                time.sleep(POLL_S)
        if loader and maps_file:
            save_loader_maps(first_map_id, maps_file)
        os.kill(pid, signal.SIGCONT)
        t0 = time.monotonic()

    # Poll the control block's sample counter while the target runs.
    ctl_vaddr = symbol_vaddr(probe_object, CONTROL_SYMBOL)
    ctl_samples = None
    stdout_text = []

    def reader():
        stdout_text.append(target.stdout.read())

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    lcpu0 = proc_cpu_s(lp.pid) if lp else None
    lcpu1 = lrss = None
    tl = t0
    target_status = target_ru = None
    while True:
        wpid, status, ru = os.wait4(pid, os.WNOHANG)
        if wpid == pid:
            target_status, target_ru = status, ru
            break
        if lp:
            c = proc_cpu_s(lp.pid)
            if c is not None:
                lcpu1, tl = c, time.monotonic()
                lrss = proc_rss_kb(lp.pid) or lrss
        if ctl_vaddr is not None:
            bias = load_bias(pid, probe_object)
            raw = read_mem(pid, bias + ctl_vaddr, struct.calcsize(CONTROL_FORMAT)) \
                if bias is not None else None
            if raw and len(raw) == struct.calcsize(CONTROL_FORMAT):
                fields = struct.unpack(CONTROL_FORMAT, raw)
                if fields[0] == CONTROL_MAGIC:
                    ctl_samples = fields[5]
        time.sleep(POLL_S)
    t1 = time.monotonic()
    th.join()
    sys.stdout.write("".join(stdout_text))
    print(f"target_s {t1 - t0:.6f}")
    print(f"target_cpu_s {target_ru.ru_utime + target_ru.ru_stime - cpu_at_go:.6f}")
    if ctl_samples is not None:
        print(f"memprof_ctl_samples {ctl_samples}")
    rc = os.waitstatus_to_exitcode(target_status)
    target.returncode = rc
    if lcpu0 is not None and lcpu1 is not None and tl > t0:
        print(f"loader_run_cpu_s {lcpu1 - lcpu0:.6f}")
        print(f"loader_run_cpu_pct {100.0 * (lcpu1 - lcpu0) / (tl - t0):.3f}")
    if lrss is not None:
        print(f"loader_rss_kb {lrss}")

    if lp:
        try:
            _, status, ru = os.wait4(lp.pid, 0) if _wait_timeout(lp, EXIT_GRACE_S) \
                else _interrupt(lp)
        except ChildProcessError:
            status, ru = 0, None
        lrc = os.waitstatus_to_exitcode(status)
        lp.returncode = lrc
        err = lp.stderr.read().strip().splitlines()
        print(f"loader_rc {lrc}")
        if ru is not None:
            print(f"loader_cpu_s {ru.ru_utime + ru.ru_stime:.6f}")
            print(f"loader_maxrss_kb {ru.ru_maxrss}")
        if lrc not in (0, -signal.SIGINT, 130):
            fail(f"loader exited {lrc}: {err[-1] if err else ''}")
    if rc != 0:
        fail(f"target exited {rc}")


def _wait_timeout(p, timeout):
    """True once p has exited (not reaped), False after timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            r = os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        if r is not None:
            return True
        time.sleep(POLL_S)
    return False


def _interrupt(p):
    os.kill(p.pid, signal.SIGINT)
    if not _wait_timeout(p, LOADER_GRACE_S):
        os.kill(p.pid, signal.SIGKILL)
    return os.wait4(p.pid, 0)


if __name__ == "__main__":
    main()
