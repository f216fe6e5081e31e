// order.cpp -- the order PyPTO's runtime imposes on the tasks of one run, and the accesses it
// leaves unordered (TaskOrder, sim_internal.h).
//
// The simulator runs a task to completion before its submit returns, which orders every task
// after every earlier one. PyPTO's runtime (simpler 6ebaf77, tensormap_and_ringbuffer) does not:
// a task starts once the tasks it depends on have completed, and it depends only on
//   * the tasks its explicit dependencies name (CoreTaskArgs::set_dependencies);
//   * the creator of each tensor argument the runtime allocated (a TensorCreateInfo output);
//   * for an INPUT or INOUT argument, the tasks registered as producers of an overlapping range
//     of the same buffer -- the tasks that passed it as INOUT or OUTPUT_EXISTING
//     (runtime/pto_dep_compute.h: compute_task_fanin, register_task_outputs).
// Readers are never registered, an OUTPUT_EXISTING argument looks nothing up, a NO_DEP argument
// or a manual_dep descriptor takes no part, and inside a MANUAL scope the TensorMap is not used
// at all. So a task that writes what an earlier task read, with no path of such dependencies
// between them, may run while the reader still reads: on the runtime the result depends on
// timing. TaskOrder computes each task's dependencies by exactly those rules, and the transitive
// closure of them (its ancestors); a task that touches bytes an earlier task touched, one of
// the two writing, and that earlier task not among its ancestors, is reported as an unordered
// access (PYPTO_SIM_UNORDERED_ACCESS) before it runs. That makes a race on the runtime a
// deterministic error here, independent of timing. Accesses are compared by absolute address, so
// two descriptors of different buffers that alias are caught too (the runtime's TensorMap keys on
// the buffer base and would not order them).
//
// Ancestors are bitsets over the run's tasks; after kTrackedTasks tasks a run stops checking (and
// logs that it does), which bounds the memory of very long runs.

#include <algorithm>

#include "sim_internal.h"
#include "sim_runtime.h"

