// Single-block kernel: the whole model for BATCH columns in one thread block, no inter-block communication.
// The residual stack below is also the even block of the dual-block kernel (kernel_dual_block.h).
//
// Thread roles (whole warps, since R and S are multiples of 32); each thread owns one row of a matrix at a time:
//   CUR   [0, 2R)       W_cur row m: a[m] = W_cur x_l[s] + PREV term + conditioning, then tanh (m < R) or sigmoid;
//                       thread pairs hold rows r and R + r and form h[r] with a shuffle (kernel_common.h: cur_row)
//   PREV  [2R, 4R)      W_prev row m: the PREV term of layer l for the *next* sample, W_prev x_l[s+1-d_l] + b.
//                       It only needs past x, so it runs beside CUR instead of on the critical path. In phase C
//                       the same threads are skip rows 0..2R-1 (single block), which keeps the block small
//                       enough (<= 512 threads for R = 64, S = 256) for 128 registers per thread.
//   RES   [4R, 5R)      W_res row r: x_{l+1}[r] = x_l[r] + W_res h + b, in place; also the embedding x_0
//   SKIP  [5R, 3R + S)  W_skip rows 2R..S-1 (single block, when S > 2R)
// A skip row's running sum over the layers stays in a register of its thread.
// Two barriers per layer:
//   phase A  CUR computes the gate activations; PREV computes next sample's term, then loads its W_skip row;
//            RES and SKIP wait, their weight rows already in flight
//   phase C  RES and the skip rows consume h = tanh half * sigmoid half; CUR and PREV load their next layer's rows and terms (warp-specialised weight loading:
//            each role's loads overlap another role's arithmetic)
// Then relu(skip), the output layers and sampling (kernel_common.h) by the whole block.
//
// State in global memory (so the host can stream the conditioning in chunks and relaunch): the ring of past x,
// the PREV terms of the next sample (a_prev parity 0) and the two previous classes.
#pragma once

#include "kernel_common.h"

