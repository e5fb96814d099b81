/* live_report.h — the reports of a live run: live.json (the run's report
 * object), junit.xml (a testcase per scenario x interpreter x
 * configuration, failing when it returned a wrong sample) and live.md (a
 * table of samples, valid, rejected, wrong, rejected % and samples per
 * second, then the example wrong samples by rule). */
#ifndef CF_LIVE_REPORT_H
#define CF_LIVE_REPORT_H

#include <json-c/json.h>

#include "strbuf.h"

/* Renders live.md from the report object. */
int cf_live_md_render(json_object *report, cf_strbuf *out);

/* Writes live.json, junit.xml and live.md into report_dir (absolute) and
 * prints live.md and the report paths on stdout.  CF_OK or CF_E_IO (with
 * a message on stderr). */
int cf_live_write_reports(const char *report_dir, json_object *report);

#endif
