// Persistent kernel: every weight row of every layer stays in a register of some block for the whole launch, and
// the blocks hand activations to each other through global memory (L2).
//
// Blocks by index (grid = 3L + output_blocks, all co-resident: cooperative launch):
//   [0, L)    PREV l     2R threads with W_prev rows: a_prev[s % 2] = W_prev x_l[s - d_l] + b  (runs ahead)
//   [L, 2L)   CURRES l   2R CUR threads (W_cur rows, paired as in kernel_common.h: cur_row) + R RES threads
//                        (W_res rows); layer 0 also embeds y.
//                        Publishes h_l (for SKIP l) and x_{l+1} (for CURRES l+1 and PREV l+1).
//   [2L, 3L)  SKIP l     S threads with W_skip rows: skip_l = skip_{l-1} + W_skip h_l + b, a chain down the layers
//   [3L, ..)  OUTPUT j   relu(skip_{L-1}), the output layers and sampling for batch groups j, j + n, ...
// Every block loops over (sample, batch group) in the same order, so while layer l works on group g+1, layer l+1
// works on group g: a pipeline along the layers. One sample's critical path is L CURRES hand-offs plus the
// output block and the feedback of y to CURRES 0.
//
// Hand-offs use per-(layer, group) counters of samples done (Layout::flag_*), published with release stores after
// a block barrier and awaited with acquire loads (device.h). Why single buffers suffice for x, h and skip: a datum
// of sample s + 1 can only be produced after y_s exists, and y_s exists only after every consumer of sample s's
// data has finished. The exception is a_prev: PREV runs up to two samples ahead (d >= 2 needs no fresh input),
// so it double-buffers by sample parity and waits until CURRES l is done with sample s - 2 before overwriting.
#pragma once

#include "kernel_common.h"
#include "kernel_single_block.h"  // ring_slot

namespace nvw {

template <class Cfg>
struct PersistentShape {
    static constexpr int kThreads =
        dev::round_up(dev::cmax(dev::cmax(3 * Cfg::R, Cfg::S), dev::cmax(64, 32 * Cfg::BATCH)), 32);
    static_assert(kThreads <= 1024, "persistent: 3R and S threads must fit in a block");
};

template <class Cfg>
NVW_DEVICE void persistent_prev(const NvwArgs& p, int layer) {
    constexpr int R = Cfg::R, BATCH = Cfg::BATCH;
    NVW_SHARED float x_sh[BATCH][R];
    const Layout lay(p);
    const int tid = dev::thread_id(), threads = dev::block_threads(), groups = p.batch / BATCH;
    const bool is_row = tid < 2 * R;
    const int d = dev::load_readonly(p.dilations + layer);
    WeightRow<Cfg, R> weights;
    float bias = 0.f;
    if (is_row) {
        weights.load(layer_matrix<Cfg>(p.w_prev, layer, 2 * R, R), 2 * R, tid);
        bias = dev::load_readonly(p.b_gate + layer * 2 * R + tid);
    }
    for (int s = p.sample_begin; s < p.sample_end; ++s) {
        for (int g = 0; g < groups; ++g) {
            if (tid == 0) {
                if (s >= d) dev::wait_at_least(p.flags + lay.flag_x(layer, g), s - d + 1);  // input x_l[s - d]
                if (s >= 2) dev::wait_at_least(p.flags + lay.flag_x(layer + 1, g), s - 1);  // buffer s % 2 free
            }
            dev::block_sync();
            const int slot = ring_slot(s - d, p.ring_slots);
            for (int i = tid; i < BATCH * R; i += threads) {
                const int64_t at = lay.ring(slot, layer, g * BATCH + i / R) + i % R;
                x_sh[i / R][i % R] = s >= d ? dev::load_coherent(p.x_ring + at) : 0.f;
            }
            dev::block_sync();
            if (is_row) {
                float a[BATCH];
                weights.dot(SharedRows<R>{&x_sh[0][0]}, a);
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) {
                    dev::store_coherent(p.a_prev + lay.a_prev(s & 1, layer, g * BATCH + b) + tid, a[b] + bias);
                }
            }
            dev::block_sync();
            if (tid == 0) dev::store_release(p.flags + lay.flag_prev(layer, g), s + 1);
        }
    }
}

