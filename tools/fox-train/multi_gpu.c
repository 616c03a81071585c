#include "multi_gpu.h"

#include <stdio.h>

#include "dp_bench.h"
#include "dp_train.h"
#include "env.h"
#include "nccl.h"

int ft_multi_gpu_main(const ft_options *o)
{
    ft_nccl nccl;
    char why[1024];
    /* Before NCCL can read its environment (nccl.h says why). */
    ft_nccl_disable_nvls();
    /* First: a missing NCCL is a setup problem to report whatever else is
     * missing too. */
    if (ft_nccl_load(&nccl, why, sizeof why)) {
        fprintf(stderr, "fox-train: %s\n", why);
        return FT_EXIT_NO_NCCL;
    }
    ft_env base;
    int rc = ft_env_load(&base, o);
    if (rc != FT_EXIT_OK)
        goto done;
    if (o->device + o->gpus > base.device_count) {
        fprintf(stderr, "fox-train: --gpus %d from --device %d needs devices %d to %d, but the "
                "driver reports %d CUDA device%s (check nvidia-smi and CUDA_VISIBLE_DEVICES)\n",
                o->gpus, o->device, o->device, o->device + o->gpus - 1, base.device_count,
                base.device_count == 1 ? "" : "s");
        rc = FT_EXIT_NO_GPU;
        goto done;
    }
    /* Over the ranks' end (rank.h, ft_rank_arm_for_the_end): a run that
     * cannot end would otherwise hang for good. */
    ft_watchdog dog = {0};
    if (ft_watchdog_start(&dog)) {
        rc = FT_EXIT_FAILED;
        goto done;
    }
    rc = o->bench ? ft_bench_data_parallel(&base, o, &nccl, &dog, FT_DP_END_TIMEOUT_S)
                  : ft_train_data_parallel(&base, o, &nccl, &dog, FT_DP_END_TIMEOUT_S);
    ft_watchdog_stop(&dog);
done:
    ft_env_close(&base);
    ft_nccl_close(&nccl);
    return rc;
}
