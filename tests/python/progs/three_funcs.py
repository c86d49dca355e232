"""Three functions of known allocation sizes, for tests/python/test_python.c.

keep_records keeps what it allocates (the live view's leader); make_buffers
and make_strings allocate temporaries.  Every object a function allocates
stays alive until it returns, and no allocation is a realloc, so
tracemalloc's peak growth over a call (mode "truth") is the bytes the call
requested: the ground truth of each function's share of allocated bytes.

Usage: three_funcs.py run STOPFILE      rounds until STOPFILE exists
       three_funcs.py threads STOPFILE  one thread per function, until STOPFILE
       three_funcs.py fork STOPFILE     rounds, forking a child every 20 rounds
       three_funcs.py child GOFILE STOPFILE  rounds until GOFILE, then a child
                                              runs rounds until STOPFILE
       three_funcs.py grow STOPFILE     grow_lists until STOPFILE
       three_funcs.py truth ROUNDS       per-function bytes under tracemalloc
"""
import os
import sys

N_RECORDS = 2000
N_BUFFERS = 200
N_STRINGS = 2000
INDEX = list(range(max(N_RECORDS, N_BUFFERS, N_STRINGS)))
RECORD_BYTES = 200
BUFFER_BYTES = 4000
STRING_CHARS = 60
LETTER = "s"
KEPT = []
KEPT_ROUNDS = 40


def keep_records():
    out = [None] * N_RECORDS
    for i in INDEX[:N_RECORDS]:
        out[i] = bytes(RECORD_BYTES)
    return out


def make_buffers():
    out = [None] * N_BUFFERS
    for i in INDEX[:N_BUFFERS]:
        out[i] = bytearray(BUFFER_BYTES)
    return out


def make_strings():
    out = [None] * N_STRINGS
    for i in INDEX[:N_STRINGS]:
        out[i] = LETTER * STRING_CHARS
    return out


FUNCS = (keep_records, make_buffers, make_strings)


def one_round(rounds):
    # The records of the last KEPT_ROUNDS rounds stay alive.
    KEPT.append(keep_records())
    if len(KEPT) > KEPT_ROUNDS:
        del KEPT[0]
    make_buffers()
    make_strings()


def obj_malloc():
    """The OBJ domain's malloc function in force (PyMem_GetAllocator)."""
    import ctypes

    class Allocator(ctypes.Structure):
        _fields_ = [(name, ctypes.c_void_p) for name in ("ctx", "malloc", "calloc", "realloc", "free")]

    a = Allocator()
    ctypes.pythonapi.PyMem_GetAllocator(2, ctypes.byref(a))
    return a.malloc


def run(stopfile):
    """Prints "hooked" / "unhooked" when another OBJ allocator comes or goes."""
    own = obj_malloc()
    hooked = False
    print("ready", os.getpid(), flush=True)
    rounds = 0
    while not os.path.exists(stopfile):
        one_round(rounds)
        rounds += 1
        if rounds % 20 == 0:
            print("round", rounds, flush=True)
        if (obj_malloc() != own) != hooked:
            hooked = not hooked
            print("hooked" if hooked else "unhooked", flush=True)
    print("done", rounds, flush=True)


def loop_records(stopfile, counts):
    while not os.path.exists(stopfile):
        keep_records()
        counts[0] += 1


def loop_buffers(stopfile, counts):
    while not os.path.exists(stopfile):
        make_buffers()
        counts[1] += 1


def loop_strings(stopfile, counts):
    while not os.path.exists(stopfile):
        make_strings()
        counts[2] += 1


def threads(stopfile):
    import threading

    counts = [0, 0, 0]
    loops = (loop_records, loop_buffers, loop_strings)
    workers = [threading.Thread(target=f, args=(stopfile, counts)) for f in loops]
    for w in workers:
        w.start()
    print("ready", os.getpid(), flush=True)
    for w in workers:
        w.join()
    print("done", *[c > 0 for c in counts], flush=True)


def fork(stopfile):
    """Every 20 rounds a child runs 3 rounds and exits 0; prints the children's outcome."""
    print("ready", os.getpid(), flush=True)
    rounds = forks = failed = 0
    while not os.path.exists(stopfile):
        one_round(rounds)
        rounds += 1
        if rounds % 20 == 0:
            pid = os.fork()
            if pid == 0:
                for r in range(3):
                    one_round(r)
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            forks += 1
            failed += status != 0
            print("round", rounds, flush=True)
    print("done forks", forks, "failed", failed, flush=True)


def child(gofile, stopfile):
    print("ready", os.getpid(), flush=True)
    rounds = 0
    while not os.path.exists(gofile):
        one_round(rounds)
        rounds += 1
    pid = os.fork()
    if pid == 0:
        print("child", os.getpid(), flush=True)
        while not os.path.exists(stopfile):
            one_round(rounds)
            rounds += 1
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("child status", status, flush=True)


def grow_lists():
    """Lists grown by append: their storage is reallocated (PyMem_Realloc, 32 to
    512 bytes, sizes pymalloc serves); every list dies here."""
    for _ in INDEX[:N_RECORDS]:
        items = []
        for j in range(60):
            items.append(j)


def grow(stopfile):
    print("ready", os.getpid(), flush=True)
    while not os.path.exists(stopfile):
        grow_lists()
    print("done", flush=True)


def truth(rounds):
    import tracemalloc

    tracemalloc.start(1)
    totals = {f.__name__: 0 for f in FUNCS}
    for _ in range(rounds):
        for f in FUNCS:
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            r = f()
            totals[f.__name__] += tracemalloc.get_traced_memory()[1] - before
            del r
    for name, total in totals.items():
        print(name, total / rounds)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2])
    elif sys.argv[1] == "threads":
        threads(sys.argv[2])
    elif sys.argv[1] == "fork":
        fork(sys.argv[2])
    elif sys.argv[1] == "grow":
        grow(sys.argv[2])
    elif sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3])
    else:
        truth(int(sys.argv[2]))
