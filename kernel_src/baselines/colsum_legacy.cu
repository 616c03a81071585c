// Baselines for `fox-jit bench` and cross-checks in tests: the serial and
// two-phase column sums the original trainers used, with the same math.
// Not used by the ops.

// One thread per column, looping over every row.
extern "C" __global__ void colsum_serial(const float *__restrict__ x, long long rows,
                                         long long cols, float *__restrict__ out,
                                         int accumulate)
{
    long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    float s = 0.0f;
    for (long long r = 0; r < rows; r++)
        s += x[r * cols + c];
    out[c] = accumulate ? out[c] + s : s;
}

// Two-phase: p1 sums chunks of LEGACY_CHUNK rows per column into
// partial[chunk, col] (one thread per column, grid.y = chunks); p2 sums the
// chunk partials per column.
#define LEGACY_CHUNK 256
extern "C" __global__ void colsum_p1(const float *__restrict__ x, long long rows,
                                     long long cols, float *__restrict__ partial)
{
    long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    long long r0 = (long long)blockIdx.y * LEGACY_CHUNK;
    long long r1 = r0 + LEGACY_CHUNK < rows ? r0 + LEGACY_CHUNK : rows;
    float s = 0.0f;
    for (long long r = r0; r < r1; r++)
        s += x[r * cols + c];
    partial[(long long)blockIdx.y * cols + c] = s;
}

extern "C" __global__ void colsum_p2(const float *__restrict__ partial, long long chunks,
                                     long long cols, float *__restrict__ out, int accumulate)
{
    long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    float s = 0.0f;
    for (long long k = 0; k < chunks; k++)
        s += partial[k * cols + c];
    out[c] = accumulate ? out[c] + s : s;
}