template <class Cfg>
NVW_DEVICE void persistent_cur_res(const NvwArgs& p, int layer) {
    constexpr int R = Cfg::R, BATCH = Cfg::BATCH;
    NVW_SHARED float x_sh[BATCH][R];
    NVW_SHARED float h_sh[BATCH][R];
    const Layout lay(p);
    const int tid = dev::thread_id(), threads = dev::block_threads(), groups = p.batch / BATCH;
    const bool is_cur = tid < 2 * R, is_res = tid >= 2 * R && tid < 3 * R;
    const int row = is_cur ? cur_row(tid, R) : tid - 2 * R;
    WeightRow<Cfg, R> weights;
    float res_bias = 0.f;
    if (is_cur) weights.load(layer_matrix<Cfg>(p.w_cur, layer, 2 * R, R), 2 * R, row);
    if (is_res) {
        weights.load(layer_matrix<Cfg>(p.w_res, layer, R, R), R, row);
        res_bias = dev::load_readonly(p.b_res + layer * R + row);
    }

    for (int s = p.sample_begin; s < p.sample_end; ++s) {
        const int t = s - p.sample_begin, slot = ring_slot(s, p.ring_slots);
        for (int g = 0; g < groups; ++g) {
            const int col0 = g * BATCH;
            if (tid == 0) {
                if (layer == 0) {
                    dev::wait_at_least(p.flags + lay.flag_y(g), s);  // y_{s-1}
                } else {
                    dev::wait_at_least(p.flags + lay.flag_x(layer, g), s + 1);  // x_l[s]
                }
                dev::wait_at_least(p.flags + lay.flag_prev(layer, g), s + 1);
            }
            dev::block_sync();
            if (layer == 0) {
                if (is_res) {
                    NVW_UNROLL
                    for (int b = 0; b < BATCH; ++b) {
                        const int col = col0 + b;
                        const float x = embed(p, dev::load_coherent(p.history + 2 * col),
                                              dev::load_coherent(p.history + 2 * col + 1), row);
                        x_sh[b][row] = x;
                        dev::store_coherent(p.x_ring + lay.ring(slot, 0, col) + row, x);
                    }
                }
            } else {
                for (int i = tid; i < BATCH * R; i += threads) {
                    x_sh[i / R][i % R] = dev::load_coherent(p.x_ring + lay.ring(slot, layer, col0 + i / R) + i % R);
                }
            }
            float terms[BATCH];
            if (is_cur) {
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) {
                    terms[b] = dev::load_coherent(p.a_prev + lay.a_prev(s & 1, layer, col0 + b) + row) +
                               dev::load_readonly(p.conditioning + lay.conditioning(t, layer, col0 + b) + row);
                }
            }
            dev::block_sync();
            if (is_cur) {
                float a[BATCH];
                weights.dot(SharedRows<R>{&x_sh[0][0]}, a);
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) a[b] += terms[b];
                gate_pair<BATCH>(a, tid, &h_sh[0][0], R);
            }
            dev::block_sync();
            if (is_res) {
                float v[BATCH];
                weights.dot(SharedRows<R>{&h_sh[0][0]}, v);
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) {
                    const int col = col0 + b;
                    const float h = h_sh[b][row];
                    const float x = x_sh[b][row] + v[b] + res_bias;
                    dev::store_coherent(p.h_buffer + lay.h(layer, col) + row, h);
                    dev::store_coherent(p.x_ring + lay.ring(slot, layer + 1, col) + row, x);
                    if (p.dump_x) p.dump_x[lay.dump_layer(s, layer, col) + row] = x;
                    if (p.dump_h) p.dump_h[lay.dump_layer(s, layer, col) + row] = h;
                }
            }
            dev::block_sync();
            if (tid == 0) {
                if (layer == 0) dev::store_release(p.flags + lay.flag_x(0, g), s + 1);
                dev::store_release(p.flags + lay.flag_x(layer + 1, g), s + 1);
                dev::store_release(p.flags + lay.flag_h(layer, g), s + 1);
            }
        }
    }
}

