/* The argument list of a kernel launch, with each argument's size, so a
 * launch site that is out of step with its kernel's declaration
 * (fj_kernel.args, which module load compares with the compiled kernel) is
 * refused before anything runs instead of passing the kernel garbage:
 *
 *     FJ_ARGS(args, w_in, w_rec, batch);   // void *args.v[] = {&w_in, ...}
 *     return fj_launch(rt, k->fn[K_FORWARD], gx, 1, 1, block, 0, stream, &args, op);
 *
 * Arguments are lvalues (their addresses are taken), up to 32. */
#ifndef FJ_LAUNCH_ARGS_H
#define FJ_LAUNCH_ARGS_H

#include <stdint.h>

typedef struct fj_args {
    void *const *v;        /* the cuLaunchKernel argument array */
    const uint16_t *size;  /* sizeof each argument */
    int n;
} fj_args;

/* FJ_ARGS_MAP(f, a, b, ...) -> f(a), f(b), ... for 1 to 32 arguments. */
#define FJ_ARGS_NTH(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, n, ...) n
#define FJ_ARGS_COUNT(...) FJ_ARGS_NTH(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define FJ_ARGS_CAT_(a, b) a##b
#define FJ_ARGS_CAT(a, b) FJ_ARGS_CAT_(a, b)
#define FJ_ARGS_MAP(f, ...) FJ_ARGS_CAT(FJ_ARGS_MAP_, FJ_ARGS_COUNT(__VA_ARGS__))(f, __VA_ARGS__)
#define FJ_ARGS_MAP_1(f, x) f(x)
#define FJ_ARGS_MAP_2(f, x, ...) f(x), FJ_ARGS_MAP_1(f, __VA_ARGS__)
#define FJ_ARGS_MAP_3(f, x, ...) f(x), FJ_ARGS_MAP_2(f, __VA_ARGS__)
#define FJ_ARGS_MAP_4(f, x, ...) f(x), FJ_ARGS_MAP_3(f, __VA_ARGS__)
#define FJ_ARGS_MAP_5(f, x, ...) f(x), FJ_ARGS_MAP_4(f, __VA_ARGS__)
#define FJ_ARGS_MAP_6(f, x, ...) f(x), FJ_ARGS_MAP_5(f, __VA_ARGS__)
#define FJ_ARGS_MAP_7(f, x, ...) f(x), FJ_ARGS_MAP_6(f, __VA_ARGS__)
#define FJ_ARGS_MAP_8(f, x, ...) f(x), FJ_ARGS_MAP_7(f, __VA_ARGS__)
#define FJ_ARGS_MAP_9(f, x, ...) f(x), FJ_ARGS_MAP_8(f, __VA_ARGS__)
#define FJ_ARGS_MAP_10(f, x, ...) f(x), FJ_ARGS_MAP_9(f, __VA_ARGS__)
#define FJ_ARGS_MAP_11(f, x, ...) f(x), FJ_ARGS_MAP_10(f, __VA_ARGS__)
#define FJ_ARGS_MAP_12(f, x, ...) f(x), FJ_ARGS_MAP_11(f, __VA_ARGS__)
#define FJ_ARGS_MAP_13(f, x, ...) f(x), FJ_ARGS_MAP_12(f, __VA_ARGS__)
#define FJ_ARGS_MAP_14(f, x, ...) f(x), FJ_ARGS_MAP_13(f, __VA_ARGS__)
#define FJ_ARGS_MAP_15(f, x, ...) f(x), FJ_ARGS_MAP_14(f, __VA_ARGS__)
#define FJ_ARGS_MAP_16(f, x, ...) f(x), FJ_ARGS_MAP_15(f, __VA_ARGS__)
#define FJ_ARGS_MAP_17(f, x, ...) f(x), FJ_ARGS_MAP_16(f, __VA_ARGS__)
#define FJ_ARGS_MAP_18(f, x, ...) f(x), FJ_ARGS_MAP_17(f, __VA_ARGS__)
#define FJ_ARGS_MAP_19(f, x, ...) f(x), FJ_ARGS_MAP_18(f, __VA_ARGS__)
#define FJ_ARGS_MAP_20(f, x, ...) f(x), FJ_ARGS_MAP_19(f, __VA_ARGS__)
#define FJ_ARGS_MAP_21(f, x, ...) f(x), FJ_ARGS_MAP_20(f, __VA_ARGS__)
#define FJ_ARGS_MAP_22(f, x, ...) f(x), FJ_ARGS_MAP_21(f, __VA_ARGS__)
#define FJ_ARGS_MAP_23(f, x, ...) f(x), FJ_ARGS_MAP_22(f, __VA_ARGS__)
#define FJ_ARGS_MAP_24(f, x, ...) f(x), FJ_ARGS_MAP_23(f, __VA_ARGS__)
#define FJ_ARGS_MAP_25(f, x, ...) f(x), FJ_ARGS_MAP_24(f, __VA_ARGS__)
#define FJ_ARGS_MAP_26(f, x, ...) f(x), FJ_ARGS_MAP_25(f, __VA_ARGS__)
#define FJ_ARGS_MAP_27(f, x, ...) f(x), FJ_ARGS_MAP_26(f, __VA_ARGS__)
#define FJ_ARGS_MAP_28(f, x, ...) f(x), FJ_ARGS_MAP_27(f, __VA_ARGS__)
#define FJ_ARGS_MAP_29(f, x, ...) f(x), FJ_ARGS_MAP_28(f, __VA_ARGS__)
#define FJ_ARGS_MAP_30(f, x, ...) f(x), FJ_ARGS_MAP_29(f, __VA_ARGS__)
#define FJ_ARGS_MAP_31(f, x, ...) f(x), FJ_ARGS_MAP_30(f, __VA_ARGS__)
#define FJ_ARGS_MAP_32(f, x, ...) f(x), FJ_ARGS_MAP_31(f, __VA_ARGS__)

#define FJ_ARGS_ADDR(x) ((void *)&(x))
#define FJ_ARGS_SIZE(x) ((uint16_t)sizeof(x))

/* Declares `fj_args name` over the arguments, in the kernel's order. */
#define FJ_ARGS(name, ...)                                                            \
    void *const name##_v[] = {FJ_ARGS_MAP(FJ_ARGS_ADDR, __VA_ARGS__)};               \
    static const uint16_t name##_size[] = {FJ_ARGS_MAP(FJ_ARGS_SIZE, __VA_ARGS__)};   \
    const fj_args name = {name##_v, name##_size,                                      \
                          (int)(sizeof name##_size / sizeof name##_size[0])}

#endif
