// crash.cpp -- what the runtime says when a kernel does what no kernel on a device can: throw a
// C++ exception, raise a fatal signal, call exit().
//
// An exception is caught on the thread it escapes from (tasks.cpp, api.cpp) and latched as the
// rank's error: the run goes on as after any kernel error. A fatal signal or exit() ends the
// process, and only the thread that caused it knows which rank, sub-build, kernel and block it
// was running (its ThreadContext). So a process that runs ranks for a caller elsewhere (the
// isolated simulation's worker) turns on crash reports: the handlers below write that thread's
// identity as one line to a pipe the caller reads, then let the process end as it would have, so
// the caller also sees the signal or exit status itself.
//
// The signal handler may only call async-signal-safe functions: it formats by hand into a stack
// buffer and write()s once. It runs on an alternate stack where the thread has one, which every
// thread that runs a kernel or an orchestration gets while reports are on, so a kernel that
// overflows its own stack is reported too.

#include <cxxabi.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <typeinfo>

#include "sim_internal.h"
#include "sim_runtime.h"

namespace pypto_sim {

namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
// Enough for the handler's frame and the formatting below, with room to spare.
constexpr size_t kAltStackBytes = 64 * 1024;

std::atomic<int> g_report_fd{-1};
std::atomic<bool> g_reported{false};

// Appends to a fixed buffer without allocating (async-signal-safe).
class Line {
 public:
  void text(const char* value) {
    for (; value != nullptr && *value != '\0' && size_ < sizeof(buffer_) - 1; ++value) {
      // A tab or newline inside a name would break the line's fields.
      buffer_[size_++] = (*value == '\t' || *value == '\n') ? ' ' : *value;
    }
  }
  void field(const char* value) {
    put('\t');
    text(value);
  }
  void field(int64_t value) {
    put('\t');
    char digits[24];
    size_t count = 0;
    const bool negative = value < 0;
    uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
    do {
      digits[count++] = static_cast<char>('0' + magnitude % 10);
      magnitude /= 10;
    } while (magnitude != 0);
    if (negative) {
      put('-');
    }
    while (count > 0) {
      put(digits[--count]);
    }
  }
  void put(char c) {
    if (size_ < sizeof(buffer_) - 1) {
      buffer_[size_++] = c;
    }
  }
  void write_to(int fd) {
    buffer_[size_++] = '\n';
    const char* data = buffer_;
    size_t left = size_;
    while (left > 0) {
      const ssize_t wrote = ::write(fd, data, left);
      if (wrote < 0 && errno == EINTR) {
        continue;
      }
      if (wrote <= 0) {
        return;
      }
      data += wrote;
      left -= static_cast<size_t>(wrote);
    }
  }

 private:
  char buffer_[1024];
  size_t size_ = 0;
};

// The first report only: several threads may fault at once, and exit() may be followed by a
// signal from a destructor it runs.
void report(int signal_number) {
  const int fd = g_report_fd.load(std::memory_order_acquire);
  if (fd < 0 || g_reported.exchange(true, std::memory_order_acq_rel)) {
    return;
  }
  const ThreadContext& context = thread_context();
  Line line;
  line.text("crash");
  line.field(context.run != nullptr ? static_cast<int64_t>(context.run->rank()) : -1);
  line.field(context.run != nullptr ? context.run->next_level() : "");
  line.field(context.kernel_name != nullptr ? context.kernel_name : "");
  line.field(static_cast<int64_t>(context.func_id));
  line.field(static_cast<int64_t>(context.block_idx));
  line.field(static_cast<int64_t>(context.block_num));
  line.field(static_cast<int64_t>(signal_number));
  line.write_to(fd);
}

// Installed with SA_RESETHAND: on return the default action is back, and the fault (or abort's
// re-raise) ends the process with the signal the caller then sees.
void on_fatal_signal(int signal_number) {
  const int saved = errno;
  report(signal_number);
  errno = saved;
}

void report_exit() { report(0); }

// A thread's alternate signal stack, removed when the thread ends.
struct AltStack {
  std::unique_ptr<char[]> memory;
  ~AltStack() {
    if (memory) {
      stack_t none{};
      none.ss_flags = SS_DISABLE;
      sigaltstack(&none, nullptr);
    }
  }
};

}  // namespace

void prepare_thread_for_crash_reports() {
  if (g_report_fd.load(std::memory_order_acquire) < 0) {
    return;
  }
  thread_local AltStack stack;
  if (stack.memory) {
    return;
  }
  stack.memory.reset(new (std::nothrow) char[kAltStackBytes]);
  if (!stack.memory) {
    return;  // the thread still reports everything but a stack overflow
  }
  stack_t alternate{};
  alternate.ss_sp = stack.memory.get();
  alternate.ss_size = kAltStackBytes;
  if (sigaltstack(&alternate, nullptr) != 0) {
    stack.memory.reset();
  }
}

std::string current_exception_text() {
  std::type_info* type = abi::__cxa_current_exception_type();
  std::string name = "an exception of unknown type";
  if (type != nullptr) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> demangled(
        abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), std::free);
    name = status == 0 && demangled ? demangled.get() : type->name();
  }
  try {
    throw;
  } catch (const std::exception& error) {
    return name + ": " + error.what();
  } catch (...) {
    return name;
  }
}

}  // namespace pypto_sim

int32_t pypto_sim_report_crashes(int32_t fd) {
  pypto_sim::g_report_fd.store(fd, std::memory_order_release);
  struct sigaction action{};
  action.sa_handler = pypto_sim::on_fatal_signal;
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (const int signal_number : pypto_sim::kFatalSignals) {
    if (sigaction(signal_number, &action, nullptr) != 0) {
      return errno;
    }
  }
  // Registered after the runtime's own static objects, so it runs before their destructors.
  if (std::atexit(pypto_sim::report_exit) != 0) {
    return ENOMEM;
  }
  pypto_sim::prepare_thread_for_crash_reports();
  return 0;
}
