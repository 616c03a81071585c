/* fox-train --dist-local N: the launcher for one host, for users without
 * torchrun, mpirun or srun, and for the tests. It starts N copies of this
 * fox-train with --dist in place of --dist-local N and the environment
 * torchrun would give them (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * and NCCL_COMM_ID=127.0.0.1:<a free port> unless already set), so each
 * takes GPU --device + its rank; then waits for them. When one fails, the
 * others are given a moment to stop on their own (the status exchange
 * stops them at their next reporting point), then terminated, as torchrun
 * does. SIGINT, SIGTERM and SIGHUP are passed on to the processes, which
 * are stopped the same way before the launcher ends by that signal; and
 * each process gets SIGTERM from the kernel when the launcher dies, so
 * none outlives it on its GPU. */
#ifndef FT_DIST_LOCAL_H
#define FT_DIST_LOCAL_H

#include "args.h"

/* The child's argv: argv with --dist-local N (or --dist-local=N) replaced
 * by --dist. out must hold argc + 1 pointers; returns the new argc. */
int ft_dist_local_argv(int argc, char **argv, char **out);

/* What the launcher can see wrong before it starts anything: a given
 * NCCL_COMM_ID (`comm_id`) that is not host:port, and a
 * CUDA_VISIBLE_DEVICES (`visible`, NULL when unset) showing fewer devices
 * than the ranks take. Returns FT_EXIT_OK, or the exit status with why. */
int ft_dist_local_check(const ft_options *o, const char *comm_id, const char *visible,
                        char *why, size_t why_len);

/* Checks as above, then starts the ranks. Returns 0 when every process
 * exited with 0, else the first failed
 * process's exit status (1 for one killed by a signal), after saying
 * which rank it was. */
int ft_dist_local_main(const ft_options *o, int argc, char **argv);

#endif
