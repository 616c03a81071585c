/* Checks shared by the tests of the four per-step perception ops
 * (ops/cfc, ops/heads, ops/vsn and ops/attn_pool: test.c): the tolerance
 * against float64, quick-mode batches, seeds, finite differences, the
 * per-batch scratch against the legacy gradients and over repeated calls,
 * and bitwise repeatability. The data and references they check are in
 * perception_cases.h. */
#ifndef PERCEPTION_CHECKS_H
#define PERCEPTION_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "perception_cases.h"

/* float32 results vs float64: sums of a few hundred terms. */
#define RTOL 2e-5
#define FD_TOL 1e-4

/* FOXJIT_TEST_QUICK=1 (quick mode, for racecheck): every case still runs,
 * with the same dims (kernel variants depend only on them) and at most
 * QUICK_BATCH rows; VSN and attention pooling take the T of their quick
 * tables, which keep the paths of the full T. The trainer-size tests run
 * B = QUICK_BATCH instead of 32, and the bitwise-repeat tests two runs
 * instead of five. */
#define QUICK_BATCH 4
/* A case's batch in this mode. */
int batch_of(int batch);
/* The batch of the trainer-size tests (32 in a full run). */
int trainer_batch(void);

/* The seed of one test's data: test numbers 1-4 are the four ops'
 * reference checks, 5 rows vs a batch of one, 6 legacy, 7 scratch, 8
 * bitwise, 9 the heads' steps and the unprepared capture, 10 bad
 * arguments; a FOXJIT_TEST_SEED gives the same data in every program. */
uint64_t seed_for(int test, size_t shape, int variant);

/* Zeroed float64s (n 0: one), failing the test when out of memory. */
double *dalloc(size_t n);
double max_abs(const double *v, size_t n);

/* The float64 loss of batch row b (cfc_row_loss and the others). */
typedef double (*row_loss_fn)(const void *data, int b);
/* Perturbs v[k] (float64 reference values of a parameter or of row b of an
 * input) at a few k and compares the GPU gradient got[got_row, k] (already
 * downloaded, computed with zero bases) with the central difference of
 * row b's float64 loss. amax: the scale of that gradient tensor. */
void fd_spot(const char *what, row_loss_fn loss, const void *data, int b, double *v, size_t n,
             const tensor *got, int got_row, double amax, uint64_t *seed);

/* Probe r of a batch: rows 0, 13 and 31 of B = 32 (0, 1 and 3 of B = 4). */
enum { N_PROBES = 3 };
int probe_row(int batch, int r);

/* Downloads t and returns a float64 copy of its values (dense). */
double *snapshot(tensor *t);
/* Reduces scratch [B, n] with foxjit_reduce_axis0 and compares it with the
 * legacy gradient [1, n] (tolerance in perception_checks.c). */
void compare_reduced(const char *what, tensor *scratch, tensor *legacy);
/* After `calls` identical backward calls on zeroed scratch, scratch[b] must
 * be calls x the reference row gradient ref_rows; reduce_axis0 into a
 * poisoned output, twice, must give calls x the batch sum both times. */
void check_accumulated(const char *what, tensor *scratch, const double *ref_rows, int calls);

/* Runs `run` (an op's forward and backward on data) 5 times (2 in quick
 * mode), the outputs zeroed before each (scratch starts at zero, the rest
 * is overwritten), and fails unless every run leaves each output with the
 * first run's bits. op names the op in the message. */
void check_bitwise_repeatable(const char *op, void (*run)(void *data), void *data,
                              tensor *const *outs, size_t n_outs);

#endif
