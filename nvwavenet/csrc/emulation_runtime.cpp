// The runtime behind device_emulation.h: blocks as OS threads, CUDA threads as ucontext fibers.
//
// Each block thread runs a tiny scheduler: a run queue of ready fibers, resumed one at a time. A fiber gives the
// CPU back only at a synchronisation point:
//   block_sync     generation-counted barrier over the block's *live* fibers (an exited thread no longer counts),
//   warp collectives   a barrier over the 32 lanes of a warp around a slot exchange,
//   spin_wait      re-queues the fiber until the flag is reached.
// Released fibers re-enter the queue in the configured order (forward, reverse or seeded-random), so a test can
// run the same kernel under several interleavings. If a block's queue runs dry while fibers wait on each other, the
// barriers are mismatched: that is reported at once. If the whole grid stops making progress (blocks spinning on
// flags nobody will set), a watchdog reports the waiting flags after a timeout. Either way every wait is then
// released, the kernels run to their end on garbage, and run_grid throws: a test fails with a message, never hangs.
#include <sched.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "device_emulation.h"

namespace nvw::emu {

thread_local const ThreadIndex* current = nullptr;

namespace {

constexpr size_t kStackBytes = 128 * 1024;  // kernels keep weight rows and accumulators on the fiber stack
constexpr size_t kGuardBytes = 4096;        // an overflow faults instead of corrupting the neighbour's stack

struct Settings {
    Schedule schedule = Schedule::forward;
    uint64_t seed = 0;
    double watchdog_seconds = 30.0;
} settings;

// State shared by all blocks of the running grid.
std::mutex grid_mutex;                 // one emulated grid at a time
std::atomic<bool> aborting{false};     // set on deadlock/misuse: every wait returns at once from then on
std::atomic<bool> describe_requested{false};  // the watchdog asks each block to describe its waits, then aborts
std::atomic<int> descriptions_pending{0};
std::atomic<uint64_t> progress{0};     // bumped by every barrier release, flag hand-off and fiber exit
std::mutex report_mutex;
std::vector<std::string> reports;      // why the grid was aborted

void report(const std::string& message) {
    std::lock_guard<std::mutex> lock(report_mutex);
    reports.push_back(message);
}

enum class Wait { none, block_barrier, warp_barrier, flag };

struct Fiber {
    ucontext_t context;
    ThreadIndex index;
    bool done = false;
    Wait waiting = Wait::none;
    const int* flag = nullptr;  // for the watchdog's report
    int flag_target = 0;
};

struct Barrier {
    int arrived = 0;
    std::vector<int> waiters;
};

struct Block {
    std::vector<Fiber> fibers;
    std::vector<Barrier> warp_barriers;
    std::vector<std::array<uint32_t, 32>> warp_slots;
    Barrier block_barrier;
    std::deque<int> run_queue;
    int live = 0;
    int running = -1;
    int failed_spins = 0;  // consecutive unsuccessful flag checks: all ready fibers are spinning
    int idle_rounds = 0;
    ucontext_t scheduler;
    std::mt19937_64 rng;
    const std::function<void()>* body = nullptr;
    char* stacks = nullptr;
    size_t stacks_bytes = 0;
};

thread_local Block* this_block = nullptr;

Fiber& running_fiber() { return this_block->fibers[this_block->running]; }

void yield_to_scheduler() {
    Block& block = *this_block;
    swapcontext(&block.fibers[block.running].context, &block.scheduler);
}

// Puts the waiters (and the caller, if it is one of them) back in the run queue in the configured order.
void release(Barrier& barrier) {
    Block& block = *this_block;
    std::vector<int> ids;
    ids.swap(barrier.waiters);
    barrier.arrived = 0;
    switch (settings.schedule) {
        case Schedule::forward: std::sort(ids.begin(), ids.end()); break;
        case Schedule::reverse: std::sort(ids.rbegin(), ids.rend()); break;
        case Schedule::random: std::shuffle(ids.begin(), ids.end(), block.rng); break;
    }
    for (int id : ids) {
        block.fibers[id].waiting = Wait::none;
        block.run_queue.push_back(id);
    }
    block.failed_spins = 0;
    progress.fetch_add(1, std::memory_order_relaxed);
}

void arrive_and_wait(Barrier& barrier, int expected, Wait kind) {
    if (aborting.load(std::memory_order_relaxed)) return;
    Block& block = *this_block;
    Fiber& fiber = running_fiber();
    fiber.waiting = kind;
    barrier.waiters.push_back(block.running);
    if (++barrier.arrived == expected) release(barrier);
    yield_to_scheduler();  // resumed once released (or when the grid is aborted)
}

void warp_barrier() {
    Block& block = *this_block;
    arrive_and_wait(block.warp_barriers[running_fiber().index.thread >> 5], 32, Wait::warp_barrier);
}

void fiber_entry() {
    Block& block = *this_block;
    (*block.body)();
    Fiber& fiber = running_fiber();
    fiber.done = true;
    --block.live;
    progress.fetch_add(1, std::memory_order_relaxed);
    // An exited thread no longer counts towards __syncthreads: the others may now all be there.
    if (block.block_barrier.arrived > 0 && block.block_barrier.arrived == block.live) release(block.block_barrier);
    // Returning resumes uc_link, the scheduler.
}

std::string describe_waits(const Block& block, int block_id) {
    int at_block = 0, at_warp = 0, spinning = 0;
    std::ostringstream out;
    for (const Fiber& fiber : block.fibers) {
        if (fiber.done) continue;
        if (fiber.waiting == Wait::block_barrier) ++at_block;
        if (fiber.waiting == Wait::warp_barrier) ++at_warp;
        if (fiber.waiting == Wait::flag) {
            if (spinning++ < 2) {
                out << " thread " << fiber.index.thread << " waits for flag " << static_cast<const void*>(fiber.flag)
                    << " >= " << fiber.flag_target << " (it is " << __atomic_load_n(fiber.flag, __ATOMIC_ACQUIRE)
                    << ");";
            }
        }
    }
    std::ostringstream line;
    line << "block " << block_id << ": " << block.live << " live threads, " << at_block << " at block_sync, "
         << at_warp << " at a warp collective, " << spinning << " spinning;" << out.str();
    return line.str();
}

// Wakes every blocked fiber so that, with `aborting` set, it runs to the end of the kernel.
void release_everything(Block& block) {
    for (size_t i = 0; i < block.fibers.size(); ++i) {
        Fiber& fiber = block.fibers[i];
        if (!fiber.done && (fiber.waiting == Wait::block_barrier || fiber.waiting == Wait::warp_barrier)) {
            fiber.waiting = Wait::none;
            block.run_queue.push_back(static_cast<int>(i));
        }
    }
    block.block_barrier = Barrier{};
    for (Barrier& barrier : block.warp_barriers) barrier = Barrier{};
}

void idle_backoff(Block& block) {
    // Every ready fiber is spinning on another block: give the CPU to the other block threads.
    if (block.idle_rounds++ < 16) {
        sched_yield();
    } else {
        usleep(static_cast<useconds_t>(std::min(block.idle_rounds, 200)));
    }
    block.failed_spins = 0;
}

void run_block(int block_id, int grid, int threads, const std::function<void()>* body) {
    Block block;
    this_block = &block;
    block.body = body;
    block.rng.seed(settings.seed * 1000003u + static_cast<uint64_t>(block_id));
    block.fibers.resize(threads);
    block.warp_barriers.resize(threads / 32);
    block.warp_slots.resize(threads / 32);
    block.live = threads;

    const size_t per_fiber = kStackBytes + kGuardBytes;
    block.stacks_bytes = per_fiber * threads;
    void* memory = mmap(nullptr, block.stacks_bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
        report("block " + std::to_string(block_id) + ": could not map fiber stacks");
        aborting = true;
        return;
    }
    block.stacks = static_cast<char*>(memory);

    std::vector<int> order(threads);
    for (int i = 0; i < threads; ++i) order[i] = i;
    if (settings.schedule == Schedule::reverse) std::reverse(order.begin(), order.end());
    if (settings.schedule == Schedule::random) std::shuffle(order.begin(), order.end(), block.rng);
    for (int i = 0; i < threads; ++i) {
        Fiber& fiber = block.fibers[i];
        fiber.index = ThreadIndex{i, block_id, threads, grid};
        char* stack = block.stacks + per_fiber * i;
        mprotect(stack, kGuardBytes, PROT_NONE);  // stacks grow down into the guard page
        getcontext(&fiber.context);
        fiber.context.uc_stack.ss_sp = stack + kGuardBytes;
        fiber.context.uc_stack.ss_size = kStackBytes;
        fiber.context.uc_link = &block.scheduler;
        makecontext(&fiber.context, fiber_entry, 0);
    }
    block.run_queue.assign(order.begin(), order.end());

    bool reported = false;
    while (block.live > 0) {
        // Between two fiber switches nobody is mid-wait, so this is where a block can describe its state.
        if (describe_requested.load() && !reported) {
            report(describe_waits(block, block_id));
            reported = true;
            descriptions_pending.fetch_sub(1);
        }
        if (aborting.load(std::memory_order_relaxed)) {
            if (!reported) {
                report(describe_waits(block, block_id));
                reported = true;
            }
            release_everything(block);
        }
        if (block.run_queue.empty()) {
            // Nobody can run and nobody spins: threads of this block wait for each other at different barriers.
            report("deadlock inside " + describe_waits(block, block_id) +
                   " (mismatched barriers, or a warp collective with exited lanes)");
            reported = true;
            aborting = true;
            continue;
        }
        if (block.failed_spins > static_cast<int>(block.run_queue.size())) idle_backoff(block);
        block.running = block.run_queue.front();
        block.run_queue.pop_front();
        current = &block.fibers[block.running].index;
        swapcontext(&block.scheduler, &block.fibers[block.running].context);
    }
    munmap(block.stacks, block.stacks_bytes);
    this_block = nullptr;
    current = nullptr;
}

}  // namespace

void configure(Schedule schedule, uint64_t seed, double watchdog_seconds) {
    std::lock_guard<std::mutex> lock(grid_mutex);
    settings.schedule = schedule;
    settings.seed = seed;
    settings.watchdog_seconds = watchdog_seconds;
}

void block_sync() {
    Block& block = *this_block;
    arrive_and_wait(block.block_barrier, block.live, Wait::block_barrier);
}

uint32_t warp_exchange(uint32_t value, int source_lane) {
    Block& block = *this_block;
    const int thread = running_fiber().index.thread;
    std::array<uint32_t, 32>& slots = block.warp_slots[thread >> 5];
    slots[thread & 31] = value;
    warp_barrier();  // every lane has published
    const uint32_t result = slots[source_lane & 31];
    warp_barrier();  // every lane has read before anyone publishes again
    return result;
}

uint32_t warp_ballot(bool predicate) {
    Block& block = *this_block;
    const int thread = running_fiber().index.thread;
    std::array<uint32_t, 32>& slots = block.warp_slots[thread >> 5];
    slots[thread & 31] = predicate ? 1u : 0u;
    warp_barrier();
    uint32_t mask = 0;
    for (int lane = 0; lane < 32; ++lane) mask |= slots[lane] << lane;
    warp_barrier();
    return mask;
}

void spin_wait(const int* flag, int target) {
    Block& block = *this_block;
    Fiber& fiber = running_fiber();
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < target) {
        if (aborting.load(std::memory_order_relaxed)) break;
        fiber.waiting = Wait::flag;
        fiber.flag = flag;
        fiber.flag_target = target;
        ++block.failed_spins;
        block.run_queue.push_back(block.running);
        yield_to_scheduler();
    }
    fiber.waiting = Wait::none;
    block.failed_spins = 0;
    block.idle_rounds = 0;
    progress.fetch_add(1, std::memory_order_relaxed);
}

