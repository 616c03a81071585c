#include "stepper.h"

#include <stdio.h>
#include <string.h>

int ft_stepper_init(ft_stepper *st, ft_model *model, const ft_hparams *hp, int graph,
                    CUstream stream)
{
    memset(st, 0, sizeof *st);
    st->model = model, st->hp = *hp, st->stream = stream, st->graph = graph;
    if (!graph)
        return 0;
    const ft_cuda *cu = model->cu;
    /* Thread-local capture: only this thread's calls on this stream are
     * recorded, and any call that would synchronize fails instead. */
    if (ft_cu_check(cu, cu->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                    "cuStreamBeginCapture"))
        return -1;
    foxjit_status s = ft_model_step(model, hp, stream);
    CUresult r = cu->cuStreamEndCapture(stream, &st->g);
    if (s != FOXJIT_OK) {
        fprintf(stderr, "fox-train: capturing the step failed: %s\n", model->why);
        if (r == CUDA_SUCCESS && st->g)
            cu->cuGraphDestroy(st->g);
        st->g = NULL;
        return -1;
    }
    if (ft_cu_check(cu, r, "cuStreamEndCapture") ||
        ft_cu_check(cu, cu->cuGraphGetNodes(st->g, NULL, &st->nodes), "cuGraphGetNodes") ||
        /* Each node at the priority of the stream it was captured from
         * (model.c's side stream is the GPU's highest), not all at the
         * priority of the stream the graph is launched into. */
        ft_cu_check(cu, cu->cuGraphInstantiateWithFlags(
                            &st->exec, st->g, CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY),
                    "cuGraphInstantiateWithFlags"))
        return -1;
    return 0;
}

int ft_stepper_run(ft_stepper *st)
{
    if (st->graph)
        return ft_cu_check(st->model->cu, st->model->cu->cuGraphLaunch(st->exec, st->stream),
                           "cuGraphLaunch");
    if (ft_model_step(st->model, &st->hp, st->stream) != FOXJIT_OK) {
        fprintf(stderr, "fox-train: training step failed: %s\n", st->model->why);
        return -1;
    }
    return 0;
}

void ft_stepper_free(ft_stepper *st)
{
    const ft_cuda *cu = st->model ? st->model->cu : NULL;
    if (cu && st->exec)
        cu->cuGraphExecDestroy(st->exec);
    if (cu && st->g)
        cu->cuGraphDestroy(st->g);
    memset(st, 0, sizeof *st);
}
