/* out_gecko.c — the Firefox Profiler's processed profile format (the
 * format version CPython 3.15's own sampler writes: meta.version 32,
 * preprocessedProfileVersion 57): one string array shared by all threads,
 * and for every thread its samples (stack, time in ms) and its stack,
 * frame, function and resource tables, which here are the run's own
 * (every thread gets the same tables; a thread's samples use part of
 * them).  A function is a (name, file) pair, a frame a function at a
 * line, a resource a file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_writer.h"
#include "out.h"

#define GECKO_VERSION 32
#define GECKO_PROCESSED_VERSION 57
#define CATEGORY_OTHER 0
#define CATEGORY_PYTHON 1
#define RESOURCE_TYPE_LIBRARY 1
#define LABEL_MAX 96
#define NAME_MAX_LEN 160
#define FIRST_SLOTS 1024u /* string and function hash slots at the start; doubled at half load */
#define EMPTY UINT32_MAX
#define FNV_OFFSET 14695981039346656037ull
#define FNV_PRIME 1099511628211ull
#define MS_PER_NS 1e-6

/* Strings and (name, file) functions, each interned once. */
typedef struct gecko_tables {
    const char **strings;            /* borrowed from the profile */
    uint32_t nstrings, strings_cap;
    uint32_t *string_slots, string_slots_cap;
    uint32_t *func_name, *func_file; /* string indices of each function */
    uint32_t nfuncs;
    uint32_t *func_slots, func_slots_cap;
    uint32_t *frame_func;            /* the function of each profile frame */
    uint32_t *file_resource;         /* the resource of each file string (EMPTY: not a file) */
    uint32_t *resource_name;         /* string index of each resource */
    uint32_t nresources;
} gecko_tables;

static uint64_t hash_str(const char *s)
{
    uint64_t h = FNV_OFFSET;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * FNV_PRIME;
    return h;
}

static uint64_t hash_pair(uint32_t a, uint32_t b)
{
    return ((uint64_t)a * FNV_PRIME) ^ ((uint64_t)b + FNV_OFFSET) * FNV_PRIME;
}

/* Places idx in slots by hash h (linear probing; slots has room). */
static void place(uint32_t *slots, uint32_t cap, uint64_t h, uint32_t idx)
{
    uint32_t at = (uint32_t)h & (cap - 1);
    while (slots[at] != EMPTY)
        at = (at + 1) & (cap - 1);
    slots[at] = idx;
}

static uint32_t *new_slots(uint32_t cap)
{
    uint32_t *s = malloc((size_t)cap * sizeof *s);
    if (s)
        memset(s, 0xff, (size_t)cap * sizeof *s);
    return s;
}

/* The index of string s, interned on first sight; EMPTY when out of memory. */
static uint32_t intern_string(gecko_tables *g, const char *s)
{
    uint32_t at = (uint32_t)hash_str(s) & (g->string_slots_cap - 1);
    for (; g->string_slots[at] != EMPTY; at = (at + 1) & (g->string_slots_cap - 1))
        if (strcmp(g->strings[g->string_slots[at]], s) == 0)
            return g->string_slots[at];
    if (g->nstrings == g->strings_cap) {
        const char **ns = realloc(g->strings, (size_t)g->strings_cap * 2 * sizeof *ns);
        if (!ns)
            return EMPTY;
        g->strings = ns;
        g->strings_cap *= 2;
    }
    if ((g->nstrings + 1) * 2 > g->string_slots_cap) {
        uint32_t *slots = new_slots(g->string_slots_cap * 2);
        if (!slots)
            return EMPTY;
        g->string_slots_cap *= 2;
        for (uint32_t i = 0; i < g->nstrings; i++)
            place(slots, g->string_slots_cap, hash_str(g->strings[i]), i);
        free(g->string_slots);
        g->string_slots = slots;
        at = (uint32_t)hash_str(s) & (g->string_slots_cap - 1);
        while (g->string_slots[at] != EMPTY)
            at = (at + 1) & (g->string_slots_cap - 1);
    }
    g->strings[g->nstrings] = s;
    g->string_slots[at] = g->nstrings;
    return g->nstrings++;
}

/* The function (name, file) of string indices, interned on first sight. */
static uint32_t intern_func(gecko_tables *g, uint32_t name, uint32_t file)
{
    uint32_t at = (uint32_t)hash_pair(name, file) & (g->func_slots_cap - 1);
    for (; g->func_slots[at] != EMPTY; at = (at + 1) & (g->func_slots_cap - 1))
        if (g->func_name[g->func_slots[at]] == name && g->func_file[g->func_slots[at]] == file)
            return g->func_slots[at];
    g->func_name[g->nfuncs] = name;
    g->func_file[g->nfuncs] = file;
    g->func_slots[at] = g->nfuncs;
    return g->nfuncs++;
}