namespace pypto_sim {

namespace {

constexpr size_t kTrackedTasks = 4096;

bool overlaps(uint64_t begin_a, uint64_t end_a, uint64_t begin_b, uint64_t end_b) {
  return begin_a < end_b && begin_b < end_a;
}

const char* tag_name(TensorArgType tag) {
  switch (tag) {
    case TensorArgType::INPUT:
      return "INPUT";
    case TensorArgType::OUTPUT:
      return "OUTPUT";
    case TensorArgType::INOUT:
      return "INOUT";
    case TensorArgType::OUTPUT_EXISTING:
      return "OUTPUT_EXISTING";
    case TensorArgType::NO_DEP:
      return "NO_DEP";
  }
  return "?";
}

}  // namespace

void TaskOrder::begin_scope(bool manual, RankRun& run) {
  if (!manual && manual_depth_ > 0) {
    run.report(SIMPLER_ERROR_INVALID_ARGS,
               "auto scope nested inside manual scope is not supported");
    return;
  }
  scopes_.push_back(manual);
  manual_depth_ += manual ? 1 : 0;
}

void TaskOrder::end_scope() {
  if (!scopes_.empty()) {
    manual_depth_ -= scopes_.back() ? 1 : 0;
    scopes_.pop_back();
  }
}

bool TaskOrder::add(const std::string& name, const CoreTaskArgs& args,
                    std::vector<ChipTensor>* tensors, RankRun& run, PTO2TaskId* id) {
  const uint32_t index = submitted_;
  for (uint32_t i = 0; i < args.explicit_dep_count(); ++i) {
    const PTO2TaskId dep = args.explicit_dep(i);
    if (!dep.is_valid()) {
      run.report(SIMPLER_ERROR_INVALID_ARGS,
                 "Arg.set_dependencies(...) requires valid task ids");
      return false;
    }
    if (dep.ring() != 0 || dep.local() >= index) {
      run.report(SIMPLER_ERROR_INVALID_ARGS,
                 format("%s: set_dependencies names task %llu, which this run has not submitted",
                        name.c_str(), static_cast<unsigned long long>(dep.raw)));
      return false;
    }
  }
  ++submitted_;
  *id = PTO2TaskId::make(0, index);
  if (index >= kTrackedTasks) {
    if (index == kTrackedTasks) {
      run.log(format("note: the simulator checks the order of the first %zu tasks of a run only",
                     kTrackedTasks));
    }
    return true;
  }
  Task task;
  task.name = name;
  task.ancestors.assign(index / 64 + 1, 0);
  const auto follow = [&](uint32_t producer) {
    task.ancestors[producer / 64] |= uint64_t{1} << (producer % 64);
    const std::vector<uint64_t>& inherited = tasks_[producer].ancestors;
    for (size_t word = 0; word < inherited.size(); ++word) {
      task.ancestors[word] |= inherited[word];
    }
  };
  for (uint32_t i = 0; i < args.explicit_dep_count(); ++i) {
    follow(args.explicit_dep(i).local());
  }
  const bool tensor_map = manual_depth_ == 0;
  for (int32_t i = 0; i < args.tensor_count(); ++i) {
    ChipTensor& tensor = (*tensors)[static_cast<size_t>(i)];
    const TensorArgType tag = args.tags[i];
    const uint64_t element = element_size(tensor.dtype);
    const uint64_t first = tensor.start_offset;
    const uint64_t last = tensor.start_offset + tensor.extent_elem_cache;
    if (tag == TensorArgType::OUTPUT) {
      // A tensor this task creates: later readers depend on it as its creator.
      creators_.push_back(Creator{tensor.buffer.addr, index});
    } else if (tensor_map) {
      for (const Creator& creator : creators_) {
        if (creator.buffer == tensor.buffer.addr) {
          follow(creator.task);
        }
      }
      if ((tag == TensorArgType::INPUT || tag == TensorArgType::INOUT) && !tensor.manual_dep) {
        for (const Entry& entry : producers_) {
          if (entry.buffer == tensor.buffer.addr &&
              (tensor.version > entry.version || overlaps(first, last, entry.begin, entry.end))) {
            follow(entry.task);
          }
        }
      }
    }
    if (tag != TensorArgType::NO_DEP) {
      task.accesses.push_back(Access{tensor.buffer.addr + first * element,
                                     tensor.buffer.addr + last * element,
                                     tag != TensorArgType::INPUT, i, tag});
    }
  }
  if (!check(task, index, run)) {
    return false;
  }
  if (tensor_map) {
    for (int32_t i = 0; i < args.tensor_count(); ++i) {
      const ChipTensor& tensor = (*tensors)[static_cast<size_t>(i)];
      const TensorArgType tag = args.tags[i];
      if ((tag == TensorArgType::INOUT || tag == TensorArgType::OUTPUT_EXISTING) &&
          !tensor.manual_dep) {
        producers_.push_back(Entry{tensor.buffer.addr, tensor.start_offset,
                                   tensor.start_offset + tensor.extent_elem_cache,
                                   tensor.version, index});
      }
    }
  }
  tasks_.push_back(std::move(task));
  return true;
}

bool TaskOrder::check(const Task& task, uint32_t index, RankRun& run) const {
  for (uint32_t earlier = 0; earlier < index; ++earlier) {
    if ((task.ancestors[earlier / 64] >> (earlier % 64)) & 1u) {
      continue;
    }
    for (const Access& mine : task.accesses) {
      for (const Access& theirs : tasks_[earlier].accesses) {
        if ((mine.writes || theirs.writes) &&
            overlaps(mine.begin, mine.end, theirs.begin, theirs.end)) {
          run.report(
              PYPTO_SIM_UNORDERED_ACCESS,
              format("task %u (%s) %s args[%d] (%s, bytes [0x%llx, 0x%llx)), which task %u "
                     "(%s) %s as args[%d] (%s), and nothing orders the two tasks on PyPTO's "
                     "runtime: its TensorMap orders a task after the producers (INOUT, "
                     "OUTPUT_EXISTING) of what it reads, not after earlier readers, and an "
                     "OUTPUT_EXISTING argument looks up nothing; task %u needs an explicit "
                     "dependency on task %u (set_dependencies)",
                     index, task.name.c_str(), mine.writes ? "writes" : "reads", mine.arg,
                     tag_name(mine.tag), static_cast<unsigned long long>(mine.begin),
                     static_cast<unsigned long long>(mine.end), earlier,
                     tasks_[earlier].name.c_str(), theirs.writes ? "writes" : "reads",
                     theirs.arg, tag_name(theirs.tag), index, earlier));
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace pypto_sim
