// The C API shared by both builds: included by exactly one translation unit per library (cuda_api.cu for the
// PyTorch extension, emulation_api.cpp for the CPU emulation library). Python calls it with an NvwArgs it filled
// (nvwavenet/kernels.py). Errors come back as a nonzero return and a message, never as a silent no-op.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include "instantiations.h"
#include "launch.h"

#define NVW_VARIANT_ID_single nvw::NVW_SINGLE_BLOCK
#define NVW_VARIANT_ID_dual nvw::NVW_DUAL_BLOCK
#define NVW_VARIANT_ID_persistent nvw::NVW_PERSISTENT

namespace nvw {

inline const char* variant_name(int variant) {
    switch (variant) {
        case NVW_SINGLE_BLOCK: return "single-block";
        case NVW_DUAL_BLOCK: return "dual-block";
        case NVW_PERSISTENT: return "persistent";
        default: return "unknown";
    }
}

inline bool matches(const NvwArgs& p, int variant, Precision precision, int R, int S, int A, int batch) {
    return p.variant == variant && p.precision == static_cast<int>(precision) && p.residual_channels == R &&
           p.skip_channels == S && p.audio_classes == A && p.batch_per_block == batch;
}

inline std::string unsupported_message(const NvwArgs& p) {
    std::ostringstream out;
    out << "nvwavenet: no " << variant_name(p.variant) << " " << (p.precision == NVW_FP16 ? "fp16" : "fp32")
        << " kernel for R=" << p.residual_channels << ", S=" << p.skip_channels << ", A=" << p.audio_classes
        << ", batch per block " << p.batch_per_block << ". Compiled (R/S/A x batch per block):";
    int listed = 0;
#define NVW_LIST_ENTRY(V, P, R_, S_, A_, B_)                                                         \
    if (p.variant == NVW_VARIANT_ID_##V && p.precision == static_cast<int>(Precision::P)) {          \
        out << (listed++ ? ", " : " ") << R_ << "/" << S_ << "/" << A_ << "x" << B_;                  \
    }
    NVW_KERNELS(NVW_LIST_ENTRY)
#undef NVW_LIST_ENTRY
    if (!listed) out << " none for this variant and precision";
    return out.str();
}

inline void require(bool condition, const std::string& message) {
    if (!condition) throw std::invalid_argument("nvwavenet: " + message);
}

inline void validate(const NvwArgs& p) {
    require(p.variant >= NVW_SINGLE_BLOCK && p.variant <= NVW_PERSISTENT,
            "variant must be 0 (single), 1 (dual) or 2 (persistent), got " + std::to_string(p.variant));
    require(p.precision == NVW_FP32 || p.precision == NVW_FP16,
            "precision must be 0 (fp32) or 1 (fp16), got " + std::to_string(p.precision));
    require(p.num_layers >= 1, "num_layers must be positive, got " + std::to_string(p.num_layers));
    require(p.batch_per_block >= 1 && p.batch_per_block <= 4,
            "batch_per_block must be 1..4, got " + std::to_string(p.batch_per_block));
    require(p.batch >= 1 && p.batch % p.batch_per_block == 0,
            "batch (" + std::to_string(p.batch) + ") must be a positive multiple of batch_per_block (" +
                std::to_string(p.batch_per_block) + ")");
    require(p.total_samples >= 1 && 0 <= p.sample_begin && p.sample_begin < p.sample_end &&
                p.sample_end <= p.total_samples,
            "need 0 <= sample_begin < sample_end <= total_samples, got " + std::to_string(p.sample_begin) + ", " +
                std::to_string(p.sample_end) + ", " + std::to_string(p.total_samples));
    require(p.ring_slots >= 2, "ring_slots (max dilation + 1) must be at least 2, got " +
                                   std::to_string(p.ring_slots));
    if (p.variant == NVW_PERSISTENT) {
        const int groups = p.batch / p.batch_per_block;
        require(p.output_blocks >= 1 && p.output_blocks <= groups,
                "output_blocks must be 1.." + std::to_string(groups) + " (one per batch group at most), got " +
                    std::to_string(p.output_blocks));
    }
    // The kernels index with 32-bit ints (registers are precious); refuse sizes where that would wrap.
    int64_t sizes[NVW_NUM_STATE_BUFFERS];
    Layout(p).state_elements(sizes);
    const int64_t limit = INT32_MAX;
    const int64_t chunk = static_cast<int64_t>(p.sample_end - p.sample_begin) * p.num_layers * p.batch * 2 *
                          p.residual_channels;
    require(chunk <= limit, "one chunk of conditioning has " + std::to_string(chunk) +
                                " values, more than 2^31: launch shorter chunks");
    require(static_cast<int64_t>(p.batch) * p.total_samples <= limit,
            "batch x total_samples exceeds 2^31: generate shorter utterances or smaller batches");
    for (int64_t size : sizes) {
        require(size <= limit, "a state buffer would have " + std::to_string(size) +
                                   " elements, more than 2^31 (max dilation x layers x batch too large)");
    }
    const void* required[] = {p.dilations, p.embedding_prev, p.embedding_cur, p.w_prev,      p.w_cur,
                              p.b_gate,    p.w_res,          p.b_res,         p.w_skip,      p.b_skip,
                              p.w_hidden,  p.b_hidden,       p.w_logits,      p.b_logits,    p.conditioning,
                              p.selectors, p.classes,        p.x_ring,        p.a_prev,      p.history,
                              p.h_buffer,  p.skip_buffer,    p.flags};
    for (const void* pointer : required) require(pointer != nullptr, "a required buffer of NvwArgs is null");
}

inline void launch_any(const NvwArgs& p, dev::Stream stream) {
#define NVW_TRY_LAUNCH(V, P, R_, S_, A_, B_)                                           \
    if (matches(p, NVW_VARIANT_ID_##V, Precision::P, R_, S_, A_, B_)) {               \
        return launch_##V<KernelConfig<Precision::P, R_, S_, A_, B_>>(p, stream);    \
    }
    NVW_KERNELS(NVW_TRY_LAUNCH)
#undef NVW_TRY_LAUNCH
    throw std::invalid_argument(unsupported_message(p));
}

inline int capacity_any(const NvwArgs& p) {
#define NVW_TRY_CAPACITY(V, P, R_, S_, A_, B_)                                         \
    if (matches(p, NVW_VARIANT_ID_##V, Precision::P, R_, S_, A_, B_)) {               \
        return capacity_##V<KernelConfig<Precision::P, R_, S_, A_, B_>>(p);           \
    }
    NVW_KERNELS(NVW_TRY_CAPACITY)
#undef NVW_TRY_CAPACITY
    throw std::invalid_argument(unsupported_message(p));
}

inline void launch_init(const NvwArgs& p, dev::Stream stream) {
    int64_t sizes[NVW_NUM_STATE_BUFFERS];
    Layout(p).state_elements(sizes);
    int64_t largest = 0;
    for (int64_t size : sizes) largest = size > largest ? size : largest;
#ifdef NVW_EMULATION
    const int grid = 1;  // 256 fibers walk the buffers; more OS threads would only add overhead
#else
    const int grid = static_cast<int>(std::min<int64_t>((largest + 255) / 256, 1024));
#endif
    dev::launch(init_state_kernel, grid, 256, false, stream, p, "state initialisation kernel");
}

inline int report(const std::exception& error, char* message, int message_size) {
    if (message && message_size > 0) std::snprintf(message, message_size, "%s", error.what());
    return 1;
}

}  // namespace nvw

extern "C" {

// Runs samples [sample_begin, sample_end) of an utterance; the first launch (sample_begin == 0) resets the state.
// The launch is asynchronous on the GPU (errors of the running kernel surface at the next synchronisation).
int nvw_launch(const nvw::NvwArgs* args, void* stream, char* error, int error_size) {
    try {
        nvw::validate(*args);
        const auto device_stream = reinterpret_cast<nvw::dev::Stream>(stream);
        if (args->sample_begin == 0) nvw::launch_init(*args, device_stream);
        nvw::launch_any(*args, device_stream);
        return 0;
    } catch (const std::exception& e) {
        return nvw::report(e, error, error_size);
    }
}

// sizeof(NvwArgs): Python checks its ctypes mirror against it before the first call.
int nvw_args_size() { return static_cast<int>(sizeof(nvw::NvwArgs)); }

// Element counts of x_ring, a_prev, history, h_buffer, skip_buffer and flags for these arguments.
void nvw_state_elements(const nvw::NvwArgs* args, int64_t* out) { nvw::Layout(*args).state_elements(out); }

int nvw_grid_blocks(const nvw::NvwArgs* args) { return nvw::grid_blocks(*args); }

// How many blocks of the kernel these arguments select can be resident at once on the current device.
int nvw_capacity(const nvw::NvwArgs* args, int* blocks, char* error, int error_size) {
    try {
        *blocks = nvw::capacity_any(*args);
        return 0;
    } catch (const std::exception& e) {
        return nvw::report(e, error, error_size);
    }
}

// The compiled kernels: entry i as (variant, precision, R, S, A, batch per block).
int nvw_kernel_count() {
    int count = 0;
#define NVW_COUNT(V, P, R_, S_, A_, B_) ++count;
    NVW_KERNELS(NVW_COUNT)
#undef NVW_COUNT
    return count;
}

void nvw_kernel_entry(int index, int32_t* out) {
    int i = 0;
#define NVW_ENTRY(V, P, R_, S_, A_, B_)                                                                      \
    if (i++ == index) {                                                                                      \
        const int32_t values[6] = {NVW_VARIANT_ID_##V, static_cast<int32_t>(nvw::Precision::P), R_, S_, A_, B_}; \
        std::memcpy(out, values, sizeof values);                                                             \
        return;                                                                                              \
    }
    NVW_KERNELS(NVW_ENTRY)
#undef NVW_ENTRY
}

}  // extern "C"
