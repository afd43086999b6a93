#include "cache/writer_pool.h"

namespace hearth::cache {

bool SaveSlots::acquire_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline, [&] { return free_ > 0; })) return false;
  --free_;
  return true;
}

void SaveSlots::release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++free_;
  }
  cv_.notify_one();
}

uint32_t SaveSlots::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_ - free_;
}

WriterPool::WriterPool(uint32_t threads, uint32_t queue_depth) : depth_(queue_depth) {
  for (uint32_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WriterPool::~WriterPool() { stop(std::chrono::steady_clock::now(), {}); }

bool WriterPool::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= depth_) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void WriterPool::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

void WriterPool::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    job();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    idle_cv_.notify_all();
  }
}

void WriterPool::stop(std::chrono::steady_clock::time_point deadline,
                      const std::function<void()>& on_drop) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (threads_.empty()) return;
    stopping_ = true;
    cv_.notify_all();
    idle_cv_.wait_until(lock, deadline, [&] { return queue_.empty() && running_ == 0; });
    for (size_t i = 0; i < queue_.size(); ++i) {
      if (on_drop) on_drop();
    }
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace hearth::cache
