// metal_bridge_test_double.h: an in-memory TEST DOUBLE of the Metal bridge (mtlb_api) for the Linux tests.
// It is not Metal: buffers are host vectors, command buffers run their recorded commands on the CPU when
// waited on, and kernels are C++ functions (the plugin's own metal_kernels.metal compiled as C++, plus test
// kernels). It counts every object it hands out so tests can prove each reference is given back.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bridge/metal_bridge.h"

namespace td {

// Bound arguments of one dispatch, as a kernel sees them.
struct Args {
  uint8_t* buffers[31] = {};
  uint64_t lengths[31] = {};
  std::vector<uint8_t> bytes[31];
};
using Kernel = std::function<void(const Args&, uint64_t gid, uint64_t nthreads)>;

const mtlb_api* api();
void register_kernel(const std::string& name, Kernel k);
int64_t live_objects();     // every object handed out and not released
int64_t live_buffers();     // of those, buffers
int64_t buffers_created();  // newBuffer calls that succeeded
int64_t command_buffers_run();
void set_fail_new_buffer(int after);  // the n-th next new_buffer fails (0: never)
void set_no_device(bool v);
void set_max_buffer_length(uint64_t n);
// Runs every committed command buffer now (the GPU catching up).
void complete_all();
// A buffer made outside the plugin (what a DLPack import would hand over), +1 owned by the caller.
void* foreign_buffer(uint64_t length);
uint8_t* contents(void* buffer);
int64_t matmuls_run();

}  // namespace td
