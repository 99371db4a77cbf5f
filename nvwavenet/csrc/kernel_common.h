// Pieces shared by the three kernels: the compile-time configuration, a weight row held in registers and its dot
// products, the output layers with inverse-CDF sampling, and the init kernel.
#pragma once

#include <type_traits>

#include "device.h"
#include "wavenet_args.h"

namespace nvw {

enum class Precision : int { fp32 = NVW_FP32, fp16 = NVW_FP16 };

// Everything a kernel instantiation is specialised on. Sizes are compile-time so that weight rows and
// accumulators are register arrays.
template <Precision P, int R_, int S_, int A_, int BATCH_>
struct KernelConfig {
    static constexpr Precision precision = P;
    static constexpr int R = R_;          // residual channels
    static constexpr int S = S_;          // skip channels
    static constexpr int A = A_;          // audio classes
    static constexpr int BATCH = BATCH_;  // batch columns advanced together by one block
    // fp16 keeps two adjacent input channels of a row in one 32-bit half2, so a row of K weights is K/2 registers.
    using Weight = std::conditional_t<P == Precision::fp32, float, dev::half2_storage>;
    static constexpr int kPack = P == Precision::fp32 ? 1 : 2;

    static_assert(R % 32 == 0 && S % 32 == 0, "R and S must be multiples of 32 (thread roles are whole warps)");
    static_assert(A % 32 == 0, "A must be a multiple of 32 (one warp samples one column)");
    static_assert(BATCH >= 1 && BATCH <= 4, "1 to 4 batch columns per block");
};

// ---------------------------------------------------------------------------------------------------------------
// Dot products. `input(b, i)` gives input channels 2i and 2i+1 of batch column b: one 64-bit shared-memory load,
// usually a broadcast (every thread of the role reads the same address). Two partial sums per column (the even
// and the odd channels) shorten the dependent FMA chain; each weight is used once per column.

// Input rows laid out as [BATCH][STRIDE] floats in shared memory.
template <int STRIDE>
struct SharedRows {
    const float* base;
    NVW_DEVICE dev::PairF operator()(int b, int i) const { return dev::load_pair(base + b * STRIDE + 2 * i); }
};

template <class Cfg, int K, class Input>
NVW_DEVICE void dot_from_registers(const typename Cfg::Weight (&w)[K / Cfg::kPack], Input input,
                                   float (&out)[Cfg::BATCH]) {
    float even[Cfg::BATCH], odd[Cfg::BATCH];
    NVW_UNROLL
    for (int b = 0; b < Cfg::BATCH; ++b) even[b] = odd[b] = 0.f;
    if constexpr (Cfg::kPack == 1) {
        NVW_UNROLL
        for (int i = 0; i < K / 2; ++i) {
            NVW_UNROLL
            for (int b = 0; b < Cfg::BATCH; ++b) {
                const dev::PairF x = input(b, i);
                even[b] = fmaf(w[2 * i], x.lo, even[b]);
                odd[b] = fmaf(w[2 * i + 1], x.hi, odd[b]);
            }
        }
    } else {
        NVW_UNROLL
        for (int i = 0; i < K / 2; ++i) {
            const dev::PairF pair = dev::unpack_half2(w[i]);
            NVW_UNROLL
            for (int b = 0; b < Cfg::BATCH; ++b) {
                const dev::PairF x = input(b, i);
                even[b] = fmaf(pair.lo, x.lo, even[b]);
                odd[b] = fmaf(pair.hi, x.hi, odd[b]);
            }
        }
    }
    NVW_UNROLL
    for (int b = 0; b < Cfg::BATCH; ++b) out[b] = even[b] + odd[b];
}

// One row of an (M x K) matrix, owned by one thread: loaded ahead of its use so the load latency hides behind
// whatever the thread waits for next (this is the warp-specialised weight loading of the single/dual kernels, and
// the whole-run weight residency of the persistent one).
template <class Cfg, int K>
struct WeightRow {
    static_assert(K % 2 == 0, "K must be even");
    typename Cfg::Weight w[K / Cfg::kPack];

