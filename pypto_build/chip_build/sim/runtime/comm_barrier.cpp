// comm_barrier.cpp -- the domain registry and the barrier simulated kernels meet at across the
// ranks of a comm domain (pypto_sim_comm_barrier, pypto_build/mix_kernel.h).
//
// A kernel that exchanges data through its windows needs its peers to have produced (or
// consumed) that data before it reads (or overwrites) it. On the device HCCL's collectives give
// that ordering; in the simulation the ranks are threads of this process, so the runtime offers a
// barrier that needs no bytes in the windows. A kernel names the domain by its CommContext, the
// only handle it has: every domain registers the address range of its contexts when it is
// created, so any rank's context leads back to it.
//
// The barrier is a generation barrier: a round completes when parties_per_rank * ranks parties
// have arrived, and every party of the round returns true. A party that waits longer than the
// simulation's wait timeout breaks the barrier and reports SIMPLER_ERROR_SCHEDULER_TIMEOUT; its
// waiting peers wake up and fail at once, and every later call on the domain fails too (a run
// with a failed rank ends in error anyway, and a broken round cannot be trusted to realign).

#include <chrono>
#include <map>

#include "sim_internal.h"

namespace pypto_sim {

namespace {

std::mutex g_domains_mutex;
// Live domains by the address of their first context.
std::map<const CommContext*, Domain*> g_domains;

// Report `message` as the calling kernel's error (the thread's run and block are named by the
// hook) after releasing any barrier lock: the report takes the run's lock.
int32_t fail(int32_t code, const std::string& message) {
  pypto_sim_report_error(code, ("comm_barrier: " + message).c_str());
  return 0;
}

}  // namespace

void register_domain(Domain* domain) {
  std::lock_guard<std::mutex> lock(g_domains_mutex);
  g_domains[domain->contexts.data()] = domain;
}

void unregister_domain(const Domain* domain) {
  std::lock_guard<std::mutex> lock(g_domains_mutex);
  const auto found = g_domains.find(domain->contexts.data());
  if (found != g_domains.end() && found->second == domain) {
    g_domains.erase(found);
  }
}

Domain* find_domain(const CommContext* ctx) {
  std::lock_guard<std::mutex> lock(g_domains_mutex);
  // The domain whose contexts start at or below ctx, if ctx is one of them; compared as
  // addresses so that a stray pointer is never dereferenced.
  auto found = g_domains.upper_bound(ctx);
  if (found == g_domains.begin()) {
    return nullptr;
  }
  --found;
  Domain* domain = found->second;
  const auto first = reinterpret_cast<uintptr_t>(domain->contexts.data());
  const auto address = reinterpret_cast<uintptr_t>(ctx);
  const uintptr_t offset = address - first;
  const uintptr_t index = offset / sizeof(CommContext);
  if (offset % sizeof(CommContext) != 0 || index >= domain->contexts.size()) {
    return nullptr;
  }
  return domain;
}

}  // namespace pypto_sim

extern "C" int32_t pypto_sim_comm_barrier(const CommContext* ctx, int32_t parties_per_rank) {
  using pypto_sim::fail;
  using pypto_sim::format;
  pypto_sim::Domain* domain = pypto_sim::find_domain(ctx);
  if (domain == nullptr) {
    return fail(SIMPLER_ERROR_INVALID_ARGS,
                format("%p is not the CommContext of a comm domain of this run",
                       static_cast<const void*>(ctx)));
  }
  if (parties_per_rank < 1) {
    return fail(SIMPLER_ERROR_INVALID_ARGS,
                format("parties_per_rank must be >= 1, got %d", parties_per_rank));
  }
  const int64_t parties = int64_t{parties_per_rank} * static_cast<int64_t>(domain->contexts.size());
  pypto_sim::DomainBarrier& barrier = domain->barrier;
  std::unique_lock<std::mutex> lock(barrier.mutex);
  if (barrier.broken) {
    const std::string why = barrier.broken_by;
    lock.unlock();
    return fail(SIMPLER_ERROR_SCHEDULER_TIMEOUT, "the barrier is broken: " + why);
  }
  if (barrier.arrived == 0) {
    barrier.parties = parties;
  } else if (barrier.parties != parties) {
    barrier.broken = true;
    barrier.broken_by = format("rank %u arrived for %lld parties, the round under way has %lld",
                               ctx->rankId, static_cast<long long>(parties),
                               static_cast<long long>(barrier.parties));
    const std::string why = barrier.broken_by;
    barrier.released.notify_all();
    lock.unlock();
    return fail(SIMPLER_ERROR_INVALID_ARGS, why);
  }
  const uint64_t generation = barrier.generation;
  if (++barrier.arrived == barrier.parties) {
    barrier.arrived = 0;
    ++barrier.generation;
    barrier.released.notify_all();
    return 1;
  }
  const uint64_t budget_ns = pypto_sim::wait_timeout_ns();
  const bool woken = barrier.released.wait_for(lock, std::chrono::nanoseconds(budget_ns), [&] {
    return barrier.generation != generation || barrier.broken;
  });
  if (woken && barrier.generation != generation) {
    return 1;
  }
  if (!woken) {
    barrier.broken = true;
    barrier.broken_by = format(
        "rank %u waited %.1f s with %lld of %lld parties arrived", ctx->rankId,
        static_cast<double>(budget_ns) / 1e9, static_cast<long long>(barrier.arrived),
        static_cast<long long>(barrier.parties));
    barrier.released.notify_all();
    const std::string why = barrier.broken_by;
    lock.unlock();
    return fail(SIMPLER_ERROR_SCHEDULER_TIMEOUT, why);
  }
  const std::string why = barrier.broken_by;
  lock.unlock();
  return fail(SIMPLER_ERROR_SCHEDULER_TIMEOUT, "the barrier was broken: " + why);
}
