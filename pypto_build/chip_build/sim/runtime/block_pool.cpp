// block_pool.cpp -- where kernel blocks and orchestrations run: fibers on one carrier thread per
// CPU, kept for the life of the process.
//
// A collective's blocks spend most of their time waiting for their peers' blocks, and on a
// machine with far fewer CPUs than blocks (every rank's blocks of a run are resident at once) a
// wait that yields an OS thread costs a system call and a context switch per turn: hundreds of
// switches per exchange at 32 ranks, each about a microsecond and a half in a virtual machine.
// So a block runs as a fiber (its own stack, switched in user space: fiber_context.h) on a
// carrier, one thread per CPU the process may use, all taking fibers from one ready queue. A
// block's signal wait hands its turn back to its carrier (pypto_sim_wait_turn, the portability
// header's hook), which runs the next ready fiber; once every queued fiber has had a turn, and at
// most every kYieldEvery, a carrier yields its CPU once, so the ranks' own threads and other
// processes still run. A rank's orchestration runs on a fiber too (api.cpp), so waiting for a
// task is a turn as well, not a sleep and a wake-up of the rank's thread. An idle carrier yields
// for a moment (the next task is usually that close: kSpinBudget), then sleeps, so an idle pool
// costs no CPU. One queue rather than one per carrier: a carrier the machine preempts holds up
// none of the fibers, which resume on whichever carrier takes them next.
//
// A fiber only switches inside a hooked wait: a block that computes, or waits any other way
// (its own loop, a kernel built without the hook, a system call), keeps its carrier. So a
// monitor thread gives a fiber that has held its carrier for kReleaseAfterCpu of CPU time (or
// kReleaseAfter in all) the carrier's thread for good -- it goes on as an ordinary thread, its
// waits yield the CPU -- and starts a new carrier in its place; the old thread ends when its
// fiber returns. Computing blocks thus run in parallel as they did on threads of their own, and
// no block can starve another. A task the submitter gave up on (tasks.cpp) keeps its fibers
// until its kernels return, if ever.
//
// A fiber's identity for error messages and crash reports (its ThreadContext) moves with it: a
// carrier sets it before switching to a fiber, a fiber saves it before switching away. Since a
// fiber may resume on another thread, the runtime holds no reference to a thread-local across a
// switch (and a kernel must not either: a device kernel has no thread-local storage). Fiber
// stacks are as large as a thread's, with a guard page, so a kernel that overflows its stack
// faults as on a thread of its own (crash.cpp). Carrier and monitor threads are detached and
// never joined; the pool is never destroyed, so no static destructor can find a joinable thread
// or a waiter on a destroyed condition variable.

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "fiber_context.h"
#include "sim_internal.h"

