// consume_step, INT8 payload (tests/programs/host_rail_int8.py).
// Placeholder body: a fixture for the front end and the sub-build layout. The argument
// slots follow the kernel ABI (tensors first, then scalars, then the CommContext).
#include <cstdint>

extern "C" void kernel_entry(int64_t* args) {
    (void)args;
}
