// pypto_build/host_mix.h -- the host implementation of what a MIX kernel takes from the device
// beyond its own arithmetic: AscendC's cross-core flags and HCCL's AICPU-server client
// (lib/hccl/hccl.h), so that a kernel's algorithm, written once against those names, runs in the
// host simulation with the device path's offsets, counts, displacements and synchronisation.
// Host-only: the device uses AscendC's own (the MC2 kernel template picks one or the other).
//
// Everything here lives in the ranks' windows, the only memory every runtime shares between ranks
// (pypto-build's simulator runs ranks as threads, PyPTO's a2a3sim as processes sharing the window
// mapping): the kernel hands it a state area in its window, at the same offset on every rank and
// zero before the first call (host_mix_area_bytes says how large), and every call leaves the
// area's counters as it found them.
//
// Cross-core flags (CoreFlags). AscendC's CrossCoreSetFlag<mode, pipe>(id) / CrossCoreWaitFlag(id)
// within one cluster (AIC = core 0, AIV sub-blocks = cores 1 and 2): mode 2 from the AIC wakes both
// AIV cores, mode 2 from the AIV cores wakes the AIC once both have set it, mode 1 between the AIV
// cores wakes each once the other has set it. One int32 counter per (core, flag) in the area: a set
// adds 1 to the counters of the cores it wakes, a wait waits for its own counter to reach the
// credits of every wait so far (2 per wait on the AIC, 1 on an AIV core). The epilogue (finish)
// takes those credits off again.
//
// HCCL (Hccl). The client's calls, in HCCL's argument order and units (elements of the data
// type, counts and displacements as uint64_t arrays of the group's size):
//   ReduceScatter<commit>(send, recv, recvCount, dataType, op, strideCount, repeat)
//       group position k receives sum_r send_r[k * s : k * s + recvCount], s = strideCount or,
//       when 0, recvCount; the sum runs over the group positions r = 0, 1, ... in order and rounds
//       to the data type after each add (FP16, BF16; FP32 adds in FP32), op HCCL_REDUCE_SUM.
//   AlltoAllV<commit>(send, sendCounts, sdispls, sendType, recv, recvCounts, rdispls, recvType,
//                     repeat)
//       source j's sendCounts_j[k] elements at sdispls_j[k] land at k's recv + rdispls_k[j];
//       recvCounts_k[j] must equal sendCounts_j[k].
//   Commit(handle), Wait(handle), InterHcclGroupSync(srcGroupID, srcHandle), Finalize().
// Every send buffer must lie in the rank's window (a peer reads it there); receive buffers are
// any local memory. repeat must be 1.
//
// How a task runs. Commit runs it to completion, as one rendezvous of the group's members: each
// member publishes its arguments (a mailbox in the area), meets the others at a CommBarrier round
// (one party per rank: the core that drives HCCL), reads every peer's mailbox and the slices of
// their send buffers it receives, checks them (equal counts, slices inside the sender's window),
// writes its receive buffer, and meets them again, after which no peer reads its send buffer or
// mailbox any more. HCCL may complete a task anywhere between Commit and Wait; completing it
// inside Commit is one of those schedules, and since every member issues the same tasks in the
// same order (as HCCL requires), it cannot deadlock. Wait checks the task was committed;
// InterHcclGroupSync checks the task it orders after was committed (so it is complete).
//
// Failures. A wait that runs out, or a check that fails, is reported (portability.h:
// report_error: a latched code with pypto-build's simulation runtime, a trap without it); from
// then on every call of that core returns at once, so the kernel runs to its end without touching
// data, and its peers each wait out their own budget.

#ifndef PYPTO_BUILD_HOST_MIX_H_
#define PYPTO_BUILD_HOST_MIX_H_

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "pypto_build/host_float.h"
#include "pypto_build/mix_kernel.h"

