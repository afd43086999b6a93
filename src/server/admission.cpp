#include "server/admission.h"

namespace hearth::server {

Admission::Admission(int64_t max_running, int64_t max_queued)
    : max_running_(max_running < 1 ? 1 : max_running),
      max_queued_(max_queued < 0 ? 0 : max_queued) {}

std::unique_ptr<Admission::Ticket> Admission::acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return nullptr;
  if (running_ >= max_running_) {
    if (queued_ >= max_queued_) return nullptr;
    ++queued_;
    cv_.wait(lock, [&] { return closed_ || running_ < max_running_; });
    --queued_;
    if (closed_) return nullptr;
  }
  ++running_;
  return std::make_unique<Ticket>(*this);
}

void Admission::release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
  }
  cv_.notify_one();
}

void Admission::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

int64_t Admission::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

int64_t Admission::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

}  // namespace hearth::server