namespace pypto_sim {

namespace {

// How much CPU time a fiber may take on its carrier without switching before it is given the
// carrier's thread for good: far longer than a wait's turn, short against a block that
// computes. CPU time, so that a carrier the machine preempted keeps its fibers.
constexpr std::chrono::milliseconds kReleaseAfterCpu{2};
// How long a fiber may hold its carrier at all (one blocked in a system call takes no CPU).
constexpr std::chrono::milliseconds kReleaseAfter{50};
// How long a carrier with fibers waiting keeps its CPU at most before it yields it once, so the
// ranks' own threads and other processes run (the kernel's scheduler preempts it too, later).
constexpr std::chrono::nanoseconds kYieldEvery{20'000};
// How often the monitor looks at the carriers while blocks run.
constexpr std::chrono::milliseconds kMonitorPeriod{1};

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct Fiber {
  char* memory = nullptr;  // the guard page, then the stack
  size_t bytes = 0;
  FiberContext context;
  std::shared_ptr<PoolJob> job;  // set when started, cleared when its run returns
  int32_t index = 0;
  ThreadContext saved;  // the block's identity while it is switched out
  uint64_t round = 0;   // the queue's round in which it was last queued (0: never)
  bool finished = false;
};

// What a carrier is doing, as the monitor sees it.
enum class CarrierState : int32_t {
  kIdle,      // in its loop, not inside a fiber
  kRunning,   // inside a fiber
  kReleased,  // its thread belongs to the fiber it runs; another carrier took its place
};

struct Carrier {
  FiberContext home;  // its loop, where a fiber switches back to
  Fiber* running = nullptr;
  uint64_t yielded_ns = 0;  // when it last let go of its CPU
  std::atomic<CarrierState> state{CarrierState::kIdle};
  std::atomic<uint64_t> entries{0};      // switches to a fiber so far
  std::atomic<clockid_t> cpu_clock{-1};  // its thread's CPU-time clock, once it runs
};

// What the monitor saw of a carrier when it last switched to a fiber.
// Its time is the monitor's own, when it first saw the switch: reading the clock at every switch
// costs more than the monitor's period lets the hold be underestimated by.
struct Sighting {
  const Carrier* carrier = nullptr;
  uint64_t entries = 0;
  uint64_t cpu_ns = 0;
  uint64_t seen_ns = 0;
};

uint64_t cpu_ns(clockid_t clock) {
  timespec now{};
  if (clock == clockid_t{-1} || clock_gettime(clock, &now) != 0) {
    return 0;
  }
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

// A lock held for a few instructions: both carriers take a fiber from the ready queue at every
// turn, and a std::mutex they contend for puts the loser to sleep in the kernel (a futex wait and
// a wake-up, microseconds in a virtual machine) where the holder needs nanoseconds more. A waiter
// that has spun for long yields its CPU, in case the holder was preempted.
class SpinLock {
 public:
  void lock() {
    while (held_.exchange(true, std::memory_order_acquire)) {
      for (uint32_t spins = 1; held_.load(std::memory_order_relaxed); ++spins) {
        if (spins % kSpinsPerYield == 0) {
          sched_yield();
        } else {
          cpu_relax();
        }
      }
    }
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  static constexpr uint32_t kSpinsPerYield = 256;

  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::atomic<bool> held_{false};
};

// The fibers ready to run, taken by every carrier in turn.
class ReadyQueue {
 public:
  void push(Fiber* fiber) {
    {
      std::lock_guard<SpinLock> lock(lock_);
      ready_.push_back(fiber);
      size_.store(ready_.size(), std::memory_order_seq_cst);
    }
    // Ordered after the store above, as a sleeper's count is before its check of the size
    // (sleep): one of the two sees the other, so no push leaves a carrier asleep beside it.
    if (sleeping_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      filled_.notify_one();
    }
  }

  // The next fiber for `carrier` to run, after queueing `handed_back` (a fiber that handed back
  // its turn, or null) at the end: one hold of the lock per turn. Blocks while there is none.
  Fiber* take(Carrier* carrier, Fiber* handed_back) {
    for (;;) {
      bool round_over = false;
      {
        std::lock_guard<SpinLock> lock(lock_);
        if (handed_back != nullptr) {
          handed_back->round = round_;
          ready_.push_back(handed_back);
          handed_back = nullptr;
        }
        if (!ready_.empty()) {
          Fiber* fiber = ready_.front();
          if (fiber->round != round_) {
            ready_.pop_front();
            size_.store(ready_.size(), std::memory_order_seq_cst);
            return fiber;
          }
          // Every fiber queued has had a turn since the round began: the next round begins.
          ++round_;
          round_over = true;
        }
      }
      if (!round_over) {
        sleep();
        continue;
      }
      // The carrier lets go of its CPU once if it has not for a while.
      const uint64_t now = now_ns();
      if (now - carrier->yielded_ns >= static_cast<uint64_t>(kYieldEvery.count())) {
        sched_yield();
        carrier->yielded_ns = now_ns();
      }
    }
  }

 private:
  // Until a fiber is queued: yielding for a moment, then asleep.
  void sleep() {
    const auto filled_up = [this] { return size_.load(std::memory_order_seq_cst) != 0; };
    if (spin_until(filled_up, kSpinBudget)) {
      return;
    }
    std::unique_lock<std::mutex> lock(sleep_mutex_);
    sleeping_.fetch_add(1, std::memory_order_seq_cst);
    filled_.wait(lock, filled_up);
    sleeping_.fetch_sub(1, std::memory_order_seq_cst);
  }

  SpinLock lock_;
  std::deque<Fiber*> ready_;
  uint64_t round_ = 1;           // advanced each time every queued fiber has had a turn
  std::atomic<size_t> size_{0};  // ready_.size(), read without the lock
  std::mutex sleep_mutex_;       // only for sleeping carriers and their wake-up
  std::condition_variable filled_;
  std::atomic<int32_t> sleeping_{0};  // carriers asleep on `filled_`: a push must wake one
};

thread_local Carrier* t_carrier = nullptr;

// The carrier of the calling thread. Not inlined: a fiber resumes on whichever carrier takes it
// from the queue, and a thread-local address must be computed after the switch.
__attribute__((noinline)) Carrier* current_carrier() { return t_carrier; }

__attribute__((noinline)) void set_thread_context(const ThreadContext& context) {
  thread_context() = context;
}

__attribute__((noinline)) ThreadContext get_thread_context() { return thread_context(); }

size_t default_stack_bytes() {
  pthread_attr_t attributes;
  size_t bytes = 0;
  if (pthread_getattr_default_np(&attributes) == 0) {
    pthread_attr_getstacksize(&attributes, &bytes);
    pthread_attr_destroy(&attributes);
  }
  return bytes >= (size_t{1} << 16) ? bytes : size_t{8} << 20;
}

size_t usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
    return static_cast<size_t>(CPU_COUNT(&set));
  }
  const unsigned count = std::thread::hardware_concurrency();
  return count > 0 ? count : 1;
}

void fiber_main(void* fiber);

class BlockPool {
 public:
  BlockPool()
      : stack_bytes_(default_stack_bytes()),
        page_(static_cast<size_t>(getpagesize())),
        carriers_(usable_cpus()) {}

  PoolCounts counts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return PoolCounts{started_, static_cast<uint32_t>(free_.size())};
  }

  void start(const std::shared_ptr<PoolJob>& job, int32_t index) {
    start_threads();
    Fiber* fiber = take_free();
    fiber->job = job;
    fiber->index = index;
    fiber->saved = ThreadContext{};
    fiber->round = 0;
    fiber->finished = false;
    context_init(&fiber->context, fiber->memory + page_, fiber->bytes - page_, fiber_main, fiber);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (live_++ == 0) {
        active_.notify_one();
      }
    }
    ready_.push(fiber);
  }