namespace pypto_build {
namespace host_mix {

// AscendC's HCCL names (lib/hccl/hccl.h), the values of HCCL's enumerations.
using GM_ADDR = uint8_t*;
using HcclHandle = int8_t;

enum class HcclDataType : int32_t {
  HCCL_DATA_TYPE_FP16 = 3,
  HCCL_DATA_TYPE_FP32 = 4,
  HCCL_DATA_TYPE_BFP16 = 11,
};

enum class HcclReduceOp : int32_t { HCCL_REDUCE_SUM = 0 };

// The cores of one cluster.
constexpr int32_t kAic = 0;
constexpr int32_t kCores = 3;

// Tasks one client prepares in one call; HCCL's own limit on handles is of this order.
constexpr int32_t kMaxTasks = 64;

// ---- the state area ------------------------------------------------------------------------

constexpr int64_t align8(int64_t bytes) { return (bytes + 7) / 8 * 8; }

// The mailbox a member publishes its arguments in: the send buffer's window offset, the count and
// stride (ReduceScatter), and the counts and displacements for each group position (AlltoAllV),
// 32 bits each (the area is as small as it can be; a larger value fails the call).
struct MailboxHeader {
  uint64_t send_offset;
  uint32_t count;
  uint32_t stride;
};

constexpr int64_t mailbox_bytes(int64_t max_group) {
  return static_cast<int64_t>(sizeof(MailboxHeader)) +
         2 * max_group * static_cast<int64_t>(sizeof(uint32_t));
}

// The area: `flags` flag ids' counters for each core, one CommBarrier counter per HCCL group, and
// the mailbox.
constexpr int64_t flags_bytes(int32_t flags) {
  return align8(static_cast<int64_t>(flags) * kCores * static_cast<int64_t>(sizeof(int32_t)));
}

constexpr int64_t credits_bytes(int32_t groups) {
  return align8(static_cast<int64_t>(groups) * static_cast<int64_t>(sizeof(int32_t)));
}

constexpr int64_t host_mix_area_bytes(int32_t flags, int32_t groups, int64_t max_group) {
  return flags_bytes(flags) + credits_bytes(groups) + mailbox_bytes(max_group);
}

// A core's view of the area: which core it is, whether a call of it has failed.
struct Core {
  __gm__ CommContext* ctx;
  __gm__ uint8_t* area;  // in this rank's window
  int32_t flags;         // flag ids [first_flag, first_flag + flags)
  int32_t groups;
  int32_t core;  // kAic, 1 or 2
  bool failed = false;

  __gm__ int32_t* flag_slot(int32_t core_index, int32_t flag) const {
    return reinterpret_cast<__gm__ int32_t*>(area) + flag * kCores + core_index;
  }

  __gm__ int32_t* credit_slot(int32_t group) const {
    return reinterpret_cast<__gm__ int32_t*>(area + flags_bytes(flags)) + group;
  }

  __gm__ uint8_t* mailbox() const { return area + flags_bytes(flags) + credits_bytes(groups); }

  // Reports `message` (once per core: later failures are consequences) and fails the core.
  void fail(int32_t code, const char* message) {
    if (!failed) {
      report_error(code, message);
    }
    failed = true;
  }

  // A wait that ran out has been reported already (portability.h).
  bool wait(__gm__ int32_t* slot, int32_t threshold) {
    if (failed) {
      return false;
    }
    if (!signal_wait_ge(slot, threshold)) {
      failed = true;
      return false;
    }
    return true;
  }
};

// ---- cross-core flags ----------------------------------------------------------------------

template <int32_t kFlags>
class CoreFlags {
 public:
  CoreFlags(Core* core, int32_t first_flag) : core_(core), first_(first_flag) {}

  // CrossCoreSetFlag<mode, pipe>(id): mode 2 from the AIC wakes both AIV cores, from an AIV core
  // the AIC; mode 1 (AIV only) the other AIV core.
  void set(int32_t mode, uint16_t id) {
    if (core_->failed) {
      return;
    }
    publish_fence();
    const int32_t flag = index(id);
    if (core_->core == kAic) {
      signal_add(core_->flag_slot(1, flag), 1);
      signal_add(core_->flag_slot(2, flag), 1);
    } else if (mode == 2) {
      signal_add(core_->flag_slot(kAic, flag), 1);
    } else {
      signal_add(core_->flag_slot(3 - core_->core, flag), 1);
    }
  }

  // CrossCoreWaitFlag(id).
  void wait(uint16_t id) {
    const int32_t flag = index(id);
    waited_[flag] += credits();
    core_->wait(core_->flag_slot(core_->core, flag), waited_[flag]);
  }

  // The call's epilogue: this core's counters as they were before the call.
  void finish() {
    if (core_->failed) {
      return;
    }
    for (int32_t flag = 0; flag < kFlags; ++flag) {
      signal_add(core_->flag_slot(core_->core, flag), -waited_[flag]);
      waited_[flag] = 0;
    }
  }

 private:
  int32_t credits() const { return core_->core == kAic ? 2 : 1; }
  int32_t index(uint16_t id) const { return static_cast<int32_t>(id) - first_; }

