// consume_step (tests/programs/chip_pipeline.py): copy the received rows to the output.
// Placeholder body: a fixture for the front end and the sub-build layout. The argument
// slots follow the kernel ABI (tensors first, then scalars, then the CommContext).
#include <cstdint>

extern "C" void kernel_entry(int64_t* args) {
    (void)args;
}
