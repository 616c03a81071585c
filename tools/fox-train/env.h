/* What every fox-train run sets up first, in the order a trainer would:
 * the plugin (dlopen libfoxjit.so, foxjit_get_api), the driver, a device,
 * its primary context, a stream, and a fox-jit runtime on that context.
 * Failures print one clear message and map to fox-train's exit status. */
#ifndef FT_ENV_H
#define FT_ENV_H

#include "args.h"
#include "driver.h"
#include "plugin.h"

enum ft_exit {
    FT_EXIT_OK = 0,
    FT_EXIT_FAILED = 1,      /* something failed while running */
    FT_EXIT_USAGE = 2,       /* bad command line */
    FT_EXIT_NO_GPU = 3,      /* no CUDA driver, or no device */
    FT_EXIT_NO_LIBRARY = 4,  /* libfoxjit.so not found or not usable */
    FT_EXIT_NO_NCCL = 5,     /* --gpus > 1 or --nccl, and NCCL not loadable */
};

typedef struct ft_env {
    ft_plugin plugin;
    const foxjit_api *api;
    ft_cuda cu;
    CUdevice device;
    CUcontext ctx;            /* the device's primary context, current on this thread */
    CUstream stream;          /* every op and copy of the run goes here */
    foxjit_runtime *rt;
    char device_name[128];
    int device_count;         /* what the driver reports */
} ft_env;

/* ft_env_load, then ft_env_bind to --device. Returns FT_EXIT_OK, or the
 * exit status after printing why. */
int ft_env_open(ft_env *e, const ft_options *o);
/* ft_env_unbind, then unloads the plugin. */
void ft_env_close(ft_env *e);

/* The process-wide part: the plugin, the driver, at least one device. */
int ft_env_load(ft_env *e, const ft_options *o);
/* The per-device part, on the calling thread: retains the primary context
 * of device `ordinal`, makes it current, creates the stream and a fox-jit
 * runtime bound to that context, at the precision of --precision. A
 * data-parallel rank copies a loaded env and binds it to its own device
 * from its own thread. */
int ft_env_bind(ft_env *e, const ft_options *o, int ordinal);
/* The runtime's precision of the products (--precision, a
 * foxjit_precision): nothing for the default; else foxjit_set_precision,
 * refused with FT_EXIT_NO_LIBRARY (after saying so) by a library whose
 * table lacks it. ft_env_bind calls it with the options'. */
int ft_env_set_precision(ft_env *e, int precision);
/* Destroys the runtime and the stream, releases the context; keeps the
 * plugin and the driver. */
void ft_env_unbind(ft_env *e);

/* Prints "fox-train: <what>: <status>: <last_error>" for a failed library
 * call and returns 1; returns 0 for FOXJIT_OK. */
int ft_lib_failed(const ft_env *e, foxjit_status st, const char *what);

#endif