  Core* core_;
  int32_t first_;
  int32_t waited_[kFlags] = {};
};

// ---- HCCL ----------------------------------------------------------------------------------

// One HCCL group of the domain: its members are ranks first, first + stride, ...
struct Group {
  int64_t first;
  int64_t stride;
  int64_t size;
};

enum class TaskKind : uint8_t { kNone, kReduceScatter, kAlltoAllV };

struct Task {
  TaskKind kind = TaskKind::kNone;
  GM_ADDR send = nullptr;
  GM_ADDR recv = nullptr;
  uint64_t count = 0;
  uint64_t stride = 0;
  HcclDataType dtype = HcclDataType::HCCL_DATA_TYPE_FP16;
  const uint64_t* send_counts = nullptr;
  const uint64_t* sdispls = nullptr;
  const uint64_t* recv_counts = nullptr;
  const uint64_t* rdispls = nullptr;
  bool committed = false;
  bool waited = false;
};

inline int64_t dtype_bytes(HcclDataType dtype) {
  return dtype == HcclDataType::HCCL_DATA_TYPE_FP32 ? 4 : 2;
}

// dst[i] = q(dst[i] + src[i]) in the data type's arithmetic (q rounds to it, ties to even).
template <typename T>
inline void add_into(T* dst, const T* src, uint64_t count) {
  constexpr uint64_t kChunk = 256;  // converted a chunk at a time (host_float.h's _n forms)
  float sums[kChunk];
  float addends[kChunk];
  for (uint64_t start = 0; start < count; start += kChunk) {
    const int64_t n = static_cast<int64_t>(count - start < kChunk ? count - start : kChunk);
    to_float_n(dst + start, sums, n);
    to_float_n(src + start, addends, n);
    for (int64_t i = 0; i < n; ++i) {
      sums[i] += addends[i];
    }
    from_float_n(sums, dst + start, n);
  }
}

inline void add_into(HcclDataType dtype, uint8_t* dst, const uint8_t* src, uint64_t count) {
  switch (dtype) {
    case HcclDataType::HCCL_DATA_TYPE_FP16:
      add_into(reinterpret_cast<half*>(dst), reinterpret_cast<const half*>(src), count);
      return;
    case HcclDataType::HCCL_DATA_TYPE_BFP16:
      add_into(reinterpret_cast<bfloat16_t*>(dst), reinterpret_cast<const bfloat16_t*>(src),
               count);
      return;
    case HcclDataType::HCCL_DATA_TYPE_FP32:
      add_into(reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(src), count);
      return;
  }
}

class Hccl;

// The groups a driving core's clients belong to, by HCCL group id (the op's HcclGroup order), so
// that InterHcclGroupSync can name another group's task.
struct Server {
  Core* core;
  Hccl* clients[2] = {nullptr, nullptr};
};

class Hccl {
 public:
  void Init(Server* server, int32_t group_id, const Group& group) {
    server_ = server;
    core_ = server->core;
    group_id_ = group_id;
    group_ = group;
    server->clients[group_id] = this;
    const int64_t me = static_cast<int64_t>(core_->ctx->rankId);
    position_ = (me - group.first) / group.stride;
    barrier_ = CommBarrier{core_->ctx,  core_->credit_slot(group_id), group.size, 1, 0,
                           group.first, group.stride};
  }

  template <bool kCommit = false>
  HcclHandle ReduceScatter(GM_ADDR send, GM_ADDR recv, uint64_t recv_count, HcclDataType dtype,
                           HcclReduceOp op, uint64_t stride_count, uint8_t repeat = 1) {
    if (op != HcclReduceOp::HCCL_REDUCE_SUM || repeat != 1) {
      core_->fail(SIMPLER_ERROR_INVALID_ARGS,
                  "the simulated HCCL runs a ReduceScatter with HCCL_REDUCE_SUM and repeat 1");
      return -1;
    }
    Task task;
    task.kind = TaskKind::kReduceScatter;
    task.send = send;
    task.recv = recv;
    task.count = recv_count;
    task.stride = stride_count == 0 ? recv_count : stride_count;
    task.dtype = dtype;
    return Prepared<kCommit>(task);
  }

  template <bool kCommit = false>
  HcclHandle AlltoAllV(GM_ADDR send, void* send_counts, void* sdispls, HcclDataType send_type,
                       GM_ADDR recv, void* recv_counts, void* rdispls, HcclDataType recv_type,
                       uint8_t repeat = 1) {
    if (send_type != recv_type || repeat != 1) {
      core_->fail(SIMPLER_ERROR_INVALID_ARGS,
                  "the simulated HCCL runs an AlltoAllV of one data type with repeat 1");
      return -1;
    }
    Task task;
    task.kind = TaskKind::kAlltoAllV;
    task.send = send;
    task.recv = recv;
    task.dtype = send_type;
    task.send_counts = static_cast<const uint64_t*>(send_counts);
    task.sdispls = static_cast<const uint64_t*>(sdispls);
    task.recv_counts = static_cast<const uint64_t*>(recv_counts);
    task.rdispls = static_cast<const uint64_t*>(rdispls);
    return Prepared<kCommit>(task);
  }

