/* Where a process of a launched job stands: its rank, the world size and
 * its rank on this host, read from the variables the cluster launchers
 * set, and the GPU that follows from the local rank. Pure functions of a
 * variable lookup (no getenv inside), so the CPU tests feed them any
 * environment and check the messages. */
#ifndef FT_DIST_ENV_H
#define FT_DIST_ENV_H

#include <stddef.h>

/* The largest world fox-train --dist accepts (the bootstrap handles more;
 * this bounds the per-rank tables). */
#define FT_DIST_MAX_WORLD 4096

typedef struct ft_dist_env {
    int rank, world, local_rank;
    int local_world;           /* processes on this host, -1 when the launcher does not say */
    const char *launcher;      /* "torchrun", "mpirun (Open MPI)", "srun (Slurm)" */
    const char *rank_var, *world_var, *local_var;   /* the names read, for messages */
    const char *comm_id;       /* NCCL_COMM_ID, NULL when unset (allowed for a world of one) */
} ft_dist_env;

/* Returns the value of variable `name`, or NULL when it is unset. */
typedef const char *(*ft_getenv_fn)(const char *name, void *ctx);

/* Reads the first launcher family that sets any of its variables, in the
 * order torchrun (RANK, WORLD_SIZE, LOCAL_RANK), Open MPI
 * (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), Slurm (SLURM_PROCID,
 * SLURM_NTASKS, SLURM_LOCALID): torchrun started inside an srun step sees
 * both, and its own variables are the ones that describe this process.
 * Checks that the family is complete, that each value is an integer in
 * range, that the rank and the local rank are below their world sizes,
 * and, for a world of more than one, that NCCL_COMM_ID is host:port.
 * Returns 0, or -1 with what is wrong and what to do in why. */
int ft_dist_env_read(ft_getenv_fn get, void *ctx, ft_dist_env *d, char *why, size_t why_len);

/* NCCL_COMM_ID's form, host:port or [ipv6]:port (NCCL parses it itself;
 * this catches the usual mistakes with the job's words). Returns 0, or -1
 * with what is wrong and what to do in why. */
int ft_dist_check_comm_id(const char *id, char *why, size_t why_len);

/* How many devices CUDA_VISIBLE_DEVICES (`visible`) names: its entries;
 * 0 for an empty value (it hides every GPU), -1 when unset. */
int ft_dist_visible_count(const char *visible);

/* The CUDA device of this process: device + local_rank when the driver
 * reports that many devices; a process that sees exactly one device
 * takes it when `visible` (CUDA_VISIBLE_DEVICES, NULL when unset) names
 * one device: the launcher bound one GPU per task. Returns the ordinal,
 * or -1 with why. */
int ft_dist_pick_gpu(const ft_dist_env *d, int device, int device_count, const char *visible,
                     char *why, size_t why_len);

#endif