void note_progress() { progress.fetch_add(1, std::memory_order_relaxed); }

void run_grid(int grid, int block_threads, const std::function<void()>& body, const char* name) {
    std::lock_guard<std::mutex> lock(grid_mutex);
    if (grid < 1 || block_threads < 32 || block_threads % 32 != 0 || block_threads > 1024) {
        throw std::runtime_error(std::string("nvwavenet emulation: ") + name + ": bad launch shape " +
                                 std::to_string(grid) + " blocks x " + std::to_string(block_threads) +
                                 " threads (need whole warps, at most 1024)");
    }
    aborting = false;
    describe_requested = false;
    reports.clear();
    std::atomic<int> blocks_left{grid};
    std::vector<std::thread> threads;
    threads.reserve(grid);
    for (int b = 0; b < grid; ++b) {
        threads.emplace_back([&, b] {
            run_block(b, grid, block_threads, &body);
            blocks_left.fetch_sub(1);
        });
    }
    // The watchdog: no barrier release, flag hand-off or thread exit for watchdog_seconds means a deadlock.
    bool timed_out = false;
    uint64_t last_progress = progress.load();
    auto last_change = std::chrono::steady_clock::now();
    while (blocks_left.load() > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const uint64_t now_progress = progress.load();
        const auto now = std::chrono::steady_clock::now();
        if (now_progress != last_progress) {
            last_progress = now_progress;
            last_change = now;
            continue;
        }
        const double stalled = std::chrono::duration<double>(now - last_change).count();
        if (!aborting && stalled > settings.watchdog_seconds) {
            // First let every running block describe what it waits for (the fibers keep spinning meanwhile),
            // then release everything.
            descriptions_pending = blocks_left.load();
            describe_requested = true;
            const auto asked = std::chrono::steady_clock::now();
            while (descriptions_pending.load() > 0 &&
                   std::chrono::steady_clock::now() - asked < std::chrono::seconds(2)) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            timed_out = true;
            aborting = true;
            last_change = std::chrono::steady_clock::now();
        } else if (aborting && stalled > settings.watchdog_seconds + 10.0) {
            // Released waits should finish any kernel quickly; one that does not loops without ever syncing.
            std::fprintf(stderr, "nvwavenet emulation: %s did not finish after its deadlock was reported\n", name);
            std::abort();
        }
    }
    for (std::thread& thread : threads) thread.join();
    if (aborting) {
        std::ostringstream message;
        message << "nvwavenet emulation: " << name << " (" << grid << " blocks x " << block_threads << " threads) ";
        message << (timed_out ? "made no progress for " + std::to_string(settings.watchdog_seconds) +
                                    " s (inter-block deadlock)"
                              : "deadlocked");
        message << ":";
        for (const std::string& line : reports) message << "\n  " << line;
        aborting = false;
        describe_requested = false;
        throw std::runtime_error(message.str());
    }
}

}  // namespace nvw::emu
