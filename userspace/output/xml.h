/* Writing text into XML (the SVG outputs). */
#ifndef MEMPROF_XML_H
#define MEMPROF_XML_H

#include <stdio.h>

/* s as XML character data or attribute value: & < > " escaped, control
 * characters other than tab dropped. */
void xml_text(FILE *out, const char *s);

#endif
