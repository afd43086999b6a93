// Bounded-concurrency save machinery: a counting semaphore whose slots are held
// by an RAII guard (released on every path, including errors), and a fixed pool
// of worker threads fed by a bounded queue. A submit beyond the queue bound is
// refused at once so the caller (the decode loop) never blocks on a save.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hearth::cache {

class SaveSlots {
 public:
  explicit SaveSlots(uint32_t n) : free_(n), max_(n) {}
  bool acquire_until(std::chrono::steady_clock::time_point deadline);
  void release();
  uint32_t in_use() const;
  uint32_t max() const { return max_; }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint32_t free_;
  uint32_t max_;
};

class SlotGuard {
 public:
  SlotGuard() = default;
  explicit SlotGuard(SaveSlots* s) : s_(s) {}
  SlotGuard(SlotGuard&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  SlotGuard& operator=(SlotGuard&&) = delete;
  ~SlotGuard() {
    if (s_) s_->release();
  }
  explicit operator bool() const { return s_ != nullptr; }

 private:
  SaveSlots* s_ = nullptr;
};

class WriterPool {
 public:
  WriterPool(uint32_t threads, uint32_t queue_depth);
  ~WriterPool();
  // false when the queue is full or the pool is stopping.
  bool submit(std::function<void()> job);
  // Waits until the queue is empty and no job runs.
  void wait_idle();
  // Refuses new jobs, runs what is queued until `deadline`, drops the rest
  // (calling `on_drop` for each), joins the threads.
  void stop(std::chrono::steady_clock::time_point deadline, const std::function<void()>& on_drop);

 private:
  void run();
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  uint32_t depth_;
  uint32_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace hearth::cache
