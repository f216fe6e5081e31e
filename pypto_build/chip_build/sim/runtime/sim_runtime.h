// sim_runtime.h -- the C interface of the host simulation runtime, as the Python
// binding (pypto_build/chip_build/sim/runtime.py) calls it through ctypes.
//
// The runtime also defines the functions rendered kernels and orchestrations call
// (pypto_build/portability.h: pypto_sim_report_error, pypto_sim_wait_timeout_ns, both weak in
// the kernels, which fail loudly without them; the simulator's pto_orchestration_api.h:
// pypto_sim_rt_submit, pypto_sim_rt_alloc, pypto_sim_rt_report_fatal, pypto_sim_rt_log, ...).
// They bind when a kernel or orchestration shared object is loaded, so this library must be
// loaded with RTLD_GLOBAL before any of them.
//
// Objects:
//   domain    one comm domain: a window per rank (memory of the caller's, filled by it with the
//             given contents or zeros, which must outlive the domain) and each rank's CommContext, whose
//             windowsIn[i] = windowsOut[i] = rank i's window base, exactly as on hardware.
//   callable  one chip sub-build: its orchestration shared object and its kernels by func_id.
//   run       one execution of a callable's orchestration on one rank, on the calling thread:
//             the first error code it latches, that error's message, its timing log lines and
//             the number of tasks it ran. Each kernel task of width B runs on B threads of
//             the process's pool (one per core of a MIX cluster), kept for later tasks.
//
// A C++ exception that escapes a kernel or an orchestration is caught on its thread and latched
// as PYPTO_SIM_KERNEL_CRASHED. What cannot be caught (a fatal signal, exit()) ends the process;
// a process that runs ranks for a caller in another process (the isolated simulation) asks for a
// report of it first (pypto_sim_report_crashes).
//
// Functions that can fail write a message into `error` (at most error_len bytes, always
// terminated) and return a null handle.

#ifndef PYPTO_BUILD_SIM_RUNTIME_H_
#define PYPTO_BUILD_SIM_RUNTIME_H_

#include <cstddef>
#include <cstdint>

#define PYPTO_SIM_API extern "C" __attribute__((visibility("default")))

// Bumped whenever a signature below changes; the binding refuses a library of another version.
#define PYPTO_SIM_API_VERSION 4

// Status of a run that the runtime refused before its orchestration started (upstream's -1:
// fewer arguments than aicpu_orchestration_config asks for). Every other failure is the
// negated latched error code.
#define PYPTO_SIM_RUN_REFUSED (-1)

// The code latched for a kernel or orchestration that threw a C++ exception, and reported for one
// that ended the process (a fatal signal, exit()): what no device runtime code describes, since a
// kernel on a device can do neither.
#define PYPTO_SIM_KERNEL_CRASHED (-2)

// The code latched for a task that accesses bytes an earlier task of the run accessed (one of
// the two writing) while no dependency PyPTO's runtime derives orders it after that task: a race
// on the runtime, reported before the task runs (order.cpp).
#define PYPTO_SIM_UNORDERED_ACCESS (-3)

// Which size pypto_sim_abi_size reports.
enum PyptoSimAbiType : int32_t {
  PYPTO_SIM_ABI_CHIP_TENSOR = 0,
  PYPTO_SIM_ABI_COMM_CONTEXT = 1,
  PYPTO_SIM_ABI_LOCAL_CONTEXT = 2,
  PYPTO_SIM_ABI_CHIP_TASK_ARGS = 3,
};

PYPTO_SIM_API int32_t pypto_sim_api_version(void);
PYPTO_SIM_API uint64_t pypto_sim_abi_size(int32_t which);

// How long one kernel signal wait may spin (pypto_sim_wait_timeout_ns reads it), and how long
// a task may run before its submitter gives up on blocks that have not returned, latches
// SIMPLER_ERROR_SCHEDULER_TIMEOUT and abandons them.
PYPTO_SIM_API void pypto_sim_set_timeouts(uint64_t wait_ns, uint64_t task_ns);

// Kernel block starts and returns so far, over every run of the process: a watchdog that sees it
// stand still while work is pending knows that no rank is making progress.
PYPTO_SIM_API uint64_t pypto_sim_progress(void);

// The process's pool of block threads: how many it has started (it never ends one) and how many
// of them wait for a block; the others run one, or an abandoned kernel.
PYPTO_SIM_API uint32_t pypto_sim_pool_threads(uint32_t* idle);

