// PyTorch extension (torch.utils.cpp_extension, built by nvwavenet/kernels.py): a thin pybind11 layer over the C
// API of api.h. Python passes the address of an NvwArgs it filled with ctypes (the same struct the CPU emulation
// library takes) and the CUDA stream to launch on. Errors become RuntimeError / ValueError with their message.
#include <torch/extension.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "wavenet_args.h"

extern "C" {
int nvw_launch(const nvw::NvwArgs* args, void* stream, char* error, int error_size);
int nvw_args_size();
void nvw_state_elements(const nvw::NvwArgs* args, int64_t* out);
int nvw_grid_blocks(const nvw::NvwArgs* args);
int nvw_capacity(const nvw::NvwArgs* args, int* blocks, char* error, int error_size);
int nvw_kernel_count();
void nvw_kernel_entry(int index, int32_t* out);
}

namespace {

const nvw::NvwArgs* args_at(int64_t address) {
    if (address == 0) throw std::invalid_argument("nvwavenet: null NvwArgs address");
    return reinterpret_cast<const nvw::NvwArgs*>(address);
}

void launch(int64_t args_address, int64_t stream) {
    char error[4096];
    if (nvw_launch(args_at(args_address), reinterpret_cast<void*>(stream), error, sizeof error)) {
        throw std::runtime_error(error);
    }
}

std::vector<int64_t> state_elements(int64_t args_address) {
    std::vector<int64_t> sizes(NVW_NUM_STATE_BUFFERS);
    nvw_state_elements(args_at(args_address), sizes.data());
    return sizes;
}

int capacity(int64_t args_address) {
    char error[4096];
    int blocks = 0;
    if (nvw_capacity(args_at(args_address), &blocks, error, sizeof error)) throw std::runtime_error(error);
    return blocks;
}

std::vector<std::vector<int>> kernels() {
    std::vector<std::vector<int>> entries;
    for (int i = 0; i < nvw_kernel_count(); ++i) {
        int32_t entry[6];
        nvw_kernel_entry(i, entry);
        entries.emplace_back(entry, entry + 6);
    }
    return entries;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "nv-wavenet inference kernels (see nvwavenet/kernels.py)";
    m.def("launch", &launch, "run one chunk: (address of NvwArgs, cudaStream_t as int)");
    m.def("args_size", &nvw_args_size, "sizeof(NvwArgs), to check the ctypes mirror");
    m.def("state_elements", &state_elements, "element counts of the six state buffers");
    m.def("grid_blocks", [](int64_t address) { return nvw_grid_blocks(args_at(address)); });
    m.def("capacity", &capacity, "co-resident blocks of the selected kernel on the current device");
    m.def("kernels", &kernels, "compiled kernels as [variant, precision, R, S, A, batch per block]");
}
