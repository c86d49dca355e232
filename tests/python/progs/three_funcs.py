"""Three functions of known allocation sizes, for tests/python/test_python.c.

keep_records keeps what it allocates (the live view's leader); make_buffers
and make_strings allocate temporaries.  Every object a function allocates
stays alive until it returns, and no allocation is a realloc, so
tracemalloc's peak growth over a call (mode "truth") is the bytes the call
requested: the ground truth of each function's share of allocated bytes.

Usage: three_funcs.py run STOPFILE      rounds until STOPFILE exists
       three_funcs.py threads STOPFILE  one thread per function, until STOPFILE
       three_funcs.py fork STOPFILE     rounds, forking a child every 20 rounds
                                        (which waits until its hooks are gone)
       three_funcs.py child GOFILE STOPFILE  rounds until GOFILE, then a child
                                              runs rounds until STOPFILE

Each mode prints "ready PID", then a line "round ..." for each unit of work
done (every 20 rounds; each call of grow_lists; in threads, once every
thread has done one more call), so a test can wait for work done.
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


# One call a round: each thread waits at the barrier for the others.  Free
# running threads made rounds of the slowest one, whose turn at the GIL could
# take seconds (make_buffers' thread, page faulting in malloc as glibc trims
# and grows its arena every call, kept the GIL for most of each interval).
def next_call(stopfile, barrier, calls):
    """False when the thread stops (then every thread stops)."""
    import threading

    try:
        if calls:
            barrier.wait()
    except threading.BrokenBarrierError:
        return False
    if os.path.exists(stopfile):
        barrier.abort()
        return False
    calls.append(1)
    return True


def loop_records(stopfile, barrier, calls):
    while next_call(stopfile, barrier, calls):
        keep_records()


def loop_buffers(stopfile, barrier, calls):
    while next_call(stopfile, barrier, calls):
        make_buffers()


def loop_strings(stopfile, barrier, calls):
    while next_call(stopfile, barrier, calls):
        make_strings()


def threads(stopfile):
    """Prints "round N" each time every thread has done one more call."""
    import threading

    loops = (loop_records, loop_buffers, loop_strings)
    rounds = [0]

    def round_done():
        rounds[0] += 1
        print("round", rounds[0], flush=True)

    barrier = threading.Barrier(len(loops), action=round_done)
    calls = [[] for f in loops]
    workers = [threading.Thread(target=f, args=(stopfile, barrier, c)) for f, c in zip(loops, calls)]
    for w in workers:
        w.start()
    print("ready", os.getpid(), flush=True)
    for w in workers:
        w.join()
    print("done", *[len(c) > 0 for c in calls], flush=True)


def unhooked_child(own):
    """In a child: 0 once the OBJ allocator is its own again (a child forked
    while traced has no tracer, so the hooks go), 3 if they stay 30 s."""
    import time

    end = time.monotonic() + 30
    while obj_malloc() != own:
        if time.monotonic() > end:
            return 3
        time.sleep(0.005)
    return 0


def fork(stopfile):
    """Every 20 rounds a child runs 3 rounds, waits for its own allocator and
    exits 0; prints "round N hooked" for a child forked while hooked."""
    own = obj_malloc()
    print("ready", os.getpid(), flush=True)
    rounds = forks = failed = hooked_forks = 0
    while not os.path.exists(stopfile):
        one_round(rounds)
        rounds += 1
        if rounds % 20 == 0:
            hooked = obj_malloc() != own
            pid = os.fork()
            if pid == 0:
                for r in range(3):
                    one_round(r)
                os._exit(unhooked_child(own))
            _, status = os.waitpid(pid, 0)
            forks += 1
            failed += status != 0
            hooked_forks += hooked
            print("round", rounds, "hooked" if hooked else "", flush=True)
    print("done forks", forks, "failed", failed, "hooked", hooked_forks, flush=True)


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
            if rounds % 20 == 0:
                print("round", rounds, flush=True)
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
    rounds = 0
    while not os.path.exists(stopfile):
        grow_lists()
        rounds += 1
        print("round", rounds, flush=True)
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
