/* fox-train's data-parallel path (--gpus N > 1, or --nccl): NCCL loaded
 * with dlopen, the plugin and the driver loaded once for the process, the
 * devices checked, then the data-parallel training (dp_train.h) or bench
 * (dp_bench.h), one thread per GPU. The one-GPU path (main.c -> train.c,
 * bench.c) does none of this and never loads NCCL. */
#ifndef FT_MULTI_GPU_H
#define FT_MULTI_GPU_H

#include "args.h"

/* Returns the process exit status (enum ft_exit) after printing why on
 * failure: FT_EXIT_NO_NCCL when NCCL cannot be loaded, FT_EXIT_NO_GPU when
 * there are fewer devices than --device + --gpus. */
int ft_multi_gpu_main(const ft_options *o);

#endif
