#include "rank.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void ft_rank_fail(ft_rank *r, const char *fmt, ...)
{
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fox-train: rank %d (GPU %d): %s\n", r->index, r->ordinal, msg);
    ft_team_break(r->team, FT_EXIT_FAILED);
}

int ft_rank_bind(ft_rank *r, const ft_env *base, const ft_options *o)
{
    /* The copy shares the plugin and the driver table; only the device
     * part (context, stream, runtime) is this rank's. */
    r->env = *base;
    r->env.device = 0, r->env.ctx = NULL, r->env.stream = NULL, r->env.rt = NULL;
    r->env.device_name[0] = '\0';
    int rc = ft_env_bind(&r->env, o, r->ordinal);
    if (rc != FT_EXIT_OK)
        return rc;
    if (ft_cu_check(&r->env.cu, r->env.cu.cuEventCreate(&r->marker, CU_EVENT_DISABLE_TIMING),
                    "cuEventCreate"))
        return FT_EXIT_FAILED;
    return FT_EXIT_OK;
}

int ft_rank_comm_init(ft_rank *r, const ft_nccl_unique_id *id)
{
    /* NCCL takes the device from the context current on this thread: the
     * rank's primary context, the one NCCL's own CUDA runtime uses. */
    ft_nccl_result e = r->nccl->CommInitRank(&r->comm, r->count, *id, r->index);
    if (e != FT_NCCL_SUCCESS) {
        char buf[300];
        r->comm = NULL;
        /* The usual invalid usage at this point: two ranks on one GPU
         * (NCCL says "Duplicate GPU detected" only with NCCL_DEBUG=WARN). */
        char hint[200] = "";
        if (e == FT_NCCL_INVALID_USAGE && r->own_process)
            snprintf(hint, sizeof hint, " (NCCL runs one rank per GPU: is another rank of this "
                     "host on CUDA device %d too? each needs a GPU of its own: check the local "
                     "ranks and CUDA_VISIBLE_DEVICES)", r->ordinal);
        ft_rank_fail(r, "ncclCommInitRank (%d ranks) failed: %s%s; NCCL_DEBUG=WARN says more",
                     r->count, ft_nccl_error(r->nccl, e, buf, sizeof buf), hint);
        return -1;
    }
    return 0;
}

/* ft_model_step's hook between the reducers and AdamW: the gradient span
 * becomes the average of all ranks' spans, in place, on the step's stream.
 * Averaging (not summing) is what keeps the update the one-GPU update: each
 * rank's BCE is the mean over its B/N rows, and the mean over the global
 * batch is the mean of those N means. In a captured step the all-reduce
 * becomes a graph node like the kernels around it. */
static foxjit_status allreduce_grads(ft_model *m, CUstream s, void *arg)
{
    ft_rank *r = arg;
    ft_nccl_result e = r->nccl->AllReduce((const void *)(uintptr_t)m->grad_base,
                                          (void *)(uintptr_t)m->grad_base, m->grad_floats,
                                          FT_NCCL_FLOAT32, FT_NCCL_AVG, r->comm, s);
    if (e == FT_NCCL_SUCCESS)
        return FOXJIT_OK;
    char buf[300];
    snprintf(m->why, sizeof m->why, "ncclAllReduce of the %zu gradient floats failed: %s",
             m->grad_floats, ft_nccl_error(r->nccl, e, buf, sizeof buf));
    return FOXJIT_ERROR_CUDA;
}

