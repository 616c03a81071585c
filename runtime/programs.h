/* Every program fox-jit compiles, declared by the op file that owns it.
 * Adding an op: define its fj_program in runtime/ops/<op>.c and list it
 * here. */
#ifndef FJ_PROGRAMS_H
#define FJ_PROGRAMS_H

#include "registry.h"

#define FJ_PROGRAMS(X) \
    X(fj_program_colsum_rows) \
    X(fj_program_colsum_tiles) \
    X(fj_program_radix_sort) \
    X(fj_program_rank_normalize) \
    X(fj_program_cfc) \
    X(fj_program_cfc_seq) \
    X(fj_program_heads) \
    X(fj_program_heads_seq) \
    X(fj_program_vsn) \
    X(fj_program_vsn_seq) \
    X(fj_program_attn_pool) \
    X(fj_program_train)

#define FJ_DECLARE_PROGRAM(sym) extern const fj_program sym;
FJ_PROGRAMS(FJ_DECLARE_PROGRAM)
#undef FJ_DECLARE_PROGRAM

#endif
