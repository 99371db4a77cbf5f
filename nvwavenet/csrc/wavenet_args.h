// The one argument struct every kernel and launch takes, and the layout of every buffer it points to.
//
// It is plain C data so that Python can fill it directly (nvwavenet/kernels.py mirrors it with ctypes): the CUDA
// extension and the CPU emulation library are driven by exactly the same bytes. Python allocates every buffer;
// the sizes of the state buffers come from state_elements() below, so they are defined in one place.
//
// Shapes: R residual channels, S skip channels, A audio classes, L layers, B batch columns (a multiple of the
// batch per block), T = sample_end - sample_begin samples in this launch (a chunk of the utterance).
// Matrices are "M x K column-major": element (m, k) of an (out=M, in=K) weight sits at k * M + m, so the threads
// that own consecutive rows read consecutive addresses. fp16 weights pack input channels k, k+1 of a row in one
// half2: element (m, k/2) of an M x K/2 column-major array of half2.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
namespace nvw {
#endif

enum NvwVariant { NVW_SINGLE_BLOCK = 0, NVW_DUAL_BLOCK = 1, NVW_PERSISTENT = 2 };
enum NvwPrecision { NVW_FP32 = 0, NVW_FP16 = 1 };  // fp16: weights stored in half, all arithmetic in fp32

typedef struct NvwArgs {
    // ---- what to run (16 x int32)
    int32_t variant, precision;
    int32_t residual_channels, skip_channels, audio_classes, num_layers;
    int32_t batch;            // B, a multiple of batch_per_block
    int32_t batch_per_block;  // columns one block (or one persistent pipeline slot) advances together
    int32_t total_samples;    // row length of `classes` and of the dumps
    int32_t sample_begin, sample_end;  // this launch; state carries over between launches of one utterance
    int32_t ring_slots;       // max dilation + 1: x_l[s] lives in slot s % ring_slots
    int32_t tanh_embedding;   // x_0 = tanh(E_prev[y_{s-2}] + E_cur[y_{s-1}]) when nonzero
    int32_t silence_class;    // y_{-1} = y_{-2}
    int32_t output_blocks;    // persistent only: blocks running the output layers and sampling
    int32_t reserved;

    // ---- weights (device memory; never written by a kernel)
    const int32_t* dilations;                       // [L]
    const float* embedding_prev;                    // [A][R]: row y is added when y was two samples back
    const float* embedding_cur;                     // [A][R]: ... one sample back
    const void* w_prev;                             // [L] x (2R x R), multiplies x_l[s - d_l]
    const void* w_cur;                              // [L] x (2R x R), multiplies x_l[s]
    const float* b_gate;                            // [L][2R]; rows < R feed tanh, rows >= R feed sigmoid
    const void* w_res;                              // [L] x (R x R)
    const float* b_res;                             // [L][R]
    const void* w_skip;                             // [L] x (S x R)
    const float* b_skip;                            // [L][S]
    const void* w_hidden;                           // A x S:  Zs = relu(W relu(skip) + b)
    const float* b_hidden;                          // [A]
    const void* w_logits;                           // A x A:  Za = W Zs + b
    const float* b_logits;                          // [A]

    // ---- inputs of this launch (device memory)
    const float* conditioning;      // [T][L][B][2R], streamed chunk by chunk by the host
    const float* selectors;         // [T][B] uniform in [0, 1): inverse-CDF sampling
    const int32_t* forced_classes;  // [T][B] or null: teacher forcing (feed these back instead of the samples)

    // ---- output
    int32_t* classes;  // [B][total_samples]: the sampled class of every step (also under teacher forcing)

    // ---- state carried across launches (sizes: state_elements)
    float* x_ring;      // [ring_slots][L+1][B][R]
    float* a_prev;      // [2][L][B][2R]  W_prev x_l[s - d_l] + b_gate, computed ahead of time
    int32_t* history;   // [B][2]  (y_{s-2}, y_{s-1})
    float* h_buffer;    // [L][B][R]  gated activations handed to skip blocks
    float* skip_buffer; // [L][B][S]  running skip sums handed down the persistent skip chain
    int32_t* flags;     // [4L+2][B / batch_per_block]  per-sample counters (see flag_* below)

    // ---- optional dumps for testing (null: not written), indexed by absolute sample
    float* dump_x;       // [total][L][B][R]  x_{l+1}, the residual output of layer l
    float* dump_h;       // [total][L][B][R]  gated activation of layer l
    float* dump_skip;    // [total][B][S]     relu(skip sum), the input of the output layers
    float* dump_logits;  // [total][B][A]
} NvwArgs;

#define NVW_NUM_STATE_BUFFERS 6  // x_ring, a_prev, history, h_buffer, skip_buffer, flags

#ifdef __cplusplus
}  // namespace nvw
#endif

#ifdef __cplusplus
namespace nvw {

#ifndef NVW_HOST_DEVICE
#define NVW_HOST_DEVICE inline
#endif

// Index arithmetic of the buffers above, shared by kernels and host code. 32-bit on purpose: 64-bit index math
// costs registers the kernels need for weights. The host refuses launches whose buffers exceed 2^31 elements
// (api.h: validate); only the dumps, which grow with the whole utterance, use 64-bit offsets.
struct Layout {
    int R, S, A, L, B, groups, slots;

    NVW_HOST_DEVICE explicit Layout(const NvwArgs& a)
        : R(a.residual_channels), S(a.skip_channels), A(a.audio_classes), L(a.num_layers), B(a.batch),
          groups(a.batch / a.batch_per_block), slots(a.ring_slots) {}

    NVW_HOST_DEVICE int ring(int slot, int layer, int col) const { return ((slot * (L + 1) + layer) * B + col) * R; }
    NVW_HOST_DEVICE int a_prev(int parity, int layer, int col) const {
        return ((parity * L + layer) * B + col) * 2 * R;
    }
    NVW_HOST_DEVICE int conditioning(int t, int layer, int col) const { return ((t * L + layer) * B + col) * 2 * R; }
    NVW_HOST_DEVICE int h(int layer, int col) const { return (layer * B + col) * R; }
    NVW_HOST_DEVICE int skip(int layer, int col) const { return (layer * B + col) * S; }
    NVW_HOST_DEVICE int64_t dump_layer(int64_t s, int layer, int col) const {
        return ((s * L + layer) * B + col) * (int64_t)R;
    }

    // Per-(layer, batch group) counters: the number of samples for which the datum has been published.
    NVW_HOST_DEVICE int flag_x(int layer, int g) const { return layer * groups + g; }  // layer 0..L
    NVW_HOST_DEVICE int flag_prev(int layer, int g) const { return (L + 1 + layer) * groups + g; }
    NVW_HOST_DEVICE int flag_h(int layer, int g) const { return (2 * L + 1 + layer) * groups + g; }
    NVW_HOST_DEVICE int flag_skip(int layer, int g) const { return (3 * L + 1 + layer) * groups + g; }
    NVW_HOST_DEVICE int flag_y(int g) const { return (4 * L + 1) * groups + g; }

    NVW_HOST_DEVICE void state_elements(int64_t out[NVW_NUM_STATE_BUFFERS]) const {
        out[0] = (int64_t)slots * (L + 1) * B * R;  // x_ring
        out[1] = (int64_t)2 * L * B * 2 * R;        // a_prev
        out[2] = (int64_t)B * 2;                    // history
        out[3] = (int64_t)L * B * R;                // h_buffer
        out[4] = (int64_t)L * B * S;                // skip_buffer
        out[5] = (int64_t)(4 * L + 2) * groups;     // flags
    }
};

}  // namespace nvw
#endif
