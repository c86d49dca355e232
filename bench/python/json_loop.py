"""The Python host's benchmark (bench/tables/t10-python.sh): a dict,
json.dumps, json.loads loop, timed by the program itself (getrusage around the
loop: user and system CPU time of the whole process, every thread).

usage: json_loop.py ROUNDS [--gate READY] [--hooks on|off]
                           [--fake-tracer RATE LIBRARY]

--gate READY: write the pid to READY, wait for READY.go before the loop
(bench/lib/attach_run.py --gate attaches meanwhile).
--hooks on|off: before the loop, wait (sleeping) until the OBJ domain's
allocator is another than at the start (on: the Python host's hooks are
in) or the same again (off: put back after a detach).
--fake-tracer RATE LIBRARY: for callgrind, where no uprobe can be attached:
LIBRARY (libmemprof-python.so, preloaded) is made to see a tracer by raising
its sample and events semaphores and writing RATE into its control block
(addresses from `nm`) and its options as the loader without --native writes
them; its probe sites stay nops, so everything but the kernel's side of a
sample runs.

Prints: rounds N, user_s S, sys_s S, cpu_s S (and samples N, the control
block's count, with --fake-tracer).
"""
import ctypes
import json
import os
import resource
import subprocess
import sys
import time

RECORDS = 100


def one_round(i):
    d = {
        "id": i,
        "name": "item-%d" % i,
        "records": [
            {"k": j, "label": "r%d.%d" % (i, j), "tags": ["a", "b", str(j)], "score": j * 0.5}
            for j in range(RECORDS)
        ],
    }
    s = json.dumps(d)
    e = json.loads(s)
    return len(s) + len(e["records"])


class Allocator(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in ("ctx", "malloc", "calloc", "realloc", "free")]


def obj_malloc():
    a = Allocator()
    ctypes.pythonapi.PyMem_GetAllocator(2, ctypes.byref(a))
    return a.malloc


def fake_tracer(rate, library):
    """The control block's address: its samples counter is at +32."""
    lib = ctypes.CDLL(library)
    offsets = {}
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    nm = subprocess.run(["nm", library], capture_output=True, text=True, env=env).stdout
    for line in nm.split("\n"):
        f = line.split()
        if len(f) == 3:
            offsets[f[2]] = int(f[0], 16)
    control = ctypes.addressof(ctypes.c_char.in_dll(lib, "memprof_probe_control"))
    base = control - offsets["memprof_probe_control"]
    # struct memprof_probe_control: magic u64, abi u32, flags u32, requested_rate f64, ...
    ctypes.c_double.from_address(control + 16).value = rate
    # As the loader without --native: native frames only below the innermost Python one.
    try:
        ctypes.c_uint32.in_dll(lib, "memprof_probe_python_options").value = 0
    except ValueError:
        pass  # an older host: every native frame
    for name in ("memprof_events_semaphore", "memprof_sample_semaphore"):
        ctypes.c_ushort.from_address(base + offsets[name]).value = 1
    return control


def main():
    args = sys.argv[1:]
    rounds = int(args.pop(0))
    gate = hooks = control = None
    own = obj_malloc()
    while args:
        o = args.pop(0)
        if o == "--gate":
            gate = args.pop(0)
        elif o == "--hooks":
            hooks = args.pop(0) == "on"
        elif o == "--fake-tracer":
            control = fake_tracer(float(args.pop(0)), args.pop(0))
            hooks = True
        else:
            sys.exit("json_loop.py: unknown option " + o)
    one_round(0)
    if gate:
        with open(gate + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.rename(gate + ".tmp", gate)
        while not os.path.exists(gate + ".go"):
            time.sleep(0.005)
    if hooks is not None:
        deadline = time.monotonic() + 30
        while (obj_malloc() != own) != hooks:
            if time.monotonic() > deadline:
                sys.exit("json_loop.py: the hooks never came or went")
            time.sleep(0.002)
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    total = 0
    for i in range(rounds):
        total += one_round(i)
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    print("rounds", rounds)
    user, system = t1.ru_utime - t0.ru_utime, t1.ru_stime - t0.ru_stime
    print("user_s %.6f" % user)
    print("sys_s %.6f" % system)
    print("cpu_s %.6f" % (user + system))
    if control:
        print("samples", ctypes.c_uint64.from_address(control + 32).value)


if __name__ == "__main__":
    main()
