// The persistent fp32 kernels of instantiations.h, in their own translation unit so that ninja compiles the variants in
// parallel (each kernel is built for every target architecture).
#define NVW_DEFINE_LAUNCHERS
#include "instantiations.h"
#include "launch.h"

NVW_GPU_KERNELS_persistent_fp32(NVW_INSTANTIATE)
