"""C code called from Python allocating through PyMem_Malloc (ctypes calling
the interpreter's own API, with the GIL held: ctypes.pythonapi), for
tests/python/test_python.c: its samples carry the native frames (libffi's
ffi_call) under the Python function that called it.

Usage: ctypes_alloc.py STOPFILE   calls until STOPFILE exists
"""
import ctypes
import os
import sys

pymem_malloc = ctypes.pythonapi.PyMem_Malloc
pymem_malloc.restype = ctypes.c_void_p
pymem_malloc.argtypes = [ctypes.c_size_t]
pymem_free = ctypes.pythonapi.PyMem_Free
pymem_free.argtypes = [ctypes.c_void_p]


def via_ctypes():
    pymem_free(pymem_malloc(50000))


print("ready", os.getpid(), flush=True)
calls = 0
while not os.path.exists(sys.argv[1]):
    for _ in range(100):
        via_ctypes()
    calls += 100
    print("round", calls, flush=True)
print("done", calls, flush=True)