namespace nvw {

template <class Cfg>
struct ResidualRoles {
    static constexpr int R = Cfg::R;
    static constexpr int kCur = 0, kPrev = 2 * R, kRes = 4 * R, kSkip = 5 * R;
    static constexpr int kSkipOnly = dev::cmax(Cfg::S - 2 * R, 0);  // skip rows the PREV threads do not cover
};

template <class Cfg>
struct SingleBlockShape {
    static constexpr int kThreads = dev::round_up(
        dev::cmax(dev::cmax(5 * Cfg::R + ResidualRoles<Cfg>::kSkipOnly, Cfg::A), 32 * Cfg::BATCH), 32);
    static_assert(kThreads <= 1024, "single-block: 5R + max(S - 2R, 0) threads must fit in a block");
};

NVW_DEVICE int ring_slot(int sample, int slots) { return ((sample % slots) + slots) % slots; }

// kWithSkip: single block (skip role and output layers in this block). Otherwise this is the dual kernel's
// residual block: it takes y_{s-1} from the output block (flag_y) and hands it each layer's h (flag_h).
template <class Cfg, bool kWithSkip>
NVW_DEVICE void residual_stack(const NvwArgs& p, int group) {
    constexpr int R = Cfg::R, S = Cfg::S, BATCH = Cfg::BATCH;
    using Roles = ResidualRoles<Cfg>;
    NVW_SHARED float x_sh[BATCH][R];           // x_l[s], updated in place by RES
    NVW_SHARED float x_past_sh[BATCH][R];      // x_l[s+1-d_l] for PREV when d_l > 1
    NVW_SHARED float h_sh[BATCH][R];           // gated activation of the current layer

    const Layout lay(p);
    const int tid = dev::thread_id(), L = p.num_layers, col0 = group * BATCH;
    const bool is_cur = tid < Roles::kPrev;
    const bool is_prev = tid >= Roles::kPrev && tid < Roles::kRes;
    const bool is_res = tid >= Roles::kRes && tid < Roles::kSkip;
    const bool is_skip_only = kWithSkip && tid >= Roles::kSkip && tid < Roles::kSkip + Roles::kSkipOnly;
    const int row = is_cur ? cur_row(tid, R) : is_prev ? tid - Roles::kPrev : is_res ? tid - Roles::kRes : -1;
    const int skip_row = is_prev ? tid - Roles::kPrev : is_skip_only ? 2 * R + tid - Roles::kSkip : -1;
    const bool has_skip = kWithSkip && skip_row >= 0 && skip_row < S;

    WeightRow<Cfg, R> weights;  // every role's matrix has K = R inputs
    float cur_terms[BATCH] = {};  // CUR: PREV term (with b_gate) + conditioning of the current layer
    float skip_sum[BATCH] = {};   // SKIP: running sum over the layers

    // Loads what `layer` needs from this thread's role, issued one phase before it is used.
    auto prefetch = [&](int layer, int sample) {
        const int t = sample - p.sample_begin;
        if (is_cur) {
            weights.load(layer_matrix<Cfg>(p.w_cur, layer, 2 * R, R), 2 * R, row);
            NVW_UNROLL
            for (int b = 0; b < BATCH; ++b) {
                cur_terms[b] = p.a_prev[lay.a_prev(0, layer, col0 + b) + row] +
                               dev::load_readonly(p.conditioning + lay.conditioning(t, layer, col0 + b) + row);
            }
        } else if (is_prev) {
            weights.load(layer_matrix<Cfg>(p.w_prev, layer, 2 * R, R), 2 * R, row);
            const int d = dev::load_readonly(p.dilations + layer);
            if (d > 1) {  // d == 1 reads x_l[s] straight from x_sh
                const int slot = ring_slot(sample + 1 - d, p.ring_slots);
                for (int i = row; i < BATCH * R; i += 2 * R) {
                    x_past_sh[i / R][i % R] = p.x_ring[lay.ring(slot, layer, col0 + i / R) + i % R];
                }
            }
        } else if (is_res) {
            weights.load(layer_matrix<Cfg>(p.w_res, layer, R, R), R, row);
        } else if (is_skip_only) {
            weights.load(layer_matrix<Cfg>(p.w_skip, layer, S, R), S, skip_row);
        }
    };

    for (int s = p.sample_begin; s < p.sample_end; ++s) {
        const int slot = ring_slot(s, p.ring_slots);
        if constexpr (!kWithSkip) {
            if (tid == 0) dev::wait_at_least(p.flags + lay.flag_y(group), s);  // y_{s-1} from the output block
            dev::block_sync();
        }
        // Embedding of the two previous classes -> x_0[s], kept in shared memory and in the ring for PREV.
        if (is_res) {
            NVW_UNROLL
            for (int b = 0; b < BATCH; ++b) {
                const int col = col0 + b;
                const float x = embed(p, dev::load_coherent(p.history + 2 * col),
                                      dev::load_coherent(p.history + 2 * col + 1), row);
                x_sh[b][row] = x;
                p.x_ring[lay.ring(slot, 0, col) + row] = x;
            }
        }
        prefetch(0, s);
        if (has_skip) {
            NVW_UNROLL
            for (int b = 0; b < BATCH; ++b) skip_sum[b] = 0.f;
        }
        dev::block_sync();

        for (int l = 0; l < L; ++l) {
            // phase A
            if (is_cur) {
                float a[BATCH];
                weights.dot(SharedRows<R>{&x_sh[0][0]}, a);
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) a[b] += cur_terms[b];
                gate_pair<BATCH>(a, tid, &h_sh[0][0], R);
            } else if (is_prev) {
                const bool adjacent = dev::load_readonly(p.dilations + l) == 1;  // x_l[s+1-d] is x_l[s]
                float a[BATCH];
                weights.dot(SharedRows<R>{adjacent ? &x_sh[0][0] : &x_past_sh[0][0]}, a);
                const float bias = dev::load_readonly(p.b_gate + l * 2 * R + row);
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) p.a_prev[lay.a_prev(0, l, col0 + b) + row] = a[b] + bias;
                if (has_skip) weights.load(layer_matrix<Cfg>(p.w_skip, l, S, R), S, skip_row);  // for phase C
            }
            dev::block_sync();
            // phase C
            if (is_res) {
                float v[BATCH];
                weights.dot(SharedRows<R>{&h_sh[0][0]}, v);
                const float bias = dev::load_readonly(p.b_res + l * R + row);
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) {
                    const int col = col0 + b;
                    const float h = h_sh[b][row];
                    const float x = x_sh[b][row] + v[b] + bias;
                    x_sh[b][row] = x;
                    p.x_ring[lay.ring(slot, l + 1, col) + row] = x;
                    if constexpr (!kWithSkip) dev::store_coherent(p.h_buffer + lay.h(l, col) + row, h);
                    if (p.dump_x) p.dump_x[lay.dump_layer(s, l, col) + row] = x;
                    if (p.dump_h) p.dump_h[lay.dump_layer(s, l, col) + row] = h;
                }
            } else if (has_skip) {
                float v[BATCH];
                weights.dot(SharedRows<R>{&h_sh[0][0]}, v);
                const float bias = dev::load_readonly(p.b_skip + l * S + skip_row);
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) skip_sum[b] += v[b] + bias;
            }
            if (l + 1 < L) prefetch(l + 1, s);
            dev::block_sync();
            if constexpr (!kWithSkip) {
                if (tid == 0) dev::store_release(p.flags + lay.flag_h(l, group), s + 1);
            }
        }

        if constexpr (kWithSkip) {
            NVW_SHARED float skip_sh[BATCH][S];  // relu(skip sum), input of the output layers
            if (has_skip) {
                NVW_UNROLL
                for (int b = 0; b < BATCH; ++b) {
                    skip_sh[b][skip_row] = fmaxf(skip_sum[b], 0.f);
                    if (p.dump_skip) {
                        p.dump_skip[((int64_t)s * p.batch + col0 + b) * S + skip_row] = skip_sh[b][skip_row];
                    }
                }
            }
            dev::block_sync();
            output_layers<Cfg>(p, skip_sh, s, col0);
        }
    }
}

template <class Cfg>
NVW_KERNEL(SingleBlockShape<Cfg>::kThreads) single_block_kernel(NvwArgs p) {
    residual_stack<Cfg, true>(p, dev::block_id());
}

}  // namespace nvw
