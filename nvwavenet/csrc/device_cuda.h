// CUDA backend of the device abstraction (see device.h). Compiled by nvcc for sm_80 / sm_90, CUDA 12 and 13, and
// (device code only: the kernel headers, no launchers) by NVRTC, which the compile gate uses for CUDA 12.
#pragma once

#include <cuda/atomic>
#include <cuda_fp16.h>

#ifndef __CUDACC_RTC__
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#else
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no math.h
#endif

#define NVW_DEVICE __device__ __forceinline__
#define NVW_HOST_DEVICE __host__ __device__ __forceinline__
// min blocks per SM = 1: a block may use up to 64K / max_threads registers, which is what keeps weight rows in
// registers without spilling. (The 2018 code needed -maxrregcount for the same reason.)
#define NVW_KERNEL(max_threads) __global__ void __launch_bounds__(max_threads, 1)
#define NVW_SHARED __shared__ __align__(16)  // 16: vector loads of shared rows
#define NVW_UNROLL _Pragma("unroll")
#define NVW_UNROLL_NONE _Pragma("unroll 1")

namespace nvw::dev {

using Stream = cudaStream_t;
using half2_storage = __half2;

struct PairF {
    float lo, hi;
};

NVW_DEVICE int thread_id() { return static_cast<int>(threadIdx.x); }
NVW_DEVICE int block_id() { return static_cast<int>(blockIdx.x); }
NVW_DEVICE int block_threads() { return static_cast<int>(blockDim.x); }
NVW_DEVICE int grid_blocks() { return static_cast<int>(gridDim.x); }
NVW_DEVICE int lane() { return static_cast<int>(threadIdx.x) & 31; }
NVW_DEVICE int warp_id() { return static_cast<int>(threadIdx.x) >> 5; }

NVW_DEVICE void block_sync() { __syncthreads(); }

constexpr unsigned kFullWarp = 0xffffffffu;
NVW_DEVICE float shfl_xor(float v, int mask) { return __shfl_xor_sync(kFullWarp, v, mask); }
NVW_DEVICE float shfl_up(float v, int delta) { return __shfl_up_sync(kFullWarp, v, delta); }
NVW_DEVICE float shfl_idx(float v, int src) { return __shfl_sync(kFullWarp, v, src); }
NVW_DEVICE int shfl_idx(int v, int src) { return __shfl_sync(kFullWarp, v, src); }
NVW_DEVICE unsigned ballot(bool predicate) { return __ballot_sync(kFullWarp, predicate); }
NVW_DEVICE int lowest_set_bit(unsigned mask) { return __ffs(mask) - 1; }

// Flags live in global memory and are shared by blocks that run at the same time (cooperative launch), so they
// need device-scope acquire/release, not `volatile` plus a producer-side __threadfence.
NVW_DEVICE int load_acquire(const int* flag) {
    cuda::atomic_ref<int, cuda::thread_scope_device> ref(*const_cast<int*>(flag));
    return ref.load(cuda::memory_order_acquire);
}
NVW_DEVICE void store_release(int* flag, int value) {
    cuda::atomic_ref<int, cuda::thread_scope_device> ref(*flag);
    ref.store(value, cuda::memory_order_release);
}
NVW_DEVICE void wait_at_least(const int* flag, int target) {
    // Exponential back-off keeps a few hundred spinning blocks from hammering one L2 line; the cap bounds the
    // latency a hand-off can lose to sleeping.
    unsigned sleep_ns = 8;
    while (load_acquire(flag) < target) {
        __nanosleep(sleep_ns);
        sleep_ns = sleep_ns < 128 ? sleep_ns * 2 : 128;
    }
}

// .cg loads/stores cache in L2 only: another SM's writes can never be hidden behind a stale L1 line. (Never read
// such data through const __restrict__ / __ldg: the read-only path is not coherent within a kernel.)
NVW_DEVICE float load_coherent(const float* p) { return __ldcg(p); }
NVW_DEVICE int load_coherent(const int* p) { return __ldcg(p); }
NVW_DEVICE void store_coherent(float* p, float v) { __stcg(p, v); }
NVW_DEVICE void store_coherent(int* p, int v) { __stcg(p, v); }

NVW_DEVICE PairF load_pair(const float* p) {  // p 8-byte aligned (shared rows: NVW_SHARED, even offsets)
    const float2 v = *reinterpret_cast<const float2*>(p);
    return {v.x, v.y};
}

NVW_DEVICE float load_readonly(const float* p) { return __ldg(p); }
NVW_DEVICE int load_readonly(const int* p) { return __ldg(p); }
NVW_DEVICE half2_storage load_readonly(const half2_storage* p) { return __ldg(p); }

NVW_DEVICE float tanh_f(float x) { return tanhf(x); }
NVW_DEVICE float exp_f(float x) { return expf(x); }
// Explicit intrinsics: PyTorch's extension flags (-D__CUDA_NO_HALF_CONVERSIONS__ ...) forbid implicit half math.
NVW_DEVICE PairF unpack_half2(half2_storage h) {
    const float2 f = __half22float2(h);
    return {f.x, f.y};
}

// ---- host side -------------------------------------------------------------------------------------------
#ifndef __CUDACC_RTC__  // NVRTC compiles device code only

inline void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        throw std::runtime_error(std::string("nvwavenet: ") + what + ": " + cudaGetErrorName(status) + " (" +
                                 cudaGetErrorString(status) + ")");
    }
}

// Every launch is checked, both the launch call itself and the sticky/last error it may leave.
template <class Args>
void launch(void (*kernel)(Args), int grid, int block, bool cooperative, Stream stream, Args args,
            const char* name) {
    void* params[] = {&args};
    const void* function = reinterpret_cast<const void*>(kernel);
    cudaError_t status = cooperative
                             ? cudaLaunchCooperativeKernel(function, dim3(grid), dim3(block), params, 0, stream)
                             : cudaLaunchKernel(function, dim3(grid), dim3(block), params, 0, stream);
    check(status, name);
    check(cudaGetLastError(), name);
}

// How many blocks of this kernel can be resident at once on the current device (the bound a cooperative launch,
// and so every kernel that spins on other blocks, must respect).
template <class Args>
int coresident_capacity(void (*kernel)(Args), int block, bool* cooperative_supported) {
    int device = 0, sms = 0, per_sm = 0, cooperative = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "multiprocessor count");
    check(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device), "cooperative launch");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(kernel), block, 0),
          "occupancy query");
    *cooperative_supported = cooperative != 0;
    return per_sm * sms;
}
#endif  // __CUDACC_RTC__

}  // namespace nvw::dev