static void free_tables(gecko_tables *g)
{
    free(g->strings);
    free(g->string_slots);
    free(g->func_name);
    free(g->func_file);
    free(g->func_slots);
    free(g->frame_func);
    free(g->file_resource);
    free(g->resource_name);
}

/* Builds the string, function and resource tables of profile p. */
static int build_tables(gecko_tables *g, const fpr_profile *p)
{
    uint32_t nframes = (uint32_t)fpr_profile_frame_count(p);
    uint32_t room = 2 * nframes + 1; /* every frame's name and file, and "(root)" */
    memset(g, 0, sizeof *g);
    g->strings_cap = room;
    g->string_slots_cap = FIRST_SLOTS;
    g->func_slots_cap = FIRST_SLOTS;
    while (g->func_slots_cap < 2 * (nframes + 1))
        g->func_slots_cap *= 2;
    g->strings = malloc((size_t)room * sizeof *g->strings);
    g->string_slots = new_slots(g->string_slots_cap);
    g->func_name = malloc(((size_t)nframes + 1) * sizeof *g->func_name);
    g->func_file = malloc(((size_t)nframes + 1) * sizeof *g->func_file);
    g->func_slots = new_slots(g->func_slots_cap);
    g->frame_func = malloc(((size_t)nframes + 1) * sizeof *g->frame_func);
    g->file_resource = malloc((size_t)room * sizeof *g->file_resource);
    g->resource_name = malloc(((size_t)nframes + 1) * sizeof *g->resource_name);
    if (!g->strings || !g->string_slots || !g->func_name || !g->func_file || !g->func_slots || !g->frame_func ||
        !g->file_resource || !g->resource_name)
        return -1;
    memset(g->file_resource, 0xff, (size_t)room * sizeof *g->file_resource);
    if (intern_string(g, "(root)") == EMPTY)
        return -1;
    for (uint32_t i = 0; i < nframes; i++) {
        const fpr_frame *f = fpr_profile_frame(p, i);
        uint32_t name = intern_string(g, f->function), file = intern_string(g, f->file);
        if (name == EMPTY || file == EMPTY)
            return -1;
        g->frame_func[i] = intern_func(g, name, file);
        if (g->file_resource[file] == EMPTY) {
            g->resource_name[g->nresources] = file;
            g->file_resource[file] = g->nresources++;
        }
    }
    return 0;
}

static void key_int(jw_writer *j, const char *key, int64_t v)
{
    jw_key(j, key);
    jw_int(j, v);
}

static void key_str(jw_writer *j, const char *key, const char *v)
{
    jw_key(j, key);
    jw_string(j, v);
}

/* An array of n copies of a constant: -1 (int), or null when null_value. */
static void constant_array(jw_writer *j, const char *key, size_t n, bool null_value, int64_t v)
{
    jw_key(j, key);
    jw_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        if (null_value)
            jw_null(j);
        else
            jw_int(j, v);
    }
    jw_end_array(j);
}

static void empty_table(jw_writer *j, const char *key, const char *const *columns, size_t ncolumns)
{
    jw_key(j, key);
    jw_begin_object(j);
    for (size_t i = 0; i < ncolumns; i++) {
        jw_key(j, columns[i]);
        jw_begin_array(j);
        jw_end_array(j);
    }
    key_int(j, "length", 0);
    jw_end_object(j);
}

static void meta(jw_writer *j, const fpr_profile *p, const fpr_run *run)
{
    static const char *const CATEGORY_NAMES[] = {"Other", "Python"};
    static const char *const CATEGORY_COLORS[] = {"grey", "yellow"};
    static const char *const EXTENSION_COLUMNS[] = {"id", "name", "baseURL"};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    char misc[NAME_MAX_LEN];
    snprintf(misc, sizeof misc, "frameproof record, %s mode", fpr_mode_name(fpr_profile_mode(p)));
    jw_key(j, "meta");
    jw_begin_object(j);
    jw_key(j, "interval");
    jw_number(j, run->rate_hz > 0 ? 1000.0 / run->rate_hz
                                       : (run->stats->attempts ? run->stats->elapsed_s * 1000.0 /
                                                                     (double)run->stats->attempts
                                                               : 1.0));
    jw_key(j, "startTime");
    jw_number(j, 0.0);
    key_str(j, "abi", "x86_64");
    key_str(j, "misc", misc);
    key_str(j, "oscpu", "x86_64");
    key_str(j, "platform", "Linux");
    key_int(j, "processType", 0);
    jw_key(j, "categories");
    jw_begin_array(j);
    for (size_t i = 0; i < sizeof CATEGORY_NAMES / sizeof CATEGORY_NAMES[0]; i++) {
        jw_begin_object(j);
        key_str(j, "name", CATEGORY_NAMES[i]);
        key_str(j, "color", CATEGORY_COLORS[i]);
        jw_key(j, "subcategories");
        jw_begin_array(j);
        jw_string(j, "Other");
        jw_end_array(j);
        jw_end_object(j);
    }
    jw_end_array(j);
    key_int(j, "stackwalk", 0);
    key_str(j, "toolkit", "");
    key_int(j, "version", GECKO_VERSION);
    key_int(j, "preprocessedProfileVersion", GECKO_PROCESSED_VERSION);
    key_str(j, "appBuildID", "");
    key_int(j, "physicalCPUs", cpus > 0 ? cpus : 1);
    key_int(j, "logicalCPUs", cpus > 0 ? cpus : 1);
    key_str(j, "CPUName", "");
    key_str(j, "product", "Python");
    jw_key(j, "symbolicated");
    jw_bool(j, true);
    jw_key(j, "markerSchema");
    jw_begin_array(j);
    jw_end_array(j);
    key_str(j, "importedFrom", "frameproof " FP_VERSION_STRING);
    empty_table(j, "extensions", EXTENSION_COLUMNS, sizeof EXTENSION_COLUMNS / sizeof EXTENSION_COLUMNS[0]);
    jw_end_object(j);
}

