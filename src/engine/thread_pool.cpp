#include "engine/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace hearth::engine {
namespace {

// Iterations of polling before a thread blocks: a few tens of microseconds, long
// enough to bridge consecutive matmuls of one forward pass; on a contended machine
// only a token spin (spin_iterations_for).
constexpr int kSpinIterations = 20000;
constexpr int kContendedSpinIterations = 64;
// CPU pressure (% of time some task waited for a CPU) above which the CPUs count as
// contended.
constexpr double kContendedPressurePct = 10.0;
// How often the pressure is read again (by the thread dispatching a job).
constexpr int64_t kPressureRefreshNs = 250'000'000;

std::atomic<int> g_spin_iterations{kSpinIterations};
std::atomic<int64_t> g_next_refresh_ns{0};

// Linux PSI `some avg10` of /proc/pressure/cpu; without PSI, the 1-minute load average
// against the cores (100 above 1.5 runnable tasks per core, else 0); -1 if neither.
double read_cpu_pressure() {
  if (FILE* f = std::fopen("/proc/pressure/cpu", "r")) {
    double some = -1.0;
    if (std::fscanf(f, "some avg10=%lf", &some) != 1) some = -1.0;
    std::fclose(f);
    if (some >= 0.0) return some;
  }
  double load = 0.0;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (getloadavg(&load, 1) == 1) return load > 1.5 * cores ? 100.0 : 0.0;
  return -1.0;
}

// Re-reads the pressure at most every kPressureRefreshNs; cheap otherwise.
void refresh_spin_iterations() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t next = g_next_refresh_ns.load(std::memory_order_relaxed);
  if (now < next || !g_next_refresh_ns.compare_exchange_strong(next, now + kPressureRefreshNs,
                                                               std::memory_order_relaxed)) {
    return;
  }
  g_spin_iterations.store(spin_iterations_for(read_cpu_pressure()), std::memory_order_relaxed);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

int spin_iterations_for(double cpu_pressure_pct) {
  return cpu_pressure_pct > kContendedPressurePct ? kContendedSpinIterations : kSpinIterations;
}

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
  refresh_spin_iterations();
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();

  run_chunk(0);

  const int spins = g_spin_iterations.load(std::memory_order_relaxed);
  for (int spin = 0; spin < spins; ++spin) {
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
    const int spins = g_spin_iterations.load(std::memory_order_relaxed);
    for (int spin = 0; spin < spins; ++spin) {
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
