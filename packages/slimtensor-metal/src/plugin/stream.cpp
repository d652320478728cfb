// stream.cpp: command-buffer sequencing of one Metal stream (Note [Metal streams]).
#include "stream.h"

#include <cstdio>

#include "errors.h"

namespace slimtensor_metal {

Stream::~Stream() {
  // Destroyed only when the plugin context goes away: finish what was queued, then give back every
  // reference this stream owns (Note [Bridge ownership]).
  (void)synchronize();
  api_->release(queue_);
}

int Stream::end_encoder() {
  if (encoder_) {
    api_->end_encoding(encoder_);
    api_->release(encoder_);
    encoder_ = nullptr;
  }
  return 0;
}

int Stream::command_buffer(void** cb) {
  end_encoder();
  if (!open_cb_) {
    char err[512] = {0};
    if (api_->new_command_buffer(queue_, &open_cb_, err, sizeof err) != 0) {
      open_cb_ = nullptr;
      return fail_bridge("stream " + std::to_string(id_) + ": [MTLCommandQueue commandBuffer] failed", err);
    }
    open_serial_ = ++last_serial_;
  }
  *cb = open_cb_;
  return 0;
}

int Stream::compute_encoder(void** encoder) {
  if (encoder_) {
    *encoder = encoder_;
    return 0;
  }
  void* cb;
  if (command_buffer(&cb) != 0) return 1;
  char err[512] = {0};
  if (api_->new_compute_encoder(cb, &encoder_, err, sizeof err) != 0) {
    encoder_ = nullptr;
    return fail_bridge("stream " + std::to_string(id_) + ": [MTLCommandBuffer computeCommandEncoder] failed", err);
  }
  *encoder = encoder_;
  return 0;
}

int Stream::commit() {
  end_encoder();
  if (!open_cb_) return 0;
  api_->commit(open_cb_);
  in_flight_.emplace_back(open_serial_, open_cb_);
  open_cb_ = nullptr;
  return 0;
}

int Stream::finish_front(bool block) {
  auto [serial, cb] = in_flight_.front();
  int failed = 0;
  char err[512] = {0};
  if (block) {
    failed = api_->wait_until_completed(cb, err, sizeof err);
  } else {
    const int s = api_->status(cb);
    if (s == MTLB_STATUS_PENDING) return 2;
    if (s == MTLB_STATUS_ERROR) {
      failed = 1;
      std::snprintf(err, sizeof err, "the command buffer finished with an error");
    }
  }
  if (failed && deferred_error_.empty()) {
    deferred_error_ =
        "stream " + std::to_string(id_) + ": command buffer " + std::to_string(serial) + " failed on the GPU: " + err;
  }
  api_->release(cb);
  in_flight_.pop_front();
  completed_serial_ = serial;
  return 0;
}

void Stream::poll() {
  while (!in_flight_.empty() && finish_front(false) == 0) {}
}

int Stream::wait_for(uint64_t serial) {
  if (serial > completed_serial_) {
    if (open_cb_ && serial >= open_serial_) commit();
    while (!in_flight_.empty() && in_flight_.front().first <= serial) finish_front(true);
  }
  if (!deferred_error_.empty()) {
    std::string e;
    e.swap(deferred_error_);
    return fail("%s; the results of that work are undefined: rerun it, and check the kernel's bounds", e.c_str());
  }
  return 0;
}

int Stream::synchronize() {
  commit();
  return wait_for(last_serial_);
}

}  // namespace slimtensor_metal