// Write `nbytes` at `destination`: a copy of `source`, or zeros when it is null, with stores that
// do not read the lines they overwrite (stream_fill.cpp); for windows, before a run starts.
PYPTO_SIM_API void pypto_sim_stream_fill(void* destination, const void* source, uint64_t nbytes);

// Fill the ChipTensor at `out` (pypto_sim_abi_size(PYPTO_SIM_ABI_CHIP_TENSOR) bytes) with a
// view of `ndims` dims: element (c0, c1, ...) at addr + (start_offset + sum ci * strides[i]) *
// element size. The contiguity flag and element extent are derived, as the runtime does.
PYPTO_SIM_API void pypto_sim_describe_tensor(void* out, uint64_t addr, uint64_t nbytes,
                                             uint64_t start_offset, uint8_t dtype,
                                             uint32_t ndims, const uint32_t* shapes,
                                             const uint32_t* strides);

// `windows`: each rank's window base, 64-byte aligned; window_bytes: a positive multiple of 64.
PYPTO_SIM_API void* pypto_sim_domain_create(uint32_t nranks, uint64_t window_bytes,
                                            const uint64_t* windows, char* error,
                                            size_t error_len);
// Bytes of every window.
PYPTO_SIM_API uint64_t pypto_sim_domain_window_bytes(const void* domain);
PYPTO_SIM_API uint64_t pypto_sim_domain_window(const void* domain, uint32_t rank);
PYPTO_SIM_API uint64_t pypto_sim_domain_context(const void* domain, uint32_t rank);
PYPTO_SIM_API void pypto_sim_domain_destroy(void* domain);

// core_types[i]: 0 = AIV, 1 = AIC. `entry_name` is the orchestration's entry symbol.
PYPTO_SIM_API void* pypto_sim_callable_load(const char* orchestration_path,
                                            const char* entry_name, int32_t kernel_count,
                                            const int32_t* func_ids, const int32_t* core_types,
                                            const char* const* kernel_names,
                                            const char* const* kernel_paths, char* error,
                                            size_t error_len);
PYPTO_SIM_API void pypto_sim_callable_unload(void* callable);

// A run of rank `rank` of sub-build `next_level` (copied; named in crash reports); sync-start
// launches wider than the capacity of their core type are refused with
// SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID.
PYPTO_SIM_API void* pypto_sim_run_create(int32_t rank, const char* next_level,
                                         int32_t aiv_capacity, int32_t aic_capacity);
// Run `callable`'s orchestration with the given tensor descriptors (ChipTensor pointers) and
// scalars on the calling thread; returns 0, PYPTO_SIM_RUN_REFUSED or -code.
PYPTO_SIM_API int32_t pypto_sim_run_execute(void* run, const void* callable,
                                            void* const* tensors, int32_t tensor_count,
                                            const uint64_t* scalars, int32_t scalar_count);
PYPTO_SIM_API int32_t pypto_sim_run_code(const void* run);
PYPTO_SIM_API const char* pypto_sim_run_message(const void* run);
PYPTO_SIM_API int32_t pypto_sim_run_task_count(const void* run);
PYPTO_SIM_API int32_t pypto_sim_run_log_count(const void* run);
PYPTO_SIM_API const char* pypto_sim_run_log_line(const void* run, int32_t index);
// Whether a task of the run was abandoned with block threads still running; such a run (and the
// memory its tasks reference) must be kept alive, so pypto_sim_run_destroy then leaves it.
PYPTO_SIM_API int32_t pypto_sim_run_abandoned(const void* run);
PYPTO_SIM_API void pypto_sim_run_destroy(void* run);

// From now on, when a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS)
// or a call of exit() ends this process, first write one line to `fd` naming what the thread that
// ended it was running:
//
//   crash <TAB> rank <TAB> next_level <TAB> kernel <TAB> func_id <TAB> block <TAB> block_num
//         <TAB> signal number, or 0 for exit() <NEWLINE>
//
// rank is -1 on a thread outside any run, kernel empty on an orchestration thread. Only the first
// such event is reported. Returns 0, or errno when a handler could not be installed. Meant for a
// process that exists to run ranks: the handlers replace the process's own.
PYPTO_SIM_API int32_t pypto_sim_report_crashes(int32_t fd);

#endif  // PYPTO_BUILD_SIM_RUNTIME_H_
