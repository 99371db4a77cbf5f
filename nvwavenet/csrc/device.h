// The device abstraction every nv-wavenet kernel is written against.
//
// The kernels never touch CUDA built-ins, inline PTX, `volatile` spins or `<<<>>>` directly. They call the small
// API below, which has two backends:
//
//   device_cuda.h       compiled by nvcc: the real thing (barriers, warp shuffles, acquire/release flags).
//   device_emulation.h  compiled by g++ with -DNVW_EMULATION: thread blocks run as OS threads and CUDA threads as
//                       fibers (emulation_runtime.cpp), so the very same kernel sources run and are tested on a
//                       machine without a GPU.
//
// API (namespace nvw::dev), all callable from device code:
//   NVW_DEVICE / NVW_HOST_DEVICE      function qualifiers
//   NVW_KERNEL(max_threads)           `__global__ void` with launch bounds (one block per SM may use all registers)
//   NVW_SHARED                        a per-block variable (`__shared__`; thread_local in the emulation)
//   NVW_UNROLL / NVW_UNROLL_NONE      "unroll this loop" / "do not unroll it" pragmas
//   thread_id() block_id() block_threads() grid_blocks() lane() warp_id()
//   block_sync()                      every live thread of the block (all roles reach the same call in our kernels)
//   shfl_xor / shfl_up / shfl_idx / ballot / lowest_set_bit   full-warp collectives (all 32 lanes take part)
//   load_acquire(flag) store_release(flag, v) wait_at_least(flag, v)   inter-block flags, device scope
//   load_coherent(p) store_coherent(p, v)     data exchanged between blocks of a running grid (bypasses L1)
//   load_readonly(p)                  data no block writes while the kernel runs (weights, conditioning)
//   load_pair(p)                      two consecutive floats of shared memory in one load (p 8-byte aligned)
//   tanh_f exp_f                      accurate float math (no fast-math: the tests compare against fp64 tightly)
//   unpack_half2(h) -> PairF          two packed fp16 weights as floats (accumulation is always fp32)
//
// Inter-block protocol used by the dual-block and persistent kernels (the CUTLASS semaphore pattern):
//   producer: all threads store data; block_sync(); thread 0: store_release(flag, sample + 1)
//   consumer: thread 0: wait_at_least(flag, sample + 1); block_sync(); all threads load_coherent(data)
// The barrier orders every producer thread's stores before thread 0's release (and the consumer's loads after its
// acquire), so no per-thread fences are needed. Flags count samples, so they never need clearing between samples.
#pragma once

#if defined(__CUDACC__) && !defined(NVW_EMULATION)
#include "device_cuda.h"
#elif defined(NVW_EMULATION)
#include "device_emulation.h"
#else
#error "Compile the kernels with nvcc (CUDA backend) or define NVW_EMULATION (CPU emulation backend)."
#endif

namespace nvw::dev {

// Not every backend has max() in device code for constexpr use.
constexpr int cmax(int a, int b) { return a > b ? a : b; }
constexpr int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace nvw::dev
