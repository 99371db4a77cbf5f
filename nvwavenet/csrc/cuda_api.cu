// The C API of api.h for the CUDA build. Only declarations of the launchers are visible here; their kernels are
// instantiated in kernels_<variant>_<precision>.cu.
#include "api.h"
