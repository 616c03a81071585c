#include "pacer.h"

#include <string.h>

int ft_pacer_open(ft_pacer *p, const ft_cuda *cu, CUstream stream)
{
    memset(p, 0, sizeof *p);
    p->cu = cu, p->stream = stream;
    return ft_cu_check(cu, cu->cuEventCreate(&p->mark, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

static int wait_for(ft_pacer *p)
{
    if (p->wait)
        return p->wait(p->wait_arg, p->mark);
    return ft_cu_check(p->cu, p->cu->cuEventSynchronize(p->mark),
                       "cuEventSynchronize (a reporting point)");
}

int ft_pacer_point(ft_pacer *p, int64_t done, int all, int64_t *upto)
{
    const ft_cuda *cu = p->cu;
    if (all) {
        if (ft_cu_check(cu, cu->cuEventRecord(p->mark, p->stream), "cuEventRecord") ||
            wait_for(p))
            return -1;
        *upto = done;
        p->pending = 0;
    } else {
        /* Every step up to the last point is done once its mark is (or
         * was, when that point waited for everything). */
        if ((p->pending && wait_for(p)) ||
            ft_cu_check(cu, cu->cuEventRecord(p->mark, p->stream), "cuEventRecord"))
            return -1;
        *upto = p->marked;
        p->pending = 1;
    }
    p->marked = done;
    return 0;
}

void ft_pacer_restart(ft_pacer *p)
{
    p->marked = 0, p->pending = 0;
}

void ft_pacer_close(ft_pacer *p)
{
    if (p->mark)
        p->cu->cuEventDestroy(p->mark);
    p->mark = NULL;
}
