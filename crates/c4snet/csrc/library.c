/*
 * The C4SNet functions of a C box library (a shared object of C boxes
 * loaded at run time, see src/library.rs), compiled into every such
 * library next to the generated box table.
 *
 * A library cannot count on finding the runtime's C4SNet functions by
 * symbol: the process that loads it (a Python interpreter that loaded the
 * snet extension module privately, a Rust program that exports nothing)
 * need not make them visible. So the library defines them itself, each
 * forwarding through a table of the runtime's functions that the loader
 * hands over once (__snet_c4snet_bind) before any box runs. C4SNetOut is
 * the variadic one (C4SNetOutValues, the macro's, hands its array to the
 * runtime, snet_c4snet_out_values): as csrc/out.c does, it asks the runtime for the
 * argument kinds of the variant (snet_c4snet_out_begin, which also checks
 * the handle), reads exactly those from the va_list and hands the values
 * back (snet_c4snet_out_end).
 */
#include <stdarg.h>
#include "C4SNet.h"

/* Must match `SnetArg` in src/invoke.rs. */
typedef union { c4snet_data_t *field; int tag; } __snet_lib_arg_t;

/* Must match `Api` in src/library.rs (and its version). */
struct __snet_c4snet_api {
    unsigned long version;
    unsigned long size;
    c4snet_data_t *(*alloc)(c4snet_type_t, size_t, void **);
    c4snet_data_t *(*create)(c4snet_type_t, size_t, const void *);
    void (*free_)(c4snet_data_t *);
    c4snet_data_t *(*shallow_copy)(c4snet_data_t *);
    c4snet_data_t *(*deep_copy)(c4snet_data_t *);
    int (*size_of)(c4snet_data_t *);
    size_t (*array_size)(c4snet_data_t *);
    void *(*get_data)(c4snet_data_t *);
    c4snet_type_t (*get_type)(c4snet_data_t *);
    char *(*get_string)(c4snet_data_t *);
    int (*out_begin)(void *, int, const int **, void **);
    void (*out_end)(void *, int, const __snet_lib_arg_t *, int);
    void (*out_values)(void *, int, const unsigned long long *, int);
};

static struct __snet_c4snet_api __snet_api;

/* Called by the loader once, before any box of the library runs: 0 when
 * the table is one this library understands. */
__attribute__((visibility("default")))
int __snet_c4snet_bind(const struct __snet_c4snet_api *api)
{
    if (api->version != 2 || api->size != sizeof __snet_api)
        return -1;
    __snet_api = *api;
    return 0;
}

c4snet_data_t *C4SNetAlloc(c4snet_type_t type, size_t size, void **data)
{
    return __snet_api.alloc(type, size, data);
}

c4snet_data_t *C4SNetCreate(c4snet_type_t type, size_t size, const void *data)
{
    return __snet_api.create(type, size, data);
}

void C4SNetFree(c4snet_data_t *ptr)
{
    __snet_api.free_(ptr);
}

c4snet_data_t *C4SNetShallowCopy(c4snet_data_t *ptr)
{
    return __snet_api.shallow_copy(ptr);
}

c4snet_data_t *C4SNetDeepCopy(c4snet_data_t *ptr)
{
    return __snet_api.deep_copy(ptr);
}

int C4SNetSizeof(c4snet_data_t *data)
{
    return __snet_api.size_of(data);
}

size_t C4SNetArraySize(c4snet_data_t *data)
{
    return __snet_api.array_size(data);
}

void *C4SNetGetData(c4snet_data_t *ptr)
{
    return __snet_api.get_data(ptr);
}

c4snet_type_t C4SNetGetType(c4snet_data_t *data)
{
    return __snet_api.get_type(data);
}

char *C4SNetGetString(c4snet_data_t *data)
{
    return __snet_api.get_string(data);
}

#define __SNET_ARGS_STACK 16

/* In parentheses: C4SNet.h's macro of the same name is not expanded. */
void (C4SNetOut)(void *hnd, int variant, ...)
{
    const int *kinds = 0;
    void *inv = 0;
    int n = __snet_api.out_begin(hnd, variant, &kinds, &inv);
    if (n < 0)
        return; /* misuse: the runtime recorded it, naming the box */
    __snet_lib_arg_t inline_values[__SNET_ARGS_STACK];
    __snet_lib_arg_t *values = inline_values;
    __snet_lib_arg_t many[n > __SNET_ARGS_STACK ? n : 1];
    if (n > __SNET_ARGS_STACK)
        values = many;
    va_list ap;
    va_start(ap, variant);
    for (int i = 0; i < n; i++) {
        if (kinds[i])
            values[i].tag = va_arg(ap, int);
        else
            values[i].field = va_arg(ap, c4snet_data_t *);
    }
    va_end(ap);
    __snet_api.out_end(inv, variant, values, n);
}

/* What C4SNet.h's macro C4SNetOut calls: the runtime checks the handle,
 * the variant and the count of values and converts the values. */
void C4SNetOutValues(void *hnd, int variant, const unsigned long long *values, int count)
{
    __snet_api.out_values(hnd, variant, values, count);
}
