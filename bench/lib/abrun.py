#!/usr/bin/env python3
"""Interleaved repetitions: run every configuration once per round, for
several rounds, so that configurations compared with each other always run
side by side (A B C ... then ... C B A, alternating, to cancel drift).

usage: abrun.py SPEC OUT.jsonl [--reps N] [--timeout S]

SPEC has one configuration a line:  LABEL<TAB>SHELL COMMAND
(blank lines and lines starting with # are ignored).  Each command runs
under `bash -c`, so it may set variables, pipe, or run a helper script.

OUT.jsonl gets one JSON object per run: label, round, rc, wall_s (wall
time of the command), cpu_s (user+system time of the command and its
waited-for descendants, from wait4, microsecond resolution), and every "KEY NUMBER" line the command printed on
stdout as values[KEY] (last one wins).  A failed run keeps its rc and the
last line of its stderr in "error".
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

VALUE_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)[ =:]+(-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*$")
DEFAULT_REPS = 5
DEFAULT_TIMEOUT_S = 600
POLL_S = 0.001


def parse_spec(path):
    configs = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if "\t" not in line:
                sys.exit(f"abrun: {path}:{n}: expected LABEL<TAB>COMMAND")
            label, cmd = line.split("\t", 1)
            configs.append((label.strip(), cmd))
    if not configs:
        sys.exit(f"abrun: {path}: no configuration")
    return configs


def run_one(label, cmd, rnd, timeout):
    """Run one command; its CPU time comes from wait4's rusage (microsecond
    resolution, the command and every descendant it waited for)."""
    with tempfile.TemporaryFile("w+") as fout, tempfile.TemporaryFile("w+") as ferr:
        t0 = time.monotonic()
        p = subprocess.Popen(["bash", "-c", cmd], stdout=fout, stderr=ferr,
                             start_new_session=True)
        status = ru = None
        while True:
            pid, st, r = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                status, ru = st, r
                break
            if time.monotonic() - t0 > timeout:
                os.killpg(p.pid, signal.SIGKILL)
                _, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(POLL_S)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        fout.seek(0)
        ferr.seek(0)
        out, err = fout.read(), ferr.read()
    rc = p.returncode
    if wall > timeout:
        err += f"\ntimed out after {timeout} s"
    values = {}
    for line in out.splitlines():
        m = VALUE_LINE.match(line.strip())
        if m:
            values[m.group(1)] = float(m.group(2))
    rec = {"label": label, "round": rnd, "rc": rc, "wall_s": wall,
           "cpu_s": ru.ru_utime + ru.ru_stime, "values": values}
    if rc != 0:
        lines = [l for l in err.strip().splitlines() if l.strip()]
        rec["error"] = lines[-1] if lines else f"exit status {rc}"
    return rec


def main():
    args = sys.argv[1:]
    reps, timeout = DEFAULT_REPS, DEFAULT_TIMEOUT_S
    pos = []
    i = 0
    while i < len(args):
        if args[i] == "--reps" and i + 1 < len(args):
            reps = int(args[i + 1])
            i += 2
        elif args[i] == "--timeout" and i + 1 < len(args):
            timeout = float(args[i + 1])
            i += 2
        else:
            pos.append(args[i])
            i += 1
    if len(pos) != 2 or reps < 1:
        sys.exit("usage: abrun.py SPEC OUT.jsonl [--reps N] [--timeout S]")
    configs = parse_spec(pos[0])
    with open(pos[1], "w") as out:
        for rnd in range(reps):
            order = configs if rnd % 2 == 0 else list(reversed(configs))
            for label, cmd in order:
                rec = run_one(label, cmd, rnd, timeout)
                out.write(json.dumps(rec) + "\n")
                out.flush()
                if rec["rc"] != 0:
                    print(f"abrun: {label} round {rnd}: {rec['error']}",
                          file=sys.stderr)


if __name__ == "__main__":
    main()
