// Dual-block kernel: the model for BATCH columns split over a pair of cooperating blocks.
//   even block  the residual stack (embedding, CUR, PREV, RES): kernel_single_block.h without the skip role
//   odd block   the skip GEMVs, the output layers and sampling
// Per layer the even block publishes h (flag_h = samples done for that layer); the odd block accumulates the skip
// sum a layer behind it. Per sample the odd block publishes y (flag_y), which the even block needs to embed the
// next sample. Moving the skip GEMVs (S x R per layer) and the output layers off the residual critical path is
// the point; the price is two hand-offs through L2 per layer and sample. Both blocks of a pair must be resident
// at once, hence the cooperative launch.
#pragma once

#include "kernel_single_block.h"

namespace nvw {

template <class Cfg>
struct DualBlockShape {
    static constexpr int kThreads = dev::round_up(
        dev::cmax(dev::cmax(5 * Cfg::R, Cfg::S), dev::cmax(Cfg::A, 32 * Cfg::BATCH)), 32);
    static_assert(kThreads <= 1024, "dual-block: 5R threads must fit in a block");
};

template <class Cfg>
NVW_DEVICE void skip_and_output(const NvwArgs& p, int group) {
    constexpr int R = Cfg::R, S = Cfg::S, BATCH = Cfg::BATCH;
    NVW_SHARED float h_sh[BATCH][R];
    NVW_SHARED float skip_sh[BATCH][S];
    const Layout lay(p);
    const int tid = dev::thread_id(), threads = dev::block_threads(), col0 = group * BATCH;
    const bool is_skip = tid < S;
    WeightRow<Cfg, R> weights;
    float skip_sum[BATCH];

    for (int s = p.sample_begin; s < p.sample_end; ++s) {
        NVW_UNROLL
        for (int b = 0; b < BATCH; ++b) skip_sum[b] = 0.f;
        for (int l = 0; l < p.num_layers; ++l) {
            if (is_skip) weights.load(layer_matrix<Cfg>(p.w_skip, l, S, R), S, tid);  // in flight during the wait
            if (tid == 0) dev::wait_at_least(p.flags + lay.flag_h(l, group), s + 1);
            dev::block_sync();
            for (int i = tid; i < BATCH * R; i += threads) {
                h_sh[i / R][i % R] = dev::load_coherent(p.h_buffer + lay.h(l, col0 + i / R) + i % R);
            }
            dev::block_sync();
            if (is_skip) {
                float v[BATCH];
                weights.dot(SharedRows<R>{&h_sh[0][0]}, v);
                const float bias = dev::load_readonly(p.b_skip + l * S + tid);
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) skip_sum[b] += v[b] + bias;
            }
            // No barrier here: h_sh is next overwritten after the next wait's block_sync, which every thread
            // reaches only after finishing this dot product.
        }
        if (is_skip) {
            NVW_UNROLL
            for (int b = 0; b < BATCH; ++b) {
                skip_sh[b][tid] = fmaxf(skip_sum[b], 0.f);
                if (p.dump_skip) p.dump_skip[((int64_t)s * p.batch + col0 + b) * S + tid] = skip_sh[b][tid];
            }
        }
        dev::block_sync();
        output_layers<Cfg>(p, skip_sh, s, col0);  // ends with a block_sync after p.history is written
        if (tid == 0) dev::store_release(p.flags + lay.flag_y(group), s + 1);
    }
}

template <class Cfg>
NVW_KERNEL(DualBlockShape<Cfg>::kThreads) dual_block_kernel(NvwArgs p) {
    // The branch is uniform per block, so each block's barriers are reached by all of its threads.
    if (dev::block_id() % 2 == 0) {
        residual_stack<Cfg, false>(p, dev::block_id() / 2);
    } else {
        skip_and_output<Cfg>(p, dev::block_id() / 2);
    }
}

}  // namespace nvw
