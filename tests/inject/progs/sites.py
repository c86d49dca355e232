# A Python program for injection (run with PYTHONMALLOC=malloc): three
# sites whose C allocation sizes Python itself reports.  The sites are named
# by exported C functions of the interpreter, so that a stripped python3
# still names them: PyByteArray_Resize (bytearray(n)), _PyUnicode_JoinArray
# (str.join) and PyBytes_FromStringAndSize (bytes.ljust).
#
#   python3 sites.py GO_FILE ROUNDS
#
# It writes GO_FILE.ready, then waits for GO_FILE.
# Output: "site NAME words W", the exact words allocated at each site.
import os
import sys
import time

go, rounds = sys.argv[1], int(sys.argv[2])
with open(go + ".ready.tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(go + ".ready.tmp", go + ".ready")
deadline = time.time() + 120
while not os.path.exists(go):
    # About 1 MiB per millisecond (lists: no site's frames), so the malloc
    # host polls and sees the tracer.
    for _ in range(16):
        [None] * 8192
    time.sleep(0.001)
    if time.time() > deadline:
        sys.exit("sites.py: no " + go)

N_ARRAY, N_JOIN, N_BYTES = 200000, 150000, 100000
parts = ["ab"] * (N_JOIN // 3)


def words_of(nbytes):
    return (nbytes + 7) // 8


words = {"PyByteArray_Resize": 0, "_PyUnicode_JoinArray": 0, "PyBytes_FromStringAndSize": 0}
for i in range(rounds):
    a = bytearray(N_ARRAY + i % 3)
    b = "q".join(parts)
    c = b"k".ljust(N_BYTES + i % 7)
    words["PyByteArray_Resize"] += words_of(a.__alloc__())
    words["_PyUnicode_JoinArray"] += words_of(sys.getsizeof(b))
    words["PyBytes_FromStringAndSize"] += words_of(sys.getsizeof(c))
for name, w in words.items():
    print("site", name, "words", w)
