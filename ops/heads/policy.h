/* The GRN heads' launch shape (their kernel takes BLOCK and CLUSTER) and
 * the backward workspace's terms. */
#ifndef FJ_HEADS_POLICY_H
#define FJ_HEADS_POLICY_H

#include "common/policy.h"

/* Threads of a (row, head) block. It makes about 6 E*D global accesses
 * (the recomputed forward, two scratch updates, two column dots): from
 * E*D = 4096 on, 512 threads halve each thread's serial share. Depends
 * only on the dims. */
FJ_POLICY_FN int fj_heads_block(int d, int e) { return d * e >= 4096 ? 512 : 256; }

/* Whether the backward's blocks of a row form a cluster of its H heads,
 * which add their dx through distributed shared memory (sm_90+). */
FJ_POLICY_FN int fj_heads_cluster(int cc, int h) { return cc >= 90 && h > 1; }

/* Floats of one (step, row, head) in the workspace of a backward over
 * several steps: eta, c, dc, da (E each) and four scalars. */
FJ_POLICY_FN int fj_heads_terms(int e) { return 4 * e + 4; }

#endif
