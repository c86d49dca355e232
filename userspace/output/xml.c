/* Writing text into XML (xml.h). */
#include "xml.h"

void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, out);
		}
	}
}
