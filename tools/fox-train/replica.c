#include "replica.h"

#include "losslog.h"
#include "state.h"

static int rank_gave_up(void *rank)
{
    return ft_rank_should_stop(rank);
}

int ft_replica_open(ft_rank *r, ft_model *model, ft_feed *feed, const ft_run_config *rc,
                    const ft_dataset *train, int batch_per_rank, int per_step,
                    ft_prepare_stats *stats)
{
    ft_env *e = &r->env;
    const ft_ckpt_meta *cfg = &rc->cfg;
    ft_dims dims = cfg->dims;
    dims.batch = batch_per_rank;
    if (ft_model_alloc(model, e->api, e->rt, &e->cu, &dims,
                       per_step ? FT_PATH_PER_STEP : FT_PATH_SEQUENCE)) {
        ft_rank_fail(r, "%s", model->why);
        return -1;
    }
    e->api->runtime_get_counters(e->rt, &stats->before);
    double t0 = ft_now_s();
    if (ft_model_prepare(model)) {
        ft_rank_fail(r, "preparing the kernels failed: %s", model->why);
        return -1;
    }
    stats->seconds = ft_now_s() - t0;
    e->api->runtime_get_counters(e->rt, &stats->after);
    if (ft_state_load(model, e->stream, cfg->seed, rc->start, rc->params, rc->m, rc->v) ||
        ft_feed_open_slice(feed, &e->cu, train, cfg->dims.batch, r->index, r->count, cfg->seed))
        return -2;
    /* A unit's upload can queue behind an all-reduce that a stopped peer
     * never joins: its wait gives up as the rank's other waits do. */
    feed->give_up = rank_gave_up;
    feed->give_up_arg = r;
    return 0;
}

int ft_replica_enqueue_step(ft_rank *r, ft_model *model, ft_feed *feed, ft_stepper *stepper,
                            int64_t g, float *loss_slot)
{
    const ft_cuda *cu = &r->env.cu;
    CUstream s = r->env.stream;
    if (ft_feed_batch(feed, g, model->batch_in, s) || ft_stepper_run(stepper) ||
        ft_cu_check(cu, cu->cuMemcpyDtoHAsync(loss_slot, model->loss, 4, s),
                    "cuMemcpyDtoHAsync (loss)")) {
        if (!ft_team_broken(r->team))   /* else another rank's failure stopped it */
            ft_rank_fail(r, "the training step could not be enqueued");
        return -1;
    }
    return 0;
}