  // The next task of this group starts after `handle` of group `src_group` has completed.
  void InterHcclGroupSync(int8_t src_group, HcclHandle handle) {
    Hccl* source = src_group >= 0 && src_group < 2 ? server_->clients[src_group] : nullptr;
    if (source == nullptr || !source->Committed(handle)) {
      core_->fail(SIMPLER_ERROR_INVALID_ARGS,
                  "InterHcclGroupSync orders after a task that was never committed (on the device "
                  "the group would wait for it forever)");
    }
  }

  int32_t Commit(HcclHandle handle) {
    Task* task = Find(handle);
    if (task == nullptr || core_->failed) {
      return -1;
    }
    if (task->committed) {
      core_->fail(SIMPLER_ERROR_INVALID_ARGS, "an HCCL task was committed twice");
      return -1;
    }
    task->committed = true;
    return Run(*task) ? 0 : -1;
  }

  int32_t Wait(HcclHandle handle) {
    Task* task = Find(handle);
    if (task == nullptr || core_->failed) {
      return -1;
    }
    if (!task->committed) {
      core_->fail(SIMPLER_ERROR_SCHEDULER_TIMEOUT,
                  "HCCL Wait for a task that was never committed (on the device it never returns)");
      return -1;
    }
    task->waited = true;
    return 0;
  }

  // The call's epilogue: the group counter as it was before the call.
  void Finalize() {
    if (!core_->failed) {
      comm_barrier_finish(barrier_, rounds_);
    }
    rounds_ = 0;
    tasks_ = 0;
  }

 private:
  template <bool kCommit>
  HcclHandle Prepared(const Task& task) {
    if (core_->failed) {
      return -1;
    }
    if (tasks_ == kMaxTasks) {
      core_->fail(SIMPLER_ERROR_INVALID_ARGS, "more HCCL tasks in one call than the client holds");
      return -1;
    }
    const HcclHandle handle = static_cast<HcclHandle>(tasks_);
    table_[tasks_++] = task;
    if (kCommit) {
      Commit(handle);
    }
    return handle;
  }

  Task* Find(HcclHandle handle) {
    if (handle < 0 || handle >= tasks_) {
      if (!core_->failed) {
        core_->fail(SIMPLER_ERROR_INVALID_ARGS, "an HCCL handle this client never returned");
      }
      return nullptr;
    }
    return &table_[handle];
  }

  bool Committed(HcclHandle handle) const {
    return handle >= 0 && handle < tasks_ && table_[handle].committed;
  }

  int64_t RankOf(int64_t position) const { return group_.first + position * group_.stride; }

  bool Round() {
    if (core_->failed) {
      return false;
    }
    if (!comm_barrier_round(barrier_, ++rounds_)) {
      core_->failed = true;
      return false;
    }
    return true;
  }

  // `bytes` of peer's window from the window offset `offset`; null (reported) outside it.
  const uint8_t* PeerBytes(int64_t position, uint64_t offset, uint64_t bytes, const char* what) {
    __gm__ CommContext* ctx = core_->ctx;
    if (offset > ctx->winSize || bytes > ctx->winSize - offset) {
      char message[200];
      std::snprintf(message, sizeof(message),
                    "HCCL: %s of group position %lld reads bytes [%llu, %llu) of its window, "
                    "which holds %llu",
                    what, static_cast<long long>(position), static_cast<unsigned long long>(offset),
                    static_cast<unsigned long long>(offset + bytes),
                    static_cast<unsigned long long>(ctx->winSize));
      core_->fail(SIMPLER_ERROR_INVALID_ARGS, message);
      return nullptr;
    }
    return reinterpret_cast<const uint8_t*>(ctx->windowsIn[RankOf(position)] + offset);
  }

  const MailboxHeader* PeerMailbox(int64_t position) {
    const uint64_t offset = reinterpret_cast<uint64_t>(core_->mailbox()) -
                            core_->ctx->windowsIn[core_->ctx->rankId];
    return reinterpret_cast<const MailboxHeader*>(
        core_->ctx->windowsIn[RankOf(position)] + offset);
  }

