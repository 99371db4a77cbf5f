// CPU emulation backend of the device abstraction (see device.h), compiled by g++ with -DNVW_EMULATION.
//
// Every thread block is an OS thread and every CUDA thread a fiber on it (emulation_runtime.cpp). All blocks of a
// grid run at once, as a cooperative launch guarantees on the GPU, so blocks that spin on each other make progress.
// Fibers switch only at synchronisation points (barriers, warp collectives, flag waits), in a configurable order
// (forward, reverse or seeded-random), which is how the tests vary the interleaving of the threads of a block.
//
// What it checks: barrier placement (a barrier counts the live threads of the block; a mismatch deadlocks and is
// reported), warp collectives, shared-memory hazards between barriers (different fiber orders give different
// answers), inter-block flag protocols (a watchdog turns a deadlock into an error naming the waiting flags).
// What it cannot check: the GPU's weaker memory model (x86 is TSO), true parallel races inside a phase, and
// fast-math differences (the kernels use accurate tanhf/expf on both backends).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

#define NVW_DEVICE inline
#define NVW_HOST_DEVICE inline
#define NVW_KERNEL(max_threads) void
// Per-OS-thread is per-block; it also covers function-scope shared arrays inside templates.
#define NVW_SHARED static thread_local __attribute__((aligned(16)))
#define NVW_UNROLL
#define NVW_UNROLL_NONE

namespace nvw::emu {

enum class Schedule : int { forward = 0, reverse = 1, random = 2 };

struct ThreadIndex {
    int thread, block, block_threads, grid_blocks;
};

// The running fiber's indices; the block's scheduler points it at the fiber it switches to.
extern thread_local const ThreadIndex* current;

void block_sync();
uint32_t warp_exchange(uint32_t value, int source_lane);  // all 32 lanes publish, each reads source_lane's value
uint32_t warp_ballot(bool predicate);
void spin_wait(const int* flag, int target);  // yields until an acquire load of *flag is >= target
void note_progress();                         // feeds the deadlock watchdog

void configure(Schedule schedule, uint64_t seed, double watchdog_seconds);
// Runs body() on grid x block fibers; throws std::runtime_error on a deadlock or a misuse of the API.
void run_grid(int grid, int block, const std::function<void()>& body, const char* name);

}  // namespace nvw::emu

namespace nvw::dev {

using Stream = void*;

// Bit-compatible with CUDA's __half2: the lower-address half first.
struct half2_storage {
    uint16_t lo, hi;
};

struct PairF {
    float lo, hi;
};

inline int thread_id() { return emu::current->thread; }
inline int block_id() { return emu::current->block; }
inline int block_threads() { return emu::current->block_threads; }
inline int grid_blocks() { return emu::current->grid_blocks; }
inline int lane() { return emu::current->thread & 31; }
inline int warp_id() { return emu::current->thread >> 5; }

inline void block_sync() { emu::block_sync(); }

inline uint32_t float_bits(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
}
inline float bits_float(uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}
inline float shfl_xor(float v, int mask) { return bits_float(emu::warp_exchange(float_bits(v), lane() ^ mask)); }
inline float shfl_up(float v, int delta) {
    const int source = lane() - delta;  // like CUDA, lanes below delta keep their own value
    return bits_float(emu::warp_exchange(float_bits(v), source < 0 ? lane() : source));
}
inline float shfl_idx(float v, int src) { return bits_float(emu::warp_exchange(float_bits(v), src)); }
inline int shfl_idx(int v, int src) {
    return static_cast<int>(emu::warp_exchange(static_cast<uint32_t>(v), src));
}
inline unsigned ballot(bool predicate) { return emu::warp_ballot(predicate); }
inline int lowest_set_bit(unsigned mask) { return __builtin_ctz(mask); }

inline int load_acquire(const int* flag) { return __atomic_load_n(flag, __ATOMIC_ACQUIRE); }
inline void store_release(int* flag, int value) {
    __atomic_store_n(flag, value, __ATOMIC_RELEASE);
    emu::note_progress();
}
inline void wait_at_least(const int* flag, int target) { emu::spin_wait(flag, target); }

// Blocks are real OS threads, so data they exchange goes through (relaxed) atomics: race-free C++.
inline float load_coherent(const float* p) {
    float v;
    __atomic_load(p, &v, __ATOMIC_RELAXED);
    return v;
}
inline int load_coherent(const int* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
inline void store_coherent(float* p, float v) { __atomic_store(p, &v, __ATOMIC_RELAXED); }
inline void store_coherent(int* p, int v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

inline PairF load_pair(const float* p) { return {p[0], p[1]}; }

template <class T>
inline T load_readonly(const T* p) {
    return *p;
}

inline float tanh_f(float x) { return std::tanh(x); }
inline float exp_f(float x) { return std::exp(x); }

// IEEE binary16 -> float, exactly (every half is a float).
inline float half_to_float(uint16_t h) {
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    float magnitude;
    if (exponent == 0) {
        magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    } else if (exponent == 31) {
        magnitude = mantissa ? NAN : INFINITY;
    } else {
        magnitude = std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
    }
    return (h & 0x8000) ? -magnitude : magnitude;
}
inline PairF unpack_half2(half2_storage h) { return {half_to_float(h.lo), half_to_float(h.hi)}; }

// ---- host side -------------------------------------------------------------------------------------------

template <class Args>
void launch(void (*kernel)(Args), int grid, int block, bool /*cooperative: every emulated grid is co-resident*/,
            Stream, Args args, const char* name) {
    emu::run_grid(grid, block, [&] { kernel(args); }, name);
}

template <class Args>
int coresident_capacity(void (*)(Args), int, bool* cooperative_supported) {
    *cooperative_supported = true;
    return 1 << 20;  // one OS thread per block: no residency limit worth modelling
}

}  // namespace nvw::dev
