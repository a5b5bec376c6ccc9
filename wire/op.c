/*
 * op.c - the table of ops (op.h) as data: names, flags and arguments.
 */
#include "wire/op.h"

#include <stddef.h>
#include <string.h>

#define WIRE_OP_ROW(ID, op_name, op_flags, handler, param, ...)                                    \
    [WIRE_OP_##ID] = {.name = op_name, .flags = op_flags, .args = {__VA_ARGS__}},

const wire_op wire_ops[WIRE_OP_COUNT] = {WIRE_OPS(WIRE_OP_ROW)};

#undef WIRE_OP_ROW

int wire_op_find(const char *name)
{
    for (int i = 0; name && i < WIRE_OP_COUNT; i++)
        if (!strcmp(wire_ops[i].name, name))
            return i;
    return -1;
}

const char *wire_op_name(int id)
{
    return id >= 0 && id < WIRE_OP_COUNT ? wire_ops[id].name : NULL;
}

const wire_arg *wire_op_arg(int id, const char *name)
{
    if (id < 0 || id >= WIRE_OP_COUNT)
        return NULL;
    const wire_arg *a = wire_ops[id].args;
    for (int i = 0; i < WIRE_OP_ARGS_MAX && a[i].name; i++)
        if (!strcmp(a[i].name, name))
            return &a[i];
    return NULL;
}
