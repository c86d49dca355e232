/* Names as a person reads them: C++ demangled, OCaml as Module.function. */
#ifndef MEMPROF_DEMANGLE_H
#define MEMPROF_DEMANGLE_H

/*
 * The readable form of symbol name sym, malloc'ed: demangled C++
 * (_Z...), Module.function for OCaml, else a copy of sym; a symbol
 * version (name@@VERSION) is left out.  NULL only when
 * out of memory.
 */
char *demangle(const char *sym);

#endif
