/*
 * The trigger as a shared library (libattach-trigger.so): its probes,
 * semaphores, control block and site functions live in a mapped .so, not
 * in the executable, as with a runtime linked dynamically.
 */
#define main attach_trigger_main
#include "trigger.c"
