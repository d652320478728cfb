// stream.h: a slimtensor stream on Metal: one MTLCommandQueue, the command buffer being filled, and the
// committed ones not yet known to be finished.
//
// Note [Metal streams]
// Work is encoded into one open command buffer per stream (kernels share one open compute encoder, as
// torch's MPSStream does; a blit, an event or an MPS call ends it first) and committed when the stream is
// synchronised, an event is recorded, or a host copy needs the GPU work finished. Command buffers get
// increasing serials; `last_serial` covers all work queued so far (the open buffer included) and
// `completed_serial` everything known finished, which is what stream-ordered frees compare against
// (Note [Buffer cache]). A command buffer that finishes with an error is reported by the next wait on
// that stream, naming the failure; the work after it still runs (Metal's own behaviour).
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "../bridge/metal_bridge.h"

namespace slimtensor_metal {

class Stream {
 public:
  Stream(const mtlb_api* api, void* queue, int32_t id) : api_(api), queue_(queue), id_(id) {}
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The open compute encoder (opening the command buffer and the encoder as needed).
  int compute_encoder(void** encoder);
  // The open command buffer with no encoder open on it (for blits, events and MPS calls).
  int command_buffer(void** cb);
  // Commits the open command buffer (if any).
  int commit();
  // Commits, then waits for every committed command buffer; reports the first that failed.
  int synchronize();
  // Waits until `serial` has completed (committing first when it is the open buffer's).
  int wait_for(uint64_t serial);
  // Moves finished command buffers out of the in-flight list (never blocks).
  void poll();
  bool has_pending_work() const { return open_cb_ != nullptr || !in_flight_.empty(); }
  uint64_t last_serial() const { return last_serial_; }
  uint64_t completed_serial() const { return completed_serial_; }
  int32_t id() const { return id_; }
  void* open_encoder() const { return encoder_; }  // the compute encoder being filled, or NULL
  void* queue() const { return queue_; }

 private:
  int end_encoder();
  int finish_front(bool block);
  const mtlb_api* api_;
  void* queue_;
  int32_t id_;
  void* open_cb_ = nullptr;
  void* encoder_ = nullptr;
  uint64_t open_serial_ = 0;
  uint64_t last_serial_ = 0;
  uint64_t completed_serial_ = 0;
  std::deque<std::pair<uint64_t, void*>> in_flight_;
  std::string deferred_error_;  // a failed command buffer seen by poll(), reported by the next wait
};

}  // namespace slimtensor_metal