static void samples(jw_writer *j, const fpr_thread *t)
{
    jw_key(j, "samples");
    jw_begin_object(j);
    jw_key(j, "stack");
    jw_begin_array(j);
    for (size_t k = 0; k < t->count; k++)
        jw_uint(j, t->points[k].stack);
    jw_end_array(j);
    jw_key(j, "time");
    jw_begin_array(j);
    for (size_t k = 0; k < t->count; k++)
        jw_number(j, (double)t->points[k].t_ns * MS_PER_NS);
    jw_end_array(j);
    constant_array(j, "eventDelay", t->count, true, 0);
    jw_key(j, "weight");
    jw_null(j);
    key_str(j, "weightType", "samples");
    key_int(j, "length", (int64_t)t->count);
    jw_end_object(j);
}

/* The run's stack, frame, function and resource tables. */
static void tables(jw_writer *j, const fpr_profile *p, const gecko_tables *g)
{
    size_t nstacks = fpr_profile_stack_count(p), nframes = fpr_profile_frame_count(p);
    jw_key(j, "stackTable");
    jw_begin_object(j);
    jw_key(j, "frame");
    jw_begin_array(j);
    for (uint32_t i = 0; i < nstacks; i++)
        jw_uint(j, fpr_profile_stack(p, i)->frame);
    jw_end_array(j);
    constant_array(j, "category", nstacks, false, CATEGORY_PYTHON);
    constant_array(j, "subcategory", nstacks, false, 0);
    jw_key(j, "prefix");
    jw_begin_array(j);
    for (uint32_t i = 0; i < nstacks; i++) {
        uint32_t parent = fpr_profile_stack(p, i)->parent;
        if (parent == FPR_NO_STACK)
            jw_null(j);
        else
            jw_uint(j, parent);
    }
    jw_end_array(j);
    key_int(j, "length", (int64_t)nstacks);
    jw_end_object(j);

    jw_key(j, "frameTable");
    jw_begin_object(j);
    constant_array(j, "address", nframes, false, -1);
    constant_array(j, "category", nframes, false, CATEGORY_PYTHON);
    constant_array(j, "subcategory", nframes, false, 0);
    jw_key(j, "func");
    jw_begin_array(j);
    for (uint32_t i = 0; i < nframes; i++)
        jw_uint(j, g->frame_func[i]);
    jw_end_array(j);
    constant_array(j, "innerWindowID", nframes, true, 0);
    constant_array(j, "implementation", nframes, true, 0);
    constant_array(j, "optimizations", nframes, true, 0);
    jw_key(j, "line");
    jw_begin_array(j);
    for (uint32_t i = 0; i < nframes; i++)
        jw_int_or_null(j, fpr_profile_frame(p, i)->line, FP_POS_NONE);
    jw_end_array(j);
    constant_array(j, "column", nframes, true, 0);
    constant_array(j, "inlineDepth", nframes, false, 0);
    constant_array(j, "nativeSymbol", nframes, true, 0);
    key_int(j, "length", (int64_t)nframes);
    jw_end_object(j);

    jw_key(j, "funcTable");
    jw_begin_object(j);
    jw_key(j, "name");
    jw_begin_array(j);
    for (uint32_t i = 0; i < g->nfuncs; i++)
        jw_uint(j, g->func_name[i]);
    jw_end_array(j);
    jw_key(j, "isJS");
    jw_begin_array(j);
    for (uint32_t i = 0; i < g->nfuncs; i++)
        jw_bool(j, true);
    jw_end_array(j);
    jw_key(j, "relevantForJS");
    jw_begin_array(j);
    for (uint32_t i = 0; i < g->nfuncs; i++)
        jw_bool(j, true);
    jw_end_array(j);
    jw_key(j, "resource");
    jw_begin_array(j);
    for (uint32_t i = 0; i < g->nfuncs; i++)
        jw_uint(j, g->file_resource[g->func_file[i]]);
    jw_end_array(j);
    jw_key(j, "fileName");
    jw_begin_array(j);
    for (uint32_t i = 0; i < g->nfuncs; i++)
        jw_uint(j, g->func_file[i]);
    jw_end_array(j);
    constant_array(j, "lineNumber", g->nfuncs, true, 0);
    constant_array(j, "columnNumber", g->nfuncs, true, 0);
    key_int(j, "length", g->nfuncs);
    jw_end_object(j);

    jw_key(j, "resourceTable");
    jw_begin_object(j);
    constant_array(j, "lib", g->nresources, true, 0);
    jw_key(j, "name");
    jw_begin_array(j);
    for (uint32_t i = 0; i < g->nresources; i++)
        jw_uint(j, g->resource_name[i]);
    jw_end_array(j);
    constant_array(j, "host", g->nresources, true, 0);
    constant_array(j, "type", g->nresources, false, RESOURCE_TYPE_LIBRARY);
    key_int(j, "length", g->nresources);
    jw_end_object(j);
}

