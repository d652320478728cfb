// tests/fuzz/shim_fuzzer.cpp: libFuzzer target on the AOTI C ABI (issue 14).
//
// The input is a program: each step is an opcode byte and its operands, run against a pool of 16 handle
// values that the harness tracks (live, deleted, NULL, or a forged value). Arguments are hostile on purpose:
// ndim outside [0, 64], negative and huge sizes and strides, offsets, invalid dtype and device codes, NULL
// out-pointers, deleted, stale and foreign handles. The harness checks the ABI's contract, not only memory
// safety (ASan/UBSan do that): every AOTITorchError is 0 or 1, a call on a value the harness knows is not a
// live handle must fail, a call that fails leaves no new handle, and after the program every live handle is
// deleted and slimtensor_aoti_live_handles() is back to where it started (no leak).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "slimtensor/c/shim.h"

extern "C" {  // the DLPack bridge (src/aoti/dlpack_bridge.cpp), not in shim.h
AOTITorchError slimtensor_aoti_handle_from_dlpack(void* managed, AtenTensorHandle* ret);
void* slimtensor_aoti_handle_to_dlpack(AtenTensorHandle handle);
}

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  uint8_t u8() { return n ? (--n, *p++) : 0; }
  int64_t i64() {  // small values mostly, hostile ones sometimes
    uint8_t tag = u8();
    switch (tag % 8) {
      case 0: return INT64_MIN;
      case 1: return INT64_MAX;
      case 2: return -static_cast<int64_t>(u8());
      case 3: {
        int64_t v = 0;
        for (int k = 0; k < 8; ++k) v = (v << 8) | u8();
        return v;
      }
      default: return u8() % 9;
    }
  }
};

[[noreturn]] void contract(const char* what, const char* call) {
  std::fprintf(stderr, "contract broken: %s in %s (last error: %s)\n", what, call, slimtensor_last_error());
  std::abort();
}

constexpr int kPool = 16;
enum State { kNone, kLive, kDead, kForged };
AtenTensorHandle pool[kPool];
State state[kPool];
alignas(64) unsigned char blob[4096];

void check_rc(AOTITorchError rc, const char* call) {
  if (rc != 0 && rc != 1) contract("error code not 0 or 1", call);
}

// A handle argument: the pool's value (whatever its state).
AtenTensorHandle arg(Reader& r, int* slot) {
  *slot = r.u8() % kPool;
  return state[*slot] == kNone ? nullptr : pool[*slot];
}

bool is_live(int slot) { return state[slot] == kLive; }

// Stores a result handle into a pool slot; a live handle there is deleted first (never leaked).
void put(int slot, AtenTensorHandle h) {
  if (state[slot] == kLive) {
    if (aoti_torch_delete_tensor_object(pool[slot]) != 0) contract("delete of a live handle failed", "put");
  }
  pool[slot] = h;
  state[slot] = kLive;
}

// After a call with a handle argument: a value that is not a live handle must have been refused.
void expect_refused(AOTITorchError rc, int slot, const char* call) {
  check_rc(rc, call);
  if (!is_live(slot) && rc == 0) contract("a non-live handle was accepted", call);
}

void result(AOTITorchError rc, AtenTensorHandle out, int dst, const char* call) {
  check_rc(rc, call);
  if (rc == 0) {
    if (!out) contract("success without a handle", call);
    int64_t n = 0;  // a huge broadcast view (stride 0) is valid, but cloning or filling it is not a test
    if (aoti_torch_get_numel(out, &n) != 0) contract("numel of a new handle failed", call);
    if (n > (1 << 16)) {
      if (aoti_torch_delete_tensor_object(out) != 0) contract("delete of a new handle failed", call);
      return;
    }
    put(dst, out);
  }
}

int64_t elements_bound(int64_t ndim, const int64_t* sizes) {  // -1: overflow or negative
  int64_t n = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (sizes[d] < 0 || __builtin_mul_overflow(n, sizes[d], &n)) return -1;
  }
  return n;
}

int32_t dtype_code(Reader& r) {
  static const int32_t codes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 23, 24, 27, 28, 29, -1, 12, 99, 1000};
  return codes[r.u8() % (sizeof(codes) / sizeof(codes[0]))];
}

