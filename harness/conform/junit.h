/* junit.h — junit.xml from the conform report: one testcase per
 * scenario x interpreter x unwinder configuration. */
#ifndef CF_JUNIT_H
#define CF_JUNIT_H

#include <json-c/json.h>

#include "strbuf.h"

/* Renders the JUnit XML of a report object (the content of report.json). */
int cf_junit_render(json_object *report, cf_strbuf *out);

/* Appends s escaped for XML text and attributes; invalid UTF-8 becomes
 * U+FFFD and characters XML 1.0 forbids become '?'. */
int cf_xml_escape(cf_strbuf *out, const char *s);

#endif