int ft_rank_attach(ft_rank *r, ft_model *m, int all_reduce)
{
    const ft_cuda *cu = &r->env.cu;
    if (ft_cu_check(cu, cu->cuMemsetD32Async(m->grad_base, 0, m->grad_floats, r->env.stream),
                    "cuMemsetD32Async of the gradients")) {
        ft_team_break(r->team, FT_EXIT_FAILED);
        return -1;
    }
    if (!all_reduce) {
        m->after_reduce = NULL;
        return ft_rank_wait(r);
    }
    if (!r->comm) {
        ft_rank_fail(r, "no NCCL communicator for the gradient all-reduce");
        return -1;
    }
    m->after_reduce = allreduce_grads;
    m->after_reduce_arg = r;
    if (allreduce_grads(m, r->env.stream, r) != FOXJIT_OK) {
        ft_rank_fail(r, "%s", m->why);
        return -1;
    }
    return ft_rank_wait(r);
}

int ft_rank_wait(ft_rank *r)
{
    const ft_cuda *cu = &r->env.cu;
    if (ft_cu_check(cu, cu->cuEventRecord(r->marker, r->env.stream), "cuEventRecord")) {
        ft_team_break(r->team, FT_EXIT_FAILED);
        return -1;
    }
    return ft_rank_wait_event(r, r->marker);
}

int ft_rank_wait_event(ft_rank *r, CUevent ev)
{
    const ft_cuda *cu = &r->env.cu;
    char buf[300];
    /* Short sleeps: this runs at the loop's reporting points only, and
     * the GPU is usually done, or nearly. */
    const struct timespec nap = {0, 50 * 1000};
    for (;;) {
        CUresult q = cu->cuEventQuery(ev);
        if (q == CUDA_SUCCESS)
            return 0;
        if (q != CUDA_ERROR_NOT_READY) {
            ft_rank_fail(r, "the GPU work failed: %s", ft_cuda_error(cu, q, buf, sizeof buf));
            return -1;
        }
        if (ft_rank_should_stop(r))
            return -1;
        nanosleep(&nap, NULL);
    }
}

int ft_rank_should_stop(ft_rank *r)
{
    if (ft_team_broken(r->team))
        return 1;
    if (!r->comm)
        return 0;
    ft_nccl_result async = FT_NCCL_SUCCESS;
    ft_nccl_result e = r->nccl->CommGetAsyncError(r->comm, &async);
    if (e == FT_NCCL_SUCCESS && async == FT_NCCL_SUCCESS)
        return 0;
    char buf[300];
    ft_rank_fail(r, "NCCL reports an error: %s",
                 ft_nccl_error(r->nccl, e != FT_NCCL_SUCCESS ? e : async, buf, sizeof buf));
    return 1;
}

void ft_rank_end_comm(ft_rank *r)
{
    if (!r->comm)
        return;
    if (ft_team_broken(r->team))
        r->nccl->CommAbort(r->comm);
    else
        r->nccl->CommDestroy(r->comm);
    r->comm = NULL;
}

void ft_rank_end_run(ft_rank *r, ft_stepper *st)
{
    ft_stepper_free(st);
    ft_rank_end_comm(r);
    if (ft_team_broken(r->team) && r->env.stream)
        r->env.cu.cuStreamSynchronize(r->env.stream);
}

void ft_rank_arm_for_the_end(ft_rank *r, ft_watchdog *dog, double seconds)
{
    const int failed = ft_team_broken(r->team);
    ft_watchdog_arm(dog, seconds, "--gpus %d: %s within %.0f s of the last rank to start "
                    "(rank %d, GPU %d): %s (nvidia-smi, and NCCL_DEBUG=WARN on a rerun, say "
                    "more); giving up", r->count,
                    failed ? "after the failure above, the ranks did not all stop"
                           : "ending the run (each rank's captured step and NCCL "
                             "communicator) did not finish",
                    seconds, r->index, r->ordinal,
                    failed ? "one is stuck in NCCL (forming the communicator, or ending it) "
                             "or on a GPU that never finishes its queued work"
                           : "a GPU or NCCL is stuck");
}

void ft_rank_release(ft_rank *r)
{
    ft_rank_end_comm(r);
    if (r->marker)
        r->env.cu.cuEventDestroy(r->marker);
    r->marker = NULL;
    ft_env_unbind(&r->env);
}