void run(Reader& r) {
  int64_t sizes[80], strides[80];
  while (r.n) {
    const uint8_t op = r.u8();
    int s = 0, t = 0;
    const int dst = r.u8() % kPool;
    // ndim: mostly 0..4, sometimes hostile
    const uint8_t nd = r.u8();
    int64_t ndim = nd < 240 ? nd % 5 : (nd == 240 ? -1 : nd == 241 ? 65 : nd == 242 ? INT64_MIN : 64);
    const int64_t fill = ndim > 0 && ndim <= 64 ? ndim : 0;
    for (int64_t d = 0; d < fill; ++d) sizes[d] = r.i64();
    const bool null_strides = r.u8() & 1;
    for (int64_t d = 0; d < fill; ++d) strides[d] = r.i64();
    const bool null_sizes = ndim > 0 && r.u8() == 0;
    const int64_t* sp = null_sizes ? nullptr : sizes;
    const int64_t* tp = null_strides ? nullptr : strides;
    AtenTensorHandle out = nullptr;
    switch (op % 20) {
      case 0: {  // empty_strided, bounded memory: only element counts that overflow or are small
        const int64_t n = (ndim >= 0 && ndim <= 64 && sp) ? elements_bound(ndim, sizes) : -1;
        if (n > 4096) break;
        int64_t bound = 0;  // strides may make the extent larger: bound it too
        if (tp && n > 0) {
          for (int64_t d = 0; d < ndim; ++d) {
            int64_t step;
            if (__builtin_mul_overflow(strides[d] < 0 ? -(strides[d] + 1) : strides[d], sizes[d], &step) ||
                __builtin_add_overflow(bound, step, &bound)) {
              bound = -1;
              break;
            }
          }
          if (bound < 0 || bound > 1 << 16) break;
        }
        const int32_t dev = r.u8() % 4 == 0 ? static_cast<int32_t>(r.i64()) : 0;
        const int32_t idx = r.u8() % 4 == 0 ? static_cast<int32_t>(r.i64()) : 0;
        result(aoti_torch_empty_strided(ndim, sp, tp, dtype_code(r), dev, idx, r.u8() == 7 ? nullptr : &out), out, dst,
               "empty_strided");
        break;
      }
      case 1: {  // delete
        AtenTensorHandle h = arg(r, &s);
        AOTITorchError rc = aoti_torch_delete_tensor_object(h);
        expect_refused(rc, s, "delete_tensor_object");
        if (rc == 0) state[s] = kDead;
        break;
      }
      case 2: {
        AtenTensorHandle h = arg(r, &s);
        AOTITorchError rc = aoti_torch__reinterpret_tensor(h, ndim, sp, tp, r.i64(), &out);
        expect_refused(rc, s, "_reinterpret_tensor");
        result(rc, out, dst, "_reinterpret_tensor");
        break;
      }
      case 3: {
        AtenTensorHandle h = arg(r, &s);
        AOTITorchError rc = aoti_torch_as_strided(h, sp, tp, &out);
        expect_refused(rc, s, "as_strided");
        result(rc, out, dst, "as_strided");
        break;
      }
      case 4: {
        AtenTensorHandle h = arg(r, &s);
        AOTITorchError rc = aoti_torch_new_tensor_handle(h, &out);
        expect_refused(rc, s, "new_tensor_handle");
        result(rc, out, dst, "new_tensor_handle");
        break;
      }
      case 5: {  // every getter
        AtenTensorHandle h = arg(r, &s);
        void* p;
        int64_t v;
        int64_t* vp;
        int32_t c;
        bool b;
        expect_refused(aoti_torch_get_data_ptr(h, &p), s, "get_data_ptr");
        expect_refused(aoti_torch_get_storage_size(h, &v), s, "get_storage_size");
        expect_refused(aoti_torch_get_storage_numel(h, &v), s, "get_storage_numel");
        expect_refused(aoti_torch_get_dim(h, &v), s, "get_dim");
        expect_refused(aoti_torch_get_numel(h, &v), s, "get_numel");
        expect_refused(aoti_torch_get_sizes(h, &vp), s, "get_sizes");
        expect_refused(aoti_torch_get_strides(h, &vp), s, "get_strides");
        expect_refused(aoti_torch_get_size(h, r.i64(), &v), s, "get_size");
        expect_refused(aoti_torch_get_stride(h, r.i64(), &v), s, "get_stride");
        expect_refused(aoti_torch_get_dtype(h, &c), s, "get_dtype");
        expect_refused(aoti_torch_get_device_type(h, &c), s, "get_device_type");
        expect_refused(aoti_torch_get_device_index(h, &c), s, "get_device_index");
        expect_refused(aoti_torch_get_layout(h, &c), s, "get_layout");
        expect_refused(aoti_torch_get_storage_offset(h, &v), s, "get_storage_offset");
        expect_refused(aoti_torch_is_contiguous(h, &b), s, "is_contiguous");
        expect_refused(aoti_torch_is_defined(h, &b), s, "is_defined");
        check_rc(aoti_torch_get_dim(h, nullptr), "get_dim(NULL)");
        break;
      }
      case 6: {
        AtenTensorHandle a = arg(r, &s), b = arg(r, &t);
        AOTITorchError rc = aoti_torch_copy_(a, b, 0);
        check_rc(rc, "copy_");
        if (rc == 0 && (!is_live(s) || !is_live(t))) contract("copy_ accepted a non-live handle", "copy_");
        break;
      }
      case 7: {
        AtenTensorHandle h = arg(r, &s);
        AOTITorchError rc = (op & 32) ? aoti_torch_clone_preserve_strides(h, &out) : aoti_torch_clone(h, &out);
        expect_refused(rc, s, "clone");
        result(rc, out, dst, "clone");
        break;
      }
      case 8: {
        AtenTensorHandle h = arg(r, &s);
        float f;
        double d;
        int64_t i;
        bool b;
        uint8_t u;
        slimtensor_complex64 c;
        switch (r.u8() % 6) {
          case 0: expect_refused(aoti_torch_item_float32(h, &f), s, "item_float32"); break;
          case 1: expect_refused(aoti_torch_item_float64(h, &d), s, "item_float64"); break;
          case 2: expect_refused(aoti_torch_item_int64(h, &i), s, "item_int64"); break;
          case 3: expect_refused(aoti_torch_item_bool(h, &b), s, "item_bool"); break;
          case 4: expect_refused(aoti_torch_item_uint8(h, &u), s, "item_uint8"); break;
          default: expect_refused(aoti_torch_item_complex64(h, &c), s, "item_complex64"); break;
        }
        break;
      }
      case 9: {  // from_blob over the harness's buffer; a view it accepts past the buffer is never used
        const int64_t off = r.i64();
        AOTITorchError rc =
            (op & 32) ? aoti_torch_create_tensor_from_blob_v2(r.u8() ? blob : nullptr, ndim, sp, tp, off, dtype_code(r),
                                                              0, 0, &out, r.u8() % 3 == 0 ? 1 : 0, nullptr, 0)
                      : aoti_torch_create_tensor_from_blob(r.u8() ? blob : nullptr, ndim, sp, tp, off, dtype_code(r), 0,
                                                           0, &out);
        check_rc(rc, "create_tensor_from_blob");
        if (rc == 0) {
          int64_t bytes = 0;
          if (aoti_torch_get_storage_size(out, &bytes) != 0) contract("storage size of a new handle", "from_blob");
          if (bytes > static_cast<int64_t>(sizeof(blob))) {
            if (aoti_torch_delete_tensor_object(out) != 0) contract("delete of a new handle", "from_blob");
          } else {
            put(dst, out);
          }
        }
        break;
      }
      case 10: {
        AtenTensorHandle a = arg(r, &s), b = arg(r, &t);
        AOTITorchError rc = aoti_torch_assign_tensors(a, b);
        check_rc(rc, "assign_tensors");
        if (rc == 0 && (!is_live(s) || !is_live(t))) contract("assign_tensors accepted a non-live handle", "assign");
        break;
      }
      case 11: {
        AtenTensorHandle h = arg(r, &s);
        AOTITorchError rc = aoti_torch_assign_tensors_out(h, &out);
        expect_refused(rc, s, "assign_tensors_out");
        result(rc, out, dst, "assign_tensors_out");
        break;
      }
      case 12: {
        AtenTensorHandle h = arg(r, &s);
        AOTITorchError rc = aoti_torch__alloc_from_pool(h, r.i64(), dtype_code(r), ndim, sp, tp, &out);
        expect_refused(rc, s, "_alloc_from_pool");
        result(rc, out, dst, "_alloc_from_pool");
        break;
      }
      case 13: {  // a forged value in a slot: random bits, a neighbour of a real handle, a pointer
        int64_t v = r.i64();
        AtenTensorHandle base = state[dst] != kNone ? pool[dst] : nullptr;
        if (state[dst] == kLive) break;  // keep live handles reachable
        uintptr_t bits = (op & 32)   ? reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(v)
                         : (op & 64) ? reinterpret_cast<uintptr_t>(blob)
                                     : static_cast<uintptr_t>(v);
        // A forged value with bit 63 set may be a key issued later (it is then a live handle, rightly
        // accepted); with bit 63 clear it can never be one (Note [Handle table]), so it must always fail.
        bits &= ~(uintptr_t{1} << 63);
        bool names_live = false;  // a forged value may be exactly a live handle (a neighbour's key): then it is one
        for (int k = 0; k < kPool; ++k) names_live |= state[k] == kLive && reinterpret_cast<uintptr_t>(pool[k]) == bits;
        if (names_live) break;
        pool[dst] = reinterpret_cast<AtenTensorHandle>(bits);
        state[dst] = kForged;
        break;
      }
      case 14: {
        AtenTensorHandle h = arg(r, &s);
        expect_refused(aoti_torch_zero_(h), s, "zero_");
        break;
      }
      case 15: {
        AOTITorchError rc = aoti_torch_new_uninitialized_tensor(&out);
        result(rc, out, dst, "new_uninitialized_tensor");
        break;
      }
      case 16: {
        AtenTensorHandle a = arg(r, &s), b = arg(r, &t);
        AOTITorchError rc = aoti_torch_tensor_copy_(a, b);
        check_rc(rc, "tensor_copy_");
        if (rc == 0 && (!is_live(s) || !is_live(t)))
          contract("tensor_copy_ accepted a non-live handle", "tensor_copy_");
        break;
      }
      case 17: {
        const double v = static_cast<double>(r.i64()) / (1 + r.u8());
        AOTITorchError rc =
            (op & 32) ? aoti_torch_scalar_to_tensor_float64(v, &out) : aoti_torch_scalar_to_tensor_int64(r.i64(), &out);
        result(rc, out, dst, "scalar_to_tensor");
        break;
      }
      case 18: {  // DLPack round trip of a live handle (the export steals it)
        AtenTensorHandle h = arg(r, &s);
        void* m = slimtensor_aoti_handle_to_dlpack(h);
        if (!m) break;  // refused (not live, undefined, or a dtype DLPack lacks): the handle is still ours
        if (!is_live(s)) contract("export accepted a non-live handle", "handle_to_dlpack");
        // Stolen: the capsule (then the imported handle's storage) owns it and keeps it alive, so its value
        // is still a live key; the harness forgets it rather than calling it dead.
        state[s] = kNone;
        pool[s] = nullptr;
        AOTITorchError rc = slimtensor_aoti_handle_from_dlpack(m, &out);
        result(rc, out, dst, "handle_from_dlpack");
        break;
      }
      default: {     // a stale copy: slot t takes slot s's value (possibly live: then both name one handle,
        arg(r, &s);  // which the harness forbids, so only non-live values are copied)
        if (state[s] != kLive && state[dst] != kLive) {
          pool[dst] = pool[s];
          state[dst] = state[s];
        }
        break;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int64_t baseline = slimtensor_aoti_live_handles();
  Reader r{data, size};
  run(r);
  for (int i = 0; i < kPool; ++i) {
    if (state[i] == kLive && aoti_torch_delete_tensor_object(pool[i]) != 0) contract("final delete failed", "cleanup");
    state[i] = kNone;
    pool[i] = nullptr;
  }
  if (slimtensor_aoti_live_handles() != baseline) contract("live handles did not return to the baseline", "cleanup");
  return 0;
}