  // Publishes the task's arguments; false (reported) when the send buffer is not in the window.
  bool Publish(const Task& task) {
    __gm__ CommContext* ctx = core_->ctx;
    const uint64_t base = ctx->windowsIn[ctx->rankId];
    const uint64_t send = reinterpret_cast<uint64_t>(task.send);
    if (send < base || send - base > ctx->winSize) {
      core_->fail(SIMPLER_ERROR_INVALID_ARGS,
                  "the simulated HCCL reads send buffers from the window: this one is outside it");
      return false;
    }
    bool fits = task.count <= UINT32_MAX && task.stride <= UINT32_MAX;
    MailboxHeader* header = reinterpret_cast<MailboxHeader*>(core_->mailbox());
    header->send_offset = send - base;
    header->count = static_cast<uint32_t>(task.count);
    header->stride = static_cast<uint32_t>(task.stride);
    if (task.kind == TaskKind::kAlltoAllV) {
      uint32_t* arrays = reinterpret_cast<uint32_t*>(header + 1);
      for (int64_t position = 0; position < group_.size; ++position) {
        fits = fits && task.send_counts[position] <= UINT32_MAX &&
               task.sdispls[position] <= UINT32_MAX;
        arrays[position] = static_cast<uint32_t>(task.send_counts[position]);
        arrays[group_.size + position] = static_cast<uint32_t>(task.sdispls[position]);
      }
    }
    if (!fits) {
      core_->fail(SIMPLER_ERROR_INVALID_ARGS,
                  "the simulated HCCL takes counts and displacements below 2^32 elements");
    }
    return fits;
  }

  bool Run(const Task& task) {
    if (!Publish(task) || !Round()) {
      return false;
    }
    const bool moved = task.kind == TaskKind::kReduceScatter ? ReduceScatterInto(task)
                                                             : AlltoAllVInto(task);
    // Even after a failed check: the peers are still reading this rank's buffers.
    return Round() && moved;
  }

  bool ReduceScatterInto(const Task& task) {
    const int64_t elem = dtype_bytes(task.dtype);
    const uint64_t bytes = task.count * static_cast<uint64_t>(elem);
    for (int64_t position = 0; position < group_.size; ++position) {
      const MailboxHeader* peer = PeerMailbox(position);
      if (peer->count != task.count) {
        char message[160];
        std::snprintf(message, sizeof(message),
                      "HCCL ReduceScatter: group position %lld passed recvCount %llu, this one "
                      "%llu",
                      static_cast<long long>(position), static_cast<unsigned long long>(peer->count),
                      static_cast<unsigned long long>(task.count));
        core_->fail(SIMPLER_ERROR_INVALID_ARGS, message);
        return false;
      }
      const uint64_t chunk =
          peer->send_offset + static_cast<uint64_t>(position_) * peer->stride * elem;
      const uint8_t* source = PeerBytes(position, chunk, bytes, "the ReduceScatter send buffer");
      if (source == nullptr) {
        return false;
      }
      if (position == 0) {
        std::memmove(task.recv, source, bytes);
      } else {
        add_into(task.dtype, task.recv, source, task.count);
      }
    }
    return true;
  }

  bool AlltoAllVInto(const Task& task) {
    const int64_t elem = dtype_bytes(task.dtype);
    for (int64_t source = 0; source < group_.size; ++source) {
      const uint32_t* arrays = reinterpret_cast<const uint32_t*>(PeerMailbox(source) + 1);
      const uint64_t count = arrays[position_];
      const uint64_t displ = arrays[group_.size + position_];
      if (count != task.recv_counts[source]) {
        char message[160];
        std::snprintf(message, sizeof(message),
                      "HCCL AlltoAllV: group position %lld sends %llu elements here, recvCounts "
                      "says %llu",
                      static_cast<long long>(source), static_cast<unsigned long long>(count),
                      static_cast<unsigned long long>(task.recv_counts[source]));
        core_->fail(SIMPLER_ERROR_INVALID_ARGS, message);
        return false;
      }
      const uint64_t bytes = count * static_cast<uint64_t>(elem);
      const uint8_t* from = PeerBytes(source, PeerMailbox(source)->send_offset + displ * elem,
                                      bytes, "the AlltoAllV send buffer");
      if (from == nullptr) {
        return false;
      }
      if (bytes != 0) {
        std::memmove(task.recv + task.rdispls[source] * elem, from, bytes);
      }
    }
    return true;
  }

  Server* server_ = nullptr;
  Core* core_ = nullptr;
  int32_t group_id_ = 0;
  Group group_{0, 1, 1};
  int64_t position_ = 0;
  CommBarrier barrier_{};
  int32_t rounds_ = 0;
  int32_t tasks_ = 0;
  Task table_[kMaxTasks];
};

}  // namespace host_mix
}  // namespace pypto_build

#endif  // PYPTO_BUILD_HOST_MIX_H_