  // A fiber whose run returned, on its carrier's loop.
  void finished(Fiber* fiber) {
    std::lock_guard<std::mutex> lock(mutex_);
    --live_;
    free_.push_back(fiber);
  }

 private:
  // The carriers and the monitor, on the first block; throws std::system_error when a thread
  // cannot be started (the next block tries again).
  void start_threads() {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    for (size_t slot = 0; slot < carriers_.size(); ++slot) {
      if (carriers_[slot].load(std::memory_order_acquire) == nullptr) {
        start_carrier(slot);
      }
    }
    if (!monitoring_) {
      std::thread([this] { monitor(); }).detach();
      monitoring_ = true;
    }
  }

  void start_carrier(size_t slot) {
    auto* carrier = new Carrier();  // lives while its thread does (see serve)
    try {
      std::thread([this, carrier] { serve(carrier); }).detach();
    } catch (...) {
      delete carrier;
      throw;
    }
    carriers_[slot].store(carrier, std::memory_order_release);
  }

  Fiber* take_free() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        Fiber* fiber = free_.back();
        free_.pop_back();
        return fiber;
      }
    }
    void* memory = mmap(nullptr, stack_bytes_ + page_, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (memory == MAP_FAILED) {
      throw std::system_error(errno, std::generic_category(), "cannot map a block's stack");
    }
    if (mprotect(memory, page_, PROT_NONE) != 0) {
      const int error = errno;
      munmap(memory, stack_bytes_ + page_);
      throw std::system_error(error, std::generic_category(), "cannot guard a block's stack");
    }
    auto* fiber = new Fiber();  // lives as long as the pool: forever
    fiber->memory = static_cast<char*>(memory);
    fiber->bytes = stack_bytes_ + page_;
    std::lock_guard<std::mutex> lock(mutex_);
    ++started_;
    return fiber;
  }

  void serve(Carrier* self) {
    t_carrier = self;
    clockid_t clock{};
    if (pthread_getcpuclockid(pthread_self(), &clock) == 0) {
      self->cpu_clock.store(clock, std::memory_order_release);
    }
    Fiber* handed_back = nullptr;
    for (;;) {
      Fiber* fiber = ready_.take(self, handed_back);
      handed_back = nullptr;
      // Any fiber may run here, so this thread reports crashes as every block's thread must.
      prepare_thread_for_crash_reports();
      self->running = fiber;
      set_thread_context(fiber->saved);
      self->entries.fetch_add(1, std::memory_order_relaxed);
      self->state.store(CarrierState::kRunning, std::memory_order_release);
      context_switch(&self->home, &fiber->context);
      // Back: the fiber yielded its turn or returned (a released one only returns).
      const bool released =
          self->state.load(std::memory_order_acquire) == CarrierState::kReleased;
      self->running = nullptr;
      set_thread_context(ThreadContext{});
      if (fiber->finished) {
        finished(fiber);
      } else {
        handed_back = fiber;  // queued by the next take, under the same hold of the lock
      }
      if (released) {
        delete self;
        return;  // another carrier took its place; this thread ends
      }
    }
  }

  // Gives a fiber that has held its carrier too long the carrier's thread (see the file).
  [[noreturn]] void monitor() {
    std::vector<Sighting> seen(carriers_.size());
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        active_.wait(lock, [this] { return live_ > 0; });
      }
      std::this_thread::sleep_for(kMonitorPeriod);
      for (size_t slot = 0; slot < carriers_.size(); ++slot) {
        Carrier* carrier = carriers_[slot].load(std::memory_order_acquire);
        if (carrier != nullptr && holds_too_long(*carrier, &seen[slot])) {
          release(slot, carrier);
        }
      }
    }
  }

  // Whether `carrier` is inside a fiber that has taken too much CPU, or too long, since the
  // monitor first saw it there (within a period of the switch); `seen` is what it saw last time.
  static bool holds_too_long(const Carrier& carrier, Sighting* seen) {
    const uint64_t entries = carrier.entries.load(std::memory_order_relaxed);
    const uint64_t cpu = cpu_ns(carrier.cpu_clock.load(std::memory_order_acquire));
    if (carrier.state.load(std::memory_order_acquire) != CarrierState::kRunning ||
        seen->carrier != &carrier || seen->entries != entries) {
      *seen = Sighting{&carrier, entries, cpu, now_ns()};
      return false;
    }
    const uint64_t held = now_ns() - seen->seen_ns;
    return cpu - seen->cpu_ns >= uint64_t(std::chrono::nanoseconds(kReleaseAfterCpu).count()) ||
           held >= uint64_t(std::chrono::nanoseconds(kReleaseAfter).count());
  }

  // Give `carrier`'s thread to the fiber it runs and start another carrier in its place.
  void release(size_t slot, Carrier* carrier) {
    CarrierState running = CarrierState::kRunning;
    if (!carrier->state.compare_exchange_strong(running, CarrierState::kReleased,
                                                std::memory_order_acq_rel)) {
      return;  // it switched meanwhile
    }
    std::lock_guard<std::mutex> lock(threads_mutex_);
    carriers_[slot].store(nullptr, std::memory_order_release);
    try {
      start_carrier(slot);
    } catch (const std::system_error&) {
      // No thread to spare: the next block to start tries again.
    }
  }

  const size_t stack_bytes_;
  const size_t page_;
  ReadyQueue ready_;
  std::vector<std::atomic<Carrier*>> carriers_;  // one slot per usable CPU
  std::mutex threads_mutex_;
  bool monitoring_ = false;
  std::mutex mutex_;
  std::condition_variable active_;
  std::vector<Fiber*> free_;
  uint32_t started_ = 0;
  uint32_t live_ = 0;
};

