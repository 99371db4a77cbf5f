// The CPU emulation library (g++ -DNVW_EMULATION): every kernel of NVW_EMULATION_KERNELS plus the C API of api.h,
// loaded by nvwavenet/kernels.py with ctypes. Pointers in NvwArgs are ordinary host memory here.
#define NVW_DEFINE_LAUNCHERS
#include <string>
#include <vector>

#include "api.h"

NVW_EMULATION_KERNELS(NVW_INSTANTIATE)

namespace {

// Self-tests of the emulator itself, on tiny kernels: properties the WaveNet kernels rely on but never exercise
// on purpose (they never exit early or mismatch their barriers).
struct SelfTestArgs {
    int* out;
};

// Half the block exits at once; the rest must still get through two barriers (live-thread counting).
void early_exit_kernel(SelfTestArgs a) {
    const int tid = nvw::dev::thread_id();
    if (tid >= 32) return;
    a.out[tid] = 1;
    nvw::dev::block_sync();
    const int neighbour = a.out[(tid + 1) % 32];  // written before the barrier by another thread of warp 0
    nvw::dev::block_sync();
    a.out[tid] += neighbour;
}

// Warp 1's lane 0 waits in a shuffle that its sibling lanes never reach: must be reported, not hang.
void mismatched_barrier_kernel(SelfTestArgs a) {
    const int tid = nvw::dev::thread_id();
    if (tid == 32) a.out[0] = static_cast<int>(nvw::dev::shfl_idx(1.f, 0));
    nvw::dev::block_sync();
}

void collectives_kernel(SelfTestArgs a) {
    const int lane = nvw::dev::lane();
    const float v = static_cast<float>(lane);
    int* row = a.out + 5 * lane;
    row[0] = static_cast<int>(nvw::dev::shfl_xor(v, 1));
    row[1] = static_cast<int>(nvw::dev::shfl_up(v, 3));
    row[2] = nvw::dev::shfl_idx(lane * 10, 5);
    row[3] = static_cast<int>(nvw::dev::ballot(lane % 3 == 0));
    row[4] = nvw::dev::lowest_set_bit(nvw::dev::ballot(lane >= 7));
}

std::string run_self_test(int which) {
    std::vector<int> out(32 * 5, 0);
    SelfTestArgs args{out.data()};
    if (which == 0) {
        nvw::dev::launch(early_exit_kernel, 1, 64, false, nullptr, args, "early-exit self-test");
        for (int t = 0; t < 32; ++t) {
            if (out[t] != 2) return "a thread of warp 0 saw " + std::to_string(out[t]) + ", not 2";
        }
        return "";
    }
    if (which == 1) {
        try {
            nvw::dev::launch(mismatched_barrier_kernel, 1, 64, false, nullptr, args, "mismatch self-test");
        } catch (const std::exception& e) {
            return std::string("reported: ") + e.what();
        }
        return "a mismatched barrier was not reported";
    }
    nvw::dev::launch(collectives_kernel, 1, 32, false, nullptr, args, "collectives self-test");
    unsigned every_third = 0;
    for (int lane = 0; lane < 32; lane += 3) every_third |= 1u << lane;
    for (int lane = 0; lane < 32; ++lane) {
        const int* row = out.data() + 5 * lane;
        const int expected[5] = {lane ^ 1, lane >= 3 ? lane - 3 : lane, 50, static_cast<int>(every_third), 7};
        for (int i = 0; i < 5; ++i) {
            if (row[i] != expected[i]) {
                return "lane " + std::to_string(lane) + " collective " + std::to_string(i) + ": got " +
                       std::to_string(row[i]) + ", expected " + std::to_string(expected[i]);
            }
        }
    }
    return "";
}

}  // namespace

extern "C" {

// Runs self-test `which` (0 early exit, 1 mismatched barrier, 2 warp collectives); writes "" on success, else
// what went wrong (test 1 succeeds by returning the emulator's deadlock report, prefixed "reported: ").
void nvw_emulation_self_test(int which, char* message, int message_size) {
    std::snprintf(message, message_size, "%s", run_self_test(which).c_str());
}

// schedule: 0 forward, 1 reverse, 2 seeded random order of fibers at every synchronisation point.
// watchdog_seconds: how long the grid may make no progress before the launch fails as deadlocked.
void nvw_emulation_configure(int schedule, uint64_t seed, double watchdog_seconds) {
    nvw::emu::configure(static_cast<nvw::emu::Schedule>(schedule), seed, watchdog_seconds);
}

}  // extern "C"
