/*
 * Decompressed copies of separate debug files, kept on disk.  libdw
 * decompresses every compressed debug section of a file whole when it
 * opens it (Debian's libc6-dbg: 4 MiB of file, 10 MiB once decompressed)
 * and keeps the copies in the heap for as long as the file is open.  A
 * plain copy is mapped instead, and only the pages the symbolization reads
 * count in the loader's memory.
 */
#ifndef MEMPROF_DEBUG_CACHE_H
#define MEMPROF_DEBUG_CACHE_H

#include <stddef.h>

/* The cache's folder: MEMPROF_DEBUG_CACHE when set (empty: no cache), else
 * DEBUG_CACHE_ROOT_DIR for root, else $XDG_CACHE_HOME or ~/.cache, under
 * memprof-bpf/debug. */
#define DEBUG_CACHE_ENV "MEMPROF_DEBUG_CACHE"
#define DEBUG_CACHE_ROOT_DIR "/var/cache/memprof-bpf/debug"

/* Where the system keeps debug files by build id (libdwfl's default). */
#define DEBUG_CACHE_SYSTEM_DIR "/usr/lib/debug"

/*
 * The plain copy of the debug file of the module with this build id: from
 * the cache, or made now (in this process) from the system's debug file
 * for that build id (DEBUG_CACHE_SYSTEM_DIR/.build-id/xx/rest.debug) when
 * it has compressed sections.  Its fd, and its path in *path (malloc'd);
 * -1 when there is none (no such debug file, nothing compressed in it, no
 * usable cache): libdwfl's own search goes on then.  It must run before
 * that search, since libdwfl keeps the file it validated.  The folder and
 * every folder above it must be trusted: owned by this user or root, and
 * writable by no one else unless sticky; the folder itself this user's.
 */
int debug_cache_find(const unsigned char *build_id, size_t build_id_len, char **path);

#endif
