// Host-side launch of each kernel variant, identical for both backends (dev::launch is a CUDA launch or an
// emulated grid). Declarations only, unless NVW_DEFINE_LAUNCHERS is defined: the dispatcher (api.h) must not
// instantiate kernels itself, so the GPU build can compile each variant in its own translation unit, in parallel.
#pragma once

#include <string>

#include "kernel_common.h"

namespace nvw {

template <class Cfg>
void launch_single(const NvwArgs& p, dev::Stream stream);
template <class Cfg>
void launch_dual(const NvwArgs& p, dev::Stream stream);
template <class Cfg>
void launch_persistent(const NvwArgs& p, dev::Stream stream);

// The most blocks of this kernel that can be resident at once (the limit of grids that spin on each other).
template <class Cfg>
int capacity_single(const NvwArgs& p);
template <class Cfg>
int capacity_dual(const NvwArgs& p);
template <class Cfg>
int capacity_persistent(const NvwArgs& p);

// Blocks a launch takes.
inline int grid_blocks(const NvwArgs& p) {
    const int groups = p.batch / p.batch_per_block;
    switch (p.variant) {
        case NVW_SINGLE_BLOCK: return groups;
        case NVW_DUAL_BLOCK: return 2 * groups;
        default: return 3 * p.num_layers + p.output_blocks;
    }
}

}  // namespace nvw

#ifdef NVW_DEFINE_LAUNCHERS
#include <stdexcept>

#include "kernel_dual_block.h"
#include "kernel_persistent.h"
#include "kernel_single_block.h"

namespace nvw {

// Kernels whose blocks wait on each other deadlock unless all their blocks are resident: say so before launching.
template <class Kernel>
inline void require_coresident(Kernel kernel, int grid, int threads, const char* name) {
    bool cooperative = false;
    const int capacity = dev::coresident_capacity(kernel, threads, &cooperative);
    if (!cooperative) {
        throw std::runtime_error(std::string("nvwavenet: the ") + name +
                                 " kernel needs cooperative launch (its blocks wait on each other), which this "
                                 "device does not support; use implementation='single'");
    }
    if (grid > capacity) {
        throw std::runtime_error(std::string("nvwavenet: the ") + name + " kernel needs " + std::to_string(grid) +
                                 " co-resident blocks of " + std::to_string(threads) + " threads, but this device " +
                                 "holds only " + std::to_string(capacity) +
                                 " (fewer layers, a smaller batch or another implementation would fit)");
    }
}

template <class Cfg>
void launch_single(const NvwArgs& p, dev::Stream stream) {
    dev::launch(single_block_kernel<Cfg>, p.batch / Cfg::BATCH, SingleBlockShape<Cfg>::kThreads, false, stream, p,
                "single-block kernel");
}

template <class Cfg>
void launch_dual(const NvwArgs& p, dev::Stream stream) {
    const int grid = grid_blocks(p), threads = DualBlockShape<Cfg>::kThreads;
    require_coresident(dual_block_kernel<Cfg>, grid, threads, "dual-block");
    dev::launch(dual_block_kernel<Cfg>, grid, threads, true, stream, p, "dual-block kernel");
}

template <class Cfg>
void launch_persistent(const NvwArgs& p, dev::Stream stream) {
    const int grid = grid_blocks(p), threads = PersistentShape<Cfg>::kThreads;
    require_coresident(persistent_kernel<Cfg>, grid, threads, "persistent");
    dev::launch(persistent_kernel<Cfg>, grid, threads, true, stream, p, "persistent kernel");
}

template <class Cfg>
int capacity_single(const NvwArgs&) {
    bool cooperative = false;
    return dev::coresident_capacity(single_block_kernel<Cfg>, SingleBlockShape<Cfg>::kThreads, &cooperative);
}
template <class Cfg>
int capacity_dual(const NvwArgs&) {
    bool cooperative = false;
    return dev::coresident_capacity(dual_block_kernel<Cfg>, DualBlockShape<Cfg>::kThreads, &cooperative);
}
template <class Cfg>
int capacity_persistent(const NvwArgs&) {
    bool cooperative = false;
    return dev::coresident_capacity(persistent_kernel<Cfg>, PersistentShape<Cfg>::kThreads, &cooperative);
}

}  // namespace nvw

// Explicit instantiation of one list entry (see instantiations.h): the launchers and capacity queries of a kernel.
#define NVW_INSTANTIATE(VARIANT, PRECISION, R, S, A, BATCH)                                              \
    template void nvw::launch_##VARIANT<nvw::KernelConfig<nvw::Precision::PRECISION, R, S, A, BATCH>>( \
        const nvw::NvwArgs&, nvw::dev::Stream);                                                         \
    template int nvw::capacity_##VARIANT<nvw::KernelConfig<nvw::Precision::PRECISION, R, S, A, BATCH>>( \
        const nvw::NvwArgs&);
#endif  // NVW_DEFINE_LAUNCHERS
