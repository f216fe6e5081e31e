// block_pool.cpp -- the threads kernel blocks run on, kept for the life of the process.
//
// Starting a thread costs tens of microseconds and every task of every rank starts one per block
// (per core of a MIX cluster): for a collective that moves little, that is most of its time. So
// blocks run on pool threads instead: a thread that has run a block goes back to the idle list
// and waits for the next one, of any task, rank or run. The pool grows to the widest set of
// blocks ever running at once and never shrinks. An idle thread yields for a moment (the next
// task of a run is usually that close: kSpinBudget), then sleeps on its own condition variable,
// so an idle pool costs no CPU.
//
// A task the submitter gave up on (tasks.cpp: a block that did not return in time) keeps its
// threads until its kernels return, if ever; they rejoin the idle list then, and until then the
// pool starts other threads for later tasks. Pool threads are detached and never joined: at
// process exit they are blocked on their condition variable (or running an abandoned kernel) and
// end with the process. The pool itself is never destroyed, so no static destructor can find a
// joinable thread or a waiter on a destroyed condition variable.

#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "sim_internal.h"

namespace pypto_sim {

namespace {

// One pool thread and the block it is handed.
struct PoolThread {
  std::mutex mutex;
  std::condition_variable handed;
  std::shared_ptr<PoolJob> job;  // set by the submitter, cleared by the thread
  int32_t index = 0;
  std::atomic<bool> handed_over{false};  // job is set (read while spinning, without the mutex)
  bool sleeping = false;                 // waiting on `handed`: a hand-over must notify
};

class BlockPool {
 public:
  PoolCounts counts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return PoolCounts{started_, static_cast<uint32_t>(idle_.size())};
  }

  void start(const std::shared_ptr<PoolJob>& job, int32_t index) {
    PoolThread* thread = take_idle();
    const bool fresh = thread == nullptr;
    if (fresh) {
      thread = new PoolThread();  // lives as long as the pool: forever
    }
    bool sleeping = false;
    {
      std::lock_guard<std::mutex> lock(thread->mutex);
      thread->job = job;
      thread->index = index;
      thread->handed_over.store(true, std::memory_order_release);
      sleeping = thread->sleeping;
    }
    if (sleeping) {
      thread->handed.notify_one();
    }
    if (fresh) {
      try {
        std::thread([this, thread] { serve(thread); }).detach();
      } catch (...) {
        delete thread;
        throw;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      ++started_;
    }
  }

 private:
  PoolThread* take_idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.empty()) {
      return nullptr;
    }
    PoolThread* thread = idle_.back();
    idle_.pop_back();
    return thread;
  }

  [[noreturn]] void serve(PoolThread* thread) {
    for (;;) {
      std::shared_ptr<PoolJob> job;
      int32_t index = 0;
      const auto handed_over = [thread] {
        return thread->handed_over.load(std::memory_order_acquire);
      };
      spin_until(handed_over, kSpinBudget);
      {
        std::unique_lock<std::mutex> lock(thread->mutex);
        thread->sleeping = true;
        thread->handed.wait(lock, handed_over);
        thread->sleeping = false;
        thread->handed_over.store(false, std::memory_order_relaxed);
        job = std::move(thread->job);
        thread->job = nullptr;
        index = thread->index;
      }
      job->run(index);
      job.reset();  // before going idle: the task's memory is not the pool's to keep
      std::lock_guard<std::mutex> lock(mutex_);
      idle_.push_back(thread);
    }
  }

  std::mutex mutex_;
  std::vector<PoolThread*> idle_;
  uint32_t started_ = 0;
};

BlockPool& pool() {
  static BlockPool* const instance = new BlockPool();  // never destroyed (see the file)
  return *instance;
}

}  // namespace

void start_pooled(const std::shared_ptr<PoolJob>& job, int32_t index) {
  pool().start(job, index);
}

PoolCounts pool_counts() { return pool().counts(); }

}  // namespace pypto_sim
