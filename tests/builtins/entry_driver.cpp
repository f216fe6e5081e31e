// Calls a rendered builtin entry (entry.cpp.in) the way a runtime does and prints what it asked
// the runtime to do. It defines the runtime functions the simulator's pto_orchestration_api.h
// declares.
//
// Build: g++ -std=c++17 -DOPERAND_COUNT=<5|6> -DENTRY_ALIAS=<entry symbol> -I<include root>
//        -I<simulator API include> entry_driver.cpp <rendered entry.cpp>
// Run:   entry_driver <nranks> <core_num, or - for none> <signal lanes, 0 = rank-1 signal>
//        <payload DataType>
// stdout lines: "config <expected_arg_count>", "fatal <code> <message>", "log <message>",
//               "submit <func_id> <tensor types> <scalars> <block_num> <sync_start> <error>"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pto_orchestration_api.h"

extern "C" {
PTO2OrchestrationConfig aicpu_orchestration_config(const ChipTaskArgs& orch_args);
void ENTRY_ALIAS(const ChipTaskArgs& orch_args);

void pypto_sim_rt_submit(const MixedKernels* kernels, const CoreTaskArgs* args,
                         TaskOutputTensors* outputs) {
  (void)outputs;
  std::printf("submit %d ", kernels->aiv0_kernel_id);
  for (int32_t i = 0; i < args->tensor_count(); ++i) {
    std::printf("%s", args->tags[i] == TensorArgType::INPUT ? "I" : "U");
  }
  for (int32_t i = 0; i < args->scalar_count(); ++i) {
    std::printf(" %llu", static_cast<unsigned long long>(args->scalars[i]));
  }
  std::printf(" %d %d %d\n", args->launch_spec.block_num(),
              static_cast<int>(args->launch_spec.require_sync_start()),
              static_cast<int>(args->has_error));
}

void pypto_sim_rt_alloc(const CoreTaskArgs*, TaskOutputTensors*) {}
bool pypto_sim_rt_is_fatal(void) { return false; }
int32_t pypto_sim_rt_available_cluster_count(void) { return 0; }
int32_t pypto_sim_rt_available_aiv_count(void) { return 0; }

void pypto_sim_rt_report_fatal(int32_t code, const char*, const char* format, ...) {
  std::printf("fatal %d ", code);
  va_list values;
  va_start(values, format);
  std::vprintf(format, values);
  va_end(values);
  std::printf("\n");
}

void pypto_sim_rt_log(int32_t, const char*, const char* format, ...) {
  std::printf("log ");
  va_list values;
  va_start(values, format);
  std::vprintf(format, values);
  va_end(values);
  std::printf("\n");
}
}

int main(int argc, char** argv) {
  if (argc != 5) {
    return 2;
  }
  const long long nranks = std::atoll(argv[1]);
  const long long core_num = std::atoll(argv[2]);
  const uint32_t lanes = static_cast<uint32_t>(std::atoi(argv[3]));
  const DataType payload = static_cast<DataType>(std::atoi(argv[4]));

  std::vector<ChipTensor> tensors(OPERAND_COUNT + 1);
  for (ChipTensor& tensor : tensors) {
    tensor = ChipTensor{};
    tensor.ndims = 2;
    tensor.dtype = DataType::INT32;
  }
  tensors[0].dtype = payload;
  tensors[1].dtype = payload;
  tensors[2].ndims = lanes == 0 ? 1 : 2;
  tensors[2].shapes[1] = lanes;

  ChipTaskArgs orch_args{};
  for (size_t i = 0; i < tensors.size(); ++i) {
    orch_args.tensors[i] = TensorRef(&tensors[i]);
  }
  orch_args.tensor_count_ = static_cast<int32_t>(tensors.size());
  orch_args.scalars[0] = static_cast<uint64_t>(nranks);
  orch_args.scalars[1] = 0xC0FFEE;  // the CommContext address, forwarded untouched
  orch_args.scalars[2] = static_cast<uint64_t>(core_num);
  // "-" as core_num: the dispatch passes no core_num, as PyPTO's own HOST dispatch does.
  orch_args.scalar_count_ = std::strcmp(argv[2], "-") == 0 ? 2 : 3;

  std::printf("config %d\n", aicpu_orchestration_config(orch_args).expected_arg_count);
  ENTRY_ALIAS(orch_args);
  return 0;
}