template <class Cfg>
NVW_DEVICE void persistent_skip(const NvwArgs& p, int layer) {
    constexpr int R = Cfg::R, S = Cfg::S, BATCH = Cfg::BATCH;
    NVW_SHARED float h_sh[BATCH][R];
    const Layout lay(p);
    const int tid = dev::thread_id(), threads = dev::block_threads(), groups = p.batch / BATCH;
    const bool is_row = tid < S;
    WeightRow<Cfg, R> weights;
    float bias = 0.f;
    if (is_row) {
        weights.load(layer_matrix<Cfg>(p.w_skip, layer, S, R), S, tid);
        bias = dev::load_readonly(p.b_skip + layer * S + tid);
    }
    for (int s = p.sample_begin; s < p.sample_end; ++s) {
        for (int g = 0; g < groups; ++g) {
            const int col0 = g * BATCH;
            if (tid == 0) {
                dev::wait_at_least(p.flags + lay.flag_h(layer, g), s + 1);
                if (layer > 0) dev::wait_at_least(p.flags + lay.flag_skip(layer - 1, g), s + 1);
            }
            dev::block_sync();
            for (int i = tid; i < BATCH * R; i += threads) {
                h_sh[i / R][i % R] = dev::load_coherent(p.h_buffer + lay.h(layer, col0 + i / R) + i % R);
            }
            float below[BATCH];
            NVW_UNROLL
            for (int b = 0; b < BATCH; ++b) {
                below[b] = (is_row && layer > 0)
                               ? dev::load_coherent(p.skip_buffer + lay.skip(layer - 1, col0 + b) + tid) : 0.f;
            }
            dev::block_sync();
            if (is_row) {
                float v[BATCH];
                weights.dot(SharedRows<R>{&h_sh[0][0]}, v);
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) {
                    dev::store_coherent(p.skip_buffer + lay.skip(layer, col0 + b) + tid, below[b] + v[b] + bias);
                }
            }
            dev::block_sync();
            if (tid == 0) dev::store_release(p.flags + lay.flag_skip(layer, g), s + 1);
        }
    }
}

template <class Cfg>
NVW_DEVICE void persistent_output(const NvwArgs& p, int index) {
    constexpr int S = Cfg::S, BATCH = Cfg::BATCH;
    NVW_SHARED float skip_sh[BATCH][S];
    const Layout lay(p);
    const int tid = dev::thread_id(), threads = dev::block_threads(), groups = p.batch / BATCH;
    const int last = p.num_layers - 1;
    for (int s = p.sample_begin; s < p.sample_end; ++s) {
        for (int g = index; g < groups; g += p.output_blocks) {
            const int col0 = g * BATCH;
            if (tid == 0) dev::wait_at_least(p.flags + lay.flag_skip(last, g), s + 1);
            dev::block_sync();
            for (int i = tid; i < BATCH * S; i += threads) {
                const int b = i / S, j = i % S;
                skip_sh[b][j] = fmaxf(dev::load_coherent(p.skip_buffer + lay.skip(last, col0 + b) + j), 0.f);
                if (p.dump_skip) p.dump_skip[((int64_t)s * p.batch + col0 + b) * S + j] = skip_sh[b][j];
            }
            dev::block_sync();
            output_layers<Cfg>(p, skip_sh, s, col0);  // ends with a block_sync after p.history is written
            if (tid == 0) dev::store_release(p.flags + lay.flag_y(g), s + 1);
        }
    }
}

template <class Cfg>
NVW_KERNEL(PersistentShape<Cfg>::kThreads) persistent_kernel(NvwArgs p) {
    // Roles are uniform per block, so each block's barriers are reached by all of its threads.
    const int L = p.num_layers, block = dev::block_id();
    if (block < L) {
        persistent_prev<Cfg>(p, block);
    } else if (block < 2 * L) {
        persistent_cur_res<Cfg>(p, block - L);
    } else if (block < 3 * L) {
        persistent_skip<Cfg>(p, block - 2 * L);
    } else {
        persistent_output<Cfg>(p, block - 3 * L);
    }
}

}  // namespace nvw
