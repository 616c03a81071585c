/* The split form's test cases, shared by its GPU test (ops/colsum/test.c)
 * and its CPU model of the kernel's indexing (unit colsum_split_host): the
 * shapes, and geometries from a block a row (whose nodes the last block
 * adds in several passes) to the largest blocks, tiles of one vector and
 * more tiles than counters. Both suites must cover the same cases, so
 * they are listed once. */
#ifndef FJ_COLSUM_SPLIT_CASES_H
#define FJ_COLSUM_SPLIT_CASES_H

#include "colsum/policy.h"

static const long long fj_split_case_shapes[][2] = {
    {8192, 42}, {8192, 128}, {8192, 3}, {1000, 77}, {513, 65}, {4099, 256},
};
#define FJ_SPLIT_CASE_SHAPES (int)(sizeof fj_split_case_shapes / sizeof fj_split_case_shapes[0])

/* vec (0: the plan's), lanes (0: the plan's, at that vec), phases (halved
 * until the block fits 1024 threads), rows a thread */
static const int fj_split_case_geometries[][4] = {
    {0, 0, 1, 1},  {0, 0, 2, 1},  {0, 0, 8, 16}, {0, 0, 64, 1}, {0, 0, 32, 4},
    {1, 1, 64, 16}, {1, 1, 1, 2}, {1, 0, 16, 8}, {0, 1, 4, 4},  {0, 0, 16, 16},
};
#define FJ_SPLIT_CASE_GEOMETRIES \
    (int)(sizeof fj_split_case_geometries / sizeof fj_split_case_geometries[0])

/* Geometry k of x[rows, cols] (16-byte aligned). */
static inline fj_colsum_split_geometry fj_split_case_geometry(long long rows, long long cols,
                                                              int k)
{
    const fj_colsum_split_geometry plan = fj_colsum_split_plan(rows, cols, 16);
    const int *q = fj_split_case_geometries[k];
    const int vec = q[0] ? q[0] : plan.vec;
    const int lanes = q[1] ? q[1] : plan.lanes * plan.vec / vec;
    int phases = q[2];
    while (lanes * phases > 1024)
        phases /= 2;
    return fj_colsum_split_geometry_of(rows, cols, vec, lanes, phases, q[3]);
}

#endif
