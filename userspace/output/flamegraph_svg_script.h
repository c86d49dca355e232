/* The SVG flame graph's own script (flamegraph_svg_script.c). */
#ifndef MEMPROF_FLAMEGRAPH_SVG_SCRIPT_H
#define MEMPROF_FLAMEGRAPH_SVG_SCRIPT_H

extern const char flamegraph_svg_script[];

#endif
