// The kernel instantiations that get compiled: NVW_SHAPE(X, variant, precision, R, S, A) expands X once per batch
// per block in NVW_BATCHES_PER_BLOCK, NVW_SHAPE_UPTO2 for batch per block 1 and 2 only. One entry per line:
// nvwavenet/kernels.py and the compile-gate test read these lines, so keep them in this form.
//
// Limits behind the lists: single and dual hold 5R rows per block, so R <= 64; the persistent kernel keeps one
// R-wide row per thread for the whole run, so fp32 stops at R = 64 (R = 128 fp32 would need 128 registers of
// weights per thread); fp16 halves that and goes to R = 128, where a 384-thread block leaves 168 registers per
// thread: 64 hold the weight row, and four batch columns of accumulators on top spill (ptxas, sm_80), so R = 128
// stops at two columns per block.
#pragma once

#define NVW_BATCHES_PER_BLOCK 1, 2, 4
#define NVW_SHAPE(X, V, P, R, S, A) X(V, P, R, S, A, 1) X(V, P, R, S, A, 2) X(V, P, R, S, A, 4)
#define NVW_SHAPE_UPTO2(X, V, P, R, S, A) X(V, P, R, S, A, 1) X(V, P, R, S, A, 2)

// clang-format off
#define NVW_GPU_KERNELS_single_fp32(X)           \
    NVW_SHAPE(X, single, fp32, 32, 128, 256)     \
    NVW_SHAPE(X, single, fp32, 32, 256, 256)     \
    NVW_SHAPE(X, single, fp32, 64, 128, 256)     \
    NVW_SHAPE(X, single, fp32, 64, 256, 256)
#define NVW_GPU_KERNELS_single_fp16(X)           \
    NVW_SHAPE(X, single, fp16, 32, 128, 256)     \
    NVW_SHAPE(X, single, fp16, 32, 256, 256)     \
    NVW_SHAPE(X, single, fp16, 64, 128, 256)     \
    NVW_SHAPE(X, single, fp16, 64, 256, 256)
#define NVW_GPU_KERNELS_dual_fp32(X)             \
    NVW_SHAPE(X, dual, fp32, 32, 128, 256)       \
    NVW_SHAPE(X, dual, fp32, 32, 256, 256)       \
    NVW_SHAPE(X, dual, fp32, 64, 128, 256)       \
    NVW_SHAPE(X, dual, fp32, 64, 256, 256)
#define NVW_GPU_KERNELS_dual_fp16(X)             \
    NVW_SHAPE(X, dual, fp16, 32, 128, 256)       \
    NVW_SHAPE(X, dual, fp16, 32, 256, 256)       \
    NVW_SHAPE(X, dual, fp16, 64, 128, 256)       \
    NVW_SHAPE(X, dual, fp16, 64, 256, 256)
#define NVW_GPU_KERNELS_persistent_fp32(X)       \
    NVW_SHAPE(X, persistent, fp32, 32, 128, 256) \
    NVW_SHAPE(X, persistent, fp32, 32, 256, 256) \
    NVW_SHAPE(X, persistent, fp32, 64, 128, 256) \
    NVW_SHAPE(X, persistent, fp32, 64, 256, 256)
#define NVW_GPU_KERNELS_persistent_fp16(X)       \
    NVW_SHAPE(X, persistent, fp16, 32, 128, 256) \
    NVW_SHAPE(X, persistent, fp16, 32, 256, 256) \
    NVW_SHAPE(X, persistent, fp16, 64, 128, 256) \
    NVW_SHAPE(X, persistent, fp16, 64, 256, 256) \
    NVW_SHAPE_UPTO2(X, persistent, fp16, 128, 128, 256) \
    NVW_SHAPE_UPTO2(X, persistent, fp16, 128, 256, 256)

// The CPU emulation compiles small shapes only (every fiber is a CUDA thread: 5R + S of them per single block),
// covering each variant and precision, S < R and S > R, and 2 or 4 classes per lane in the sampling warp.
#define NVW_EMULATION_KERNELS(X)                 \
    X(single, fp32, 32, 64, 64, 1)               \
    X(single, fp32, 32, 64, 64, 2)               \
    X(single, fp16, 32, 64, 64, 1)               \
    X(single, fp16, 32, 64, 64, 2)               \
    X(single, fp32, 64, 32, 128, 1)              \
    X(single, fp16, 64, 32, 128, 2)              \
    X(dual, fp32, 32, 64, 64, 1)                 \
    X(dual, fp32, 32, 64, 64, 2)                 \
    X(dual, fp16, 32, 64, 64, 2)                 \
    X(dual, fp32, 64, 32, 128, 1)                \
    X(persistent, fp32, 32, 64, 64, 1)          \
    X(persistent, fp32, 32, 64, 64, 2)          \
    X(persistent, fp16, 32, 64, 64, 1)          \
    X(persistent, fp16, 64, 32, 128, 2)
// clang-format on

#define NVW_GPU_KERNELS(X)               \
    NVW_GPU_KERNELS_single_fp32(X)       \
    NVW_GPU_KERNELS_single_fp16(X)       \
    NVW_GPU_KERNELS_dual_fp32(X)         \
    NVW_GPU_KERNELS_dual_fp16(X)         \
    NVW_GPU_KERNELS_persistent_fp32(X)   \
    NVW_GPU_KERNELS_persistent_fp16(X)

#ifdef NVW_EMULATION
#define NVW_KERNELS(X) NVW_EMULATION_KERNELS(X)
#else
#define NVW_KERNELS(X) NVW_GPU_KERNELS(X)
#endif