BlockPool& pool() {
  static BlockPool* const instance = new BlockPool();  // never destroyed (see the file)
  return *instance;
}

void fiber_main(void* argument) {
  Fiber* fiber = static_cast<Fiber*>(argument);
  fiber->job->run(fiber->index);
  fiber->job.reset();  // before going idle: the task's memory is not the pool's to keep
  fiber->finished = true;
  Carrier* carrier = current_carrier();
  CarrierState running = CarrierState::kRunning;
  carrier->state.compare_exchange_strong(running, CarrierState::kIdle, std::memory_order_acq_rel);
  context_switch(&fiber->context, &carrier->home);  // never switched back to
}

}  // namespace

void start_pooled(const std::shared_ptr<PoolJob>& job, int32_t index) {
  pool().start(job, index);
}

PoolCounts pool_counts() { return pool().counts(); }

bool switch_turn() {
  Carrier* carrier = current_carrier();
  CarrierState running = CarrierState::kRunning;
  if (carrier == nullptr ||
      !carrier->state.compare_exchange_strong(running, CarrierState::kIdle,
                                              std::memory_order_acq_rel)) {
    return false;  // not a fiber, or one that has a thread of its own
  }
  Fiber* fiber = carrier->running;
  fiber->saved = get_thread_context();
  context_switch(&fiber->context, &carrier->home);
  return true;
}

void wait_turn() {
  if (!switch_turn()) {
    std::this_thread::yield();
  }
}

}  // namespace pypto_sim

extern "C" void pypto_sim_wait_turn(void) { pypto_sim::wait_turn(); }
