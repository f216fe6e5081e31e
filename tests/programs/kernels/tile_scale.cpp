// tile_scale (tests/programs/orchestration_features.py): a placeholder body. The program exercises
// the CHIP orchestration codegen; the kernel only has to be a well-formed kernel_entry.
#include <cstdint>

extern "C" void kernel_entry(int64_t* args) {
    (void)args;
}
