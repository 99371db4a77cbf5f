// The kernel instantiations that get compiled: NVW_SHAPE(X, variant, precision, R, S, A) expands X once per batch
// per block in NVW_BATCHES_PER_BLOCK, NVW_SHAPE_UPTO2 for batch per block 1 and 2 only. One entry per line:
// nvwavenet/kernels.py and the compile-gate test read these lines, so keep them in this form.
//
// Limits behind the lists (ptxas -v, CUDA 13, sm_80 and sm_90). Single and dual hold 5R rows per block, so
// R <= 64. The persistent kernel keeps one R-wide weight row per thread for the whole run, in blocks of
// max(3R, S) threads: at R = 128, 384 threads, which __launch_bounds__(384, 1) gives 168 registers each. The row
// takes 128 of them in fp32 (64 in fp16, packed in half2) and the rest of the kernel fits in what is left for one
// or two batch columns: 0 bytes spilled. Four columns spill on sm_80 (4 bytes, in fp32 and in fp16 alike), so
// R = 128 stops at two columns per block. Splitting each fp32 row over two lanes (64 registers each, partial sums
// added with a shuffle) was tried and rejected: the block doubles to 768 threads, whose 80 registers leave 16 for
// everything but the row, and it spilled 52-68 bytes even at one column.
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
    NVW_SHAPE(X, persistent, fp32, 64, 256, 256) \
    NVW_SHAPE_UPTO2(X, persistent, fp32, 128, 128, 256) \
    NVW_SHAPE_UPTO2(X, persistent, fp32, 128, 256, 256)
#define NVW_GPU_KERNELS_persistent_fp16(X)       \
    NVW_SHAPE(X, persistent, fp16, 32, 128, 256) \
    NVW_SHAPE(X, persistent, fp16, 32, 256, 256) \
    NVW_SHAPE(X, persistent, fp16, 64, 128, 256) \
    NVW_SHAPE(X, persistent, fp16, 64, 256, 256) \
    NVW_SHAPE_UPTO2(X, persistent, fp16, 128, 128, 256) \
    NVW_SHAPE_UPTO2(X, persistent, fp16, 128, 256, 256)

// The CPU emulation compiles small shapes only (every fiber is a CUDA thread: 5R + S of them per single block),
// covering each variant and precision, S < R and S > R, and 2 or 4 classes per lane in the sampling warp, plus the
// 128-register fp32 rows of the persistent kernel at R = 128 (384 fibers per block).
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
    X(persistent, fp16, 64, 32, 128, 2)         \
    X(persistent, fp32, 128, 64, 64, 1)         \
    X(persistent, fp32, 128, 64, 64, 2)
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