    NVW_DEVICE void load(const typename Cfg::Weight* matrix, int rows, int row) {
        NVW_UNROLL
        for (int i = 0; i < K / Cfg::kPack; ++i) w[i] = dev::load_readonly(matrix + i * rows + row);
    }
    template <class Input>
    NVW_DEVICE void dot(Input input, float (&out)[Cfg::BATCH]) const {
        dot_from_registers<Cfg, K>(w, input, out);
    }
};

// The same product with weights streamed from global memory (L2): for the output layers, whose rows are too long
// to keep in registers. Loads of the next few elements are independent of the FMAs, so they pipeline.
template <class Cfg, int K, class Input>
NVW_DEVICE void dot_streamed(const typename Cfg::Weight* matrix, int rows, int row, Input input,
                             float (&out)[Cfg::BATCH]) {
    constexpr int kTile = 16;  // elements per register tile
    constexpr int kElems = K / Cfg::kPack;
    static_assert(kElems % kTile == 0, "output-layer K must be a multiple of 16 (32 for fp16)");
    float total[Cfg::BATCH];
    NVW_UNROLL
    for (int b = 0; b < Cfg::BATCH; ++b) total[b] = 0.f;
    // One tile in flight at a time: unrolling this loop lets the compiler hoist every tile's loads, and the
    // registers that takes are what the weight rows of the other roles need.
    NVW_UNROLL_NONE
    for (int base = 0; base < kElems; base += kTile) {
        typename Cfg::Weight tile[kTile];
        NVW_UNROLL
        for (int i = 0; i < kTile; ++i) tile[i] = dev::load_readonly(matrix + (base + i) * rows + row);
        float part[Cfg::BATCH];
        const int pair0 = base * Cfg::kPack / 2;
        dot_from_registers<Cfg, kTile * Cfg::kPack>(
            tile, [&](int b, int i) { return input(b, pair0 + i); }, part);
        NVW_UNROLL
        for (int b = 0; b < Cfg::BATCH; ++b) total[b] += part[b];
    }
    NVW_UNROLL
    for (int b = 0; b < Cfg::BATCH; ++b) out[b] = total[b];
}

template <class Cfg>
NVW_DEVICE const typename Cfg::Weight* layer_matrix(const void* stacked, int layer, int rows, int cols) {
    return static_cast<const typename Cfg::Weight*>(stacked) +
           layer * rows * (cols / Cfg::kPack);
}

NVW_DEVICE float sigmoid_f(float x) { return 1.f / (1.f + dev::exp_f(-x)); }

// The 2R CUR threads of a layer are interleaved: thread 2r owns row r of the gate input (its tanh half) and
// thread 2r + 1 row R + r (its sigmoid half), so the pair forms h[r] = tanh * sigmoid with one warp shuffle and
// the consumers read a ready h instead of two activations per input channel.
NVW_DEVICE int cur_row(int cur_thread, int R) { return (cur_thread & 1) ? R + (cur_thread >> 1) : cur_thread >> 1; }

// Called by all CUR threads (whole warps): gate input a (this thread's row) -> h[r] in h_row[b * stride + r].
template <int BATCH>
NVW_DEVICE void gate_pair(const float (&a)[BATCH], int cur_thread, float* h_rows, int stride) {
    const bool tanh_half = (cur_thread & 1) == 0;
    NVW_UNROLL
    for (int b = 0; b < BATCH; ++b) {
        const float mine = tanh_half ? dev::tanh_f(a[b]) : sigmoid_f(a[b]);
        const float partner = dev::shfl_xor(mine, 1);
        if (tanh_half) h_rows[b * stride + (cur_thread >> 1)] = mine * partner;
    }
}

// x_0[s] channel r for one column: the two-tap causal "conv" over the one-hot previous samples.
NVW_DEVICE float embed(const NvwArgs& p, int two_back, int one_back, int r) {
    const int R = p.residual_channels;
    const float x = dev::load_readonly(p.embedding_prev + two_back * R + r) +
                    dev::load_readonly(p.embedding_cur + one_back * R + r);
    return p.tanh_embedding ? dev::tanh_f(x) : x;
}

// ---------------------------------------------------------------------------------------------------------------
// Inverse-CDF sampling of one column by one full warp: the first class i with u * sum(e) <= cumsum(e)[i], where
// e = exp(z - max z). Lane j owns the A/32 consecutive classes [j*A/32, (j+1)*A/32), so a warp scan of the lane
// sums finds the lane, and that lane walks its own classes. Returns the class on every lane.
template <int A>
NVW_DEVICE int sample_class(const float* logits, float u) {
    constexpr int kPerLane = A / 32;
    const int lane = dev::lane();
    float e[kPerLane];
    float top = -INFINITY;
    NVW_UNROLL
    for (int i = 0; i < kPerLane; ++i) {
        e[i] = logits[lane * kPerLane + i];
        top = fmaxf(top, e[i]);
    }
    NVW_UNROLL
    for (int mask = 16; mask > 0; mask >>= 1) top = fmaxf(top, dev::shfl_xor(top, mask));
    float lane_sum = 0.f;
    NVW_UNROLL
    for (int i = 0; i < kPerLane; ++i) {
        e[i] = dev::exp_f(e[i] - top);
        lane_sum += e[i];
    }
    float inclusive = lane_sum;  // Hillis-Steele scan over the 32 lane sums
    NVW_UNROLL
    for (int delta = 1; delta < 32; delta <<= 1) {
        const float below = dev::shfl_up(inclusive, delta);
        if (lane >= delta) inclusive += below;
    }
    const float target = u * dev::shfl_idx(inclusive, 31);
    const unsigned reached = dev::ballot(target <= inclusive);
    const int owner = reached ? dev::lowest_set_bit(reached) : 31;  // rounding can leave u*total above every sum
    float running = inclusive - lane_sum;
    int choice = lane * kPerLane + kPerLane - 1;
    for (int i = 0; i < kPerLane; ++i) {
        running += e[i];
        if (target <= running) {
            choice = lane * kPerLane + i;
            break;
        }
    }
    return dev::shfl_idx(choice, owner);
}

// The output layers for the block's BATCH columns, run by every thread of the block:
//   Zs = relu(W_hidden relu(skip) + b),  Za = W_logits Zs + b,  y = sample(Za),
// then the history becomes (y_{s-1}, y_s), with the forced class in place of y_s under teacher forcing.
// skip_sh holds relu(skip) already. Ends with a block_sync, after which p.history and p.classes are written.
template <class Cfg>
NVW_DEVICE void output_layers(const NvwArgs& p, const float (&skip_sh)[Cfg::BATCH][Cfg::S], int sample, int col0) {
    constexpr int S = Cfg::S, A = Cfg::A, BATCH = Cfg::BATCH;
    NVW_SHARED float hidden_sh[BATCH][A];
    NVW_SHARED float logits_sh[BATCH][A];
    const int tid = dev::thread_id(), threads = dev::block_threads();
    const int t = sample - p.sample_begin;
    const auto* w_hidden = static_cast<const typename Cfg::Weight*>(p.w_hidden);
    const auto* w_logits = static_cast<const typename Cfg::Weight*>(p.w_logits);

    for (int m = tid; m < A; m += threads) {
        float acc[BATCH];
        dot_streamed<Cfg, S>(w_hidden, A, m, SharedRows<S>{&skip_sh[0][0]}, acc);
        const float bias = dev::load_readonly(p.b_hidden + m);
        NVW_UNROLL
        for (int b = 0; b < BATCH; ++b) hidden_sh[b][m] = fmaxf(acc[b] + bias, 0.f);
    }
    dev::block_sync();
    for (int m = tid; m < A; m += threads) {
        float acc[BATCH];
        dot_streamed<Cfg, A>(w_logits, A, m, SharedRows<A>{&hidden_sh[0][0]}, acc);
        const float bias = dev::load_readonly(p.b_logits + m);
        NVW_UNROLL
        for (int b = 0; b < BATCH; ++b) {
            logits_sh[b][m] = acc[b] + bias;
            if (p.dump_logits) p.dump_logits[((int64_t)sample * p.batch + col0 + b) * A + m] = logits_sh[b][m];
        }
    }
    dev::block_sync();
    const int warp = dev::warp_id();
    if (warp < BATCH) {  // warp b samples column b
        const int col = col0 + warp;
        const int y = sample_class<A>(logits_sh[warp], dev::load_readonly(p.selectors + t * p.batch + col));
        if (dev::lane() == 0) {
            const int fed_back = p.forced_classes ? dev::load_readonly(p.forced_classes + t * p.batch + col)
                                                  : y;
            p.classes[col * p.total_samples + sample] = y;
            dev::store_coherent(p.history + 2 * col, dev::load_coherent(p.history + 2 * col + 1));
            dev::store_coherent(p.history + 2 * col + 1, fed_back);
        }
    }
    dev::block_sync();
}

// ---------------------------------------------------------------------------------------------------------------
// Init kernel, launched before the first chunk of an utterance: zero history of x (x_l[s] = 0 for s < 0), the
// sample-0 PREV term (W_prev * 0 + b), silence as the two previous classes, and all flags at 0 samples.
static NVW_KERNEL(256) init_state_kernel(NvwArgs p) {
    const Layout lay(p);
    int64_t sizes[NVW_NUM_STATE_BUFFERS];
    lay.state_elements(sizes);
    const int64_t stride = (int64_t)dev::grid_blocks() * dev::block_threads();
    const int64_t first = (int64_t)dev::block_id() * dev::block_threads() + dev::thread_id();
    for (int64_t i = first; i < sizes[0]; i += stride) p.x_ring[i] = 0.f;
    for (int64_t i = first; i < sizes[1]; i += stride) {
        const int64_t channel = i % (2 * lay.R), layer = (i / (2 * lay.R * lay.B)) % lay.L;
        p.a_prev[i] = p.b_gate[layer * 2 * lay.R + channel];
    }
    for (int64_t i = first; i < sizes[2]; i += stride) p.history[i] = p.silence_class;
    for (int64_t i = first; i < sizes[3]; i += stride) p.h_buffer[i] = 0.f;
    for (int64_t i = first; i < sizes[4]; i += stride) p.skip_buffer[i] = 0.f;
    for (int64_t i = first; i < sizes[5]; i += stride) p.flags[i] = 0;
}

}  // namespace nvw