static void thread(jw_writer *j, const fpr_profile *p, const fpr_run *run, const gecko_tables *g, const fpr_thread *t)
{
    static const char *const NATIVE_SYMBOL_COLUMNS[] = {"libIndex", "address", "name", "functionSize"};
    static const char *const MARKER_COLUMNS[] = {"data", "name", "startTime", "endTime", "phase", "category"};
    char label[LABEL_MAX], pid[LABEL_MAX], process[NAME_MAX_LEN];
    fpr_thread_label(t, label, sizeof label);
    snprintf(pid, sizeof pid, "%d", run->pid);
    snprintf(process, sizeof process, "Python %s (pid %d)", run->py->version, run->pid);
    jw_begin_object(j);
    key_str(j, "name", label);
    jw_key(j, "isMainThread");
    jw_bool(j, t->main);
    key_int(j, "processStartupTime", 0);
    jw_key(j, "processShutdownTime");
    jw_null(j);
    key_int(j, "registerTime", 0);
    jw_key(j, "unregisterTime");
    jw_null(j);
    jw_key(j, "pausedRanges");
    jw_begin_array(j);
    jw_end_array(j);
    key_str(j, "pid", pid);
    jw_key(j, "tid");
    jw_uint(j, t->native_id);
    key_str(j, "processType", "default");
    key_str(j, "processName", process);
    samples(j, t);
    tables(j, p, g);
    empty_table(j, "nativeSymbols", NATIVE_SYMBOL_COLUMNS, sizeof NATIVE_SYMBOL_COLUMNS / sizeof NATIVE_SYMBOL_COLUMNS[0]);
    empty_table(j, "markers", MARKER_COLUMNS, sizeof MARKER_COLUMNS / sizeof MARKER_COLUMNS[0]);
    jw_end_object(j);
}

int fpr_write_gecko(FILE *out, const fpr_profile *p, const fpr_run *run)
{
    static const char *const SOURCE_COLUMNS[] = {"uuid", "filename"};
    gecko_tables g;
    if (build_tables(&g, p)) {
        free_tables(&g);
        errno = ENOMEM;
        return -1;
    }
    jw_writer j;
    jw_init(&j, out);
    jw_begin_object(&j);
    meta(&j, p, run);
    jw_key(&j, "libs");
    jw_begin_array(&j);
    jw_end_array(&j);
    jw_key(&j, "threads");
    jw_begin_array(&j);
    for (size_t i = 0; i < fpr_profile_thread_count(p); i++)
        thread(&j, p, run, &g, fpr_profile_thread(p, i));
    jw_end_array(&j);
    jw_key(&j, "pages");
    jw_begin_array(&j);
    jw_end_array(&j);
    jw_key(&j, "shared");
    jw_begin_object(&j);
    jw_key(&j, "stringArray");
    jw_begin_array(&j);
    for (uint32_t i = 0; i < g.nstrings; i++)
        jw_string(&j, g.strings[i]);
    jw_end_array(&j);
    empty_table(&j, "sources", SOURCE_COLUMNS, sizeof SOURCE_COLUMNS / sizeof SOURCE_COLUMNS[0]);
    jw_end_object(&j);
    jw_end_object(&j);
    fputc('\n', out);
    free_tables(&g);
    return ferror(out) ? -1 : 0;
}
