#include "engine/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace hearth::engine {
namespace {

// Iterations of polling before a thread blocks: a few tens of microseconds, long
// enough to bridge consecutive matmuls of one forward pass.
constexpr int kSpinIterations = 20000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : size_(n_threads < 1 ? 1 : n_threads) {
  workers_.reserve(static_cast<size_t>(size_ - 1));
  for (int i = 1; i < size_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunk(int index) {
  if (grain_ > 0) {
    for (;;) {
      const int64_t begin = next_.fetch_add(grain_, std::memory_order_relaxed);
      if (begin >= n_) return;
      call_(ctx_, begin, std::min(n_, begin + grain_));
    }
  }
  const int64_t begin = n_ * index / size_;
  const int64_t end = n_ * (index + 1) / size_;
  if (begin < end) call_(ctx_, begin, end);
}

void ThreadPool::run(int64_t n, int64_t grain, Trampoline call, void* ctx) {
  call_ = call;
  ctx_ = ctx;
  n_ = n;
  grain_ = grain;
  next_.store(0, std::memory_order_relaxed);
  pending_.store(size_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();

  run_chunk(0);

  for (int spin = 0; spin < kSpinIterations; ++spin) {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    cpu_relax();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    bool have_job = false;
    for (int spin = 0; spin < kSpinIterations; ++spin) {
      if (generation_.load(std::memory_order_acquire) != seen) {
        have_job = true;
        break;
      }
      if (stop_.load(std::memory_order_acquire)) return;
      cpu_relax();
    }
    if (!have_job) {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] {
        return stop_.load(std::memory_order_acquire) ||
               generation_.load(std::memory_order_acquire) != seen;
      });
      if (generation_.load(std::memory_order_acquire) == seen) return;  // stopping
    }
    seen = generation_.load(std::memory_order_acquire);
    run_chunk(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

}  // namespace hearth::engine
