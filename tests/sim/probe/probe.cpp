// The probe orchestration of tests/sim/test_runtime.py: scalar 0 selects what it asks of the
// runtime, so one callable exercises every rule of task submission.
//
// orch_args: tensor 0 an INT32 [B, 2] tensor; scalar 0 the mode; scalars 1 and 2 its operands.
// Kernels (func_id): 0 record, 1 wait_forever, 2 spin, 3 cube (an AIC kernel).
#include <chrono>
#include <cstdint>

#include "pto_orchestration_api.h"

namespace {

enum Mode : int64_t {
  kRecord = 0,          // record on scalar 1 blocks; scalar 2 nonzero: block 1 reports an error
  kTwoFatals = 1,       // latch 9 then 5, then submit (dropped)
  kTensorAfterScalar = 2,
  kSyncStart = 3,       // record on scalar 1 blocks with require_sync_start
  kUnknownKernel = 4,
  kWaitForever = 5,
  kSpin = 6,            // a kernel spinning scalar 1 ms without waiting
  kAicAsAiv = 7,
  kOrchestrationSpin = 8,  // the orchestration spins scalar 1 ms without submitting
  kCreateTensor = 9,    // record into a runtime tensor of scalar 1 rows, log what it holds
  kCube = 10,           // the AIC kernel on scalar 1 blocks with require_sync_start
};

void record(const ChipTensor& out, int32_t blocks, uint64_t flag, bool sync_start) {
  CoreTaskArgs task;
  task.add_inout(out);
  task.add_scalar(flag);
  task.launch_spec.set_block_num(blocks);
  task.launch_spec.set_require_sync_start(sync_start);
  rt_submit_aiv_task(0, task);
}

void spin(int64_t milliseconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

extern "C" {

PTO2OrchestrationConfig aicpu_orchestration_config(const ChipTaskArgs& orch_args) {
  (void)orch_args;
  return PTO2OrchestrationConfig{4};  // one tensor, three scalars
}

void aicpu_orchestration_entry(const ChipTaskArgs& orch_args) {
  const ChipTensor& out = orch_args.tensor(0).ref();
  const int64_t operand = static_cast<int64_t>(orch_args.scalar(1));
  const uint64_t flag = orch_args.scalar(2);
  switch (static_cast<int64_t>(orch_args.scalar(0))) {
    case kRecord:
      record(out, static_cast<int32_t>(operand), flag, false);
      break;
    case kTwoFatals:
      rt_report_fatal(9, "first fatal, code %d", 9);
      rt_report_fatal(PTO2_ERROR_INVALID_ARGS, "second fatal");
      record(out, 1, 0, false);
      break;
    case kTensorAfterScalar: {
      CoreTaskArgs task;
      task.add_scalar(1);
      task.add_inout(out);
      rt_submit_aiv_task(0, task);
      break;
    }
    case kSyncStart:
      record(out, static_cast<int32_t>(operand), 0, true);
      break;
    case kUnknownKernel: {
      CoreTaskArgs task;
      rt_submit_aiv_task(42, task);
      break;
    }
    case kWaitForever: {
      CoreTaskArgs task;
      task.add_inout(out);
      rt_submit_aiv_task(1, task);
      break;
    }
    case kSpin: {
      CoreTaskArgs task;
      task.add_scalar(static_cast<uint64_t>(operand));
      rt_submit_aiv_task(2, task);
      break;
    }
    case kAicAsAiv: {
      CoreTaskArgs task;
      rt_submit_aiv_task(3, task);
      break;
    }
    case kOrchestrationSpin:
      spin(operand);
      break;
    case kCreateTensor: {
      const uint32_t shape[2] = {static_cast<uint32_t>(operand), 2};
      const TensorCreateInfo info(shape, 2, DataType::INT32);
      const TaskOutputTensors outputs = alloc_tensors(info);
      const ChipTensor& made = outputs.get_ref(0);
      record(made, static_cast<int32_t>(operand), 0, false);
      const int32_t* values = reinterpret_cast<const int32_t*>(made.buffer.addr);
      for (uint32_t row = 0; row < shape[0]; ++row) {
        LOG_TIMING("row %u: %d %d", row, values[2 * row], values[2 * row + 1]);
      }
      break;
    }
    case kCube: {
      CoreTaskArgs task;
      task.launch_spec.set_block_num(static_cast<int16_t>(operand));
      task.launch_spec.set_require_sync_start(true);
      rt_submit_aic_task(3, task);
      break;
    }
    default:
      rt_report_fatal(PTO2_ERROR_INVALID_ARGS, "unknown probe mode");
  }
}

}  // extern "C"
