/* A run's configuration: from the command line for a fresh run, or from
 * the checkpoint for a resumed one (whose settings a command-line option
 * may repeat but not contradict). Shared by the one-GPU and the
 * data-parallel training loops. */
#ifndef FT_CONFIG_H
#define FT_CONFIG_H

#include <stdint.h>

#include "args.h"
#include "checkpoint.h"
#include "data.h"

typedef struct ft_run_config {
    ft_ckpt_meta cfg;          /* dims.batch is the global batch */
    float *params, *m, *v;     /* the checkpoint's arrays (malloc'ed), NULL for a fresh run */
    int64_t start, end;        /* steps done before this process, steps done at the end */
} ft_run_config;

/* Returns FT_EXIT_OK, or FT_EXIT_USAGE / FT_EXIT_FAILED after printing
 * why. Free with ft_run_config_free in every case. */
int ft_run_config_make(ft_run_config *rc, const ft_options *o);
/* Frees the checkpoint arrays (once the state is on the device). */
void ft_run_config_drop_arrays(ft_run_config *rc);
void ft_run_config_free(ft_run_config *rc);

/* The run's training and held-out data from its seed. Returns 0, or -1
 * after printing why. */
int ft_data_generate_run(ft_dataset *train, ft_dataset *heldout, const ft_ckpt_meta *cfg);

#endif
