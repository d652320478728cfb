// src/aoti/ops/blas_threads.cpp: the C functions that set and read the BLAS's thread count and describe it.
#include <mutex>
#include <string>

#include "aoti/handle.h"
#include "aoti/ops/blas.h"
#include "aoti/ops/gemm.h"
#include "slimtensor/c/shim_cpu.h"

extern "C" {
void slimtensor_blas_set_num_threads(int32_t n) {
  try {
    slimtensor::aoti::set_blas_threads(n);
  } catch (const std::exception& e) {  // Note [No exception crosses the C ABI]
    slimtensor::aoti::set_last_error("slimtensor_blas_set_num_threads", e.what());
  }
}

int32_t slimtensor_blas_get_num_threads(void) {
  try {
    return slimtensor::aoti::blas_threads();
  } catch (const std::exception& e) {
    slimtensor::aoti::set_last_error("slimtensor_blas_get_num_threads", e.what());
    return 1;
  }
}

const char* slimtensor_blas_info(void) {
  static std::string info;  // written once (the loaded library never changes), under the once flag
  static std::once_flag once;
  try {
    const slimtensor::aoti::blas::Api& api = slimtensor::aoti::blas::api("slimtensor_blas_info");
    std::call_once(once, [&] {
      info = std::string(slimtensor::aoti::blas::loaded_path()) + " | " + (api.get_config ? api.get_config() : "");
    });
    return info.c_str();
  } catch (const std::exception& e) {
    slimtensor::aoti::set_last_error("slimtensor_blas_info", e.what());
    return "";
  }
}
}
