/* NCCL for the data-parallel trainer, loaded at run time with
 * dlopen("libnccl.so.2") like the driver and libfoxjit: fox-train builds
 * and runs on one GPU with no NCCL installed, and says clearly what is
 * missing when --gpus N > 1 (or --nccl) asks for it.
 *
 * There is no nccl.h dependency: the few types and calls the trainer uses
 * are declared here with the ABI of NCCL 2 (nccl.h of NCCL 2.28 was read for
 * the values: ncclUniqueId is 128 bytes passed by value, ncclComm_t an
 * opaque pointer, ncclResult_t / ncclDataType_t / ncclRedOp_t int-sized
 * enums with ncclSuccess = 0, ncclFloat32 = 7, ncclSum = 0, ncclAvg = 4,
 * and cudaStream_t is the driver's CUstream). One all-reduce per step needs
 * no ncclGroupStart/End. fox-train --dist also gathers a few bytes per
 * reporting point with ncclAllGather (NCCL 2.0 has it). */
#ifndef FT_NCCL_H
#define FT_NCCL_H

#include <stddef.h>

#include <cuda.h>

#define FT_NCCL_UNIQUE_ID_BYTES 128

typedef struct ft_nccl_comm *ft_nccl_comm_t;   /* ncclComm_t */
typedef struct ft_nccl_unique_id {             /* ncclUniqueId */
    char internal[FT_NCCL_UNIQUE_ID_BYTES];
} ft_nccl_unique_id;
typedef int ft_nccl_result;                    /* ncclResult_t */

enum {
    FT_NCCL_SUCCESS = 0,       /* ncclSuccess */
    FT_NCCL_INVALID_USAGE = 5, /* ncclInvalidUsage (two ranks on one GPU, among others) */
    FT_NCCL_IN_PROGRESS = 7,   /* ncclInProgress (nonblocking communicators only) */
    FT_NCCL_UINT8 = 1,         /* ncclUint8 */
    FT_NCCL_FLOAT32 = 7,       /* ncclFloat32 */
    FT_NCCL_SUM = 0,           /* ncclSum */
    FT_NCCL_AVG = 4,           /* ncclAvg: the sum times 1/nranks (NCCL >= 2.10) */
};

/* NCCL_VERSION(2, 10, 0): the first with ncclAvg. */
#define FT_NCCL_MIN_VERSION 21000

typedef struct ft_nccl {
    void *handle;
    int version;            /* NCCL_VERSION_CODE of the loaded library: 22809 = 2.28.9 */
    char path[512];         /* what was loaded */
    ft_nccl_result (*GetVersion)(int *version);
    const char *(*GetErrorString)(ft_nccl_result result);
    ft_nccl_result (*GetUniqueId)(ft_nccl_unique_id *id);
    ft_nccl_result (*CommInitRank)(ft_nccl_comm_t *comm, int nranks, ft_nccl_unique_id id,
                                   int rank);
    ft_nccl_result (*CommDestroy)(ft_nccl_comm_t comm);
    ft_nccl_result (*CommAbort)(ft_nccl_comm_t comm);
    ft_nccl_result (*CommGetAsyncError)(ft_nccl_comm_t comm, ft_nccl_result *async_error);
    ft_nccl_result (*AllReduce)(const void *sendbuff, void *recvbuff, size_t count,
                                int datatype, int op, ft_nccl_comm_t comm, CUstream stream);
    /* --dist only: the ranks' statuses, losses and parameter hashes
     * (dist_xchg.h); the gradients still take the one all-reduce. */
    ft_nccl_result (*AllGather)(const void *sendbuff, void *recvbuff, size_t sendcount,
                                int datatype, ft_nccl_comm_t comm, CUstream stream);
} ft_nccl;

/* Loads $FOXJIT_NCCL_LIBRARY, else libnccl.so.2 from the loader's search
 * path, resolves every entry above and checks the version (>= 2.10).
 * Returns 0, or -1 with the reason and what to do in why. */
int ft_nccl_load(ft_nccl *n, char *why, size_t why_len);
void ft_nccl_close(ft_nccl *n);

/* "2.28.9" */
const char *ft_nccl_version_string(int version, char *buf, size_t len);

/* "ncclInvalidUsage (...)" for a result; never NULL. */
const char *ft_nccl_error(const ft_nccl *n, ft_nccl_result r, char *buf, size_t len);

/* NVLink SHARP (NVLS) all-reduces use NVLink multicast objects. Hosts whose
 * GPUs are shared require multicast off (a program that uses it can put
 * the host's shared GPUs out of service), and a 339.5 KiB gradient all-reduce
 * gains nothing from it, so fox-train sets NCCL_NVLS_ENABLE=0 before NCCL
 * creates a communicator, unless the environment already sets it. Returns
 * 1 when it set the variable, 0 when it was already set. */
int ft_nccl_disable_nvls(void);

#endif
