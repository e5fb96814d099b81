/* pyobj.h — the built-in containers of CPython 3.11-3.15 read from the
 * target: a dict entry by str key, a dict's, set's or list's items, an
 * instance attribute (a managed dict, split values, inline values or a
 * dict at tp_dictoffset), a weak reference's referent, a small int.
 *
 * Everything read is untrusted: sizes are bounded (FPI_PYOBJ_MAX_ITEMS),
 * a table's shape is checked before it is read, and a value that cannot be
 * what it claims is FP_E_CORRUPT.  The target must not change meanwhile
 * (stopped, or an image): a container read while it is resized is one of
 * the failures those checks catch, not a promise.  Functions return FP_OK
 * or an FP_E_* code with the session's message set. */
#ifndef FPI_PYOBJ_H
#define FPI_PYOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* Where a 3.11-3.15 build keeps what these readers follow, from the
 * object header's size (16 bytes, 32 free-threaded) and the version. */
typedef struct fpi_pyobj {
    fp_session *s;
    uint32_t minor;
    int32_t hdr;              /* PyObject header */
    int32_t tp_basicsize, tp_flags, tp_base, tp_dictoffset, ht_cached_keys;
    int32_t dict_used, dict_keys, dict_values, values_start; /* PyDictObject; PyDictValues' first value */
    int32_t managed_dict;     /* the managed dict pointer (3.12: dict or tagged values), before the object */
    int32_t managed_values;   /* 3.11: the values pointer before the object; FPI_OFF_NONE otherwise */
    int32_t set_used, set_mask, set_table, list_size, list_items, tuple_items, wr_object;
    int32_t meth_self, func_qualname, func_closure, cell_ref; /* a bound method, a function, a cell */
} fpi_pyobj;

/* Fills o for the build s is attached to; false when it is no 3.11-3.15. */
bool fpi_pyobj_init(fpi_pyobj *o, fp_session *s);

/* The value of dict's entry whose key is the str key (ASCII), *value 0 when
 * there is none.  The dict's count must be the entries found, or one less
 * (a removal under way, the dict taken as before it); a table rebuilt and
 * published before its entry count is stored counts as found when its
 * index names each counted entry once; else FP_E_CORRUPT: a dict caught
 * while a thread of the target adds to it or rebuilds it (so for
 * fpi_pyobj_dict_items). */
int fpi_pyobj_dict_get(const fpi_pyobj *o, uint64_t dict, const char *key, uint64_t *value);

/* As fpi_pyobj_dict_get, the entry where *hint (fpi_dict_hint, session.h)
 * last found key in the same dict and keys object tried first: that one
 * entry read, the keys object's shape and the key checked as a full lookup
 * checks them (a dict holds a key once, so the entry holding it is its
 * entry).  Any other outcome is a full lookup, which sets *hint when it
 * finds key. */
int fpi_pyobj_dict_get_hinted(const fpi_pyobj *o, uint64_t dict, const char *key, fpi_dict_hint *hint,
                              uint64_t *value);

/* Every (key, value) pair of dict: *pairs malloc'd, 2 × *n words. */
int fpi_pyobj_dict_items(const fpi_pyobj *o, uint64_t dict, uint64_t **pairs, size_t *n);

/* Every member of a set (or frozenset): *items malloc'd, *n of them; one
 * insertion or removal may be in flight (pyset.h). */
int fpi_pyobj_set_items(const fpi_pyobj *o, uint64_t set, uint64_t **items, size_t *n);

/* Every item of a tuple: *items malloc'd, *n of them. */
int fpi_pyobj_tuple_items(const fpi_pyobj *o, uint64_t tuple, uint64_t **items, size_t *n);

/* Whether the object at addr is the str s (ASCII). */
int fpi_pyobj_str_is(const fpi_pyobj *o, uint64_t addr, const char *s, bool *out);

/* Every item of a list: *items malloc'd, *n of them. */
int fpi_pyobj_list_items(const fpi_pyobj *o, uint64_t list, uint64_t **items, size_t *n);

/* obj's instance attribute name (ASCII) as its __dict__ holds it, *value 0
 * when it has none; type is obj's type. */
int fpi_pyobj_attr(const fpi_pyobj *o, uint64_t obj, uint64_t type, const char *name, uint64_t *value);

/* A weak reference's referent (None, once it died); ref must be a
 * weakref.ref (or a subclass), else FP_E_CORRUPT.  *proven: a type already
 * found to be one during this read of a stopped target (0: none), not
 * checked again; set to ref's type once checked. */
int fpi_pyobj_weakref(const fpi_pyobj *o, uint64_t ref, uint64_t *proven, uint64_t *referent);

/* The value of an int that fits 64 bits unsigned, *ok false for any other
 * int (negative, larger); the caller checked obj is an int. */
int fpi_pyobj_small_int(const fpi_pyobj *o, uint64_t obj, uint64_t *value, bool *ok);

/* The type's tp_name, NUL-terminated in buf (at most len - 1 bytes). */
int fpi_pyobj_type_name(const fpi_pyobj *o, uint64_t type, char *buf, size_t len);

/* Whether type is the built-in type named base, or derives from it
 * (through tp_base, a bounded number of steps). */
int fpi_pyobj_type_is(const fpi_pyobj *o, uint64_t type, const char *base, bool *out);

/* As fpi_pyobj_type_is, *at the address of that type (type itself, or
 * the base it derives from), 0 when it is none. */
int fpi_pyobj_type_base(const fpi_pyobj *o, uint64_t type, const char *base, uint64_t *at);

#endif
